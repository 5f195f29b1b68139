package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/internal/goldenfile"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got)
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return append(out.Bytes(), '\n')
}

func pretty(t *testing.T, v any) []byte {
	t.Helper()
	return indent(t, marshal(v))
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func cases(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test data for %s", pattern)
	}
	return files
}

// sseEvent is one event of a recorded stream.
type sseEvent struct{ name, data string }

// readSSE splits a server-sent event stream into its events.
func readSSE(b []byte) []sseEvent {
	var out []sseEvent
	for _, chunk := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(chunk, "\n") {
			switch {
			case strings.HasPrefix(line, "event:"):
				ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				ev.data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
		if ev.data != "" {
			out = append(out, ev)
		}
	}
	return out
}

// writeSSE writes encoder events as the gateway would put them on the wire.
func writeSSE(events []llm.Event) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		if name := Codec.EventName(ev.Data); name != "" {
			fmt.Fprintf(&b, "event: %s\n", name)
		}
		fmt.Fprintf(&b, "data: %s\n\n", ev.Data)
	}
	return b.Bytes()
}

var deltaNames = map[llm.DeltaKind]string{
	llm.DeltaText: "text", llm.DeltaReasoning: "reasoning", llm.DeltaToolStart: "tool_start",
	llm.DeltaToolArgs: "tool_args", llm.DeltaToolEnd: "tool_end", llm.DeltaFinish: "finish", llm.DeltaUsage: "usage",
}

// deltaView is a delta with only its set fields, for reading golden files.
type deltaView struct {
	Kind      string           `json:"kind"`
	Index     *int             `json:"index,omitempty"`
	Text      string           `json:"text,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Signature string           `json:"signature,omitempty"`
	Redacted  string           `json:"redacted,omitempty"`
	Finish    llm.FinishReason `json:"finish,omitempty"`
	Usage     *llm.Usage       `json:"usage,omitempty"`
}

func view(d llm.Delta) deltaView {
	v := deltaView{Kind: deltaNames[d.Kind], Text: d.Text, ID: d.ID, Name: d.Name, Signature: d.Signature,
		Redacted: d.Redacted, Finish: d.Finish, Usage: d.Usage}
	switch d.Kind {
	case llm.DeltaToolStart, llm.DeltaToolArgs, llm.DeltaToolEnd:
		i := d.Index
		v.Index = &i
	}
	return v
}

func TestEncodeRequestGolden(t *testing.T) {
	for _, in := range cases(t, "encode/*.conv.json") {
		name := strings.TrimSuffix(in, ".conv.json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			var c llm.Conversation
			var e llm.Edits
			readJSON(t, in, &c)
			readJSON(t, name+".edits.json", &e)
			body, err := Codec.EncodeRequest(&c, "claude-sonnet-4-5", e)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".golden.json", indent(t, body))
			// What FreeLane sends must be what it would accept from a
			// client of the dialect.
			if _, err := Codec.ParseRequest(llm.Chat, body); err != nil {
				t.Errorf("the encoded request does not parse: %v", err)
			}
		})
	}
}

func TestConversationGolden(t *testing.T) {
	for _, in := range cases(t, "parse/*.json") {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(in, ".json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Codec.ParseRequest(llm.Chat, body)
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.Conversation()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".conv.golden.json", pretty(t, c))
			// The body for an Anthropic upstream is the client's own,
			// the end user's id aside (here given back as it was).
			if got := r.Body(r.Model, llm.Edits{User: r.ClientUser}); !bytes.Equal(got, body) {
				t.Errorf("Rewrite with the same model changed the body")
			}
			// Encoding the conversation again and decoding it keeps it,
			// where the dialect can say it (see roundTripLoss).
			enc, err := Codec.EncodeRequest(c, r.Model, llm.Edits{})
			if err != nil {
				t.Fatal(err)
			}
			r2, err := Codec.ParseRequest(llm.Chat, enc)
			if err != nil {
				t.Fatalf("re-encoded body does not parse: %v\n%s", err, enc)
			}
			c2, err := r2.Conversation()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(roundTripLoss(c), c2) {
				t.Errorf("round trip changed the conversation:\n got %s\nwant %s", marshal(c2), marshal(roundTripLoss(c)))
			}
		})
	}
}

// roundTripLoss is c as it comes back from an encode and decode: system
// messages among the messages are already in System, output_config's
// effort is a thinking budget, Strict has no Anthropic field and a tool
// choice without tools is left out.
func roundTripLoss(c *llm.Conversation) *llm.Conversation {
	out := *c
	out.Tools = nil
	for _, t := range c.Tools {
		t.Strict = false
		var b bytes.Buffer
		_ = json.Compact(&b, t.Parameters)
		t.Parameters = b.Bytes()
		out.Tools = append(out.Tools, t)
	}
	if r := c.Reasoning; r != nil && r.Effort != "" {
		out.Reasoning = &llm.Reasoning{BudgetTokens: effortBudget[r.Effort]}
	}
	if c.ResponseFormat != nil {
		out.ResponseFormat = nil
	}
	if c.Temperature != nil {
		out.TopP = nil // Claude refuses both; the temperature stays
	}
	if len(c.Tools) == 0 {
		// A tool choice without tools says nothing and is not sent.
		out.ToolChoice, out.ParallelToolCalls = nil, nil
	}
	if len(c.System) > 0 {
		// Several system parts are sent as blocks and read back as parts.
		out.System = append([]llm.Part(nil), c.System...)
	}
	return &out
}

func TestResponseGolden(t *testing.T) {
	for _, in := range cases(t, "response/*.json") {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(in, ".json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Codec.DecodeResponse(body)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".answer.golden.json", pretty(t, a))
			if _, err := Codec.CheckAnswer(llm.Chat, body); err != nil {
				t.Errorf("CheckAnswer refused a good answer: %v", err)
			}
			enc, err := Codec.EncodeResponse(a, protocol.ResponseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".encoded.golden.json", indent(t, enc))
			back, err := Codec.DecodeResponse(enc)
			if err != nil {
				t.Fatal(err)
			}
			// Anthropic's cache counts fold into the prompt, which is all
			// that survives a trip through the neutral model.
			if !reflect.DeepEqual(back, a) {
				t.Errorf("decode(encode(answer)) changed it:\n got %s\nwant %s", marshal(back), marshal(a))
			}
		})
	}
}

// decodeStream runs a recorded stream through a decoder, returning every
// delta, one view line per event, and the error that ended it, if any.
func decodeStream(t *testing.T, events []sseEvent) ([]llm.Delta, []byte, error) {
	t.Helper()
	dec := Codec.NewStreamDecoder()
	var all []llm.Delta
	var lines bytes.Buffer
	for i, ev := range events {
		out, end, err := dec.Decode(nil, []byte(ev.name), []byte(ev.data))
		line := struct {
			Event  string      `json:"event"`
			Deltas []deltaView `json:"deltas,omitempty"`
			End    bool        `json:"end,omitempty"`
			Error  *llm.Error  `json:"error,omitempty"`
		}{Event: ev.name}
		for _, d := range out {
			line.Deltas = append(line.Deltas, view(d))
		}
		line.End = end
		var le *llm.Error
		if errors.As(err, &le) {
			cp := *le
			cp.Body = nil
			line.Error = &cp
		} else if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		lines.Write(marshal(line))
		lines.WriteByte('\n')
		all = append(all, out...)
		if err != nil {
			return all, lines.Bytes(), err
		}
		if end && i != len(events)-1 {
			t.Errorf("end before the last event (%d of %d)", i, len(events))
		}
	}
	return all, lines.Bytes(), nil
}

// encodeStream encodes deltas without closing the stream.
func encodeStream(deltas []llm.Delta, o protocol.ResponseOptions) []llm.Event {
	enc := Codec.NewStreamEncoder(o)
	var out []llm.Event
	for _, d := range deltas {
		out = enc.Encode(out, d)
	}
	return out
}

func TestStreamGolden(t *testing.T) {
	for _, in := range cases(t, "stream/*.sse") {
		if strings.HasSuffix(in, ".golden.sse") {
			continue
		}
		name := strings.TrimSuffix(in, ".sse")
		t.Run(filepath.Base(name), func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			deltas, lines, streamErr := decodeStream(t, readSSE(body))
			golden(t, name+".deltas.golden.jsonl", lines)

			o := protocol.ResponseOptions{ID: "0123456789abcdef", Model: "freelane-test"}
			var wire []byte
			var le *llm.Error
			if errors.As(streamErr, &le) {
				// A broken stream ends with the error event, not End.
				events := append(encodeStream(deltas, o), Codec.EncodeStreamError(protocol.ErrorInfo{Type: le.Code, Message: "Overloaded"}))
				wire = writeSSE(events)
			} else {
				wire = append(writeSSE(closeStream(deltas, o)), Codec.StreamEnd()...)
			}
			golden(t, name+".encoded.golden.sse", wire)

			// Decoding what the encoder wrote gives the deltas back.
			again, _, _ := decodeStream(t, readSSE(wire))
			if !reflect.DeepEqual(views(again), views(deltas)) {
				t.Errorf("decode(encode(stream)) changed it:\n got %s\nwant %s", marshal(views(again)), marshal(views(deltas)))
			}
		})
	}
}

// closeStream encodes deltas into a complete stream, End included.
func closeStream(deltas []llm.Delta, o protocol.ResponseOptions) []llm.Event {
	enc := Codec.NewStreamEncoder(o)
	var out []llm.Event
	for _, d := range deltas {
		out = enc.Encode(out, d)
	}
	return enc.End(out)
}

func views(ds []llm.Delta) []deltaView {
	out := make([]deltaView, len(ds))
	for i, d := range ds {
		out[i] = view(d)
	}
	return out
}
