package gemini

import (
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

var defaultOptions = protocol.ResponseOptions{ID: "resp-1", Model: "gemini-2.5-flash"}

func mustDecode(t *testing.T, body []byte) *llm.Answer {
	t.Helper()
	a, err := Codec.DecodeResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The golden files were written with the ids of one answer numbered from
// call_0; TestAnswerCallIDsDiffer checks the real, random prefixes.
func init() { answerCallPrefix = func() string { return "call_" } }
