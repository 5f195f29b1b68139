package gemini

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"freelane/backend/protocol"
)

// outbound is how Google's Generative Language API is called: the codec's
// wire and the paged GET /models list. The API sends no rate-limit
// headers; how long to wait after a refusal is in the error's RetryInfo,
// which Classify reads. Its preparation step is the explicit prompt cache
// (see NewExplicitCache).
var outbound = protocol.Outbound{
	Wire:        Codec,
	Models:      modelList{},
	NewPreparer: NewExplicitCache,
}

// modelList reads the API's list: GET /models, paged with nextPageToken.
// Ids lose the "models/" prefix, as requests name models without it.
type modelList struct{}

// listPage is the page size asked for: the API's largest.
const listPage = "1000"

func (modelList) Path() string { return "/models?" + url.Values{"pageSize": {listPage}}.Encode() }

// Header sets the key, which the API takes in x-goog-api-key (never in
// the URL, where it would be logged).
func (modelList) Header(h http.Header, key string) { Codec.Header(h, key) }

// RefusesKey reports the API's answer to an invalid or expired key: 400
// with reason API_KEY_INVALID (or another API_KEY_ reason), or words that
// say so.
func (modelList) RefusesKey(status int, body []byte) bool {
	return status == http.StatusBadRequest && protocol.SaysKeyInvalid(body)
}

// ReadPage reads a page: inputTokenLimit is the context window,
// outputTokenLimit the longest answer, thinking marks a reasoning model,
// and a model chats when its supportedGenerationMethods hold the method
// chat requests call.
func (modelList) ReadPage(body []byte) (protocol.ModelPage, error) {
	var doc struct {
		Models        []json.RawMessage `json:"models"`
		NextPageToken string            `json:"nextPageToken"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return protocol.ModelPage{}, err
	}
	page := protocol.ModelPage{Models: make([]protocol.ListedModel, len(doc.Models))}
	for i, raw := range doc.Models {
		var e struct {
			Name             string              `json:"name"`
			DisplayName      string              `json:"displayName"`
			InputTokenLimit  protocol.TokenCount `json:"inputTokenLimit"`
			OutputTokenLimit protocol.TokenCount `json:"outputTokenLimit"`
			Methods          []string            `json:"supportedGenerationMethods"`
			Thinking         bool                `json:"thinking"`
		}
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		var caps protocol.Capabilities
		if e.Thinking {
			caps.Add("reasoning")
		}
		page.Models[i] = protocol.ListedModel{
			ID:           strings.TrimPrefix(e.Name, "models/"),
			Name:         e.DisplayName,
			Context:      int(e.InputTokenLimit),
			MaxOutput:    int(e.OutputTokenLimit),
			Capabilities: caps.Sorted(),
			Chat:         slices.Contains(e.Methods, methodGenerate),
		}
	}
	if doc.NextPageToken != "" {
		page.Next = "?" + url.Values{"pageSize": {listPage}, "pageToken": {doc.NextPageToken}}.Encode()
	}
	return page, nil
}
