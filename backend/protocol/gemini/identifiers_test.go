package gemini

import (
	"bytes"
	"testing"

	"freelane/backend/llm"
)

// TestEncodeSendsNoIdentifiers: Gemini's API has no field a session or a
// user would steer, so a Gemini upstream learns neither.
func TestEncodeSendsNoIdentifiers(t *testing.T) {
	c := &llm.Conversation{
		System:   []llm.Part{{Kind: llm.PartText, Text: "s", Cache: &llm.CachePoint{TTL: "1h"}}},
		Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi", Cache: &llm.CachePoint{}}}}},
		Tools:    []llm.Tool{{Name: "f", Cache: &llm.CachePoint{}}},
	}
	out, err := Codec.EncodeRequest(c, "m", llm.Edits{Session: "sessionhash", User: "userhash"})
	if err != nil {
		t.Fatal(err)
	}
	for _, no := range []string{"sessionhash", "userhash", "cache", "1h"} {
		if bytes.Contains(bytes.ToLower(out), []byte(no)) {
			t.Errorf("Gemini body holds %q: %s", no, out)
		}
	}
}
