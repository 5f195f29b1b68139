package gemini

import (
	"net/http"
	"net/url"
	"strings"

	"freelane/backend/llm"
)

// Codec is the dialect; it implements protocol.Codec and protocol.Wire.
var Codec codec

type codec struct{}

func (codec) Dialect() llm.Dialect { return llm.DialectGemini }

func (codec) ParseRequest(ep llm.Endpoint, body []byte) (*llm.Request, error) {
	return ParseRequest(ep, body)
}

// StreamEnd is nil: a Gemini stream ends with its connection, after the
// chunk that carries the finish reason.
func (codec) StreamEnd() []byte { return nil }

// EventName is "": Gemini's events have no names.
func (codec) EventName([]byte) string { return "" }

// Endpoints are the kinds of request FreeLane sends to the API.
func (codec) Endpoints() []llm.Endpoint { return []llm.Endpoint{llm.Chat} }

// Path is the method's path below a base URL such as
// https://generativelanguage.googleapis.com/v1beta. A model id written
// with its resource prefix ("models/gemini-2.5-flash", as the models list
// names them, or "tunedModels/...") keeps it instead of gaining a second
// one.
func (codec) Path(_ llm.Endpoint, model string, stream bool) string {
	collection := "models"
	for _, prefix := range []string{"models/", "tunedModels/"} {
		if rest, ok := strings.CutPrefix(model, prefix); ok {
			collection, model = strings.TrimSuffix(prefix, "/"), rest
			break
		}
	}
	path := "/" + collection + "/" + url.PathEscape(model)
	if stream {
		return path + ":" + methodStream + "?alt=sse"
	}
	return path + ":" + methodGenerate
}

// Header sets the API key; the API takes it in x-goog-api-key.
func (codec) Header(h http.Header, key string) {
	if key != "" {
		h.Set("x-goog-api-key", key)
	}
}
