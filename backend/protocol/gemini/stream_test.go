package gemini

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func chunk(parts, finish string) string {
	f := ""
	if finish != "" {
		f = `,"finishReason":"` + finish + `"`
	}
	return `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]}` + f + `,"index":0}]}`
}

func TestStreamDecoderErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		data  string
		class llm.Class
		code  string
	}{
		{"quota", `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, llm.RateLimited, "RESOURCE_EXHAUSTED"},
		{"overloaded", `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, llm.Transient, "UNAVAILABLE"},
		{"internal", `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`, llm.Transient, "INTERNAL"},
		{"no status", `{"error":{"code":500,"message":"x"}}`, llm.Transient, "INTERNAL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range []error{
				func() error { _, _, err := Codec.NewStreamDecoder().Decode(nil, nil, []byte(c.data)); return err }(),
				func() error { _, _, err := Codec.NewStreamDecoder().Classify(nil, []byte(c.data)); return err }(),
			} {
				var e *llm.Error
				if !errors.As(err, &e) || e.Class != c.class || e.Code != c.code || e.Status != http.StatusOK ||
					e.Dialect != llm.DialectGemini || !strings.HasPrefix(e.Message, "upstream error mid-stream: ") {
					t.Errorf("got %#v", err)
				}
			}
		})
	}
	for _, bad := range []string{``, `not json`, `{"candidates":"x"}`, `[1]`} {
		if _, _, err := Codec.NewStreamDecoder().Decode(nil, nil, []byte(bad)); err != protocol.ErrMalformed {
			t.Errorf("Decode(%q) = %v", bad, err)
		}
		if _, _, err := Codec.NewStreamDecoder().Classify(nil, []byte(bad)); err != protocol.ErrMalformed {
			t.Errorf("Classify(%q) = %v", bad, err)
		}
	}
}

func TestStreamSafetyAfterContent(t *testing.T) {
	d := Codec.NewStreamDecoder()
	ds, _, err := d.Decode(nil, nil, []byte(chunk(`{"text":"Once upon"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	ds, _, err = d.Decode(ds, nil, []byte(chunk(`{"text":""}`, "SAFETY")))
	if err != nil {
		t.Fatalf("a filter after content is an error: %v", err)
	}
	if last := ds[len(ds)-1]; last.Kind != llm.DeltaFinish || last.Finish != llm.FinishContentFilter {
		t.Errorf("deltas %+v", ds)
	}
	k := Codec.NewStreamDecoder()
	if kind, _, err := k.Classify(nil, []byte(chunk(`{"text":"Once"}`, ""))); kind != llm.Content || err != nil {
		t.Errorf("Classify text: %v %v", kind, err)
	}
	if kind, _, err := k.Classify(nil, []byte(chunk(`{"text":""}`, "SAFETY"))); kind != llm.Held || err != nil {
		t.Errorf("Classify filtered finish: %v %v", kind, err)
	}
}

func TestStreamClassify(t *testing.T) {
	for _, c := range []struct {
		data string
		kind llm.EventKind
	}{
		{chunk(`{"text":"hi"}`, ""), llm.Content},
		{chunk(`{"text":"thinking","thought":true}`, ""), llm.Content},
		{chunk(`{"functionCall":{"name":"f"}}`, ""), llm.Content},
		{chunk(`{"text":"","thoughtSignature":"c2ln"}`, "STOP"), llm.Held},
		{`{"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"thoughtsTokenCount":3}}`, llm.Held},
	} {
		kind, u, err := Codec.NewStreamDecoder().Classify(nil, []byte(c.data))
		if err != nil || kind != c.kind {
			t.Errorf("Classify(%s) = %v %v, want %v", c.data, kind, err, c.kind)
		}
		if strings.Contains(c.data, "usageMetadata") && (u == nil || *u != llm.Usage{PromptTokens: 1, CompletionTokens: 5, TotalTokens: 6}) {
			t.Errorf("usage %+v", u)
		}
	}
}

// encodeStream runs deltas through a fresh encoder and End, and checks
// every event is a response the SDK reads.
func encodeStream(t *testing.T, ds ...llm.Delta) []llm.Event {
	t.Helper()
	enc := Codec.NewStreamEncoder(defaultOptions)
	var out []llm.Event
	for _, d := range ds {
		out = enc.Encode(out, d)
	}
	out = enc.End(out)
	for _, e := range out {
		checkGenaiResponse(t, e.Data)
		if n := Codec.EventName(e.Data); n != "" {
			t.Errorf("event name %q", n)
		}
	}
	return out
}

// summary is the events in short: each event's kind and parts, and its
// finish reason and usage.
func summary(t *testing.T, events []llm.Event) string {
	t.Helper()
	var lines []string
	for _, e := range events {
		r, err := parseResponse(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(map[llm.EventKind]string{llm.Held: "held", llm.Content: "content", llm.UsageOnly: "usage", llm.Done: "done"}[e.Kind])
		if len(r.Candidates) > 0 && r.Candidates[0].Content != nil {
			for _, p := range r.Candidates[0].Content.Parts {
				switch {
				case p.FunctionCall != nil:
					b.WriteString(" call:" + p.FunctionCall.Name + string(p.FunctionCall.Args))
				case p.Thought:
					b.WriteString(" thought:" + *p.Text)
				case p.Text != nil:
					b.WriteString(" text:" + *p.Text)
				}
				if p.ThoughtSignature != "" {
					b.WriteString("+sig")
				}
			}
			if f := r.Candidates[0].FinishReason; f != "" {
				b.WriteString(" finish:" + f)
			}
		}
		if r.UsageMetadata != nil {
			u, _ := json.Marshal(r.UsageMetadata)
			b.WriteString(" usage:" + string(u))
		}
		if (e.Usage != nil) != (r.UsageMetadata != nil) {
			b.WriteString(" (Usage field wrong)")
		}
		lines = append(lines, b.String())
	}
	return strings.Join(lines, "\n")
}

func TestStreamEncoder(t *testing.T) {
	usage := &llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}
	for _, c := range []struct {
		name   string
		deltas []llm.Delta
		want   string
	}{
		{"nothing", nil, `held text: finish:STOP`},
		{"no finish", []llm.Delta{{Kind: llm.DeltaText, Text: "hi"}, {Kind: llm.DeltaText}},
			"content text:hi\nheld text: finish:STOP"},
		{"finish then usage", []llm.Delta{{Kind: llm.DeltaText, Text: "hi"}, {Kind: llm.DeltaFinish, Finish: llm.FinishLength}, {Kind: llm.DeltaUsage, Usage: usage}},
			"content text:hi\nheld text: finish:MAX_TOKENS usage:{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}"},
		{"usage before finish", []llm.Delta{{Kind: llm.DeltaUsage, Usage: usage}, {Kind: llm.DeltaText, Text: "hi"}, {Kind: llm.DeltaFinish, Finish: llm.FinishStop}},
			"content text:hi\nheld text: finish:STOP usage:{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}"},
		{"late usage", []llm.Delta{{Kind: llm.DeltaFinish, Finish: llm.FinishStop}, {Kind: llm.DeltaUsage, Usage: usage}, {Kind: llm.DeltaUsage, Usage: usage}},
			"held text: finish:STOP usage:{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}\nheld usage:{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}"},
		{"reasoning and signature", []llm.Delta{
			{Kind: llm.DeltaReasoning, Text: "think"}, {Kind: llm.DeltaReasoning, Signature: "c2lnbmF0dXJl"},
			{Kind: llm.DeltaReasoning, Signature: "not base64 at all"}, {Kind: llm.DeltaText, Text: "answer"}},
			"content thought:think\ncontent text:answer+sig\nheld text: finish:STOP"},
		{"trailing signature", []llm.Delta{{Kind: llm.DeltaText, Text: "a"}, {Kind: llm.DeltaReasoning, Signature: "c2lnbmF0dXJl"}},
			"content text:a\nheld text:+sig finish:STOP"},
		{"tool after text", []llm.Delta{
			{Kind: llm.DeltaText, Text: "let me"},
			{Kind: llm.DeltaToolStart, Index: 0, ID: "call_1", Name: "f"},
			{Kind: llm.DeltaToolArgs, Index: 0, Text: `{"a":`}, {Kind: llm.DeltaToolArgs, Index: 0, Text: `1}`},
			{Kind: llm.DeltaToolEnd, Index: 0},
			{Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls}},
			"content text:let me\ncontent call:f{\"a\":1}\nheld text: finish:STOP"},
		{"interleaved calls never ended", []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, Name: "f"},
			{Kind: llm.DeltaToolStart, Index: 1, Name: "g"},
			{Kind: llm.DeltaToolArgs, Index: 1, Text: `{"b":2}`},
			{Kind: llm.DeltaToolArgs, Index: 0, Text: `oops`},
			{Kind: llm.DeltaToolArgs, Index: 7, Text: `stray`},
			{Kind: llm.DeltaToolEnd, Index: 9}},
			"content call:f{\"arguments\":\"oops\"}\ncontent call:g{\"b\":2}\nheld text: finish:STOP"},
		{"finish before the call ends", []llm.Delta{
			{Kind: llm.DeltaToolStart, Index: 0, Name: "f"},
			{Kind: llm.DeltaFinish, Finish: llm.FinishToolCalls},
			{Kind: llm.DeltaUsage, Usage: usage},
			{Kind: llm.DeltaToolEnd, Index: 0}},
			"content call:f{}\nheld text: finish:STOP usage:{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := summary(t, encodeStream(t, c.deltas...)); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
