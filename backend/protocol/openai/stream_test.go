package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// chunkOf is a chunk whose first choice has the delta and finish given.
func chunkOf(delta, finish string) string {
	if finish == "" {
		finish = "null"
	}
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

func TestStreamDecoderToolCalls(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []llm.Delta
	}{
		{"same index, new ids", []string{
			chunkOf(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`, ""),
			chunkOf(`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}`, ""),
			chunkOf(`{}`, `"tool_calls"`),
		}, []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, ID: "a", Name: "f"}, {Kind: llm.DeltaToolArgs, Index: 0, Text: "{}"},
			{Kind: llm.DeltaToolStart, Index: 1, ID: "b", Name: "g"}, {Kind: llm.DeltaToolArgs, Index: 1, Text: "{}"},
			{Kind: llm.DeltaToolEnd, Index: 0}, {Kind: llm.DeltaToolEnd, Index: 1},
			{Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls},
		}},
		{"vendor indexes mapped to order", []string{
			chunkOf(`{"tool_calls":[{"index":3,"id":"a","function":{"name":"f"}},{"index":7,"id":"b","function":{"name":"g"}}]}`, ""),
			chunkOf(`{"tool_calls":[{"index":7,"function":{"arguments":"B"}},{"index":3,"function":{"arguments":"A"}}]}`, ""),
		}, []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, ID: "a", Name: "f"}, {Kind: llm.DeltaToolStart, Index: 1, ID: "b", Name: "g"},
			{Kind: llm.DeltaToolArgs, Index: 1, Text: "B"}, {Kind: llm.DeltaToolArgs, Index: 0, Text: "A"},
		}},
		{"no index", []string{
			chunkOf(`{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}`, ""),
			chunkOf(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`, ""),
			chunkOf(`{"tool_calls":[{"id":"b","function":{"name":"g"}}]}`, ""),
		}, []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, ID: "a", Name: "f"}, {Kind: llm.DeltaToolArgs, Index: 0, Text: `{"x"`},
			{Kind: llm.DeltaToolArgs, Index: 0, Text: ":1}"},
			{Kind: llm.DeltaToolStart, Index: 1, ID: "b", Name: "g"},
		}},
		{"id repeated on every fragment", []string{
			chunkOf(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}`, ""),
			chunkOf(`{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"}"}}]}`, ""),
		}, []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, ID: "a", Name: "f"}, {Kind: llm.DeltaToolArgs, Index: 0, Text: "{"},
			{Kind: llm.DeltaToolArgs, Index: 0, Text: "}"},
		}},
		{"legacy function call", []string{
			chunkOf(`{"function_call":{"name":"f","arguments":""}}`, ""),
			chunkOf(`{"function_call":{"arguments":"{}"}}`, ""),
			chunkOf(`{}`, `"function_call"`),
		}, []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, Name: "f"}, {Kind: llm.DeltaToolArgs, Index: 0, Text: "{}"},
			{Kind: llm.DeltaToolEnd, Index: 0}, {Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls},
		}},
		{"closed at done without finish", []string{
			chunkOf(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f"}}]}`, ""),
			"[DONE]",
		}, []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, ID: "a", Name: "f"}, {Kind: llm.DeltaToolEnd, Index: 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Codec.NewStreamDecoder()
			var got []llm.Delta
			for _, c := range tc.chunks {
				var err error
				if got, _, err = d.Decode(got, nil, []byte(c)); err != nil {
					t.Fatalf("Decode(%s): %v", c, err)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", dumpDeltas(t, got), dumpDeltas(t, tc.want))
			}
		})
	}
}

func TestStreamDecoderEvents(t *testing.T) {
	usage := &llm.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	tests := []struct {
		name string
		data string
		want []llm.Delta
		end  bool
	}{
		{"role only", chunkOf(`{"role":"assistant","content":""}`, ""), nil, false},
		{"both reasoning fields", chunkOf(`{"reasoning_content":"r","reasoning":"r"}`, ""), []llm.Delta{{Kind: llm.DeltaReasoning, Text: "r"}}, false},
		{"reasoning object ignored", chunkOf(`{"reasoning":{"summary":"x"}}`, ""), nil, false},
		{"refusal", chunkOf(`{"refusal":"no"}`, ""), []llm.Delta{{Kind: llm.DeltaText, Text: "no"}}, false},
		{"other choices ignored", `{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}`,
			[]llm.Delta{{Kind: llm.DeltaText, Text: "a"}}, false},
		{"unknown finish", chunkOf(`{}`, `"eos"`), []llm.Delta{{Kind: llm.DeltaFinish, Finish: llm.FinishStop}}, false},
		{"length", chunkOf(`{}`, `"length"`), []llm.Delta{{Kind: llm.DeltaFinish, Finish: llm.FinishLength}}, false},
		{"usage alone", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, []llm.Delta{{Kind: llm.DeltaUsage, Usage: usage}}, false},
		{"usage without total", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`, []llm.Delta{{Kind: llm.DeltaUsage, Usage: usage}}, false},
		{"zero usage ignored", `{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			[]llm.Delta{{Kind: llm.DeltaText, Text: "a"}}, false},
		{"usage on the finish chunk", `{"choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
			[]llm.Delta{{Kind: llm.DeltaText, Text: "."}, {Kind: llm.DeltaFinish, Finish: llm.FinishStop}, {Kind: llm.DeltaUsage, Usage: usage}}, false},
		{"done", "[DONE]", nil, true},
		{"done with space", " [DONE]\n", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, end, err := Codec.NewStreamDecoder().Decode(nil, nil, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if end != tc.end || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\n%s\nwant %v\n%s", end, dumpDeltas(t, got), tc.end, dumpDeltas(t, tc.want))
			}
		})
	}
}

func TestStreamDecoderErrors(t *testing.T) {
	tests := []struct {
		name, event, data string
		class             llm.Class
		message, code     string
	}{
		{"error member", "", `{"error":{"message":"Internal server error","type":"server_error","code":"internal"}}`,
			llm.Transient, "upstream error mid-stream: Internal server error", "internal"},
		{"quota", "", `{"error":{"message":"You exceeded your current quota, please check your plan","type":"insufficient_quota"}}`,
			llm.RateLimited, "quota exceeded mid-stream: You exceeded your current quota, please check your plan", "insufficient_quota"},
		{"error event", "error", `{"message":"overloaded"}`, llm.Transient, "upstream error mid-stream: overloaded", ""},
		{"error event, text", "error", `connection lost`, llm.Transient, "upstream error mid-stream: connection lost", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Codec.NewStreamDecoder().Decode(nil, []byte(tc.event), []byte(tc.data))
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v", err)
			}
			if e.Class != tc.class || e.Message != tc.message || e.Code != tc.code || e.Status != http.StatusOK || e.Dialect != llm.DialectOpenAI {
				t.Errorf("got %+v", e)
			}
		})
	}
	for _, bad := range []string{``, `{`, `[1]`, `"text"`, `{"choices":5}`, `{"choices":[{"delta":{"content":5}}]}`, `{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}`} {
		if _, _, err := Codec.NewStreamDecoder().Decode(nil, nil, []byte(bad)); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestStreamDecoderBoundsCalls(t *testing.T) {
	d := Codec.NewStreamDecoder()
	var err error
	for i := 0; i <= maxStreamCalls && err == nil; i++ {
		_, _, err = d.Decode(nil, nil, []byte(chunkOf(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"c","function":{"name":"f"}}]}`, i), "")))
	}
	if !errors.Is(err, protocol.ErrMalformed) {
		t.Errorf("call %d: %v", maxStreamCalls+1, err)
	}
}

// Each case is a stream's first event: once content has flowed, the relay
// takes every well-formed event without usage or an error as content,
// which is cheaper to check and means the same after the commit.
func TestClassify(t *testing.T) {
	usage := &llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
	for _, tc := range []struct {
		data  string
		kind  llm.EventKind
		usage *llm.Usage
	}{
		{chunkOf(`{"role":"assistant","content":""}`, ""), llm.Held, nil},
		{chunkOf(`{"content":"hi"}`, ""), llm.Content, nil},
		{chunkOf(`{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}`, ""), llm.Content, nil},
		{chunkOf(`{}`, `"stop"`), llm.Held, nil},
		{`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, llm.UsageOnly, usage},
		{`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, llm.Held, usage},
		{"[DONE]", llm.Done, nil},
	} {
		kind, u, err := Codec.NewStreamDecoder().Classify(nil, []byte(tc.data))
		if err != nil || kind != tc.kind || !reflect.DeepEqual(u, tc.usage) {
			t.Errorf("Classify(%s) = %v %v %v, want %v %v", tc.data, kind, u, err, tc.kind, tc.usage)
		}
	}
	if _, _, err := Codec.NewStreamDecoder().Classify(nil, []byte(`{"error":{"message":"x"}}`)); err == nil {
		t.Error("an error chunk classified")
	}
}

// encodeAll runs deltas through a fresh encoder and End.
func encodeAll(t *testing.T, deltas ...llm.Delta) []llm.Event {
	t.Helper()
	e := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: "chatcmpl-1", Model: "m", Created: 1})
	var out []llm.Event
	for _, d := range deltas {
		out = e.Encode(out, d)
	}
	out = e.End(out)
	for _, ev := range out {
		if !json.Valid(ev.Data) {
			t.Fatalf("invalid event %s", ev.Data)
		}
		if !strings.HasPrefix(string(ev.Data), `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[`) {
			t.Errorf("event without the chunk head: %s", ev.Data)
		}
	}
	return out
}

// summary is the events' kinds and deltas, short enough to compare.
func summary(events []llm.Event) []string {
	var out []string
	for _, ev := range events {
		var c struct {
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage *llm.Usage `json:"usage"`
		}
		_ = json.Unmarshal(ev.Data, &c)
		kind := map[llm.EventKind]string{llm.Held: "held", llm.Content: "content", llm.UsageOnly: "usage"}[ev.Kind]
		switch {
		case c.Usage != nil:
			out = append(out, fmt.Sprintf("%s %d/%d/%d", kind, c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens))
			if ev.Usage == nil || *ev.Usage != *c.Usage {
				out = append(out, "Event.Usage missing")
			}
		case c.Choices[0].FinishReason != nil:
			out = append(out, kind+" "+string(c.Choices[0].Delta)+" "+*c.Choices[0].FinishReason)
		default:
			out = append(out, kind+" "+string(c.Choices[0].Delta))
		}
	}
	return out
}

func TestStreamEncoder(t *testing.T) {
	usage := &llm.Usage{PromptTokens: 5, CompletionTokens: 2}
	role := `held {"role":"assistant","content":""}`
	tests := []struct {
		name   string
		deltas []llm.Delta
		want   []string
	}{
		{"nothing", nil, []string{role, "held {} stop"}},
		{"text without finish", []llm.Delta{{Kind: llm.DeltaText, Text: "a\u2028<b>"}, {Kind: llm.DeltaText}},
			[]string{role, `content {"content":"a\u2028<b>"}`, "held {} stop"}},
		{"tools without finish", []llm.Delta{
			{Kind: llm.DeltaText, Text: "Let me look."},
			{Kind: llm.DeltaToolStart, Index: 0, ID: "c1", Name: "f"},
			{Kind: llm.DeltaToolArgs, Index: 0, Text: `{"a":`},
			{Kind: llm.DeltaToolArgs, Index: 0},
			{Kind: llm.DeltaToolArgs, Index: 0, Text: `1}`},
			{Kind: llm.DeltaToolEnd, Index: 0},
		}, []string{role, `content {"content":"Let me look."}`,
			`content {"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}`,
			`content {"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}`,
			`content {"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`,
			"held {} tool_calls"}},
		{"usage before finish", []llm.Delta{
			{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 5}},
			{Kind: llm.DeltaReasoning, Text: "hm"},
			{Kind: llm.DeltaReasoning, Signature: "sig"},
			{Kind: llm.DeltaUsage, Usage: usage},
			{Kind: llm.DeltaFinish, Finish: llm.FinishLength},
			{Kind: llm.DeltaFinish, Finish: llm.FinishStop},
		}, []string{role, `content {"reasoning_content":"hm"}`, "held {} length", "usage 5/2/7"}},
		{"call without id", []llm.Delta{{Kind: llm.DeltaToolStart, Index: 0, Name: "f"}, {Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls}},
			[]string{role, `content {"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":""}}]}`, "held {} tool_calls"}},
		{"usage held to the end", []llm.Delta{{Kind: llm.DeltaUsage, Usage: usage}}, []string{role, "held {} stop", "usage 5/2/7"}},
		{"usage after finish", []llm.Delta{{Kind: llm.DeltaFinish}, {Kind: llm.DeltaUsage, Usage: usage}, {Kind: llm.DeltaUsage, Usage: usage}},
			[]string{role, "held {} stop", "usage 5/2/7", "usage 5/2/7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(encodeAll(t, tc.deltas...))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	// The encoder must not change the caller's usage.
	if usage.TotalTokens != 0 {
		t.Error("the delta's usage was changed")
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\ slash", "\x00\x1f\x7f", "tab\tnew\nret\r", "é ü 日本", "bad \xff utf8 \xc3", "\u2028\u2029", "<>&"} {
		want, _ := marshal(s)
		if got := jsonscan.AppendString(nil, s); string(got) != string(want) {
			t.Errorf("jsonscan.AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestStreamEnd(t *testing.T) {
	if string(Codec.StreamEnd()) != "data: [DONE]\n\n" {
		t.Errorf("StreamEnd = %q", Codec.StreamEnd())
	}
}

// FuzzStreamDecode feeds arbitrary events to a decoder, then re-encodes
// what it made: neither may panic, every encoded event is JSON, and tool
// call indexes count from 0.
func FuzzStreamDecode(f *testing.F) {
	f.Add("", chunkOf(`{"content":"hi"}`, ""), chunkOf(`{}`, `"stop"`))
	f.Add("", chunkOf(`{"tool_calls":[{"index":2,"id":"a","function":{"name":"f","arguments":"{"}}]}`, ""), `{"choices":[],"usage":{"prompt_tokens":1}}`)
	f.Add("error", `{"error":{"message":"quota exceeded"}}`, "[DONE]")
	f.Add("", `{"choices":[{"delta":{"function_call":{"name":"f"}}}]}`, `{"choices":[{"delta":{"tool_calls":[{"id":"b"}]}}]}`)
	f.Fuzz(func(t *testing.T, name, a, b string) {
		d := Codec.NewStreamDecoder()
		var deltas []llm.Delta
		for _, data := range []string{a, b, "[DONE]"} {
			deltas, _, _ = d.Decode(deltas, []byte(name), []byte(data))
			_, _, _ = d.Classify([]byte(name), []byte(data))
		}
		calls := 0
		for _, dl := range deltas {
			if dl.Kind == llm.DeltaToolStart {
				if dl.Index != calls {
					t.Fatalf("tool start %d, want %d", dl.Index, calls)
				}
				calls++
			}
		}
		e := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: name, Model: a})
		var events []llm.Event
		for _, dl := range deltas {
			events = e.Encode(events, dl)
		}
		for _, ev := range e.End(events) {
			if !json.Valid(ev.Data) {
				t.Fatalf("invalid event %q", ev.Data)
			}
		}
	})
}

// textStream is a 100-chunk text answer as an upstream sends it.
func textStream() [][]byte {
	out := make([][]byte, 0, 103)
	out = append(out, []byte(chunkOf(`{"role":"assistant","content":""}`, "")))
	for i := range 100 {
		out = append(out, []byte(chunkOf(fmt.Sprintf(`{"content":"word %d of a streamed answer, "}`, i), "")))
	}
	out = append(out, []byte(chunkOf(`{}`, `"stop"`)))
	out = append(out, []byte(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":600,"total_tokens":620}}`))
	return out
}

func BenchmarkStreamDecode(b *testing.B) {
	chunks := textStream()
	done := []byte("[DONE]")
	deltas := make([]llm.Delta, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		d := Codec.NewStreamDecoder()
		for _, c := range chunks {
			deltas, _, _ = d.Decode(deltas[:0], nil, c)
		}
		_, _, _ = d.Decode(deltas[:0], nil, done)
	}
}

func BenchmarkStreamEncode(b *testing.B) {
	deltas := make([]llm.Delta, 0, 102)
	for i := range 100 {
		deltas = append(deltas, llm.Delta{Kind: llm.DeltaText, Text: fmt.Sprintf("word %d of a streamed answer, ", i)})
	}
	deltas = append(deltas, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishStop},
		llm.Delta{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 20, CompletionTokens: 600}})
	o := protocol.ResponseOptions{ID: "abc123", Model: "provider/model", Created: 1700000000}
	events := make([]llm.Event, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		e := Codec.NewStreamEncoder(o)
		for _, d := range deltas {
			events = e.Encode(events[:0], d)
		}
		events = e.End(events[:0])
	}
}

// TestClassifyGoldenStreams checks the kinds of every event of the golden
// streams, as a relay to a client of this dialect sees them.
func TestClassifyGoldenStreams(t *testing.T) {
	want := map[string]string{
		"text":                 "held content content content held usage done",
		"tool_args":            "content content content content content held done",
		"reasoning":            "held content content content content done",
		"openrouter_reasoning": "content content held done",
	}
	names := map[llm.EventKind]string{llm.Held: "held", llm.Content: "content", llm.UsageOnly: "usage", llm.Done: "done"}
	for name, path := range inputs(t, "testdata/streams/*.sse") {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d := Codec.NewStreamDecoder()
		var kinds []string
		for _, ev := range readSSE(t, body) {
			kind, _, err := d.Classify(ev.name, ev.data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			kinds = append(kinds, names[kind])
		}
		if got := strings.Join(kinds, " "); got != want[name] {
			t.Errorf("%s: got %s, want %s", name, got, want[name])
		}
	}
}

// referenceChunk is a chunk as encoding/json reads it, the reference the
// scanning decoder is checked against.
type referenceChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
			Refusal          *string         `json:"refusal"`
			ToolCalls        []struct {
				Index    *int      `json:"index"`
				ID       *string   `json:"id"`
				Function *function `json:"function"`
			} `json:"tool_calls"`
			FunctionCall *function `json:"function_call"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// referenceDecode is Decode by reflection, for chunks without errors.
func (d *streamDecoder) referenceDecode(dst []llm.Delta, data []byte) ([]llm.Delta, error) {
	var c referenceChunk
	if json.Unmarshal(data, &c) != nil {
		return dst, protocol.ErrMalformed
	}
	var err error
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if dl := ch.Delta; dl != nil {
			if s := reasoningText(dl.ReasoningContent, dl.Reasoning); s != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaReasoning, Text: s})
			}
			if dl.Content != nil && *dl.Content != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: *dl.Content})
			}
			if dl.Refusal != nil && *dl.Refusal != "" {
				dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: *dl.Refusal})
			}
			for _, tc := range dl.ToolCalls {
				vendor, id, f := -1, "", function{}
				if tc.Index != nil {
					vendor = *tc.Index
				}
				if tc.ID != nil {
					id = *tc.ID
				}
				if tc.Function != nil {
					f = *tc.Function
				}
				if dst, err = d.toolDelta(dst, vendor, id, f); err != nil {
					return dst, err
				}
			}
			if fc := dl.FunctionCall; fc != nil {
				if dst, err = d.toolDelta(dst, legacyIndex, "", *fc); err != nil {
					return dst, err
				}
			}
		}
		if ch.Text != nil && *ch.Text != "" {
			dst = append(dst, llm.Delta{Kind: llm.DeltaText, Text: *ch.Text})
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			dst = d.closeCalls(dst)
			dst = append(dst, llm.Delta{Kind: llm.DeltaFinish, Finish: finishReason(*ch.FinishReason, len(d.calls) > 0)})
		}
	}
	if u := c.Usage.neutral(); u != nil && *u != (llm.Usage{}) {
		dst = append(dst, llm.Delta{Kind: llm.DeltaUsage, Usage: u})
	}
	return dst, nil
}

// FuzzDecodeMatchesReference checks the scanning decoder against
// encoding/json on chunks both read alike: valid UTF-8, keys in lower
// case (encoding/json matches keys in any case) and no negative numbers
// (the scanner refuses negative indexes).
func FuzzDecodeMatchesReference(f *testing.F) {
	f.Add(chunkOf(`{"content":"a\u00e9","reasoning":"r"}`, `"stop"`), chunkOf(`{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{"}}]}`, ""))
	f.Add(`{"choices":[{"index":1,"delta":{"content":"b"}},{"delta":{"function_call":{"name":"f"}}}],"usage":{"prompt_tokens":2}}`, `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, s := range []string{a, b} {
			if !utf8.ValidString(s) || strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-\\") || strings.Contains(s, `"error"`) || strings.Contains(s, "[DONE]") {
				return
			}
		}
		scan, ref := &streamDecoder{}, &streamDecoder{}
		var got, want []llm.Delta
		for _, s := range []string{a, b} {
			data := []byte(strings.TrimSpace(s))
			if len(data) == 0 || data[0] != '{' {
				return
			}
			var err1, err2 error
			got, _, err1 = scan.Decode(got, nil, data)
			want, err2 = ref.referenceDecode(want, data)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("Decode(%s): scan %v, reference %v", data, err1, err2)
			}
			if err1 != nil {
				return
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scan\n%s\nreference\n%s", dumpDeltas(t, got), dumpDeltas(t, want))
		}
	})
}

// TestClassifyEdges checks what the relay makes of chunks one by one,
// malformed ones included, however a server spaces them.
func TestClassifyEdges(t *testing.T) {
	names := map[llm.EventKind]string{llm.Held: "held", llm.Content: "content", llm.UsageOnly: "usage", llm.Done: "done"}
	for _, c := range []struct{ data, want string }{
		{`{"choices":[{"delta":{"content":""}}],"usage":null}`, "held"},
		{`{"choices":[{"delta":{"role":"assistant"}}]}`, "held"},
		{`{"choices":[{"delta":{"content":"a"}}],"usage":null}`, "content"},
		{`{ "choices" : [ { "index" : 0 , "delta" : { "content" : "x" } } ] }`, "content"},
		{`{"choices":[{"delta":{"content":"\u00e9"}}]}`, "content"},
		{`{"choices":[{"delta":{"tool_calls":[]}}]}`, "held"},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`, "content"},
		{`{"choices":[{"delta":{"function_call":{"name":"f"}}}]}`, "content"},
		{`{"choices":[{"delta":{"reasoning_content":"think"}}]}`, "content"},
		{`{"choices":[{"delta":{"refusal":"no"}}]}`, "content"},
		{`{"choices":[{"text":"hi","index":0}]}`, "content"},
		{`{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}`, "held"},
		{`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, "usage"},
		{`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, "content"},
		{`[DONE]`, "done"},
		{`{"error":{"message":"overloaded"}}`, "error"},
		{`{"choices":"x"}`, "malformed"},
		{`{"choices":[{"delta":{"content":"a"}}]`, "malformed"},
		{`{"usage":"x"}`, "malformed"},
		{`[1,2]`, "malformed"},
		{`{"choices":[{"delta":{"content":"a\x01"}}]}`, "malformed"},
	} {
		kind, _, err := Codec.NewStreamDecoder().Classify(nil, []byte(c.data))
		got := names[kind]
		switch {
		case errors.Is(err, protocol.ErrMalformed):
			got = "malformed"
		case err != nil:
			got = "error"
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s (%v)", c.data, got, c.want, err)
		}
	}
	_, u, _ := Codec.NewStreamDecoder().Classify(nil, []byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}}`))
	if u == nil || u.PromptTokens != 3 || u.CompletionTokens != 2 || u.CacheReadTokens != 1 {
		t.Errorf("usage = %+v", u)
	}
}

func BenchmarkClassifyChunk(b *testing.B) {
	ev := []byte(`{"id":"chatcmpl-fake49831","object":"chat.completion.chunk","created":1796412079,"model":"m","system_fingerprint":"fp_fake","choices":[{"index":0,"delta":{"content":" word3"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	d := Codec.NewStreamDecoder()
	b.ReportAllocs()
	b.SetBytes(int64(len(ev)))
	for b.Loop() {
		if k, _, err := d.Classify(nil, ev); err != nil || k != llm.Content {
			b.Fatal(k, err)
		}
	}
}

// BenchmarkReadUsage compares reading a stream's usage by scanning it
// with decoding it, which a stream of every request once did.
func BenchmarkReadUsage(b *testing.B) {
	use := []byte(`{"prompt_tokens":812,"completion_tokens":164,"total_tokens":976,"prompt_tokens_details":{"cached_tokens":512,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var u usage
			if !scanUsage(use, &u) || u.PromptTokensDetails.CachedTokens != 512 {
				b.Fatal("not read")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var u usage
			if json.Unmarshal(use, &u) != nil || u.PromptTokensDetails.CachedTokens != 512 {
				b.Fatal("not read")
			}
		}
	})
}
