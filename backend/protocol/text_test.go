package protocol_test

import (
	"testing"

	"freelane/backend/dialects"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// An answer of text, reasoning and a tool call, as the neutral model
// holds it and as a stream of deltas.
var (
	answer = &llm.Answer{ID: "a1", Model: "m", Finish: llm.FinishToolCalls, Parts: []llm.Part{
		{Kind: llm.PartReasoning, Text: "The user wants the weather."},
		{Kind: llm.PartText, Text: "Let me check <now> & then."},
		{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
	}}
	deltas = []llm.Delta{
		{Kind: llm.DeltaReasoning, Text: "The user wants "},
		{Kind: llm.DeltaReasoning, Text: "the weather."},
		{Kind: llm.DeltaText, Text: "Let me check "},
		{Kind: llm.DeltaText, Text: "<now> & then."},
		{Kind: llm.DeltaToolStart, Index: 0, ID: "call_1", Name: "get_weather"},
		{Kind: llm.DeltaToolArgs, Index: 0, Text: `{"city":`},
		{Kind: llm.DeltaToolArgs, Index: 0, Text: `"Paris"}`},
		{Kind: llm.DeltaToolEnd, Index: 0},
		{Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls},
	}
)

// TestAnswerTextIsTheSameInEveryDialect writes the answer in each dialect,
// as a client of it gets it, and reads its text back for the estimate: the
// text the model generated, whatever the dialect's field names.
func TestAnswerTextIsTheSameInEveryDialect(t *testing.T) {
	want := string(answer.AppendText(nil))
	reg := dialects.Registry()
	for _, d := range reg.Dialects() {
		c := d.Codec
		body, err := c.EncodeResponse(answer, protocol.ResponseOptions{ID: "x", Model: "m"})
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		if got := string(reg.AnswerText(nil, d.Name(), false, body)); got != want {
			t.Errorf("%s answer: text %q, want %q", d.Name(), got, want)
		}
		// The router keeps a stream's content events.
		enc := c.NewStreamEncoder(protocol.ResponseOptions{ID: "x", Model: "m"})
		var evs []llm.Event
		for _, dl := range deltas {
			evs = enc.Encode(evs, dl)
		}
		evs = enc.End(evs)
		var kept []byte
		for _, ev := range evs {
			if ev.Kind == llm.Content {
				kept = llm.AppendEvent(kept, ev.Data)
			}
		}
		if got := string(reg.AnswerText(nil, d.Name(), true, kept)); got != want {
			t.Errorf("%s stream: text %q, want %q", d.Name(), got, want)
		}
	}
	if got := reg.AnswerText(nil, "no-such-dialect", false, []byte(`{}`)); len(got) != 0 {
		t.Errorf("unknown dialect: %q", got)
	}
}

// A prompt of 1100 tokens, 1000 read from a cache and 20 written to it.
var cachedUsage = llm.Usage{PromptTokens: 1100, CompletionTokens: 5, TotalTokens: 1105, CacheReadTokens: 1000, CacheWriteTokens: 20}

// Each dialect's answer and stream reporting cache reads, and the usage
// the neutral model holds of it: prompt tokens counting the cached ones.
var cacheCases = []struct {
	dialect llm.Dialect
	answer  string
	stream  []string
	want    llm.Usage
}{
	{llm.DialectOpenAI,
		`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1100,"completion_tokens":5,"total_tokens":1105,"prompt_tokens_details":{"cached_tokens":1000,"audio_tokens":0}}}`,
		[]string{
			`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1100,"completion_tokens":5,"total_tokens":1105,"prompt_tokens_details":{"cached_tokens":1000}}}`,
		},
		llm.Usage{PromptTokens: 1100, CompletionTokens: 5, TotalTokens: 1105, CacheReadTokens: 1000}},
	{llm.DialectResponses,
		`{"id":"resp_1","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":{"input_tokens":1100,"input_tokens_details":{"cached_tokens":1000},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1105}}`,
		[]string{
			`{"type":"response.output_text.delta","item_id":"m1","output_index":0,"content_index":0,"delta":"hi"}`,
			`{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","model":"m","output":[],"usage":{"input_tokens":1100,"input_tokens_details":{"cached_tokens":1000},"output_tokens":5,"total_tokens":1105}}}`,
		},
		llm.Usage{PromptTokens: 1100, CompletionTokens: 5, TotalTokens: 1105, CacheReadTokens: 1000}},
	{llm.DialectAnthropic,
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":80,"cache_creation_input_tokens":20,"cache_read_input_tokens":1000,"output_tokens":5}}`,
		[]string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":80,"cache_creation_input_tokens":20,"cache_read_input_tokens":1000,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
			`{"type":"content_block_stop","index":0}`,
			// message_delta does not repeat the input counts.
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
			`{"type":"message_stop"}`,
		},
		cachedUsage},
	{llm.DialectGemini,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1100,"candidatesTokenCount":5,"totalTokenCount":1105,"cachedContentTokenCount":1000},"modelVersion":"m"}`,
		[]string{
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}],"usageMetadata":{"promptTokenCount":1100,"totalTokenCount":1100,"cachedContentTokenCount":1000}}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1100,"candidatesTokenCount":5,"totalTokenCount":1105,"cachedContentTokenCount":1000}}`,
		},
		llm.Usage{PromptTokens: 1100, CompletionTokens: 5, TotalTokens: 1105, CacheReadTokens: 1000}},
}

// lastUsage decodes a stream and returns the last usage it reported, and
// the one Classify reports when it is relayed.
func lastUsage(t *testing.T, c protocol.Codec, events []string) (decoded, relayed llm.Usage) {
	t.Helper()
	dec, rel := c.NewStreamDecoder(), c.NewStreamDecoder()
	for _, ev := range events {
		name := []byte(c.EventName([]byte(ev)))
		ds, _, err := dec.Decode(nil, name, []byte(ev))
		if err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		for _, d := range ds {
			if d.Kind == llm.DeltaUsage && d.Usage != nil {
				decoded = *d.Usage
			}
		}
		_, u, err := rel.Classify(name, []byte(ev))
		if err != nil {
			t.Fatalf("classify %s: %v", ev, err)
		}
		if u != nil {
			relayed = *u
		}
	}
	return decoded, relayed
}

// TestCachedPromptTokensInEveryCodec: each dialect's decoders read its
// cache counts into the neutral usage, answers and streams, relayed and
// translated; each encoder writes them back in its own words, so a
// neutral usage comes back unchanged from a round trip.
func TestCachedPromptTokensInEveryCodec(t *testing.T) {
	reg := dialects.Registry()
	for _, tc := range cacheCases {
		c, _ := reg.Codec(tc.dialect)
		a, err := c.DecodeResponse([]byte(tc.answer))
		if err != nil {
			t.Fatalf("%s: %v", tc.dialect, err)
		}
		if a.Usage == nil || *a.Usage != tc.want {
			t.Errorf("%s answer: usage %+v, want %+v", tc.dialect, a.Usage, tc.want)
		}
		if dec, rel := lastUsage(t, c, tc.stream); dec != tc.want || rel != tc.want {
			t.Errorf("%s stream: decoded %+v, relayed %+v, want %+v", tc.dialect, dec, rel, tc.want)
		}

		// Back: the encoders write what the dialect can say of it (only
		// Anthropic counts cache writes), and the decoders read it again.
		want := cachedUsage
		if tc.dialect != llm.DialectAnthropic {
			want.CacheWriteTokens = 0
		}
		u := cachedUsage
		body, err := c.EncodeResponse(&llm.Answer{Parts: []llm.Part{{Kind: llm.PartText, Text: "hi"}}, Usage: &u}, protocol.ResponseOptions{ID: "x", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if back, err := c.DecodeResponse(body); err != nil || back.Usage == nil || *back.Usage != want {
			t.Errorf("%s answer round trip: %+v (%v) from %s", tc.dialect, back.Usage, err, body)
		}
		enc := c.NewStreamEncoder(protocol.ResponseOptions{ID: "x", Model: "m"})
		evs := enc.Encode(nil, llm.Delta{Kind: llm.DeltaText, Text: "hi"})
		evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishStop})
		evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaUsage, Usage: &u})
		evs = enc.End(evs)
		var wire []string
		for _, ev := range evs {
			wire = append(wire, string(ev.Data))
		}
		if dec, rel := lastUsage(t, c, wire); dec != want || rel != want {
			t.Errorf("%s stream round trip: decoded %+v, relayed %+v, want %+v from %q", tc.dialect, dec, rel, want, wire)
		}
	}
}
