package fakelocal

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// handle routes a request: the chat routes go to the fake upstream, the
// rest to the kind's discovery routes, and anything else gets 404.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/v1/completions", "/v1/embeddings":
		if !s.authorized(w, r) {
			return
		}
		s.proxy.ServeHTTP(w, r)
		return
	}
	models := s.snapshot()
	var h func(http.ResponseWriter, *http.Request, []Model) bool
	switch s.kind {
	case Ollama:
		h = s.ollama
	case LMStudio:
		h = s.lmstudio
	case Jan:
		h = s.jan
	case LlamaCpp:
		h = s.llamacpp
	case VLLM:
		h = s.vllm
	case LocalAI:
		h = s.localai
	case KoboldCpp:
		h = s.koboldcpp
	default:
		h = s.openai
	}
	if !h(w, r, models) {
		http.Error(w, "Not Found", http.StatusNotFound)
	}
}

// authorized checks the key, when the server has one, and answers the
// refusal in Jan's words when it is missing or wrong.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.key == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	if auth == "Bearer "+s.key {
		return true
	}
	switch {
	case s.kind == Jan && auth == "":
		http.Error(w, "Missing authorization header", http.StatusUnauthorized)
	case s.kind == Jan:
		http.Error(w, "Invalid or missing authorization token", http.StatusUnauthorized)
	default:
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Malformed LM Studio API token provided", "type": "invalid_request_error", "code": "invalid_api_key",
		}})
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func get(r *http.Request, path string) bool { return r.Method == http.MethodGet && r.URL.Path == path }

// openAIList is an OpenAI-style model list with the extra fields fill adds
// to each entry.
func openAIList(models []Model, fill func(Model) map[string]any) map[string]any {
	data := []map[string]any{}
	for _, m := range models {
		e := map[string]any{"id": m.ID, "object": "model", "created": 1700000000, "owned_by": "organization_owner"}
		for k, v := range fill(m) {
			e[k] = v
		}
		data = append(data, e)
	}
	return map[string]any{"object": "list", "data": data}
}

func noFill(Model) map[string]any { return nil }

func (s *Server) openai(w http.ResponseWriter, r *http.Request, models []Model) bool {
	if !get(r, "/v1/models") {
		return false
	}
	if s.authorized(w, r) {
		writeJSON(w, 200, openAIList(models, noFill))
	}
	return true
}

// ---- Ollama ----

func ollamaCaps(m Model) []string {
	if len(m.Capabilities) > 0 {
		return m.Capabilities
	}
	if m.Embedding {
		return []string{"embedding"}
	}
	return []string{"completion"}
}

func ollamaEntry(m Model) map[string]any {
	return map[string]any{
		"name": m.ID, "model": m.ID, "size": 4683087332, "digest": "sha256:0000",
		"details": map[string]any{"format": "gguf", "family": "qwen2", "parameter_size": m.ParameterSize, "quantization_level": "Q4_K_M"},
	}
}

func (s *Server) ollama(w http.ResponseWriter, r *http.Request, models []Model) bool {
	switch {
	case get(r, "/"):
		io.WriteString(w, "Ollama is running")
	case get(r, "/api/version"):
		writeJSON(w, 200, map[string]any{"version": s.version})
	case get(r, "/api/tags"):
		list := []map[string]any{}
		for _, m := range models {
			list = append(list, ollamaEntry(m))
		}
		writeJSON(w, 200, map[string]any{"models": list})
	case get(r, "/api/ps"):
		list := []map[string]any{}
		for _, m := range models {
			if m.Loaded {
				e := ollamaEntry(m)
				e["size_vram"] = 4683087332
				e["expires_at"] = "2030-01-01T00:00:00Z"
				e["context_length"] = m.Context
				list = append(list, e)
			}
		}
		writeJSON(w, 200, map[string]any{"models": list})
	case r.Method == http.MethodPost && r.URL.Path == "/api/show":
		var req struct {
			Model string `json:"model"`
			Name  string `json:"name"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writeJSON(w, 400, map[string]any{"error": "invalid request"})
			return true
		}
		id := req.Model
		if id == "" {
			id = req.Name
		}
		i := slices.IndexFunc(models, func(m Model) bool { return m.ID == id })
		if i < 0 {
			writeJSON(w, 404, map[string]any{"error": "model '" + id + "' not found"})
			return true
		}
		m := models[i]
		var params []string
		if m.NumCtx > 0 {
			params = append(params, "num_ctx                        "+strconv.Itoa(m.NumCtx))
		}
		params = append(params, `stop                           "<|im_end|>"`)
		info := map[string]any{"general.architecture": "qwen2", "general.parameter_count": 7615616512}
		if m.TrainedContext > 0 {
			info["qwen2.context_length"] = m.TrainedContext
		}
		writeJSON(w, 200, map[string]any{
			"modelfile":    "FROM " + m.ID,
			"parameters":   strings.Join(params, "\n"),
			"template":     "{{ .Prompt }}",
			"details":      ollamaEntry(m)["details"],
			"model_info":   info,
			"capabilities": ollamaCaps(m),
		})
	case get(r, "/v1/models"):
		writeJSON(w, 200, openAIList(models, func(Model) map[string]any { return map[string]any{"owned_by": "library"} }))
	default:
		return false
	}
	return true
}

// ---- LM Studio ----

func (s *Server) lmstudio(w http.ResponseWriter, r *http.Request, models []Model) bool {
	switch {
	case get(r, "/v1/models"):
		if s.authorized(w, r) {
			writeJSON(w, 200, openAIList(models, noFill))
		}
	case get(r, "/api/v0/models"):
		if !s.authorized(w, r) {
			return true
		}
		data := []map[string]any{}
		for _, m := range models {
			typ := "llm"
			if m.Embedding {
				typ = "embeddings"
			} else if slices.Contains(m.Capabilities, "vision") {
				typ = "vlm"
			}
			state := "not-loaded"
			if m.Loaded {
				state = "loaded"
			}
			data = append(data, map[string]any{
				"id": m.ID, "object": "model", "type": typ, "publisher": "lmstudio-community", "arch": "qwen2",
				"compatibility_type": "gguf", "quantization": "Q4_K_M", "state": state, "max_context_length": m.TrainedContext,
			})
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": data})
	case get(r, "/api/v1/models"):
		if !s.authorized(w, r) {
			return true
		}
		list := []map[string]any{}
		for _, m := range models {
			typ := "llm"
			if m.Embedding {
				typ = "embedding"
			}
			inst := []map[string]any{}
			if m.Loaded {
				inst = append(inst, map[string]any{"id": m.ID, "config": map[string]any{"context_length": m.Context, "eval_batch_size": 512}})
			}
			e := map[string]any{
				"type": typ, "publisher": "lmstudio-community", "key": m.ID, "display_name": m.ID, "architecture": "qwen2",
				"params_string": m.ParameterSize, "loaded_instances": inst, "max_context_length": m.TrainedContext, "format": "gguf",
			}
			if typ == "llm" {
				e["capabilities"] = map[string]any{
					"vision":               slices.Contains(m.Capabilities, "vision"),
					"trained_for_tool_use": slices.Contains(m.Capabilities, "tools"),
				}
			}
			list = append(list, e)
		}
		writeJSON(w, 200, map[string]any{"models": list})
	default:
		return false
	}
	return true
}

// ---- Jan ----

func (s *Server) jan(w http.ResponseWriter, r *http.Request, models []Model) bool {
	switch {
	case get(r, "/"):
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!DOCTYPE html><html><head><title>API Docs</title></head><body><div id=\"swagger-ui\"></div></body></html>")
	case get(r, "/v1/models"):
		if !s.authorized(w, r) {
			return true
		}
		writeJSON(w, 200, openAIList(models, func(m Model) map[string]any {
			if m.Remote {
				return map[string]any{"owned_by": "remote"}
			}
			return map[string]any{"owned_by": "llama.cpp"}
		}))
	default:
		return false
	}
	return true
}

// ---- llama.cpp ----

func (s *Server) llamacpp(w http.ResponseWriter, r *http.Request, models []Model) bool {
	nCtx := 0
	if len(models) > 0 {
		nCtx = models[0].Context
	}
	switch {
	case get(r, "/"):
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><html><head><title>llama.cpp - chat</title></head><body></body></html>")
	case get(r, "/health"):
		writeJSON(w, 200, map[string]any{"status": "ok"})
	case get(r, "/props"):
		writeJSON(w, 200, map[string]any{
			"default_generation_settings": map[string]any{"n_ctx": nCtx, "params": map[string]any{"temperature": 0.8}},
			"total_slots":                 1,
			"model_path":                  "/models/model.gguf",
			"build_info":                  s.version,
		})
	case get(r, "/v1/models"), get(r, "/models"):
		list := openAIList(models, func(m Model) map[string]any {
			return map[string]any{"owned_by": "llamacpp", "meta": map[string]any{
				"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": m.TrainedContext, "n_embd": 3584, "n_params": m.NParams, "size": 4683087332,
			}}
		})
		ms := []map[string]any{}
		for _, m := range models {
			ms = append(ms, map[string]any{"name": m.ID, "model": m.ID, "type": "model", "capabilities": []string{"completion"}})
		}
		list["models"] = ms
		writeJSON(w, 200, list)
	default:
		return false
	}
	return true
}

// ---- vLLM ----

func (s *Server) vllm(w http.ResponseWriter, r *http.Request, models []Model) bool {
	switch {
	case get(r, "/version"):
		writeJSON(w, 200, map[string]any{"version": s.version})
	case get(r, "/health"):
		w.WriteHeader(200)
	case get(r, "/v1/models"):
		writeJSON(w, 200, openAIList(models, func(m Model) map[string]any {
			return map[string]any{"owned_by": "vllm", "root": m.ID, "parent": nil, "max_model_len": m.Context, "permission": []any{}}
		}))
	default:
		return false
	}
	return true
}

// ---- LocalAI ----

// localai answers its own routes and, as the real one does, Ollama's
// model routes too, though not Ollama's banner.
func (s *Server) localai(w http.ResponseWriter, r *http.Request, models []Model) bool {
	switch {
	case get(r, "/"):
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!DOCTYPE html><html><head><title>LocalAI</title></head><body></body></html>")
	case get(r, "/.well-known/localai.json"):
		writeJSON(w, 200, map[string]any{"version": s.version, "name": "LocalAI"})
	case get(r, "/system"):
		loaded := []map[string]any{}
		for _, m := range models {
			if m.Loaded {
				loaded = append(loaded, map[string]any{"id": m.ID})
			}
		}
		writeJSON(w, 200, map[string]any{"backends": []string{"llama-cpp", "whisper"}, "loaded_models": loaded})
	case get(r, "/api/version"):
		writeJSON(w, 200, map[string]any{"version": "0.9.0"})
	case get(r, "/api/tags"), get(r, "/api/ps"):
		list := []map[string]any{}
		for _, m := range models {
			list = append(list, ollamaEntry(m))
		}
		writeJSON(w, 200, map[string]any{"models": list})
	case get(r, "/v1/models"), get(r, "/models"):
		if s.authorized(w, r) {
			data := []map[string]any{}
			for _, m := range models {
				data = append(data, map[string]any{"id": m.ID, "object": "model"})
			}
			writeJSON(w, 200, map[string]any{"object": "list", "data": data})
		}
	default:
		return false
	}
	return true
}

// ---- KoboldCpp ----

func (s *Server) koboldcpp(w http.ResponseWriter, r *http.Request, models []Model) bool {
	nCtx, name := 0, "koboldcpp/none"
	if len(models) > 0 {
		nCtx, name = models[0].Context, models[0].ID
	}
	switch {
	case get(r, "/api/extra/version"):
		writeJSON(w, 200, map[string]any{"result": "KoboldCpp", "version": s.version, "protected": false, "txt2img": false})
	case get(r, "/api/extra/true_max_context_length"):
		writeJSON(w, 200, map[string]any{"value": nCtx})
	case get(r, "/api/v1/config/max_context_length"):
		writeJSON(w, 200, map[string]any{"value": nCtx})
	case get(r, "/api/v1/model"):
		writeJSON(w, 200, map[string]any{"result": name})
	case get(r, "/v1/models"):
		writeJSON(w, 200, openAIList(models, func(Model) map[string]any {
			return map[string]any{"owned_by": "koboldcpp", "permission": []any{}, "root": "koboldcpp"}
		}))
	default:
		return false
	}
	return true
}
