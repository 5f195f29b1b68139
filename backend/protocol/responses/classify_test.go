package responses

import (
	"testing"

	"freelane/backend/llm"
)

// deltaSeeds are events of a Responses stream as vendors send them, and
// variants that the scan must leave to the decoder.
var deltaSeeds = []string{
	`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":5,"logprobs":[]}`,
	`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"","sequence_number":5}`,
	`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Thinking**"}`,
	`{"type":"response.reasoning_text.delta","delta":"x","obfuscation":"abc"}`,
	`{"type":"response.output_text.delta","delta":null}`,
	`{"type":"response.output_text.delta","delta":"\u00e9","output_index":-3}`,
	`{"type":"response.output_text.delta","delta":5}`,
	`{"type":"response.output_text.delta","delta":"x","output_index":1.5}`,
	`{"type":"response.output_text.delta","delta":"x","output_index":"1"}`,
	`{"type":"response.output_text.delta","delta":"x","item_id":7}`,
	`{"type":"response.output_text.delta","delta":"x","item":{"type":"function_call"}}`,
	`{"type":"response.output_text.delta","delta":"x","Delta":"y"}`,
	`{"type":"response.output_text.delta","delta":"x","delta":"y"}`,
	`{"type":"response.output_text\u002edelta","delta":"x"}`,
	`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\""}`,
	`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":2}}}`,
	`{"delta":"x"}`,
	`{"type":"response.output_text.delta","delta":"x"`,
}

func FuzzScanDeltaAgrees(f *testing.F) {
	for _, s := range deltaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScanDelta)
}

func TestScanDeltaSeeds(t *testing.T) {
	scanned := 0
	for _, s := range deltaSeeds {
		if _, ok := scanDelta([]byte(s)); ok {
			scanned++
		}
		checkScanDelta(t, []byte(s))
	}
	if scanned < 5 {
		t.Errorf("only %d events were scanned", scanned)
	}
}

// checkScanDelta fails t unless a scanned event is classified as the
// decoder classifies it.
func checkScanDelta(t *testing.T, data []byte) {
	kind, ok := scanDelta(data)
	if !ok {
		return
	}
	d := Codec.NewStreamDecoder().(*decoder)
	wk, wu, werr := d.classifyDecoded(nil, data)
	if kind != wk || wu != nil || werr != nil {
		t.Fatalf("%s: scanned %v, decoded %v %+v %v", data, kind, wk, wu, werr)
	}
}

// BenchmarkClassifyDelta compares classifying a text delta by scanning
// it, as Classify does, with decoding it.
func BenchmarkClassifyDelta(b *testing.B) {
	ev := []byte(deltaSeeds[0])
	b.Run("scan", func(b *testing.B) {
		d := Codec.NewStreamDecoder()
		b.ReportAllocs()
		b.SetBytes(int64(len(ev)))
		for b.Loop() {
			if k, _, err := d.Classify(nil, ev); err != nil || k != llm.Content {
				b.Fatal(k, err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		d := Codec.NewStreamDecoder().(*decoder)
		b.ReportAllocs()
		b.SetBytes(int64(len(ev)))
		for b.Loop() {
			if k, _, err := d.classifyDecoded(nil, ev); err != nil || k != llm.Content {
				b.Fatal(k, err)
			}
		}
	})
}
