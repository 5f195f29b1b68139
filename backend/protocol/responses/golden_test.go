package responses

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"freelane/backend/internal/goldenfile"
	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// ids are the random ids FreeLane makes up; the golden files show them as
// their prefix and a placeholder.
var ids = regexp.MustCompile(`\b(resp|msg|fc|rs|call|cmp)_[0-9a-f]{32}\b`)

func stable(b []byte) []byte { return ids.ReplaceAll(b, []byte("${1}_ID")) }

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return append(stable(out.Bytes()), '\n')
}

// Each request under testdata/parse decodes into the neutral conversation
// in the matching .golden file, with what routing reads of it.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "parse", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatal("no test data")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Codec.ParseRequest(llm.Chat, body)
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.Conversation()
			if err != nil {
				t.Fatal(err)
			}
			src, _ := SourceOf(r)
			got := marshal(struct {
				Model      string
				Stream     bool
				WantsUsage bool
				MaxTokens  int
				Needs      []string
				Notes      []string
				Store      bool
				Items      json.RawMessage
				Conv       *llm.Conversation
			}{r.Model, r.Stream, r.WantsUsage, r.MaxTokens, llm.Caps(0).Missing(r.Needs), r.Notes, src.Store(), src.InputItems(), c})
			goldenfile.Check(t, strings.TrimSuffix(f, ".json")+".golden", indent(t, got))
		})
	}
}

var answers = map[string]*llm.Answer{
	"text": {ID: "chatcmpl-1", Model: "m", Finish: llm.FinishStop,
		Parts: []llm.Part{{Kind: llm.PartText, Text: "Hello "}, {Kind: llm.PartText, Text: "<world> & you"}},
		Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}},
	"tools": {Finish: llm.FinishToolCalls, Parts: []llm.Part{
		{Kind: llm.PartReasoning, Text: "Need the weather.", Signature: "sig-1"},
		{Kind: llm.PartText, Text: "Let me check."},
		{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{Name: "noop"}},
	}},
	"length": {Finish: llm.FinishLength, Parts: []llm.Part{{Kind: llm.PartReasoning, Redacted: "opaque"}, {Kind: llm.PartText, Text: "Cut"}}},
}

func TestEncodeResponseGolden(t *testing.T) {
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			b, err := Codec.EncodeResponse(a, protocol.ResponseOptions{ID: "resp_test", Model: "mixed", Created: 1764590400})
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "response", name+".golden"), indent(t, b))
		})
	}
}

// streams are answers as deltas, the way the upstream decoders hand them
// over.
var streams = map[string][]llm.Delta{
	"text": {
		{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 10}},
		{Kind: llm.DeltaText, Text: "Hel"}, {Kind: llm.DeltaText, Text: "lo"},
		{Kind: llm.DeltaFinish, Finish: llm.FinishStop},
		{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
	},
	"reasoning_then_tools": {
		{Kind: llm.DeltaReasoning, Text: "Think"}, {Kind: llm.DeltaReasoning, Signature: "sig-1"},
		{Kind: llm.DeltaText, Text: "Checking."},
		{Kind: llm.DeltaToolStart, Index: 0, ID: "call_a", Name: "get_weather"},
		{Kind: llm.DeltaToolArgs, Index: 0, Text: `{"city":`}, {Kind: llm.DeltaToolArgs, Index: 0, Text: `"Paris"}`},
		{Kind: llm.DeltaToolEnd, Index: 0},
		{Kind: llm.DeltaToolArgs, Index: 1, Text: `{}`},
		{Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls},
	},
	"incomplete": {{Kind: llm.DeltaText, Text: "Cut"}, {Kind: llm.DeltaFinish, Finish: llm.FinishLength}},
}

// sse writes events as the API's stream writer does.
func sse(evs []llm.Event) []byte {
	var b bytes.Buffer
	for _, ev := range evs {
		if name := Codec.EventName(ev.Data); name != "" {
			b.WriteString("event: " + name + "\n")
		}
		b.WriteString("data: ")
		b.Write(ev.Data)
		b.WriteString("\n\n")
	}
	return stable(b.Bytes())
}

func TestStreamEncoderGolden(t *testing.T) {
	for name, ds := range streams {
		t.Run(name, func(t *testing.T) {
			enc := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: "resp_test", Model: "mixed", Created: 1764590400})
			var evs []llm.Event
			for _, d := range ds {
				evs = enc.Encode(evs, d)
			}
			evs = enc.End(evs)
			for i, ev := range evs {
				var seq struct {
					SequenceNumber int `json:"sequence_number"`
				}
				if err := json.Unmarshal(ev.Data, &seq); err != nil || seq.SequenceNumber != i {
					t.Errorf("event %d: %s", i, ev.Data)
				}
			}
			goldenfile.Check(t, filepath.Join("testdata", "stream", name+".golden"), sse(evs))
		})
	}
}

func TestErrorsGolden(t *testing.T) {
	var b bytes.Buffer
	b.Write(Codec.EncodeError(protocol.ErrorInfo{Status: 404, Type: "invalid_request_error", Code: "previous_response_not_found",
		Param: "previous_response_id", Message: "Previous response with id 'resp_x' not found."}))
	b.WriteString("\n")
	b.Write(Codec.EncodeError(protocol.ErrorInfo{Status: 429, Message: "every backend is rate limited"}))
	b.WriteString("\n")
	b.Write(sse([]llm.Event{{Data: FailureEvents(FailState{ID: "resp_test", Model: "mixed", Created: 1764590400, Seq: 7},
		protocol.ErrorInfo{Status: 502, Code: "stream_interrupted", Message: "the upstream stream failed"})[0]},
		{Data: FailureEvents(FailState{ID: "resp_test", Seq: 7}, protocol.ErrorInfo{Status: 502, Code: "stream_interrupted", Message: "the upstream stream failed"})[1]}}))
	goldenfile.Check(t, filepath.Join("testdata", "errors.golden"), b.Bytes())
}

// A compaction, both ways Codex asks for one: /v1/responses/compact's
// answer, and the stream of a turn that ended with compaction_trigger.
func TestCompactionGolden(t *testing.T) {
	r, err := ParseCompact([]byte(`{"model":"m","instructions":"agent","input":[
		{"role":"user","content":"Fix the bug"},{"role":"assistant","content":"Looking."},
		{"type":"function_call","call_id":"c","name":"shell","arguments":"{\"cmd\":\"ls\"}"},
		{"type":"function_call_output","call_id":"c","output":"main.go"},
		{"type":"compaction","encrypted_content":"` + SealSummary("Earlier work.") + `"},
		{"role":"user","content":"Go on"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := CompactRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := sum.Conversation()
	summary := []byte(`{"output":[{"type":"message","content":[{"type":"output_text","text":"The user wants the bug fixed; main.go is the only file."}]}],"usage":{"input_tokens":40,"output_tokens":12,"total_tokens":52}}`)
	answer, err := CompactAnswer(r, summary, 1764590400)
	if err != nil {
		t.Fatal(err)
	}
	body, events, err := CompactionTurn(summary, protocol.ResponseOptions{ID: "resp_test", Model: "m", Created: 1764590400})
	if err != nil {
		t.Fatal(err)
	}
	var evs []llm.Event
	for _, ev := range events {
		evs = append(evs, llm.Event{Data: ev})
	}
	var b bytes.Buffer
	b.WriteString(c.Messages[0].Parts[0].Text + "\n\n")
	b.Write(indent(t, answer))
	b.Write(indent(t, body))
	b.Write(sse(evs))
	goldenfile.Check(t, filepath.Join("testdata", "compaction.golden"), b.Bytes())
	if _, err := CompactAnswer(r, []byte(`{"output":[]}`), 1); err == nil {
		t.Error("an empty summary was taken")
	}
}
