package responses

import (
	"encoding/json"
	"reflect"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// What the encoder writes, the decoder reads back: answers, streams and
// requests come through a round trip with nothing lost that the dialect
// can say.

func TestAnswerRoundTrip(t *testing.T) {
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			b, err := Codec.EncodeResponse(a, protocol.ResponseOptions{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Codec.DecodeResponse(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text() != a.Text() || got.Finish != a.Finish {
				t.Errorf("text %q finish %q, want %q %q", got.Text(), got.Finish, a.Text(), a.Finish)
			}
			if !reflect.DeepEqual(calls(got.Parts), calls(a.Parts)) {
				t.Errorf("calls %+v, want %+v", calls(got.Parts), calls(a.Parts))
			}
			for i, p := range reasoning(a.Parts) {
				if r := reasoning(got.Parts); len(r) <= i || r[i] != p {
					t.Errorf("reasoning %+v, want %+v", r, reasoning(a.Parts))
				}
			}
			if a.Usage != nil && (got.Usage == nil || *got.Usage != *a.Usage) {
				t.Errorf("usage %+v, want %+v", got.Usage, a.Usage)
			}
		})
	}
}

// calls lists the tool calls of parts, with the ids FreeLane makes up for
// calls that had none blanked.
func calls(parts []llm.Part) []llm.ToolCall {
	var out []llm.ToolCall
	for _, p := range parts {
		if p.Kind == llm.PartToolCall {
			tc := *p.ToolCall
			if ids.MatchString(tc.ID) || tc.ID == "" {
				tc.ID = ""
			}
			tc.Arguments = orEmptyObject(tc.Arguments)
			out = append(out, tc)
		}
	}
	return out
}

func reasoning(parts []llm.Part) []llm.Part {
	var out []llm.Part
	for _, p := range parts {
		if p.Kind == llm.PartReasoning {
			out = append(out, p)
		}
	}
	return out
}

func TestStreamRoundTrip(t *testing.T) {
	for name, ds := range streams {
		t.Run(name, func(t *testing.T) {
			first := encodeAll(ds)
			dec, cls := Codec.NewStreamDecoder(), Codec.NewStreamDecoder()
			var back []llm.Delta
			ended := false
			for _, ev := range first {
				kind, _, err := cls.Classify([]byte(Codec.EventName(ev.Data)), ev.Data)
				if err != nil {
					t.Fatal(err)
				}
				if (kind == llm.Content) != (ev.Kind == llm.Content) && Codec.EventName(ev.Data) != evItemAdded {
					t.Errorf("%s classified %v, written as %v", ev.Data, kind, ev.Kind)
				}
				var end bool
				back, end, err = dec.Decode(back, []byte(Codec.EventName(ev.Data)), ev.Data)
				if err != nil {
					t.Fatal(err)
				}
				ended = ended || end
			}
			if !ended {
				t.Fatal("the stream did not end")
			}
			second := encodeAll(back)
			if a, b := string(sse(first)), string(sse(second)); a != b {
				t.Errorf("re-encoded stream differs:\n%s\n---\n%s", a, b)
			}
		})
	}
}

func encodeAll(ds []llm.Delta) []llm.Event {
	enc := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: "resp_rt", Model: "m", Created: 1})
	var evs []llm.Event
	for _, d := range ds {
		evs = enc.Encode(evs, d)
	}
	return enc.End(evs)
}

func TestRequestRoundTrip(t *testing.T) {
	temp := 0.5
	no := false
	c := &llm.Conversation{
		System: []llm.Part{{Kind: llm.PartText, Text: "Be brief."}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "Weather?"}, {Kind: llm.PartImage, Image: &llm.Image{MediaType: "image/png", Data: "AA=="}}}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: "Checking."},
				{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
			{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "call_1", Name: "get_weather",
				Content: []llm.Part{{Kind: llm.PartText, Text: "18C"}}}}}},
		},
		Tools:             []llm.Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`), Strict: true}},
		ToolChoice:        &llm.ToolChoice{Mode: llm.ToolNamed, Name: "get_weather"},
		MaxOutput:         100,
		Temperature:       &temp,
		Reasoning:         &llm.Reasoning{Effort: "low"},
		ResponseFormat:    &llm.ResponseFormat{Type: "json_schema", Name: "w", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		ParallelToolCalls: &no,
		Metadata:          map[string]string{"k": "v"},
		Stream:            true,
		IncludeUsage:      true,
	}
	body, err := Codec.EncodeRequest(c, "m", llm.Edits{MaxOutput: 50})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Codec.ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	got, err := r.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	want := *c
	want.MaxOutput = 50
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("round trip\n got %+v\nwant %+v\nbody %s", got, &want, body)
	}
	dropped, err := Codec.EncodeRequest(c, "m", llm.Edits{Drop: []string{"max_tokens", "reasoning_effort", "parallel_tool_calls"}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(dropped, &m)
	for _, k := range []string{"max_output_tokens", "reasoning", "parallel_tool_calls"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s not dropped: %s", k, dropped)
		}
	}
}
