package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// outbound is how OpenAI-compatible servers are called: the codec's wire,
// their GET /models list and OpenAI's rate-limit headers, which Groq,
// Together, OpenRouter and most other compatible servers send too.
var outbound = protocol.Outbound{
	Wire:   Codec,
	Models: modelList{},
	RateLimits: llm.RateHeaders{
		Requests: llm.RateHeader{
			Limit:     "X-Ratelimit-Limit-Requests",
			Remaining: "X-Ratelimit-Remaining-Requests",
			Reset:     "X-Ratelimit-Reset-Requests",
		},
		Tokens: llm.RateHeader{
			Limit:     "X-Ratelimit-Limit-Tokens",
			Remaining: "X-Ratelimit-Remaining-Tokens",
			Reset:     "X-Ratelimit-Reset-Tokens",
		},
		// Some servers send one reset for all their limits, as seconds or
		// as a Unix time.
		Resets: []string{"X-Ratelimit-Reset"},
		// Durations such as "1m30s" and "250ms", or seconds.
		Format: llm.ResetWait,
	},
}

// modelList reads an OpenAI-style list: GET /models answering
// {"data": [...]} or, as Together answers, a bare array, with the extra
// fields of OpenRouter, Groq, Mistral, Together and vLLM-like servers.
// Pages continue while the answer gives a links.next (OpenRouter's offset
// paging).
type modelList struct{}

func (modelList) Path() string { return "/models" }

// Header sets the bearer key, when there is one.
func (modelList) Header(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// RefusesKey reports a 400 that says the key is not valid, as Gemini's
// OpenAI-compatible endpoint answers a bad key.
func (modelList) RefusesKey(status int, body []byte) bool {
	return status == http.StatusBadRequest && protocol.SaysKeyInvalid(body)
}

var errNoData = errors.New("no data array")

func (modelList) ReadPage(body []byte) (protocol.ModelPage, error) {
	var doc struct {
		Data  []json.RawMessage `json:"data"`
		Links struct {
			Next string `json:"next"`
		} `json:"links"`
	}
	var err error
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		err = json.Unmarshal(t, &doc.Data)
	} else {
		err = json.Unmarshal(body, &doc)
		if err == nil && doc.Data == nil {
			err = errNoData
		}
	}
	if err != nil {
		return protocol.ModelPage{}, err
	}
	page := protocol.ModelPage{Models: make([]protocol.ListedModel, len(doc.Data))}
	for i, raw := range doc.Data {
		var e listEntry
		if json.Unmarshal(raw, &e) == nil {
			page.Models[i] = e.listed()
		}
	}
	if len(doc.Data) > 0 {
		page.Next = doc.Links.Next
	}
	return page, nil
}

// listEntry holds the fields OpenAI-compatible lists add to the id. The
// numbers are lenient: one entry's odd field must not lose the whole list.
type listEntry struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	// context_length: OpenRouter, Together, SambaNova.
	ContextLength protocol.TokenCount `json:"context_length"`
	// context_window: Groq.
	ContextWindow protocol.TokenCount `json:"context_window"`
	// max_context_length: Mistral.
	MaxContextLength protocol.TokenCount `json:"max_context_length"`
	// max_model_len: vLLM and servers like it.
	MaxModelLen protocol.TokenCount `json:"max_model_len"`
	// max_completion_tokens: Groq, SambaNova.
	MaxCompletionTokens protocol.TokenCount `json:"max_completion_tokens"`
	TopProvider         struct {
		ContextLength       protocol.TokenCount `json:"context_length"`
		MaxCompletionTokens protocol.TokenCount `json:"max_completion_tokens"`
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

// listed is the entry in the neutral listing. The context window comes
// from context_length (top_provider.context_length when the model's own is
// missing), context_window, max_context_length or max_model_len, the
// longest answer from top_provider.max_completion_tokens or
// max_completion_tokens. Capabilities come from OpenRouter's
// supported_parameters (tools, tool_choice: tools; response_format,
// structured_outputs: json; reasoning, include_reasoning: reasoning), its
// architecture.input_modalities (image: vision) and a capabilities object
// or array. Prices are read as OpenRouter writes them (see
// perTokenPrices).
func (e *listEntry) listed() protocol.ListedModel {
	if e.Active != nil && !*e.Active {
		return protocol.ListedModel{}
	}
	m := protocol.ListedModel{
		ID:        e.ID,
		Name:      cmp.Or(e.DisplayName, e.Name),
		Context:   int(protocol.FirstCount(e.ContextLength, e.ContextWindow, e.MaxContextLength, e.MaxModelLen, e.TopProvider.ContextLength)),
		MaxOutput: int(protocol.FirstCount(e.TopProvider.MaxCompletionTokens, e.MaxCompletionTokens)),
	}
	if in, out, ok := perTokenPrices(e.Pricing); ok {
		m.Priced = true
		m.Price.Input, m.Price.Output = perMillion(in), perMillion(out)
		// OpenRouter serves a model at no cost, under the free tier's
		// daily limit, only when both prices are "0" and the id ends in
		// ":free"; a "0"-priced id without the suffix is a promotion that
		// bills once it ends, and is not free.
		m.Free = isZero(in) && isZero(out) && strings.HasSuffix(e.ID, ":free")
	}
	var caps protocol.Capabilities
	for _, p := range e.SupportedParameters {
		switch p {
		case "tools", "tool_choice":
			caps.Add("tools")
		case "response_format", "structured_outputs":
			caps.Add("json")
		case "reasoning", "include_reasoning":
			caps.Add("reasoning")
		}
	}
	if slices.Contains(e.Architecture.InputModalities, "image") {
		caps.Add("vision")
	}
	chat := caps.Read(e.Capabilities)
	m.Capabilities = caps.Sorted()
	m.Chat = chat && listedChat(e)
	return m
}

// listedChat reports whether an entry is a chat model: true unless the
// entry says otherwise (output_modalities without text, Mistral's
// completion_chat false, a type such as "embedding") or the id names a
// non-chat kind of model by one of its words: embed(ding), whisper, tts,
// transcribe, moderation, rerank, dall-e or gpt-image.
func listedChat(e *listEntry) bool {
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
// per million, absent pricing) or a negative price, which OpenRouter uses
// for routers whose price depends on the model picked, is not read.
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
