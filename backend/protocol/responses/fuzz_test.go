package responses

import (
	"encoding/json"
	"errors"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"s","input":[{"role":"developer","content":"d"},{"type":"message","role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"freelane.reasoning.v1.e30="}],"tools":[{"type":"function","name":"f","parameters":{}},{"type":"web_search"}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","schema":{}}},"reasoning":{"effort":"high"},"store":false,"stream":true,"metadata":{"a":"b"}}`,
		`{"model":"m","input":[{"type":"compaction","encrypted_content":"freelane.compaction.v1.eA=="},{"type":"custom_tool_call","call_id":"c","name":"p","input":"x"},{"type":"custom_tool_call_output","call_id":"c","output":"y"}],"previous_response_id":"resp_1"}`,
		`{"model":"m","previous_response_id":"resp_1"}`,
		`[]`, `{"model":`, ``, `{"model":"m","input":[1]}`,
	} {
		f.Add([]byte(s))
	}
	history := []byte(`[{"type":"message","role":"user","content":"earlier"},{"type":"function_call","call_id":"c0","name":"f","arguments":"{}"}]`)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, parse := range []func([]byte) (*llm.Request, error){
			func(b []byte) (*llm.Request, error) { return Codec.ParseRequest(llm.Chat, b) }, ParseCompact,
		} {
			r, err := parse(body)
			if err != nil {
				var bad *llm.BadRequestError
				if !errors.As(err, &bad) {
					t.Fatalf("not a BadRequestError: %v", err)
				}
				continue
			}
			if len(r.Model) > llm.MaxModelName {
				t.Fatalf("model of %d bytes accepted", len(r.Model))
			}
			src, _ := SourceOf(r)
			if len(src.PreviousResponseID()) > MaxIDLength {
				t.Fatalf("id of %d bytes accepted", len(src.PreviousResponseID()))
			}
			if items := src.InputItems(); !json.Valid(items) || items[0] != '[' {
				t.Fatalf("input items %s", items)
			}
			if out := r.Body("x", llm.Edits{}); !json.Valid(out) {
				t.Fatalf("Rewrite is not JSON: %s", out)
			}
			if _, err := r.Conversation(); err != nil {
				var bad *llm.BadRequestError
				if !errors.As(err, &bad) {
					t.Fatalf("Conversation: %v", err)
				}
			}
			if cont, err := WithHistory(r, history); err == nil {
				if _, err := cont.Conversation(); err != nil {
					var bad *llm.BadRequestError
					if !errors.As(err, &bad) {
						t.Fatalf("continued Conversation: %v", err)
					}
				}
			}
		}
	})
}

// FuzzStreamEncoder feeds the encoder deltas made from the input, in any
// order (arguments before their call, calls never started or ended, text
// between a call's fragments), and checks that every event is JSON with
// the next sequence number, that the stream ends with one terminal event,
// and that the stream decoder reads it all back.
func FuzzStreamEncoder(f *testing.F) {
	f.Add([]byte{1, 'a', 2, 'b', 3, 0, 4, 0, 5, 0, 6, 0, 7, 0})
	f.Add([]byte{4, 1, 3, 1, 1, 'x', 2, 0, 5, 2, 6, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		enc := Codec.NewStreamEncoder(protocol.ResponseOptions{Model: "m"})
		var evs []llm.Event
		for i := 0; i+1 < len(in); i += 2 {
			k, v := in[i]%8, in[i+1]
			s := string(rune('a' + v%26))
			switch k {
			case 0:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaText, Text: s})
			case 1:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaReasoning, Text: s, Signature: string(s[0 : v%2])})
			case 2:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaReasoning, Redacted: s})
			case 3:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaToolStart, Index: int(v % 4), ID: s, Name: s})
			case 4:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaToolArgs, Index: int(v % 4), Text: `"` + s})
			case 5:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaToolEnd, Index: int(v % 4)})
			case 6:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaFinish, Finish: []llm.FinishReason{llm.FinishStop, llm.FinishLength, llm.FinishToolCalls, llm.FinishContentFilter}[v%4]})
			case 7:
				evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: int(v), CompletionTokens: 1}})
			}
		}
		evs = enc.End(evs)
		evs = enc.End(evs) // a second End writes nothing
		terminal := 0
		for i, ev := range evs {
			var head struct {
				Type           string `json:"type"`
				SequenceNumber int    `json:"sequence_number"`
			}
			if err := json.Unmarshal(ev.Data, &head); err != nil || head.SequenceNumber != i || Codec.EventName(ev.Data) != head.Type {
				t.Fatalf("event %d: %s", i, ev.Data)
			}
			if head.Type == "response.completed" || head.Type == "response.incomplete" {
				terminal++
				if i != len(evs)-1 {
					t.Fatalf("terminal event %d of %d", i, len(evs))
				}
			}
		}
		if terminal != 1 {
			t.Fatalf("%d terminal events", terminal)
		}
		// The decoder reads every event back, and only the last ends the
		// stream.
		dec := Codec.NewStreamDecoder()
		for i, ev := range evs {
			_, end, err := dec.Decode(nil, []byte(Codec.EventName(ev.Data)), ev.Data)
			if err != nil || end != (i == len(evs)-1) {
				t.Fatalf("decoding event %d (end %v): %v: %s", i, end, err, ev.Data)
			}
		}
	})
}
