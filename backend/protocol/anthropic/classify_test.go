package anthropic

import (
	"reflect"
	"testing"

	"freelane/backend/llm"
)

var deltaSeeds = []string{
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
	` { "type" : "content_block_delta" , "index" : 2 , "delta" : { "text" : "x" } } `,
	`{"type":"content_block_delta","index":-1,"delta":{"text":"x"}}`,
	`{"type":"content_block_delta","index":1.5,"delta":{"text":"x"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"text":5}}`,
	`{"type":"content_block_delta","index":0,"delta":{"text":null}}`,
	`{"type":"content_block_delta","index":0,"delta":"x"}`,
	`{"type":"content_block_delta","index":0,"delta":{"text":"x"}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`,
	`{"type":"content_block_delta","index":0,"delta":{"text":"a","text":""}}`,
	`{"type":"content_block_delta","index":0,"Delta":{"text":"a"}}`,
}

// FuzzClassifyDeltaAgrees: where the scan of a content_block_delta gives
// an answer, decoding the event gives the same one.
func FuzzClassifyDeltaAgrees(f *testing.F) {
	for _, s := range deltaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, ok := classifyDelta(data)
		if !ok {
			return
		}
		d := &decoder{}
		want, u, err := d.classifyParsed(nil, data)
		if err != nil || u != nil || want != kind {
			t.Fatalf("%s: scanned %v, decoded %v (usage %v, err %v)", data, kind, want, u, err)
		}
	})
}

func TestClassifyDeltaSeeds(t *testing.T) {
	scanned := 0
	for _, s := range deltaSeeds {
		kind, ok := classifyDelta([]byte(s))
		if !ok {
			continue
		}
		scanned++
		want, _, err := (&decoder{}).classifyParsed(nil, []byte(s))
		if err != nil || want != kind {
			t.Errorf("%s: scanned %v, decoded %v (%v)", s, kind, want, err)
		}
	}
	if scanned < 6 {
		t.Errorf("only %d of the deltas were scanned", scanned)
	}
	if k, ok := classifyDelta([]byte(deltaSeeds[0])); !ok || k != llm.Content {
		t.Errorf("a text delta: %v %v", k, ok)
	}
}

func BenchmarkClassifyDelta(b *testing.B) {
	ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word3"}}`)
	d := &decoder{}
	b.ReportAllocs()
	for b.Loop() {
		if k, _, err := d.Classify(nil, ev); err != nil || k != llm.Content {
			b.Fatal(k, err)
		}
	}
}

func BenchmarkClassifyDeltaDecoded(b *testing.B) {
	ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word3"}}`)
	d := &decoder{}
	b.ReportAllocs()
	for b.Loop() {
		if k, _, err := d.classifyParsed(nil, ev); err != nil || k != llm.Content {
			b.Fatal(k, err)
		}
	}
}

// FuzzTextDeltaAgrees: where the scan of a text delta gives its text,
// decoding the event gives the same deltas.
func FuzzTextDeltaAgrees(f *testing.F) {
	for _, s := range deltaSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9 \"q\""}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, ok := scanTextDelta(data)
		if !ok {
			return
		}
		want, end, err := Codec.NewStreamDecoder().(*decoder).decodeParsed(nil, nil, data)
		var got []llm.Delta
		if text != "" {
			got = []llm.Delta{{Kind: llm.DeltaText, Text: text}}
		}
		if err != nil || end || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: scanned %+v, decoded %+v (end %v, err %v)", data, got, want, end, err)
		}
	})
}

func TestScanTextDelta(t *testing.T) {
	text, ok := scanTextDelta([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9"}}`))
	if !ok || text != "café" {
		t.Errorf("text delta: %q %v", text, ok)
	}
	if _, ok := scanTextDelta([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`)); ok {
		t.Error("a tool-argument delta was read as text")
	}
}

func BenchmarkDecodeTextDelta(b *testing.B) {
	ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word3"}}`)
	d := Codec.NewStreamDecoder()
	dst := make([]llm.Delta, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, _, err = d.Decode(dst[:0], nil, ev); err != nil || len(dst) != 1 {
			b.Fatal(err)
		}
	}
}
