package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/internal/goldenfile"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

var _ protocol.Codec = Codec

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got)
}

// inputs lists the files matching pattern, by name without extension.
func inputs(t *testing.T, pattern string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no inputs match %s", pattern)
	}
	out := map[string]string{}
	for _, p := range paths {
		out[strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))] = p
	}
	return out
}

// dump writes v as indented JSON without its empty members, for reading.
func dump(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	return indent(t, prune(tree))
}

func indent(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// indentJSON lays out a JSON body for a golden file, in its own order.
func indentJSON(t *testing.T, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, body, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	return append(b.Bytes(), '\n')
}

// prune drops nulls, empty strings, false and empty containers; numbers
// stay, since a zero temperature is not an unset one.
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = prune(e)
			if empty(e) {
				delete(x, k)
			} else {
				x[k] = e
			}
		}
	case []any:
		for i, e := range x {
			x[i] = prune(e)
		}
	}
	return v
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func TestGoldenRequests(t *testing.T) {
	for name, path := range inputs(t, "testdata/requests/*.json") {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			conv := conversation(t, body)
			golden(t, strings.TrimSuffix(path, ".json")+".conv.golden", dump(t, conv))
			out, err := Codec.EncodeRequest(conv, "upstream-model", llm.Edits{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(path, ".json")+".out.golden", indentJSON(t, out))
			again := conversation(t, out)
			if want := withoutReasoning(conv); !reflect.DeepEqual(again, want) {
				t.Errorf("round trip differs:\n--- got\n%s\n--- want\n%s", dump(t, again), dump(t, want))
			}
		})
	}
}

// conversation parses a chat body and decodes it.
func conversation(t *testing.T, body []byte) *llm.Conversation {
	t.Helper()
	r, err := ParseRequest(llm.Chat, body)
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	c, err := r.Conversation()
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	return c
}

// withoutReasoning is c as the chat dialect can send it back: without the
// reasoning of earlier turns.
func withoutReasoning(c *llm.Conversation) *llm.Conversation {
	out := *c
	out.Messages = nil
	for _, m := range c.Messages {
		var parts []llm.Part
		for _, p := range m.Parts {
			if p.Kind != llm.PartReasoning {
				parts = append(parts, p)
			}
		}
		out.Messages = append(out.Messages, llm.Message{Role: m.Role, Parts: parts})
	}
	return &out
}

var testOptions = protocol.ResponseOptions{ID: "fl-0001", Model: "freelane-model", Created: 1700000000}

func TestGoldenAnswers(t *testing.T) {
	for name, path := range inputs(t, "testdata/answers/*.json") {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Codec.DecodeResponse(body)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(path, ".json")+".answer.golden", dump(t, a))
			out, err := Codec.EncodeResponse(a, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(path, ".json")+".out.golden", indentJSON(t, out))
			again, err := Codec.DecodeResponse(out)
			if err != nil {
				t.Fatal(err)
			}
			want := *a
			want.ID, want.Model = "chatcmpl-"+testOptions.ID, testOptions.Model
			if !reflect.DeepEqual(again, &want) {
				t.Errorf("round trip differs:\n--- got\n%s\n--- want\n%s", dump(t, again), dump(t, &want))
			}
		})
	}
}

type sseEvent struct{ name, data []byte }

// readSSE splits a stream into its events as an SSE reader would.
func readSSE(t *testing.T, b []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var ev sseEvent
	var data [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		switch {
		case len(line) == 0:
			if data != nil || ev.name != nil {
				ev.data = bytes.Join(data, []byte("\n"))
				out = append(out, ev)
			}
			ev, data = sseEvent{}, nil
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("event:")):
			ev.name = bytes.TrimSpace(line[len("event:"):])
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" ")))
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return out
}

// decodeStream runs a whole stream through a decoder.
func decodeStream(t *testing.T, b []byte) []llm.Delta {
	t.Helper()
	d := Codec.NewStreamDecoder()
	var deltas []llm.Delta
	ended := false
	for _, ev := range readSSE(t, b) {
		if ended {
			t.Fatalf("event after the end: %s", ev.data)
		}
		var err error
		deltas, ended, err = d.Decode(deltas, ev.name, ev.data)
		if err != nil {
			t.Fatalf("Decode(%s): %v", ev.data, err)
		}
	}
	if !ended {
		t.Fatal("the stream did not end")
	}
	return deltas
}

// encodeStream writes deltas as a client's stream, with its end marker.
func encodeStream(t *testing.T, deltas []llm.Delta) []byte {
	t.Helper()
	e := Codec.NewStreamEncoder(testOptions)
	var events []llm.Event
	for _, d := range deltas {
		events = e.Encode(events, d)
	}
	events = e.End(events)
	var b bytes.Buffer
	for _, ev := range events {
		if !json.Valid(ev.Data) {
			t.Fatalf("invalid event data %s", ev.Data)
		}
		b.WriteString("data: ")
		b.Write(ev.Data)
		b.WriteString("\n\n")
	}
	b.Write(Codec.StreamEnd())
	return b.Bytes()
}

var deltaNames = map[llm.DeltaKind]string{
	llm.DeltaText: "text", llm.DeltaReasoning: "reasoning", llm.DeltaToolStart: "tool_start",
	llm.DeltaToolArgs: "tool_args", llm.DeltaToolEnd: "tool_end", llm.DeltaFinish: "finish", llm.DeltaUsage: "usage",
}

// deltaDump is a Delta with its kind named, for golden files.
type deltaDump struct {
	Kind      string
	Index     *int `json:",omitempty"`
	Text      string
	ID        string
	Name      string
	Signature string
	Redacted  string
	Finish    llm.FinishReason
	Usage     *llm.Usage
}

func dumpDeltas(t *testing.T, deltas []llm.Delta) []byte {
	out := make([]deltaDump, len(deltas))
	for i, d := range deltas {
		out[i] = deltaDump{Kind: deltaNames[d.Kind], Text: d.Text, ID: d.ID, Name: d.Name,
			Signature: d.Signature, Redacted: d.Redacted, Finish: d.Finish, Usage: d.Usage}
		if d.Kind >= llm.DeltaToolStart && d.Kind <= llm.DeltaToolEnd {
			out[i].Index = &d.Index
		}
	}
	return dump(t, out)
}

func TestGoldenStreams(t *testing.T) {
	for name, path := range inputs(t, "testdata/streams/*.sse") {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			deltas := decodeStream(t, body)
			golden(t, strings.TrimSuffix(path, ".sse")+".deltas.golden", dumpDeltas(t, deltas))
			out := encodeStream(t, deltas)
			golden(t, strings.TrimSuffix(path, ".sse")+".out.golden", out)
			if again := decodeStream(t, out); !reflect.DeepEqual(again, deltas) {
				t.Errorf("round trip differs:\n--- got\n%s\n--- want\n%s", dumpDeltas(t, again), dumpDeltas(t, deltas))
			}
		})
	}
}
