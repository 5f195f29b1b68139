package dialects

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"freelane/backend/jsonscan"
	"freelane/backend/llm"
)

// conversationTurns is a coding agent's conversation after turn n: the
// same system prompt and tools every turn, and the history growing at
// the end only. The system and the tools carry breakpoints, as Claude
// Code puts them.
func conversationTurns(n int) *llm.Conversation {
	zero := 0.0
	c := &llm.Conversation{
		System: []llm.Part{{Kind: llm.PartText, Text: "You are a careful coding agent. Read files before you edit them.", Cache: &llm.CachePoint{TTL: "1h"}}},
		Tools: []llm.Tool{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"lines":{"type":"integer"}},"required":["path"]}`)},
			{Name: "edit_file", Description: "Replace text in a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}}}`), Cache: &llm.CachePoint{}},
		},
		MaxOutput:   4096,
		Temperature: &zero,
	}
	for i := range n {
		call := fmt.Sprintf("call_%d", i)
		c.Messages = append(c.Messages,
			llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: stepText(i)}}},
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Kind: llm.PartText, Text: "Reading it."},
				{Kind: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: call, Name: "read_file", Arguments: `{"path":"main.go","lines":40}`}},
			}},
			llm.Message{Role: llm.RoleTool, Parts: []llm.Part{{Kind: llm.PartToolResult, ToolResult: &llm.ToolResult{
				CallID: call, Name: "read_file", Content: []llm.Part{{Kind: llm.PartText, Text: "package main\n\nfunc main() {}\n"}}}}}},
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Kind: llm.PartText, Text: fmt.Sprintf("Done with step %d.", i)}}},
		)
	}
	c.Messages = append(c.Messages, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Kind: llm.PartText, Text: stepText(n)}}})
	return c
}

// stepText is what the user asks at step i.
func stepText(i int) string {
	return fmt.Sprintf("Now step %d: look at main.go «ünïcode» and fix the bug.", i)
}

// messageKeys are the members that hold the conversation in each
// dialect: the only ones that may grow from turn to turn.
var messageKeys = map[string]bool{"messages": true, "contents": true, "input": true}

// topMembers splits a JSON object into its members' bytes.
func topMembers(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("not JSON: %s", b)
	}
	out := map[string][]byte{}
	jsonscan.EachMember(b, jsonscan.SkipSpace(b, 0), func(k []byte, vs, ve int) bool {
		out[string(k)] = b[vs:ve]
		return true
	})
	return out
}

// clientBody is turn n as a client of dialect in sends it, and the
// request FreeLane parses from it.
func clientBody(t testing.TB, in llm.Dialect, n int) *llm.Request {
	t.Helper()
	codec, _ := Registry().Codec(in)
	body, err := codec.EncodeRequest(conversationTurns(n), "client-model", llm.Edits{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := codec.ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatalf("%s: %v\n%s", in, err, body)
	}
	return req
}

// translate is what an upstream of dialect out is sent for req.
func translate(t testing.TB, req *llm.Request, out llm.Dialect) []byte {
	t.Helper()
	conv, err := req.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	codec, _ := Registry().Codec(out)
	body, err := codec.EncodeRequest(conv, "upstream-model", llm.Edits{Session: "0123456789abcdef0123456789abcdef", User: "fedcba9876543210fedcba9876543210"})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

var allDialects = []llm.Dialect{llm.DialectOpenAI, llm.DialectResponses, llm.DialectAnthropic, llm.DialectGemini}

// TestTranslatedPrefixIsStable translates turn N and turn N+1 of one
// conversation from every dialect into every dialect: everything but the
// conversation is the same bytes, and the conversation of turn N, up to
// the end of its last message, is the start of turn N+1's. A vendor's
// prefix cache then finds turn N's prompt in turn N+1.
func TestTranslatedPrefixIsStable(t *testing.T) {
	for _, in := range allDialects {
		for _, out := range allDialects {
			t.Run(string(in)+"->"+string(out), func(t *testing.T) {
				for n := 1; n <= 3; n++ {
					a := translate(t, clientBody(t, in, n), out)
					b := translate(t, clientBody(t, in, n+1), out)
					if again := translate(t, clientBody(t, in, n), out); !bytes.Equal(a, again) {
						t.Fatalf("turn %d translated twice differs:\n%s\n%s", n, a, again)
					}
					// Breakpoints exist in the Anthropic dialect only. An
					// Anthropic upstream gets its client's back: on the system
					// and after the tools; a conversation with a session from
					// another dialect gets three: after the tools, after the
					// system and on its last block.
					want := 0
					switch {
					case in == llm.DialectAnthropic && out == llm.DialectAnthropic:
						want = 2
					case out == llm.DialectAnthropic:
						want = 3
					}
					if got := bytes.Count(a, []byte(`"cache_control":{"type":"ephemeral"`)); got != want {
						t.Errorf("turn %d has %d breakpoints, want %d:\n%s", n, got, want, a)
					}
					ma, mb := topMembers(t, a), topMembers(t, b)
					grew := 0
					for k, va := range ma {
						vb, ok := mb[k]
						if !messageKeys[k] {
							if !ok || !bytes.Equal(va, vb) {
								t.Errorf("turn %d to %d: %s changed:\n%s\n%s", n, n+1, k, va, vb)
							}
							continue
						}
						grew++
						if out == llm.DialectAnthropic {
							// The breakpoint on the last block moves forward
							// every turn; the vendor's cache keys on the
							// blocks, not on where the breakpoints sit.
							va, vb = withoutBreakpoints(va), withoutBreakpoints(vb)
						}
						// The array of turn n without its closing bracket.
						head := bytes.TrimRight(va[:len(va)-1], " \n\t")
						if !bytes.HasPrefix(vb, head) {
							i := 0
							for i < len(head) && i < len(vb) && head[i] == vb[i] {
								i++
							}
							t.Errorf("turn %d to %d: %s of turn %d is not the start of turn %d's; they part at byte %d:\n%s\n%s",
								n, n+1, k, n, n+1, i, head[max(0, i-80):min(len(head), i+80)], vb[max(0, i-80):min(len(vb), i+80)])
						}
						if !strings.Contains(string(va), fmt.Sprintf("Now step %d:", n)) {
							t.Errorf("turn %d's %s lacks its last message", n, k)
						}
					}
					if grew != 1 {
						t.Errorf("%d members hold the conversation, want 1: %v", grew, keys(ma))
					}
					for k := range mb {
						if _, ok := ma[k]; !ok {
							t.Errorf("turn %d has %s, turn %d has not", n+1, k, n)
						}
					}
				}
			})
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkPrefixStableTranslation is one turn of an Anthropic client's
// long conversation, parsed, decoded and written for an OpenAI upstream.
func BenchmarkPrefixStableTranslation(b *testing.B) {
	for _, pair := range [][2]llm.Dialect{{llm.DialectAnthropic, llm.DialectOpenAI}, {llm.DialectOpenAI, llm.DialectAnthropic}, {llm.DialectResponses, llm.DialectOpenAI}} {
		b.Run(string(pair[0])+"->"+string(pair[1]), func(b *testing.B) {
			codec, _ := Registry().Codec(pair[0])
			body, err := codec.EncodeRequest(conversationTurns(20), "m", llm.Edits{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := codec.ParseRequest(llm.Chat, body)
				if err != nil {
					b.Fatal(err)
				}
				_ = translate(b, req, pair[1])
			}
		})
	}
}

// withoutBreakpoints is an Anthropic messages array without its
// cache_control members.
func withoutBreakpoints(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(`,"cache_control":{"type":"ephemeral"}`), nil)
}
