package gemini

import (
	"encoding/json"
	"errors"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// FuzzParseRequest feeds hostile bodies through everything a client's body
// reaches: parsing, rewriting with edits, decoding the conversation and
// encoding it again. Nothing may panic, a refusal must be a bad request,
// and every body written must be JSON.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		hello,
		`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}}]},{"parts":[{"functionResponse":{"name":"f","response":{"x":1}}}]}]}`,
		`{"contents":[{"parts":[{"inline_data":{"mime_type":"image/png","data":"AA=="}}]}],"generation_config":{"max_output_tokens":9}}`,
		`{"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"STRING"}}}}]}],"contents":[{"parts":[{"text":"x"}]}]}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":"12","thinkingConfig":{"thinkingBudget":-1}}}`,
		`{"contents":[]}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseRequestFor(llm.Chat, "m", true, body)
		if err != nil {
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("refusal is not a bad request: %v", err)
			}
			return
		}
		for _, e := range []llm.Edits{{}, {MaxOutput: 5}, {Drop: []string{"temperature", "tools", "response_format"}, MaxOutput: 1}} {
			if out := r.Body("m", e); !json.Valid(out) {
				t.Fatalf("Rewrite(%+v) is not JSON: %s", e, out)
			}
		}
		c, err := r.Conversation()
		if err != nil {
			return
		}
		if out, err := Codec.EncodeRequest(c, "m", llm.Edits{MaxOutput: 10}); err == nil && !json.Valid(out) {
			t.Fatalf("EncodeRequest is not JSON: %s", out)
		}
	})
}

// FuzzStreamDecoder feeds hostile chunks to a stream decoder, and what it
// decodes to an encoder. Errors must be ErrMalformed or *llm.Error.
func FuzzStreamDecoder(f *testing.F) {
	for _, s := range []string{
		chunk(`{"text":"hi"}`, ""),
		chunk(`{"text":"t","thought":true,"thoughtSignature":"c2ln"}`, "STOP"),
		chunk(`{"functionCall":{"name":"f","args":{"a":[1]}}}`, "STOP"),
		`{"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"x","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}`,
		`{"usageMetadata":{"promptTokenCount":1}}`,
		`{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := Codec.NewStreamDecoder()
		ds, end, err := dec.Decode(nil, nil, data)
		_, _, cerr := Codec.NewStreamDecoder().Classify(nil, data)
		for _, err := range []error{err, cerr} {
			var e *llm.Error
			if err != nil && err != protocol.ErrMalformed && !errors.As(err, &e) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
		}
		if end {
			t.Fatal("end set")
		}
		enc := Codec.NewStreamEncoder(defaultOptions)
		var evs []llm.Event
		for _, d := range ds {
			evs = enc.Encode(evs, d)
		}
		for _, ev := range enc.End(evs) {
			if !json.Valid(ev.Data) {
				t.Fatalf("encoded event is not JSON: %s", ev.Data)
			}
		}
		_, _ = Codec.DecodeResponse(data)
		_, _ = Codec.CheckAnswer(llm.Chat, data)
		_, _ = Codec.DecodeError(data)
	})
}
