package gemini

import (
	"testing"

	"freelane/backend/llm"
)

func BenchmarkParseRequest(b *testing.B) {
	body := readBench(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := ParseRequestFor(llm.Chat, "gemini-2.5-flash", true, body)
		if err != nil {
			b.Fatal(err)
		}
		_ = r.Body("gemini-2.5-flash", llm.Edits{})
	}
}

func readBench(b *testing.B) []byte {
	b.Helper()
	return []byte(`{"system_instruction":{"parts":[{"text":"be brief"}]},"contents":[` +
		`{"role":"user","parts":[{"text":"What is the weather in Paris today, and what should I wear?"}]},` +
		`{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18C, cloudy"}}}]}],` +
		`"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}}}}]}],` +
		`"generationConfig":{"temperature":0.3,"maxOutputTokens":1024}}`)
}
