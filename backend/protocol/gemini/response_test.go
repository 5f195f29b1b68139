package gemini

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func candidateBody(parts, finish string) string {
	return `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]},"finishReason":"` + finish + `","index":0}],` +
		`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7}}`
}

func TestDecodeResponseFinish(t *testing.T) {
	for _, c := range []struct {
		parts, finish string
		want          llm.FinishReason
	}{
		{`{"text":"a"}`, "STOP", llm.FinishStop},
		{`{"text":"a"}`, "MAX_TOKENS", llm.FinishLength},
		{`{"functionCall":{"name":"f"}}`, "STOP", llm.FinishToolCalls},
		{`{"functionCall":{"name":"f"}}`, "", llm.FinishToolCalls},
		{`{"functionCall":{"name":"f"}}`, "MAX_TOKENS", llm.FinishLength},
		{`{"text":"half an ans"}`, "SAFETY", llm.FinishContentFilter},
		{`{"text":"quoted"}`, "RECITATION", llm.FinishContentFilter},
		{`{"text":"a"}`, "OTHER", llm.FinishStop},
		{`{"text":"a"}`, "MALFORMED_FUNCTION_CALL", llm.FinishStop},
	} {
		a, err := Codec.DecodeResponse([]byte(candidateBody(c.parts, c.finish)))
		if err != nil {
			t.Fatalf("%s %s: %v", c.parts, c.finish, err)
		}
		if a.Finish != c.want || !a.Usable() {
			t.Errorf("%s %s: finish %s usable %v, want %s", c.parts, c.finish, a.Finish, a.Usable(), c.want)
		}
		if *a.Usage != (llm.Usage{PromptTokens: 5, CompletionTokens: 7, TotalTokens: 12}) {
			t.Errorf("usage %+v", a.Usage)
		}
	}
}

func TestBlocked(t *testing.T) {
	for _, c := range []struct {
		name, body, reason string
	}{
		{"prompt", `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]}}`, "SAFETY"},
		{"prompt other", `{"promptFeedback":{"blockReason":"OTHER"},"usageMetadata":{"promptTokenCount":3}}`, "OTHER"},
		{"candidate", `{"candidates":[{"finishReason":"PROHIBITED_CONTENT","index":0}]}`, "PROHIBITED_CONTENT"},
		{"candidate empty parts", candidateBody(`{"text":""}`, "SPII"), "SPII"},
		{"blocklist", candidateBody(``, "BLOCKLIST"), "BLOCKLIST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Codec.DecodeResponse([]byte(c.body))
			_, cerr := Codec.CheckAnswer(llm.Chat, []byte(c.body))
			_, _, serr := Codec.NewStreamDecoder().Decode(nil, nil, []byte(c.body))
			_, _, kerr := Codec.NewStreamDecoder().Classify(nil, []byte(c.body))
			for _, err := range []error{err, cerr, serr, kerr} {
				var e *llm.Error
				if !errors.As(err, &e) || e.Class != llm.Caller || e.Code != c.reason || e.Status != http.StatusBadRequest ||
					!strings.Contains(e.Message, "safety filters ("+c.reason+")") || len(e.Body) == 0 {
					t.Errorf("got %#v", err)
				}
			}
		})
	}
}

func TestCheckAnswer(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		sub  llm.Sub
	}{
		{"fine", candidateBody(`{"text":"hello"}`, "STOP"), llm.SubNone},
		{"only a call", candidateBody(`{"functionCall":{"name":"f","args":{}}}`, "STOP"), llm.SubNone},
		{"no candidates", `{"usageMetadata":{"promptTokenCount":5}}`, llm.SubEmpty},
		{"empty text", candidateBody(`{"text":""}`, "STOP"), llm.SubEmpty},
		{"no content", `{"candidates":[{"finishReason":"STOP","index":0}]}`, llm.SubEmpty},
		{"quota notice", candidateBody(`{"text":"Quota exceeded for this model."}`, "STOP"), llm.SubQuota},
		{"not JSON", `<html>`, llm.SubMalformed},
		{"error in a 200", `{"error":{"code":500,"message":"oops","status":"INTERNAL"}}`, llm.SubMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := Codec.CheckAnswer(llm.Chat, []byte(c.body))
			var e *llm.Error
			switch {
			case c.sub == llm.SubNone && err != nil:
				t.Fatalf("refused: %v", err)
			case c.sub != llm.SubNone && (!errors.As(err, &e) || e.Class != llm.Soft || e.Sub != c.sub):
				t.Fatalf("got %v, want a soft %s", err, c.sub)
			}
			if strings.Contains(c.body, "candidatesTokenCount") && u.TotalTokens != 12 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}

func TestEncodeResponse(t *testing.T) {
	a := &llm.Answer{ID: "up-1", Model: "upstream-model", Finish: llm.FinishLength, Parts: []llm.Part{
		{Kind: llm.PartReasoning, Text: "hmm", Signature: "foreign signature, not base64"},
		{Kind: llm.PartText, Text: "hello"},
		{Kind: llm.PartReasoning, Signature: "c2lnbmF0dXJl"},
	}}
	out, err := Codec.EncodeResponse(a, protocol.ResponseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkGenaiResponse(t, out)
	want := `{"candidates":[{"content":{"role":"model","parts":[{"text":"hmm","thought":true},{"text":"hello"},{"text":"","thoughtSignature":"c2lnbmF0dXJl"}]},"finishReason":"MAX_TOKENS","index":0}],"modelVersion":"upstream-model","responseId":"up-1"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	empty, _ := Codec.EncodeResponse(&llm.Answer{Finish: llm.FinishContentFilter, Usage: &llm.Usage{PromptTokens: 3, CompletionTokens: 0}}, defaultOptions)
	checkGenaiResponse(t, empty)
	if want := `{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"SAFETY","index":0}],"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`; string(empty) != want {
		t.Errorf("got  %s\nwant %s", empty, want)
	}
}
