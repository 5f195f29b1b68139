package modellist

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// list gathers entries across pages: it skips unusable and repeated ids
// and enforces MaxModels over the whole list.
type list struct {
	host    string
	out     []Listed
	seen    map[string]bool
	entries int
}

func newList(host string) *list { return &list{host: host, seen: map[string]bool{}} }

// take counts a page's raw entries against MaxModels before any is
// decoded, so a huge page costs no more than its bytes.
func (l *list) take(n int) error {
	l.entries += n
	if l.entries > MaxModels {
		return fmt.Errorf("modellist: %s lists more than %d models: %w", l.host, MaxModels, ErrTooLarge)
	}
	return nil
}

func (l *list) add(m Listed) {
	if m.ID == "" || len(m.ID) > MaxIDLen || l.seen[m.ID] {
		return
	}
	l.seen[m.ID] = true
	l.out = append(l.out, m)
}

// done returns the list, refusing one whose entries all lacked a usable
// id: that is a shape FreeLane does not read, and reading it as empty
// would make every model look withdrawn.
func (l *list) done() ([]Listed, error) {
	if l.entries > 0 && len(l.out) == 0 {
		return nil, fmt.Errorf("modellist: none of the %d entries %s listed has a usable id", l.entries, l.host)
	}
	if l.out == nil {
		l.out = []Listed{}
	}
	return l.out, nil
}

func notAList(host string, err error) error {
	return fmt.Errorf("modellist: %s answered with something other than a model list: %v", host, err)
}

// openAI reads an OpenAI-style list: {"data": [...]} or, as Together
// answers, a bare array. Pages continue while the answer gives a
// links.next on the same scheme and host (OpenRouter's offset paging);
// a next link elsewhere is ignored, since following it would send the
// key there.
func (f *fetcher) openAI(ctx context.Context) ([]Listed, error) {
	l := newList(f.base.Host)
	u := f.listURL(nil)
	for page := 1; ; page++ {
		body, err := f.get(ctx, u)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Data  []json.RawMessage `json:"data"`
			Links struct {
				Next string `json:"next"`
			} `json:"links"`
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
			err = json.Unmarshal(t, &doc.Data)
		} else {
			err = json.Unmarshal(body, &doc)
			if err == nil && doc.Data == nil {
				err = fmt.Errorf("no data array")
			}
		}
		if err != nil {
			return nil, notAList(f.base.Host, err)
		}
		if err := l.take(len(doc.Data)); err != nil {
			return nil, err
		}
		for _, raw := range doc.Data {
			var e openAIEntry
			if json.Unmarshal(raw, &e) != nil {
				continue
			}
			l.add(e.listed())
		}
		next := f.sameOrigin(u, doc.Links.Next)
		if next == nil || len(doc.Data) == 0 {
			break
		}
		if page >= MaxPages {
			return nil, fmt.Errorf("modellist: %s pages its list past %d pages: %w", f.base.Host, MaxPages, ErrTooLarge)
		}
		u = next
	}
	return l.done()
}

// sameOrigin resolves a next-page link against the current page and keeps
// it only on the base URL's scheme and host.
func (f *fetcher) sameOrigin(cur *url.URL, link string) *url.URL {
	if link == "" {
		return nil
	}
	next, err := cur.Parse(link)
	if err != nil || next.Scheme != f.base.Scheme || next.Host != f.base.Host || next.String() == cur.String() {
		return nil
	}
	next.Fragment = ""
	return next
}

// openAIEntry holds the fields OpenAI-compatible lists add to the id. The
// numbers are lenient: one entry's odd field must not lose the whole list.
type openAIEntry struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	// context_length: OpenRouter, Together, SambaNova.
	ContextLength num `json:"context_length"`
	// context_window: Groq.
	ContextWindow num `json:"context_window"`
	// max_context_length: Mistral.
	MaxContextLength num `json:"max_context_length"`
	// max_model_len: vLLM and servers like it.
	MaxModelLen num `json:"max_model_len"`
	// max_completion_tokens: Groq, SambaNova.
	MaxCompletionTokens num `json:"max_completion_tokens"`
	TopProvider         struct {
		ContextLength       num `json:"context_length"`
		MaxCompletionTokens num `json:"max_completion_tokens"`
	} `json:"top_provider"`
	Pricing             json.RawMessage `json:"pricing"`
	SupportedParameters []string        `json:"supported_parameters"`
	Architecture        struct {
		InputModalities  []string `json:"input_modalities"`
		OutputModalities []string `json:"output_modalities"`
	} `json:"architecture"`
	Capabilities json.RawMessage `json:"capabilities"`
	Type         string          `json:"type"`
	// active: Groq marks a model it no longer serves as false.
	Active *bool `json:"active"`
}

func (e *openAIEntry) listed() Listed {
	if e.Active != nil && !*e.Active {
		return Listed{}
	}
	m := Listed{
		ID:        e.ID,
		Name:      cmpOr(e.DisplayName, e.Name),
		Context:   int(firstNonZero(e.ContextLength, e.ContextWindow, e.MaxContextLength, e.MaxModelLen, e.TopProvider.ContextLength)),
		MaxOutput: int(firstNonZero(e.TopProvider.MaxCompletionTokens, e.MaxCompletionTokens)),
	}
	if in, out, ok := perTokenPrices(e.Pricing); ok {
		m.Priced = true
		m.Price.Input, m.Price.Output = perMillion(in), perMillion(out)
		m.Free = isZero(in) && isZero(out) && strings.HasSuffix(e.ID, ":free")
	}
	var caps capSet
	for _, p := range e.SupportedParameters {
		switch p {
		case "tools", "tool_choice":
			caps.add("tools")
		case "response_format", "structured_outputs":
			caps.add("json")
		case "reasoning", "include_reasoning":
			caps.add("reasoning")
		}
	}
	if slices.Contains(e.Architecture.InputModalities, "image") {
		caps.add("vision")
	}
	chat := caps.read(e.Capabilities)
	m.Capabilities = caps.sorted()
	m.Chat = chat && openAIChat(e)
	return m
}

// openAIChat is the documented rule for Listed.Chat on OpenAI-style lists.
func openAIChat(e *openAIEntry) bool {
	if len(e.Architecture.OutputModalities) > 0 && !slices.Contains(e.Architecture.OutputModalities, "text") {
		return false
	}
	switch strings.ToLower(e.Type) {
	case "embedding", "embeddings", "image", "audio", "rerank", "moderation", "transcribe", "tts":
		return false
	}
	id := strings.ToLower(e.ID)
	if strings.Contains(id, "dall-e") || strings.Contains(id, "gpt-image") {
		return false
	}
	for _, w := range strings.FieldsFunc(id, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	}) {
		switch {
		case strings.HasPrefix(w, "embed"), w == "whisper", w == "tts", w == "transcribe",
			w == "moderation", w == "rerank", strings.HasPrefix(w, "reranker"):
			return false
		}
	}
	return true
}

// perTokenPrices reads OpenRouter-shaped pricing: prompt and completion as
// decimal strings in USD per token. Any other shape (Together's numbers
// per million, absent pricing) or a negative price is not read.
func perTokenPrices(raw json.RawMessage) (in, out string, ok bool) {
	if len(raw) == 0 {
		return "", "", false
	}
	var p struct {
		Prompt     *string `json:"prompt"`
		Completion *string `json:"completion"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Prompt == nil || p.Completion == nil {
		return "", "", false
	}
	for _, s := range []string{*p.Prompt, *p.Completion} {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return "", "", false
		}
	}
	return *p.Prompt, *p.Completion, true
}

func isZero(s string) bool {
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && v == 0
}

// perMillion converts a per-token price to per million tokens, rounded to
// a millionth of a dollar so "0.0000006" reads 0.6 and not
// 0.6000000000000001.
func perMillion(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return math.Round(v*1e12) / 1e6
}

// anthropic reads Anthropic's list, paged with has_more and last_id.
func (f *fetcher) anthropic(ctx context.Context) ([]Listed, error) {
	l := newList(f.base.Host)
	after := ""
	for page := 1; ; page++ {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after_id", after)
		}
		body, err := f.get(ctx, f.listURL(q))
		if err != nil {
			return nil, err
		}
		var doc struct {
			Data []json.RawMessage `json:"data"`
			// HasMore and LastID page the list.
			HasMore bool   `json:"has_more"`
			LastID  string `json:"last_id"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, notAList(f.base.Host, err)
		}
		if doc.Data == nil {
			return nil, notAList(f.base.Host, fmt.Errorf("no data array"))
		}
		if err := l.take(len(doc.Data)); err != nil {
			return nil, err
		}
		for _, raw := range doc.Data {
			var e struct {
				ID             string          `json:"id"`
				DisplayName    string          `json:"display_name"`
				MaxInputTokens num             `json:"max_input_tokens"`
				MaxTokens      num             `json:"max_tokens"`
				Capabilities   json.RawMessage `json:"capabilities"`
			}
			if json.Unmarshal(raw, &e) != nil {
				continue
			}
			var caps capSet
			caps.read(e.Capabilities)
			l.add(Listed{
				ID:           e.ID,
				Name:         e.DisplayName,
				Context:      int(e.MaxInputTokens),
				MaxOutput:    int(e.MaxTokens),
				Capabilities: caps.sorted(),
				Chat:         true,
			})
		}
		if !doc.HasMore || doc.LastID == "" || doc.LastID == after || len(doc.Data) == 0 {
			break
		}
		if page >= MaxPages {
			return nil, fmt.Errorf("modellist: %s pages its list past %d pages: %w", f.base.Host, MaxPages, ErrTooLarge)
		}
		after = doc.LastID
	}
	return l.done()
}

// gemini reads Gemini's list, paged with nextPageToken. Ids lose the
// "models/" prefix, as requests name models without it.
func (f *fetcher) gemini(ctx context.Context) ([]Listed, error) {
	l := newList(f.base.Host)
	token := ""
	for page := 1; ; page++ {
		q := url.Values{"pageSize": {"1000"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		body, err := f.get(ctx, f.listURL(q))
		if err != nil {
			return nil, err
		}
		var doc struct {
			Models        []json.RawMessage `json:"models"`
			NextPageToken string            `json:"nextPageToken"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, notAList(f.base.Host, err)
		}
		if err := l.take(len(doc.Models)); err != nil {
			return nil, err
		}
		for _, raw := range doc.Models {
			var e struct {
				Name             string   `json:"name"`
				DisplayName      string   `json:"displayName"`
				InputTokenLimit  num      `json:"inputTokenLimit"`
				OutputTokenLimit num      `json:"outputTokenLimit"`
				Methods          []string `json:"supportedGenerationMethods"`
				Thinking         bool     `json:"thinking"`
			}
			if json.Unmarshal(raw, &e) != nil {
				continue
			}
			var caps capSet
			if e.Thinking {
				caps.add("reasoning")
			}
			l.add(Listed{
				ID:           strings.TrimPrefix(e.Name, "models/"),
				Name:         e.DisplayName,
				Context:      int(e.InputTokenLimit),
				MaxOutput:    int(e.OutputTokenLimit),
				Capabilities: caps.sorted(),
				Chat:         slices.Contains(e.Methods, "generateContent"),
			})
		}
		if doc.NextPageToken == "" || doc.NextPageToken == token {
			break
		}
		if page >= MaxPages {
			return nil, fmt.Errorf("modellist: %s pages its list past %d pages: %w", f.base.Host, MaxPages, ErrTooLarge)
		}
		token = doc.NextPageToken
	}
	return l.done()
}

// capSet collects capability names.
type capSet struct{ has []string }

func (c *capSet) add(name string) {
	if !slices.Contains(c.has, name) {
		c.has = append(c.has, name)
	}
}

func (c *capSet) sorted() []string {
	slices.Sort(c.has)
	return c.has
}

// read adds what a capabilities field states, as an object of
// true-valued or {"supported": true} keys (Mistral, Anthropic) or an
// array of names. It returns false when the object says the model does
// not chat (Mistral's completion_chat: false).
func (c *capSet) read(raw json.RawMessage) (chat bool) {
	chat = true
	if len(raw) == 0 {
		return chat
	}
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		for _, n := range names {
			if capName, ok := capNames[strings.ToLower(n)]; ok {
				c.add(capName)
			}
		}
		return chat
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return chat
	}
	for k, v := range obj {
		yes, known := truthy(v)
		if !known {
			continue
		}
		k = strings.ToLower(k)
		if k == "completion_chat" && !yes {
			chat = false
		}
		if capName, ok := capNames[k]; ok && yes {
			c.add(capName)
		}
	}
	return chat
}

// capNames maps the names lists use to Listed's capability names.
var capNames = map[string]string{
	"tools": "tools", "tool_use": "tools", "tool_calling": "tools", "function_calling": "tools",
	"vision": "vision", "image_input": "vision", "images": "vision",
	"reasoning": "reasoning", "thinking": "reasoning", "extended_thinking": "reasoning",
	"json": "json", "json_mode": "json", "structured_outputs": "json", "response_format": "json",
}

// truthy reads true/false or {"supported": true/false}.
func truthy(v json.RawMessage) (yes, known bool) {
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b, true
	}
	var o struct {
		Supported *bool `json:"supported"`
	}
	if json.Unmarshal(v, &o) == nil && o.Supported != nil {
		return *o.Supported, true
	}
	return false, false
}

// num is a token count read leniently: a number, a numeric string or
// null; anything else, a negative or an absurd value reads as 0 (unknown).
type num int

// maxTokens bounds a token count; no model's window comes near it.
const maxTokens = 1 << 30

func (n *num) UnmarshalJSON(b []byte) error {
	*n = 0
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > maxTokens || math.IsNaN(v) {
		return nil
	}
	*n = num(v)
	return nil
}

func firstNonZero(ns ...num) num {
	for _, n := range ns {
		if n > 0 {
			return n
		}
	}
	return 0
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
