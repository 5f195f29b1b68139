package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// outbound is how Anthropic's API, and the vendors that offer an
// Anthropic-compatible endpoint, are called: the codec's wire, the paged
// GET /models list and Anthropic's rate-limit headers.
var outbound = protocol.Outbound{
	Wire:       Codec,
	Models:     modelList{},
	RateLimits: rateLimits,
}

// rateLimits are the rate-limit headers Anthropic sends. Every reset is
// an RFC 3339 time; the limits on input and output tokens apart are read
// only for the wait after a refusal.
var rateLimits = llm.RateHeaders{
	Requests: llm.RateHeader{
		Limit:     "Anthropic-Ratelimit-Requests-Limit",
		Remaining: "Anthropic-Ratelimit-Requests-Remaining",
		Reset:     "Anthropic-Ratelimit-Requests-Reset",
	},
	Tokens: llm.RateHeader{
		Limit:     "Anthropic-Ratelimit-Tokens-Limit",
		Remaining: "Anthropic-Ratelimit-Tokens-Remaining",
		Reset:     "Anthropic-Ratelimit-Tokens-Reset",
	},
	Resets: []string{
		"Anthropic-Ratelimit-Input-Tokens-Reset",
		"Anthropic-Ratelimit-Output-Tokens-Reset",
	},
	Format: llm.ResetTime,
}

// authorize sets the key and the API version on a request; a version
// already set (by the backend's configuration) is left alone.
func authorize(h http.Header, key string) {
	if key != "" {
		h.Set("x-api-key", key)
	}
	if h.Get("anthropic-version") == "" {
		h.Set("anthropic-version", Version)
	}
}

// modelList reads Anthropic's list: GET /models, paged with has_more and
// last_id. Every model it lists chats.
type modelList struct{}

// listPage is the page size asked for: the API's largest.
const listPage = "1000"

func (modelList) Path() string { return "/models?" + url.Values{"limit": {listPage}}.Encode() }

func (modelList) Header(h http.Header, key string) { authorize(h, key) }

// RefusesKey reports a 400 that says the key is not valid; Anthropic
// itself answers a bad key with 401, which always refuses it, but servers
// offering its API may not.
func (modelList) RefusesKey(status int, body []byte) bool {
	return status == http.StatusBadRequest && protocol.SaysKeyInvalid(body)
}

var errNoData = errors.New("no data array")

// ReadPage reads a page: max_input_tokens is the context window,
// max_tokens the longest answer, and a capabilities object of
// {"supported": true} keys gives the capabilities.
func (modelList) ReadPage(body []byte) (protocol.ModelPage, error) {
	var doc struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
		LastID  string            `json:"last_id"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return protocol.ModelPage{}, err
	}
	if doc.Data == nil {
		return protocol.ModelPage{}, errNoData
	}
	page := protocol.ModelPage{Models: make([]protocol.ListedModel, len(doc.Data))}
	for i, raw := range doc.Data {
		var e struct {
			ID             string              `json:"id"`
			DisplayName    string              `json:"display_name"`
			MaxInputTokens protocol.TokenCount `json:"max_input_tokens"`
			MaxTokens      protocol.TokenCount `json:"max_tokens"`
			Capabilities   json.RawMessage     `json:"capabilities"`
		}
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		var caps protocol.Capabilities
		caps.Read(e.Capabilities)
		page.Models[i] = protocol.ListedModel{
			ID:           e.ID,
			Name:         e.DisplayName,
			Context:      int(e.MaxInputTokens),
			MaxOutput:    int(e.MaxTokens),
			Capabilities: caps.Sorted(),
			Chat:         true,
		}
	}
	if doc.HasMore && doc.LastID != "" && len(doc.Data) > 0 {
		page.Next = "?" + url.Values{"limit": {listPage}, "after_id": {doc.LastID}}.Encode()
	}
	return page, nil
}
