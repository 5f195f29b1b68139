package gemini

import (
	"reflect"
	"testing"

	"freelane/backend/llm"
)

// chunkSeeds are stream chunks as Gemini sends them, and variants that the
// scan must leave to the decoder or read exactly as it does.
var chunkSeeds = []string{
	`{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":6,"promptTokensDetails":[{"modality":"TEXT","tokenCount":5}]},"modelVersion":"gemini-2.5-flash","responseId":"abc"}`,
	`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":9,"totalTokenCount":14,"thoughtsTokenCount":3,"cachedContentTokenCount":2}}`,
	`{"candidates":[{"content":{"parts":[{"text":"**Plan**","thought":true}],"role":"model"},"index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"thoughtSignature":"c2ln","text":"x"}],"role":"model"},"index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}],"role":"model"},"index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x","inline_data":null}]},"index":0}]}`,
	`{"candidates":[{"finishReason":"SAFETY","index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"SAF\u0045TY"}]}`,
	`{"promptFeedback":{"blockReason":"SAFETY"}}`,
	`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`,
	`{"usageMetadata":{"promptTokenCount":5}}`,
	`{"usageMetadata":{"promptTokenCount":-5}}`,
	`{"usageMetadata":{"promptTokenCount":5.5}}`,
	`{"usageMetadata":{}}`,
	`{"usagemetadata":{"promptTokenCount":5}}`,
	`{"candidates":[{"Content":{"parts":[{"text":"x"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"TEXT":"x"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x","text":"y"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":5}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x","thought":"yes"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}]},"index":1.5}]}`,
	`{"candidates":[null,{"content":{"parts":[{"text":"second"}]}}]}`,
	`{"candidates":[{"content":null},{"content":{"parts":[null,{"text":"y"}]}}]}`,
	`{"candidates":[{"content":{"parts":null,"role":"model"}}],"modelVersion":7}`,
	`{"candidates":{},"usageMetadata":null}`,
	`{"candidates":[{"content":{"parts":[{"text":"\u00e9"}]}}],"modelVersion":"m","résumé":1}`,
	`{}`, `null`, `[]`, `{"candidates":[`,
}

func FuzzScanChunkAgrees(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScanChunk)
}

func TestScanChunkSeeds(t *testing.T) {
	scanned := 0
	for _, s := range chunkSeeds {
		if _, _, ok := scanChunk([]byte(s)); ok {
			scanned++
		}
		checkScanChunk(t, []byte(s))
	}
	if scanned < 10 {
		t.Errorf("only %d chunks were scanned", scanned)
	}
}

// checkScanChunk fails t unless a scanned chunk is classified as the
// decoder classifies it, with the same usage and the same decoder state.
func checkScanChunk(t *testing.T, data []byte) {
	kind, u, ok := scanChunk(data)
	if !ok {
		return
	}
	scanned, decoded := &decoder{}, &decoder{}
	sk, su, serr := scanned.Classify(nil, data)
	wk, wu, werr := decoded.classifyDecoded(data)
	if kind != sk || !reflect.DeepEqual(u, su) || serr != nil {
		t.Fatalf("%s: scanChunk %v %+v but Classify %v %+v %v", data, kind, u, sk, su, serr)
	}
	if kind != wk || werr != nil || !reflect.DeepEqual(u, wu) || scanned.content != decoded.content {
		t.Fatalf("%s: scanned %v %+v (content %v), decoded %v %+v %v (content %v)", data, kind, u, scanned.content, wk, wu, werr, decoded.content)
	}
}

// BenchmarkClassifyChunk compares classifying a text chunk by scanning
// it, as Classify does, with decoding it.
func BenchmarkClassifyChunk(b *testing.B) {
	ev := []byte(chunkSeeds[0])
	b.Run("scan", func(b *testing.B) {
		d := &decoder{}
		b.ReportAllocs()
		b.SetBytes(int64(len(ev)))
		for b.Loop() {
			if k, _, err := d.Classify(nil, ev); err != nil || k != llm.Content {
				b.Fatal(k, err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		d := &decoder{}
		b.ReportAllocs()
		b.SetBytes(int64(len(ev)))
		for b.Loop() {
			if k, _, err := d.classifyDecoded(ev); err != nil || k != llm.Content {
				b.Fatal(k, err)
			}
		}
	})
}
