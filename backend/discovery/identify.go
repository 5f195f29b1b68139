package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// identify works out what listens on the prober's port and reads its
// models, or returns nil. The questions are asked from the most specific
// fingerprint to the most general, so that a server that imitates another
// one's routes (LocalAI answers Ollama's) is named by the answer only it
// gives.
func (p *prober) identify(ctx context.Context) *Server {
	root, err := p.do(ctx, http.MethodGet, "/", nil)
	if err != nil {
		// Nothing listens, or it does not speak HTTP: no further question
		// would get an answer either.
		p.log.Debug("discovery: nothing answers", "err", err)
		return nil
	}
	if root.status == http.StatusOK && bytes.Contains(root.body, []byte("Ollama is running")) {
		return p.ollama(ctx)
	}
	if s := p.koboldcpp(ctx); s != nil {
		return s
	}
	if s := p.localai(ctx); s != nil {
		return s
	}
	if s := p.lmstudio(ctx); s != nil {
		return s
	}
	if s := p.llamacppProps(ctx); s != nil {
		return s
	}
	return p.openAIList(ctx)
}

// openAIModel is an entry of an OpenAI-style GET /v1/models list with the
// extra fields local servers add.
type openAIModel struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen tokens `json:"max_model_len"`
	Meta        *struct {
		NCtx      tokens  `json:"n_ctx"`
		NCtxTrain tokens  `json:"n_ctx_train"`
		NParams   float64 `json:"n_params"`
	} `json:"meta"`
}

type openAIList struct {
	Data []openAIModel `json:"data"`
	// over counts the entries past MaxModels, which were not read.
	over int
}

// v1Models fetches GET /v1/models. It returns the list, the status of a
// refusal (401 or 403) with its body, or neither when the answer is no
// model list.
func (p *prober) v1Models(ctx context.Context) (list *openAIList, refused *reply) {
	r, err := p.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		p.log.Debug("discovery: no answer", "path", "/v1/models", "err", err)
		return nil, nil
	}
	if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden {
		return nil, &r
	}
	if r.status != http.StatusOK {
		p.log.Debug("discovery: not OK", "path", "/v1/models", "status", r.status)
		return nil, nil
	}
	var l struct {
		Data *[]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &l); err != nil || l.Data == nil {
		p.log.Debug("discovery: not a model list", "path", "/v1/models", "err", err)
		return nil, nil
	}
	out := &openAIList{}
	for i, raw := range *l.Data {
		if i == MaxModels {
			out.over = len(*l.Data) - MaxModels
			break
		}
		var m openAIModel
		if err := json.Unmarshal(raw, &m); err != nil {
			p.log.Debug("discovery: malformed model entry", "path", "/v1/models", "err", err)
			continue
		}
		out.Data = append(out.Data, m)
	}
	return out, nil
}

// janRefusal reports whether a refused model list is worded the way Jan's
// local API server words it: plain text about the authorization header or
// token.
func janRefusal(r *reply) bool {
	b := bytes.ToLower(r.body)
	return r.status == http.StatusUnauthorized &&
		(bytes.Contains(b, []byte("missing authorization header")) ||
			bytes.Contains(b, []byte("invalid or missing authorization token")))
}

// openAIList names a server by its OpenAI-style model list: the owned_by
// values of llama.cpp, vLLM and Jan, or an unnamed OpenAI-compatible
// server.
func (p *prober) openAIList(ctx context.Context) *Server {
	list, refused := p.v1Models(ctx)
	if refused != nil {
		kind := KindOpenAI
		if janRefusal(refused) {
			kind = KindJan
		}
		s := newServer(kind, p.port)
		s.NeedsKey = true
		return s
	}
	if list == nil {
		return nil
	}
	kind := KindOpenAI
	for _, m := range list.Data {
		switch m.OwnedBy {
		case "llamacpp":
			kind = KindLlamaCpp
		case "vllm":
			kind = KindVLLM
		case "llama.cpp", "mlx", "remote":
			kind = KindJan
		default:
			continue
		}
		break
	}
	if kind == KindOpenAI {
		for _, m := range list.Data {
			if m.MaxModelLen > 0 {
				kind = KindVLLM
				break
			}
		}
	}
	switch kind {
	case KindLlamaCpp:
		return p.llamacpp(ctx, 0, "", list)
	case KindVLLM:
		return p.vllm(ctx, list)
	}
	s := newServer(kind, p.port)
	var set modelSet
	for _, m := range list.Data {
		if kind == KindJan && m.OwnedBy == "remote" {
			// Jan lists the hosted models it forwards to as well; those are
			// not local servers.
			continue
		}
		if mm := set.add(m.ID); mm != nil && m.MaxModelLen > 0 {
			mm.Context = int(m.MaxModelLen)
		}
	}
	set.dropped += list.over
	set.finish(s)
	return s
}

// ---- Ollama ----

type ollamaDetails struct {
	ParameterSize string `json:"parameter_size"`
}

type ollamaModel struct {
	Name          string        `json:"name"`
	Model         string        `json:"model"`
	Details       ollamaDetails `json:"details"`
	ContextLength tokens        `json:"context_length"`
}

func (m ollamaModel) id() string {
	if m.Name != "" {
		return m.Name
	}
	return m.Model
}

type ollamaShow struct {
	Parameters   string                     `json:"parameters"`
	ModelInfo    map[string]json.RawMessage `json:"model_info"`
	Capabilities []string                   `json:"capabilities"`
	Details      ollamaDetails              `json:"details"`
}

// ollama reads an Ollama server: installed models from /api/tags, loaded
// ones with their live window from /api/ps, and per model the trained
// window, num_ctx and capabilities from /api/show.
func (p *prober) ollama(ctx context.Context) *Server {
	s := newServer(KindOllama, p.port)
	var v struct {
		Version string `json:"version"`
	}
	if p.getJSON(ctx, "/api/version", &v) && validVersion(v.Version) {
		s.Version = v.Version
	}
	var tags, ps struct {
		Models []ollamaModel `json:"models"`
	}
	p.getJSON(ctx, "/api/tags", &tags)
	p.getJSON(ctx, "/api/ps", &ps)
	var set modelSet
	for _, m := range tags.Models {
		if mm := set.add(m.id()); mm != nil {
			mm.ParamsB = parseParams(m.Details.ParameterSize)
		}
	}
	for _, m := range ps.Models {
		if mm := set.add(m.id()); mm != nil {
			mm.Loaded = true
			mm.Context = int(m.ContextLength)
			if mm.ParamsB == 0 {
				mm.ParamsB = parseParams(m.Details.ParameterSize)
			}
		}
	}
	sem := make(chan struct{}, showParallel)
	var wg sync.WaitGroup
	for i := range set.list {
		m := &set.list[i]
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			p.ollamaShow(ctx, m)
		})
	}
	wg.Wait()
	set.finish(s)
	return s
}

// ollamaShow fills m from POST /api/show. Each call writes only its own
// model, so the calls run in parallel without a lock.
func (p *prober) ollamaShow(ctx context.Context, m *Model) {
	body, _ := json.Marshal(map[string]string{"model": m.ID})
	var sh ollamaShow
	if !p.callJSON(ctx, http.MethodPost, "/api/show", body, &sh) {
		return
	}
	var arch string
	if raw, ok := sh.ModelInfo["general.architecture"]; ok {
		_ = json.Unmarshal(raw, &arch)
	}
	if arch != "" {
		if raw, ok := sh.ModelInfo[arch+".context_length"]; ok {
			m.TrainedContext = rawTokens(raw)
		}
	}
	if m.Context == 0 {
		m.Context = numCtx(sh.Parameters)
	}
	if m.ParamsB == 0 {
		m.ParamsB = parseParams(sh.Details.ParameterSize)
	}
	var caps []string
	embedding := false
	chat := false
	for _, c := range sh.Capabilities {
		switch c {
		case "tools":
			caps = appendOnce(caps, "tools")
		case "vision":
			caps = appendOnce(caps, "vision")
		case "thinking":
			caps = appendOnce(caps, "reasoning")
		case "embedding":
			embedding = true
		case "completion":
			chat = true
		}
	}
	m.Capabilities = caps
	m.Embedding = embedding && !chat
}

// numCtx reads num_ctx from the parameters text of /api/show, one
// "name value" pair a line.
func numCtx(params string) int {
	for line := range strings.Lines(params) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.ParseFloat(f[1], 64); err == nil {
				return contextOf(n)
			}
		}
	}
	return 0
}

// parseParams reads a parameter count such as "7.6B", "135M" or "1.2T" as
// billions; 0 when it cannot.
func parseParams(s string) float64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	scale := 1.0
	switch s[len(s)-1] {
	case 'B', 'b':
		scale = 1
	case 'M', 'm':
		scale = 1e-3
	case 'K', 'k':
		scale = 1e-6
	case 'T', 't':
		scale = 1e3
	default:
		return 0
	}
	f, err := strconv.ParseFloat(s[:len(s)-1], 64)
	if err != nil {
		return 0
	}
	return paramsOf(f * scale)
}

func appendOnce(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// ---- KoboldCpp ----

// koboldcpp recognises KoboldCpp by /api/extra/version and reads the window
// it was launched with from /api/extra/true_max_context_length.
func (p *prober) koboldcpp(ctx context.Context) *Server {
	var v struct {
		Result  string `json:"result"`
		Version string `json:"version"`
	}
	if !p.getJSON(ctx, "/api/extra/version", &v) || v.Result != "KoboldCpp" {
		return nil
	}
	s := newServer(KindKoboldCpp, p.port)
	if validVersion(v.Version) {
		s.Version = v.Version
	}
	var n struct {
		Value tokens `json:"value"`
	}
	p.getJSON(ctx, "/api/extra/true_max_context_length", &n)
	var set modelSet
	if list, _ := p.v1Models(ctx); list != nil {
		for _, m := range list.Data {
			set.add(m.ID)
		}
		set.dropped += list.over
	}
	if len(set.list) == 0 {
		var one struct {
			Result string `json:"result"`
		}
		if p.getJSON(ctx, "/api/v1/model", &one) {
			set.add(one.Result)
		}
	}
	for i := range set.list {
		set.list[i].Loaded = true
		set.list[i].Context = int(n.Value)
	}
	set.finish(s)
	return s
}

// ---- LocalAI ----

// localai recognises LocalAI by its well-known document or its /system
// answer listing backends, and reads its plain model list. The well-known
// document alone is not enough, since a catch-all server answers a JSON
// object to every path: the model list must answer too.
func (p *prober) localai(ctx context.Context) *Server {
	var wk map[string]json.RawMessage
	known := p.getJSON(ctx, "/.well-known/localai.json", &wk) && len(wk) > 0
	var sys struct {
		Backends *[]json.RawMessage `json:"backends"`
	}
	if !known && !(p.getJSON(ctx, "/system", &sys) && sys.Backends != nil) {
		return nil
	}
	list, refused := p.v1Models(ctx)
	if known && sys.Backends == nil && list == nil && refused == nil {
		return nil
	}
	s := newServer(KindLocalAI, p.port)
	if raw, found := wk["version"]; found {
		var v string
		if json.Unmarshal(raw, &v) == nil && validVersion(v) {
			s.Version = v
		}
	}
	s.NeedsKey = refused != nil
	var set modelSet
	if list != nil {
		for _, m := range list.Data {
			set.add(m.ID)
		}
		set.dropped += list.over
	}
	set.finish(s)
	return s
}

// ---- LM Studio ----

type lmsV0Model struct {
	ID                  string `json:"id"`
	Type                string `json:"type"`
	State               string `json:"state"`
	MaxContextLength    tokens `json:"max_context_length"`
	LoadedContextLength tokens `json:"loaded_context_length"`
}

type lmsV1Model struct {
	Key             string `json:"key"`
	Type            string `json:"type"`
	ParamsString    string `json:"params_string"`
	LoadedInstances []struct {
		Config struct {
			ContextLength tokens `json:"context_length"`
		} `json:"config"`
	} `json:"loaded_instances"`
	MaxContextLength tokens `json:"max_context_length"`
	Capabilities     *struct {
		Vision            bool `json:"vision"`
		TrainedForToolUse bool `json:"trained_for_tool_use"`
	} `json:"capabilities"`
}

// lmstudio recognises LM Studio by /api/v0/models entries that carry type
// and state, and takes the loaded window from /api/v1/models where that
// newer API exists, since v0 reports only the longest supported one.
func (p *prober) lmstudio(ctx context.Context) *Server {
	var v0 struct {
		Data []lmsV0Model `json:"data"`
	}
	if !p.getJSON(ctx, "/api/v0/models", &v0) {
		return nil
	}
	lms := false
	for _, m := range v0.Data {
		if m.Type != "" && m.State != "" {
			lms = true
			break
		}
	}
	if !lms {
		return nil
	}
	s := newServer(KindLMStudio, p.port)
	var set modelSet
	for _, m := range v0.Data {
		mm := set.add(m.ID)
		if mm == nil {
			continue
		}
		mm.TrainedContext = int(m.MaxContextLength)
		mm.Loaded = m.State == "loaded"
		if mm.Loaded {
			mm.Context = int(m.LoadedContextLength)
		}
		switch m.Type {
		case "embeddings", "embedding":
			mm.Embedding = true
		case "vlm":
			mm.Capabilities = []string{"vision"}
		}
	}
	var v1 struct {
		Models []lmsV1Model `json:"models"`
	}
	if p.getJSON(ctx, "/api/v1/models", &v1) {
		for _, m := range v1.Models {
			mm := set.get(m.Key)
			if mm == nil {
				continue
			}
			if m.MaxContextLength > 0 {
				mm.TrainedContext = int(m.MaxContextLength)
			}
			if mm.ParamsB == 0 {
				mm.ParamsB = parseParams(m.ParamsString)
			}
			if len(m.LoadedInstances) > 0 {
				mm.Loaded = true
				// With several instances a request may land on any of
				// them, so the smallest window is the one it can count on.
				n := 0
				for _, in := range m.LoadedInstances {
					if c := int(in.Config.ContextLength); c > 0 && (n == 0 || c < n) {
						n = c
					}
				}
				if n > 0 {
					mm.Context = n
				}
			}
			if m.Capabilities != nil {
				var caps []string
				if m.Capabilities.TrainedForToolUse {
					caps = append(caps, "tools")
				}
				if m.Capabilities.Vision || slices.Contains(mm.Capabilities, "vision") {
					caps = append(caps, "vision")
				}
				mm.Capabilities = caps
			}
			if m.Type == "embedding" || m.Type == "embeddings" {
				mm.Embedding = true
			}
		}
	}
	set.finish(s)
	return s
}

// ---- llama.cpp ----

type llamaProps struct {
	DefaultGenerationSettings *struct {
		NCtx tokens `json:"n_ctx"`
	} `json:"default_generation_settings"`
	BuildInfo string `json:"build_info"`
}

// llamacppProps recognises llama-server by /props, whose
// default_generation_settings.n_ctx is the per-slot window a request may
// use.
func (p *prober) llamacppProps(ctx context.Context) *Server {
	var pr llamaProps
	if !p.getJSON(ctx, "/props", &pr) || pr.DefaultGenerationSettings == nil || pr.DefaultGenerationSettings.NCtx <= 0 {
		return nil
	}
	list, _ := p.v1Models(ctx)
	return p.llamacpp(ctx, int(pr.DefaultGenerationSettings.NCtx), pr.BuildInfo, list)
}

// llamacpp builds a llama-server's entry from its model list, with nCtx
// from /props when known (it is fetched here when not).
func (p *prober) llamacpp(ctx context.Context, nCtx int, build string, list *openAIList) *Server {
	if nCtx == 0 {
		var pr llamaProps
		if p.getJSON(ctx, "/props", &pr) && pr.DefaultGenerationSettings != nil {
			nCtx = int(pr.DefaultGenerationSettings.NCtx)
			build = pr.BuildInfo
		}
	}
	s := newServer(KindLlamaCpp, p.port)
	if validVersion(build) {
		s.Version = build
	}
	var set modelSet
	if list != nil {
		for _, m := range list.Data {
			mm := set.add(m.ID)
			if mm == nil {
				continue
			}
			mm.Loaded = true
			mm.Context = nCtx
			if m.Meta != nil {
				if mm.Context == 0 {
					mm.Context = int(m.Meta.NCtx)
				}
				mm.TrainedContext = int(m.Meta.NCtxTrain)
				mm.ParamsB = paramsOf(m.Meta.NParams / 1e9)
			}
		}
		set.dropped += list.over
	}
	set.finish(s)
	return s
}

// ---- vLLM ----

// vllm builds a vLLM server's entry: every model carries max_model_len, the
// window the engine was started with.
func (p *prober) vllm(ctx context.Context, list *openAIList) *Server {
	s := newServer(KindVLLM, p.port)
	var v struct {
		Version string `json:"version"`
	}
	if p.getJSON(ctx, "/version", &v) && validVersion(v.Version) {
		s.Version = v.Version
	}
	var set modelSet
	for _, m := range list.Data {
		if mm := set.add(m.ID); mm != nil {
			mm.Loaded = true
			mm.Context = int(m.MaxModelLen)
		}
	}
	set.dropped += list.over
	set.finish(s)
	return s
}

// validVersion reports whether a version string a server sent is short,
// printable text worth showing.
func validVersion(v string) bool { return len(v) <= 64 && (v == "" || ValidID(v)) }
