package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"freelane/backend/llm"
)

// answerSeeds are non-streaming answers as vendors send them, and
// variants the scan must read exactly as encoding/json does or leave to it.
var answerSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":"fp"}`,
	`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
	`{"choices":[{"message":{"content":""}}],"usage":null}`,
	`{"choices":[{"message":{"content":"You exceeded your current quota, please check your plan."}}]}`,
	`{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`,
	`{"choices":[{"text":"completion","index":0}]}`,
	`{"choices":[null,{"message":null}]}`,
	`{"choices":[]}`, `{"choices":null}`, `{}`,
	`{"object":"list","data":[{"embedding":[0.1]}],"usage":{"prompt_tokens":3,"total_tokens":3}}`,
	`{"data":[]}`,
	`{"error":{"message":"rate limited","type":"rate_limit"}}`,
	`{"choices":[{"message":{"content":"x","Content":"y"}}]}`,
	`{"choices":[{"message":{"content":"x","content":"y"}}]}`,
	`{"choices":[{"message":{"content":"a\u00e9\ud83d\ude00"}}]}`,
	"{\"choices\":[{\"message\":{\"content\":\"\xff\xfe\"}}]}",
	`{"choices":{"0":{}}}`, `{"choices":[5]}`, `{"choices":[{"message":"x"}]}`,
	`{"usage":{"prompt_tokens":"9"}}`, `{"usage":[]}`,
	`[]`, `null`, `{"choices":[`,
}

func FuzzScanAnswerAgrees(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScanAnswer)
}

func TestScanAnswerSeeds(t *testing.T) {
	scanned := 0
	for _, s := range answerSeeds {
		var a answer
		if scanAnswer([]byte(s), &a) {
			scanned++
		}
		checkScanAnswer(t, []byte(s))
	}
	if scanned < 12 {
		t.Errorf("only %d answers were scanned", scanned)
	}
}

// checkScanAnswer fails t unless a scanned answer is what encoding/json
// reads.
func checkScanAnswer(t *testing.T, body []byte) {
	var got answer
	if !scanAnswer(body, &got) {
		return
	}
	var want answer
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("%s: scanned, but encoding/json refuses it: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nscanned %#v\ndecoded %#v", body, got, want)
	}
}

// BenchmarkCheckAnswer measures checking a short chat answer, as every
// non-streaming request does, against decoding it.
func BenchmarkCheckAnswer(b *testing.B) {
	body := []byte(answerSeeds[0])
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Codec.CheckAnswer(llm.Chat, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a answer
			if err := json.Unmarshal(body, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
