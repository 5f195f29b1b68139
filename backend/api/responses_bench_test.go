package api

import (
	"net/http"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/protocol/responses"
)

// discardWriter is a ResponseWriter that keeps nothing, so a benchmark
// measures the sink and not a growing buffer.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// WriteString is there because net/http's own writer has it.
func (d *discardWriter) WriteString(s string) (int, error) { return len(s), nil }
func (d *discardWriter) WriteHeader(int)                   {}
func (d *discardWriter) Flush()                            {}

// BenchmarkResponsesSinkSend is the relay's last step for a Responses
// client, per event: the event's name, the id rewrite and the SSE framing,
// over a stream of 200 text deltas as the encoder writes it, not stored
// (as Codex asks).
func BenchmarkResponsesSinkSend(b *testing.B) {
	enc := responses.Codec.NewStreamEncoder(protocol.ResponseOptions{Model: "m", Created: 1})
	var evs []llm.Event
	for range 200 {
		evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaText, Text: "a token "})
	}
	evs = enc.Encode(evs, llm.Delta{Kind: llm.DeltaFinish, Finish: llm.FinishStop})
	evs = enc.End(evs)
	w := &discardWriter{h: http.Header{}}
	id := responses.NewResponseID()
	b.ReportAllocs()
	for b.Loop() {
		sink := &responsesSink{sseSink: sseSink{w: w, rc: http.NewResponseController(w), codec: responses.Codec}, id: id, st: responses.FailState{ID: id}}
		for i, ev := range evs {
			if err := sink.Send(ev.Data, i == len(evs)-1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}
