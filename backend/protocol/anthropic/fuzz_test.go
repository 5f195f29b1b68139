package anthropic

import (
	"encoding/json"
	"errors"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":9},"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}},{"type":"thinking","thinking":"x","signature":"s"}]}]}`,
		`{"model":"\u00e9","max_tokens":1,"system":[{"type":"text","text":"s"}],"messages":[{"role":"system","content":"x"}]}`,
		`[]`, `{"model":`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Codec.ParseRequest(llm.Chat, body)
		if err != nil {
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("not a BadRequestError: %v", err)
			}
			return
		}
		if len(r.Model) > llm.MaxModelName {
			t.Fatalf("model of %d bytes accepted", len(r.Model))
		}
		for _, e := range []llm.Edits{{}, {MaxOutput: 1}, {Drop: []string{"stop", "parallel_tool_calls", "reasoning_effort"}, MaxOutput: 2000}} {
			if out := r.Body("x", e); !json.Valid(out) {
				t.Fatalf("Rewrite(%+v) is not JSON: %s", e, out)
			}
		}
		c, err := r.Conversation()
		if err != nil {
			return
		}
		if _, err := Codec.EncodeRequest(c, "x", llm.Edits{MaxOutput: 3000}); err != nil {
			var bad *llm.BadRequestError
			if !errors.As(err, &bad) {
				t.Fatalf("EncodeRequest: %v", err)
			}
		}
	})
}

func FuzzStreamDecoder(f *testing.F) {
	for _, s := range []string{
		`{"type":"message_start","message":{"usage":{"input_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"a":1}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"x"}}`,
		`{"type":"message_stop"}`, `nope`,
	} {
		f.Add([]byte("event"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, name, data []byte) {
		dec := Codec.NewStreamDecoder()
		enc := Codec.NewStreamEncoder(protocol.ResponseOptions{})
		// The same event twice: a decoder keeps state between events.
		for range 2 {
			out, _, err := dec.Decode(nil, name, data)
			var e *llm.Error
			if err != nil && !errors.Is(err, protocol.ErrMalformed) && !errors.As(err, &e) {
				t.Fatalf("unexpected error %v", err)
			}
			if _, _, err := dec.Classify(name, data); err != nil && !errors.Is(err, protocol.ErrMalformed) && !errors.As(err, &e) {
				t.Fatalf("unexpected Classify error %v", err)
			}
			var evs []llm.Event
			for _, d := range out {
				evs = enc.Encode(evs, d)
			}
			for _, ev := range evs {
				if !json.Valid(ev.Data) {
					t.Fatalf("encoder wrote %s", ev.Data)
				}
			}
		}
		for _, ev := range enc.End(nil) {
			if !json.Valid(ev.Data) {
				t.Fatalf("encoder wrote %s", ev.Data)
			}
		}
	})
}
