package openai

import (
	"reflect"
	"testing"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

var chunkSeeds = []string{
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" w"},"finish_reason":null}],"usage":null}`,
	`{"choices":[{"delta":{"role":"assistant"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":""}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[]}}]}`,
	`{"choices":[{"text":"hi"}]}`,
	`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}}`,
	`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":-2,"prompt_tokens_details":null,"prompt_cache_hit_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":3.5,"completion_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":1234567890123,"Completion_tokens":2,"prompt_tokens_details":{}}}`,
	`{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":3},"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}}`,
	`{"choices":[{"delta":{"content":"a","content":""}}]}`,
	`{"Choices":[{"delta":{"content":"a"}}]}`,
	`{"choices":[{"delta":{"Content":"a"}}]}`,
	`{"choices":[{"delta":{"content":5}}]}`,
	`{"choices":[null,{"delta":null}]}`,
	`{"error":{"message":"x"}}`,
	`{"choices":[{"delta":{"reasoning":"r"}}],"usage":null}`,
}

// FuzzScanChunkAgrees: where the scan of a chunk gives an answer,
// decoding it gives the same one.
func FuzzScanChunkAgrees(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !jsonscan.Valid(data) {
			return
		}
		kind, u, err, ok := scanChunk(nil, data)
		if !ok {
			return
		}
		wk, wu, werr := classifyDecoded(nil, data)
		if kind != wk || (err == nil) != (werr == nil) || (u == nil) != (wu == nil) || (u != nil && !reflect.DeepEqual(*u, *wu)) {
			t.Fatalf("%s: scanned %v %+v %v, decoded %v %+v %v", data, kind, u, err, wk, wu, werr)
		}
	})
}

func TestScanChunkSeeds(t *testing.T) {
	scanned := 0
	for _, s := range chunkSeeds {
		kind, u, err, ok := scanChunk(nil, []byte(s))
		if !ok {
			continue
		}
		scanned++
		wk, wu, werr := classifyDecoded(nil, []byte(s))
		if kind != wk || (err == nil) != (werr == nil) || (u == nil) != (wu == nil) {
			t.Errorf("%s: scanned %v %v %v, decoded %v %v %v", s, kind, u, err, wk, wu, werr)
		}
	}
	if scanned < 8 {
		t.Errorf("only %d chunks were scanned", scanned)
	}
}

// scanChunk is classify's scan for a chunk known to be valid JSON, as
// the agreement tests call it.
func scanChunk(name, data []byte) (kind llm.EventKind, u *llm.Usage, err error, ok bool) {
	var v [3][]byte
	if data[0] != '{' || !jsonscan.Pick(data, chunkKeys, v[:]) {
		return 0, nil, nil, false
	}
	return scanPicked(name, data, &v)
}
