package task_test

import (
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol/anthropic"
	"freelane/backend/quota"
	"freelane/backend/task"
)

// A Claude Code turn of about 180 KB: its prompt is counted, since the
// body's length alone does not rule out 60000 tokens. quick is what the
// rules use; full is the whole count the quotas make, for comparison.
func BenchmarkClassifyLongBody(b *testing.B) {
	body := longBody()
	for _, c := range []struct {
		name     string
		estimate task.Estimator
	}{{"quick", nil}, {"full", quota.PromptTokens}} {
		b.Run(c.name, func(b *testing.B) {
			cl := task.New(c.estimate)
			b.ReportAllocs()
			for b.Loop() {
				req, err := anthropic.Codec.ParseRequest(llm.Chat, body)
				if err != nil {
					b.Fatal(err)
				}
				if t, _, _ := cl.Classify(req); t != task.Default {
					b.Fatalf("task %s", t)
				}
			}
		})
	}
}

// The parse and the conversation's decode alone, which the quick estimate
// adds to.
func BenchmarkDecodeLongBody(b *testing.B) {
	body := longBody()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := anthropic.Codec.ParseRequest(llm.Chat, body)
		if _, err := req.Conversation(); err != nil {
			b.Fatal(err)
		}
	}
}

// The sample is close to the whole count, for prose and code alike.
func TestQuickEstimateIsClose(t *testing.T) {
	req, err := anthropic.Codec.ParseRequest(llm.Chat, longBody())
	if err != nil {
		t.Fatal(err)
	}
	quick, full := task.QuickPrompt(req), quota.PromptTokens(req)
	if d := float64(quick-full) / float64(full); d > 0.1 || d < -0.1 {
		t.Errorf("quick estimate %d, full %d: %.0f%% off", quick, full, d*100)
	}
	t.Logf("quick estimate %d, full count %d", quick, full)
}

func longBody() []byte {
	text := strings.Repeat("func main() { fmt.Println(\"hello, world\") } // a line of code\n", 2500)
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"system":"` + strings.Repeat("You are a coding agent. ", 1000) +
		`","messages":[{"role":"user","content":` + quote(text) + `}]}`)
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
