package tokens

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"freelane/backend/llm"
)

// TestMain makes the whole package run as if the machine were offline: any
// attempt to download BPE tables would go to a proxy that does not exist,
// and the tiktoken cache directory is empty.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tiktoken-cache")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for k, v := range map[string]string{
		"HTTP_PROXY": "http://127.0.0.1:1", "HTTPS_PROXY": "http://127.0.0.1:1",
		"http_proxy": "http://127.0.0.1:1", "https_proxy": "http://127.0.0.1:1",
		"NO_PROXY": "", "no_proxy": "", "TIKTOKEN_CACHE_DIR": dir,
	} {
		os.Setenv(k, v)
	}
	os.Exit(m.Run())
}

func TestOfflineNetworkReallyIsDead(t *testing.T) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	if _, err := c.Get("https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"); err == nil {
		t.Fatal("the download went through; the offline test proves nothing")
	}
	if Count([]byte("hello world")) != 2 {
		t.Fatal("the encoder did not load offline")
	}
	if entries, _ := os.ReadDir(os.Getenv("TIKTOKEN_CACHE_DIR")); len(entries) != 0 {
		t.Fatalf("something was cached, so something was fetched: %v", entries)
	}
}

// within checks got against want with a 10 % tolerance.
func within(t *testing.T, name string, got, want int) {
	t.Helper()
	diff := float64(got-want) / float64(want)
	if diff < -0.10 || diff > 0.10 {
		t.Errorf("%s: estimate %d, reference %d (%.1f%% off)", name, got, want, diff*100)
	}
}

// Reference counts published with OpenAI's tiktoken (cl100k_base) and the
// prompt_tokens its chat API reported for the cookbook's example messages.
func TestCountMatchesPublishedCounts(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"hello world", 2},
		{"tiktoken is great!", 6},
		{"antidisestablishmentarianism", 6},
	} {
		within(t, c.text, Count([]byte(c.text)), c.want)
	}
}

func TestPromptMatchesTheAPIsCount(t *testing.T) {
	// From OpenAI's "How to count tokens with tiktoken": gpt-4-0613 and
	// gpt-3.5-turbo-0613 reported 129 prompt tokens for these messages.
	body := `{"model":"gpt-4","messages":[
	{"role":"system","content":"You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
	{"role":"system","name":"example_user","content":"New synergies will help drive top-line growth."},
	{"role":"system","name":"example_assistant","content":"Things working well together will increase revenue."},
	{"role":"system","name":"example_user","content":"Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
	{"role":"system","name":"example_assistant","content":"Let's talk later when we're less busy about how to do better."},
	{"role":"user","content":"This late pivot means we don't have time to boil the ocean for the client deliverable."}]}`
	within(t, "cookbook messages", Prompt([]byte(body)), 129)
}

// TestLongTextExtrapolation compares the bounded estimate of a long text
// with the exact encoding of the same text.
func TestLongTextExtrapolation(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 3*maxExact; i++ {
		sb.WriteString("func handle(w http.ResponseWriter, r *http.Request) { // line ")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString("\n\tfmt.Fprintf(w, \"Grüße, %s!\", r.URL.Path)\n}\n")
	}
	text := sb.String()
	exact := len(encoder().EncodeOrdinary(text))
	within(t, "long text", Count([]byte(text)), exact)
}

func TestPromptShapes(t *testing.T) {
	parts := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hello world"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`
	if got := Prompt([]byte(parts)); got != perReply+perMessage+1+2 {
		t.Errorf("content parts: %d", got)
	}
	if got := Prompt([]byte(`{"model":"m","prompt":"hello world"}`)); got != 2 {
		t.Errorf("completion prompt: %d", got)
	}
	if got := Prompt([]byte(`{"model":"m","input":["hello world","hello world"]}`)); got != 4 {
		t.Errorf("embedding input: %d", got)
	}
}

func BenchmarkCount1KB(b *testing.B) {
	text := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23))
	Warm()
	b.ReportAllocs()
	for b.Loop() {
		Count(text)
	}
}

// TestConversationMatchesPrompt: a conversation of the usual shape (the
// instructions, then turns) costs in the neutral model what the same
// messages cost in OpenAI's body, whose framing Prompt counts as the API
// does.
func TestConversationMatchesPrompt(t *testing.T) {
	sys := "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."
	turns := []string{
		"New synergies will help drive top-line growth.",
		"Things working well together will increase revenue.",
		"This late pivot means we don't have time to boil the ocean for the client deliverable.",
	}
	body := `{"model":"m","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"` + turns[0] +
		`"},{"role":"assistant","content":"` + turns[1] + `"},{"role":"user","content":"` + turns[2] + `"}]}`
	c := &llm.Conversation{System: []llm.Part{{Kind: llm.PartText, Text: sys}}}
	for i, text := range turns {
		role := llm.RoleUser
		if i == 1 {
			role = llm.RoleAssistant
		}
		c.Messages = append(c.Messages, llm.Message{Role: role, Parts: []llm.Part{{Kind: llm.PartText, Text: text}}})
	}
	within(t, "conversation", Conversation(c), Prompt([]byte(body)))
}

func TestConversationCountsToolsAndCalls(t *testing.T) {
	hi := &llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: "hi"}}}}}
	base := Conversation(hi)
	if base != perReply+perMessage+1+Count([]byte("hi\n")) {
		t.Errorf("one message: %d", base)
	}
	c := *hi
	c.Tools = []llm.Tool{{Name: "get_weather", Description: "The weather in a city", Parameters: []byte(`{"type":"object"}`)}}
	c.Messages = append(c.Messages,
		llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
		llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c",
			Content: []llm.Part{{Kind: llm.PartText, Text: "18 degrees and sunny"}}}}}})
	// Each added piece of text costs tokens of its own.
	if got := Conversation(&c); got < base+2*(perMessage+1)+Count([]byte("get_weather"))+Count([]byte("18 degrees and sunny")) {
		t.Errorf("tools and calls: %d, one message %d", got, base)
	}
}

func TestSampled(t *testing.T) {
	short := []byte("a short text is counted whole")
	if Sampled(short, 1024) != Count(short) {
		t.Errorf("short: %d, want %d", Sampled(short, 1024), Count(short))
	}
	// Prose and code mixed, with non-ASCII text, far longer than the
	// sample.
	var long []byte
	for i := range 400 {
		long = append(long, "The quick brown fox jumps over the lazy dog; "...)
		long = append(long, "if err != nil { return fmt.Errorf(\"step %d: %w\", i, err) }\n"...)
		if i%5 == 0 {
			long = append(long, "Grüße aus Köln, schönes Wetter heute. "...)
		}
	}
	full, quick := Count(long), Sampled(long, 4096)
	if d := float64(quick-full) / float64(full); d > 0.1 || d < -0.1 {
		t.Errorf("sampled %d, counted %d: %.0f%% off", quick, full, d*100)
	}
}
