package llm

import (
	"slices"
	"testing"
)

func TestAnswerAndDeltasAppendTheSameText(t *testing.T) {
	a := &Answer{Parts: []Part{
		{Kind: PartReasoning, Text: "Think. ", Signature: "sig"},
		{Kind: PartText, Text: "Hello"},
		{Kind: PartToolCall, ToolCall: &ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		{Kind: PartReasoning, Redacted: "opaque"},
	}}
	deltas := []Delta{
		{Kind: DeltaReasoning, Text: "Think. "},
		{Kind: DeltaReasoning, Signature: "sig"},
		{Kind: DeltaText, Text: "Hel"},
		{Kind: DeltaText, Text: "lo"},
		{Kind: DeltaToolStart, Index: 0, ID: "c1", Name: "get_weather"},
		{Kind: DeltaToolArgs, Index: 0, Text: `{"city":`},
		{Kind: DeltaToolArgs, Index: 0, Text: `"Paris"}`},
		{Kind: DeltaToolEnd, Index: 0},
		{Kind: DeltaReasoning, Redacted: "opaque"},
		{Kind: DeltaFinish, Finish: FinishToolCalls},
		{Kind: DeltaUsage, Usage: &Usage{PromptTokens: 3}},
	}
	var streamed []byte
	for _, d := range deltas {
		streamed = d.AppendText(streamed)
	}
	const want = `Think. Helloget_weather{"city":"Paris"}`
	if got := string(a.AppendText(nil)); got != want {
		t.Errorf("answer text %q, want %q", got, want)
	}
	if string(streamed) != want {
		t.Errorf("stream text %q, want %q", streamed, want)
	}
}

func TestEventRecordReadsBackEveryEvent(t *testing.T) {
	events := [][]byte{[]byte(`{"a":1}`), {}, []byte("line one\nline two"), make([]byte, 300)}
	var rec []byte
	for _, e := range events {
		rec = AppendEvent(rec, e)
	}
	var got [][]byte
	EachEvent(rec, func(d []byte) bool { got = append(got, d); return true })
	if !slices.EqualFunc(got, events, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("events %q, want %q", got, events)
	}
	// A record cut in the middle of an event keeps the events before it.
	got = nil
	EachEvent(rec[:len(rec)-1], func(d []byte) bool { got = append(got, d); return true })
	if len(got) != 3 {
		t.Fatalf("cut record gave %d events", len(got))
	}
	n := 0
	EachEvent(rec, func([]byte) bool { n++; return false })
	if n != 1 {
		t.Fatalf("stopping walk saw %d events", n)
	}
}
