package api

import (
	"fmt"
	"net/http"
	"strings"

	"freelane/backend/tokens"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/anthropic"
	"freelane/backend/protocol/gemini"
	"freelane/backend/protocol/openai"
	"freelane/backend/protocol/responses"
)

// clientCodec is the dialect a request's path implies, in which its
// errors are written: clients parse errors only in their own shape, so a
// Claude client refused for its token must read an Anthropic error.
func clientCodec(r *http.Request) protocol.Codec {
	p := r.URL.Path
	switch {
	case p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/"):
		return anthropic.Codec
	case p == "/v1/responses" || strings.HasPrefix(p, "/v1/responses/"):
		return responses.Codec
	case strings.HasPrefix(p, "/v1beta/") || strings.Contains(p, ":generateContent") ||
		strings.Contains(p, ":streamGenerateContent") || strings.Contains(p, ":countTokens"):
		return gemini.Codec
	case p == "/v1/models" || strings.HasPrefix(p, "/v1/models/"):
		// The model list is one path for three vendors; the client's
		// headers say whose it is.
		if r.Header.Get("Anthropic-Version") != "" {
			return anthropic.Codec
		}
		if fromGemini(r) {
			return gemini.Codec
		}
	}
	return openai.Codec
}

// callPath is the API path a routed request came in on, as its route
// names it, with the client's own data left out: "/v1/messages",
// "/v1beta/models/{model}:generateContent". It is built from the route
// pattern the request matched, not from the URL, so it is always one of
// a few known strings. The gemini handler calls the router only for the
// methods it serves, so the method after the last colon is one of those.
func callPath(r *http.Request) string {
	_, p, _ := strings.Cut(r.Pattern, " ")
	if pre, ok := strings.CutSuffix(p, "{call...}"); ok {
		call := r.PathValue("call")
		return pre + "{model}:" + call[strings.LastIndexByte(call, ':')+1:]
	}
	return p
}

// v1Error writes an error for a /v1 request in its client's dialect. typ
// is OpenAI's error type, used for OpenAI's clients (of chat completions
// and of the Responses API); the other dialects take theirs from the
// status.
func v1Error(w http.ResponseWriter, r *http.Request, status int, typ, code, msg, param string) {
	codec := clientCodec(r)
	info := protocol.ErrorInfo{Status: status, Code: code, Message: msg, Param: param}
	if d := codec.Dialect(); d == llm.DialectOpenAI || d == llm.DialectResponses {
		info.Type = typ
	}
	writeError(w, codec, info)
}

// forwardHeaders are the client headers each dialect's upstreams are sent
// as they came: Anthropic's API version and the beta features a client
// asked for change what the upstream accepts, and only the client knows
// which it wants.
var forwardHeaders = map[llm.Dialect][]string{
	llm.DialectAnthropic: {"Anthropic-Version", "Anthropic-Beta"},
}

// forwarded picks the headers of h that go on to upstreams of the codec's
// dialect; nil when there are none.
func forwarded(codec protocol.Codec, h http.Header) http.Header {
	var out http.Header
	for _, k := range forwardHeaders[codec.Dialect()] {
		if v := h.Values(k); len(v) > 0 {
			if out == nil {
				out = http.Header{}
			}
			out[k] = v
		}
	}
	return out
}

// countTokens answers a token count request (Anthropic's
// /v1/messages/count_tokens, parsed by parse and answered in the codec's
// error shape) with an offline estimate of the request's input: the system
// prompt, every message part and the tools. No upstream is asked, so it
// costs nothing and works with any chain.
func (s *Server) countTokens(codec protocol.Codec, parse func([]byte) (*llm.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		held, ok := s.requestBody(w, r)
		if !ok {
			return
		}
		defer held.release()
		req, err := parse(held.data)
		if err != nil {
			writeBadRequest(w, codec, err)
			return
		}
		conv, err := req.Conversation()
		if err != nil {
			writeBadRequest(w, codec, err)
			return
		}
		n := inputTokens(conv)
		if codec.Dialect() == llm.DialectGemini {
			writeJSON(w, http.StatusOK, map[string]int{"totalTokens": n})
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
	}
}

// inputTokens estimates a conversation's input tokens.
func inputTokens(c *llm.Conversation) int {
	var text []byte
	add := func(parts []llm.Part) {
		for _, p := range parts {
			text = append(text, p.Text...)
			if p.ToolCall != nil {
				text = append(text, p.ToolCall.Name...)
				text = append(text, p.ToolCall.Arguments...)
			}
			if p.ToolResult != nil {
				for _, q := range p.ToolResult.Content {
					text = append(text, q.Text...)
				}
			}
			text = append(text, '\n')
		}
	}
	add(c.System)
	for _, m := range c.Messages {
		add(m.Parts)
	}
	for _, t := range c.Tools {
		text = append(text, t.Name...)
		text = append(text, t.Description...)
		text = append(text, t.Parameters...)
	}
	// Each message costs a few tokens of framing, as in OpenAI's count.
	return tokens.Count(text) + 4*len(c.Messages) + 3
}

// gemini serves Google's Generative Language API paths,
// /v1beta/models/{model}:{method} and the same under /v1 (the path the
// @google/genai SDK uses by default). The model comes from the path and
// may contain a slash (provider/model), so the call is split at its last
// colon.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	call := r.PathValue("call")
	i := strings.LastIndexByte(call, ':')
	if i <= 0 {
		v1Error(w, r, http.StatusNotFound, "invalid_request_error", "unknown_endpoint",
			fmt.Sprintf("%s %s is not an endpoint FreeLane serves; Gemini clients call /v1beta/models/MODEL:generateContent, :streamGenerateContent?alt=sse or :countTokens", r.Method, r.URL.Path), "")
		return
	}
	model, method := call[:i], call[i+1:]
	var stream bool
	switch method {
	case "generateContent":
	case "streamGenerateContent":
		// Without alt=sse Google answers one JSON array at the end, which
		// no agent asks for; FreeLane streams events only.
		if r.URL.Query().Get("alt") != "sse" {
			v1Error(w, r, http.StatusBadRequest, "invalid_request_error", "invalid_request",
				"FreeLane streams Gemini answers as server-sent events: call :streamGenerateContent?alt=sse", "alt")
			return
		}
		stream = true
	case "countTokens":
		s.countTokens(gemini.Codec, func(b []byte) (*llm.Request, error) {
			return gemini.ParseRequestFor(llm.Chat, model, false, b)
		})(w, r)
		return
	default:
		v1Error(w, r, http.StatusNotFound, "invalid_request_error", "unknown_endpoint",
			fmt.Sprintf("the Gemini method %q is not one FreeLane serves; it serves generateContent, streamGenerateContent and countTokens", llm.Truncate(method, 40)), "")
		return
	}
	held, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	defer held.release()
	req, err := gemini.ParseRequestFor(llm.Chat, model, stream, held.data)
	if err != nil {
		writeBadRequest(w, gemini.Codec, err)
		return
	}
	s.serve(w, r, gemini.Codec, req)
}
