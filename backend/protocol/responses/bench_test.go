package responses

import (
	"os"
	"path/filepath"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// BenchmarkStreamEncoder writes a streamed answer of 200 text deltas, the
// encoder's share of relaying a translated stream to a Responses client.
func BenchmarkStreamEncoder(b *testing.B) {
	deltas := make([]llm.Delta, 0, 202)
	for range 200 {
		deltas = append(deltas, llm.Delta{Kind: llm.DeltaText, Text: "a token "})
	}
	deltas = append(deltas, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishStop},
		llm.Delta{Kind: llm.DeltaUsage, Usage: &llm.Usage{PromptTokens: 1000, CompletionTokens: 200}})
	b.ReportAllocs()
	var evs []llm.Event
	for b.Loop() {
		enc := Codec.NewStreamEncoder(protocol.ResponseOptions{ID: "resp_bench", Model: "m", Created: 1})
		evs = evs[:0]
		for _, d := range deltas {
			evs = enc.Encode(evs, d)
		}
		evs = enc.End(evs)
	}
	b.ReportMetric(float64(len(deltas)), "deltas/op")
}

// BenchmarkParseRequest parses a Codex request (the scan routing needs)
// and decodes its conversation, which every backend needs.
func BenchmarkParseRequest(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "parse", "codex.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r, err := Codec.ParseRequest(llm.Chat, body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Conversation(); err != nil {
			b.Fatal(err)
		}
	}
}
