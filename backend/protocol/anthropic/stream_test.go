package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func TestClassifyEvents(t *testing.T) {
	dec := Codec.NewStreamDecoder()
	for _, c := range []struct {
		name, data string
		kind       llm.EventKind
		prompt     int
		completion int
		usage      bool
	}{
		{"message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":1}}}`, llm.Held, 15, 1, true},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, llm.Held, 0, 0, false},
		{"ping", `{"type": "ping"}`, llm.Held, 0, 0, false},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, llm.Content, 0, 0, false},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`, llm.Held, 0, 0, false},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`, llm.Content, 0, 0, false},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}`, llm.Held, 0, 0, false},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`, llm.Content, 0, 0, false},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}`, llm.Content, 0, 0, false},
		{"content_block_stop", `{"type":"content_block_stop","index":1}`, llm.Held, 0, 0, false},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`, llm.Held, 15, 9, true},
		{"whatever", `{"type":"message_stop"}`, llm.Done, 0, 0, false},
	} {
		kind, u, err := dec.Classify([]byte(c.name), []byte(c.data))
		if err != nil || kind != c.kind || (u != nil) != c.usage {
			t.Errorf("%s: kind %d usage %v err %v, want %d", c.data, kind, u, err, c.kind)
			continue
		}
		if u != nil && (u.PromptTokens != c.prompt || u.CompletionTokens != c.completion) {
			t.Errorf("%s: usage %+v", c.data, u)
		}
	}
	_, _, err := dec.Classify([]byte("error"), []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`))
	var e *llm.Error
	if !errors.As(err, &e) || e.Class != llm.RateLimited || e.Status != 200 || e.Dialect != llm.DialectAnthropic {
		t.Errorf("error event: %v", err)
	}
	if _, _, err := dec.Classify(nil, []byte(`{"type":`)); !errors.Is(err, protocol.ErrMalformed) {
		t.Errorf("malformed: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		data  string
		class llm.Class
	}{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.Transient},
		{`{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`, llm.RateLimited},
		{`{"type":"error","error":{"type":"api_error","message":"You exceeded your current quota"}}`, llm.RateLimited},
		{`{"type":"error","error":{"type":"api_error","message":"boom"}}`, llm.Transient},
		{`{"type":"error"}`, llm.Transient},
	} {
		_, _, err := Codec.NewStreamDecoder().Decode(nil, []byte("error"), []byte(c.data))
		var e *llm.Error
		if !errors.As(err, &e) || e.Class != c.class || !strings.HasPrefix(e.Message, "upstream error mid-stream: ") {
			t.Errorf("%s: %v", c.data, err)
		}
	}
	for _, bad := range []string{``, `nope`, `{"type":"content_block_start","index":0}`, `{"type":"content_block_delta","index":0}`, `{"type":"content_block_stop","index":-1}`, `[]`} {
		if _, _, err := Codec.NewStreamDecoder().Decode(nil, nil, []byte(bad)); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
	// The event name stands in for a missing type.
	_, end, err := Codec.NewStreamDecoder().Decode(nil, []byte("message_stop"), []byte(`{}`))
	if !end || err != nil {
		t.Errorf("message_stop by name: %v %v", end, err)
	}
}

// The encoder writes a complete, well-formed stream whatever it is fed.
func TestEncoderRobust(t *testing.T) {
	for _, c := range []struct {
		name   string
		deltas []llm.Delta
		names  string
		stop   string
	}{
		{"nothing", nil, "message_start message_delta", "end_turn"},
		{"usage before finish", []llm.Delta{{Kind: llm.DeltaText, Text: "a"}, {Kind: llm.DeltaUsage, Usage: &llm.Usage{CompletionTokens: 2}}, {Kind: llm.DeltaFinish, Finish: llm.FinishLength}},
			"message_start content_block_start content_block_delta content_block_stop message_delta", "max_tokens"},
		{"tool calls without finish", []llm.Delta{{Kind: llm.DeltaText, Text: "a"}, {Kind: llm.DeltaToolStart, ID: "c", Name: "f"}, {Kind: llm.DeltaToolArgs, Text: "{}"}},
			"message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta", "tool_use"},
		{"empty text skipped", []llm.Delta{{Kind: llm.DeltaText}, {Kind: llm.DeltaFinish, Finish: llm.FinishStop}},
			"message_start message_delta", "end_turn"},
		{"redacted then text", []llm.Delta{{Kind: llm.DeltaReasoning, Redacted: "xx"}, {Kind: llm.DeltaText, Text: "a"}, {Kind: llm.DeltaFinish, Finish: llm.FinishContentFilter}},
			"message_start content_block_start content_block_stop content_block_start content_block_delta content_block_stop message_delta", "refusal"},
		{"tool end closes", []llm.Delta{{Kind: llm.DeltaToolStart, Index: 0, Name: "f"}, {Kind: llm.DeltaToolEnd, Index: 0}, {Kind: llm.DeltaToolEnd, Index: 0}},
			"message_start content_block_start content_block_stop message_delta", "tool_use"},
	} {
		t.Run(c.name, func(t *testing.T) {
			enc := Codec.NewStreamEncoder(protocol.ResponseOptions{Model: "m"})
			var evs []llm.Event
			for _, d := range c.deltas {
				evs = enc.Encode(evs, d)
			}
			evs = enc.End(evs)
			evs = enc.End(evs) // a second End adds nothing
			evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaText, Text: "late"})
			var names []string
			for _, ev := range evs {
				names = append(names, Codec.EventName(ev.Data))
				var typ struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal(ev.Data, &typ); err != nil || typ.Type != Codec.EventName(ev.Data) {
					t.Errorf("event %s carries %s", Codec.EventName(ev.Data), ev.Data)
				}
				data := string(ev.Data)
				wantKind := llm.Held
				switch {
				case strings.Contains(data, `"text_delta"`), strings.Contains(data, `"input_json_delta"`),
					Codec.EventName(ev.Data) == "content_block_start" && strings.Contains(data, `"tool_use"`),
					strings.Contains(data, `"redacted_thinking"`):
					wantKind = llm.Content
				}
				if ev.Kind != wantKind {
					t.Errorf("%s: kind %d, want %d", ev.Data, ev.Kind, wantKind)
				}
			}
			if got := strings.Join(names, " "); got != c.names {
				t.Errorf("events %s, want %s", got, c.names)
			}
			last := evs[len(evs)-1]
			if !strings.Contains(string(last.Data), `"stop_reason":"`+c.stop+`"`) {
				t.Errorf("last event %s, want stop %s", last.Data, c.stop)
			}
			if !strings.HasPrefix(string(evs[0].Data), `{"type":"message_start","message":{"id":"msg_`) {
				t.Errorf("first event %s", evs[0].Data)
			}
		})
	}
}
