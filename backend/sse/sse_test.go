package sse_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"freelane/backend/sse"
)

type ev struct{ name, data string }

func (e ev) String() string { return fmt.Sprintf("{%q %q}", e.name, e.data) }

// readAll reads events until an error and returns them with that error.
// Event slices are copied: they are only valid until the next call.
func readAll(t testing.TB, r io.Reader, max int) ([]ev, error) {
	t.Helper()
	sr := sse.NewReader(r, max)
	var out []ev
	for i := 0; ; i++ {
		if i > 1<<20 {
			t.Fatal("reader does not terminate")
		}
		e, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{string(e.Name), string(e.Data)})
	}
}

func equalEvents(a, b []ev) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []ev
		limit int
	}{
		{"LF", "data: a\n\ndata: b\n\n", []ev{{"", "a"}, {"", "b"}}, 0},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{"", "a"}, {"", "b"}}, 0},
		{"mixed line endings", "data: a\r\n\ndata: b\n\r\n", []ev{{"", "a"}, {"", "b"}}, 0},
		{"multi-line data joined with LF", "data: {\"a\":\ndata: 1}\n\n", []ev{{"", "{\"a\":\n1}"}}, 0},
		{"multi-line data CRLF", "data: x\r\ndata: y\r\ndata: z\r\n\r\n", []ev{{"", "x\ny\nz"}}, 0},
		{"empty data line in the middle", "data: x\ndata\ndata: y\n\n", []ev{{"", "x\n\ny"}}, 0},
		{"comments skipped", ": keep-alive\n\ndata: x\n: OPENROUTER PROCESSING\n\n:\n\n", []ev{{"", "x"}}, 0},
		{"comment between data lines", "data: a\n: ping\ndata: b\n\n", []ev{{"", "a\nb"}}, 0},
		{"event name", "event: error\ndata: {\"error\":{}}\n\n", []ev{{"error", `{"error":{}}`}}, 0},
		{"event name after data", "data: x\nevent: message_delta\n\n", []ev{{"message_delta", "x"}}, 0},
		{"event name does not leak to the next event", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1"}, {"", "2"}}, 0},
		{"name-only event is not dispatched and does not leak", "event: ping\n\ndata: x\n\n", []ev{{"", "x"}}, 0},
		{"last event name wins", "event: a\nevent: b\ndata: x\n\n", []ev{{"b", "x"}}, 0},
		{"data without space", "data:x\n\n", []ev{{"", "x"}}, 0},
		{"only one space stripped", "data:  x \n\n", []ev{{"", " x "}}, 0},
		{"data with colons in value", "data: {\"a\":\"b:c\"}\n\n", []ev{{"", `{"a":"b:c"}`}}, 0},
		{"empty data", "data:\n\n", []ev{{"", ""}}, 0},
		{"field without colon", "data\n\n", []ev{{"", ""}}, 0},
		{"id retry and unknown fields skipped", "id: 7\nretry: 100\nfoo: bar\ndata: x\n\nid: 8\n\n", []ev{{"", "x"}}, 0},
		{"leading blank lines", "\n\n\r\ndata: a\n\n", []ev{{"", "a"}}, 0},
		{"no blank line at EOF", "data: a\n\ndata: b", []ev{{"", "a"}, {"", "b"}}, 0},
		{"no blank line at EOF, line ended", "data: a\n\ndata: b\n", []ev{{"", "a"}, {"", "b"}}, 0},
		{"no blank line at EOF, CRLF", "data: a\r\ndata: b\r\n", []ev{{"", "a\nb"}}, 0},
		{"done marker", "data: {\"x\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"x":1}`}, {"", "[DONE]"}}, 0},
		{"bare JSON error line after events", "data: {\"a\":1}\n\n{\"error\":{\"code\":503}}\n", []ev{{"", `{"a":1}`}, {"", `{"error":{"code":503}}`}}, 0},
		{"bare JSON line without a newline at EOF", "{\"error\":{}}", []ev{{"", `{"error":{}}`}}, 0},
		{"a brace line inside a pending event is a field, as the spec reads it", "data: a\n{\"b\":2}\n\n", []ev{{"", "a"}}, 0},
		{"empty input", "", nil, 0},
		{"only comments", ": a\n: b\n", nil, 0},
		{"event at exactly the limit", "data: " + strings.Repeat("x", 100) + "\n\n", []ev{{"", strings.Repeat("x", 100)}}, 100},
		{"lines longer than the bufio buffer", "data: " + strings.Repeat("y", 40<<10) + "\r\ndata: z\r\n\r\n", []ev{{"", strings.Repeat("y", 40<<10) + "\nz"}}, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = 1 << 16
			}
			for _, rd := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tc.in)},
				{"one byte", iotest.OneByteReader(strings.NewReader(tc.in))},
				{"data with EOF", iotest.DataErrReader(strings.NewReader(tc.in))},
			} {
				got, err := readAll(t, rd.r, limit)
				if !errors.Is(err, io.EOF) {
					t.Errorf("%s: error = %v, want io.EOF", rd.name, err)
				}
				if !equalEvents(got, tc.want) {
					t.Errorf("%s: events = %v, want %v", rd.name, got, tc.want)
				}
			}
		})
	}
}

func TestReaderEOFIsSticky(t *testing.T) {
	r := sse.NewReader(strings.NewReader("data: a"), 1024)
	if e, err := r.Next(); err != nil || string(e.Data) != "a" {
		t.Fatalf("first Next = %q, %v", e.Data, err)
	}
	for range 3 {
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("Next after the end = %v, want io.EOF", err)
		}
	}
}

func TestReaderPassesReadErrorsThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []ev
	}{
		{"cut mid line", "data: a\n\ndata: {\"par", []ev{{"", "a"}}},
		{"cut after a data line", "data: a\n\ndata: b\n", []ev{{"", "a"}}},
		{"cut at an event boundary", "data: a\n\n", []ev{{"", "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// An incomplete event at a cut connection is never dispatched:
			// only a clean EOF completes the last event.
			r := io.MultiReader(strings.NewReader(tc.in), iotest.ErrReader(io.ErrUnexpectedEOF))
			got, err := readAll(t, r, 1024)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error = %v, want io.ErrUnexpectedEOF", err)
			}
			if !equalEvents(got, tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
	custom := errors.New("connection reset by peer")
	_, err := readAll(t, io.MultiReader(strings.NewReader("data: a\n"), iotest.ErrReader(custom)), 1024)
	if !errors.Is(err, custom) {
		t.Errorf("error = %v, want the transport error unchanged", err)
	}
}

func TestReaderSizeLimit(t *testing.T) {
	const limit = 100
	tests := []struct {
		name   string
		in     string
		before []ev // events dispatched before the error
	}{
		{"one long data line", "data: ok\n\ndata: " + strings.Repeat("x", 101) + "\n\n", []ev{{"", "ok"}}},
		{"a line that never ends", "data: " + strings.Repeat("x", 1<<20), nil},
		{"a long comment line", ": " + strings.Repeat("c", 1000) + "\n\ndata: x\n\n", nil},
		{"a long line past the bufio buffer", "data: " + strings.Repeat("x", 64<<10) + "\n\n", nil},
		{"many data lines", strings.Repeat("data: 0123456789\n", 11) + "\n", nil},
		{"many data lines without a blank line", "data: a\n\n" + strings.Repeat("data: 0123456789\n", 1000), []ev{{"", "a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readAll(t, r, limit)
				if !errors.Is(err, sse.ErrEventTooLarge) {
					t.Fatalf("error = %v, want ErrEventTooLarge", err)
				}
				if !equalEvents(got, tc.before) {
					t.Fatalf("events before the error = %v, want %v", got, tc.before)
				}
			}
		})
	}
	// Many small events add up to far more than the limit: that is fine.
	in := strings.Repeat("data: 0123456789\n\n", 1000)
	got, err := readAll(t, strings.NewReader(in), limit)
	if !errors.Is(err, io.EOF) || len(got) != 1000 {
		t.Fatalf("small events: %d events, %v; want 1000, io.EOF", len(got), err)
	}
}

// chunkReader returns its input in chunks whose sizes cycle through sizes.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)])%23 + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

const openAIStream = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1741944413,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world \\u4f60\\u597d\"},\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\n" +
	"data: [DONE]\n\n"

const toolStream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]}}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" +
	"data: [DONE]\n\n"

const openRouterStream = ": OPENROUTER PROCESSING\r\n\r\n: OPENROUTER PROCESSING\r\n\r\n" +
	"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\r\n\r\n" +
	"event: error\r\ndata: {\"error\":{\"message\":\"Rate limit exceeded\",\"code\":429}}\r\n\r\n"

func FuzzReader(f *testing.F) {
	f.Add([]byte(openAIStream), []byte{0})
	f.Add([]byte(openAIStream), []byte{3, 7, 11, 200})
	f.Add([]byte(strings.ReplaceAll(openAIStream, "\n", "\r\n")), []byte{1, 2})
	f.Add([]byte(toolStream), []byte{5})
	f.Add([]byte(openRouterStream), []byte{0, 22, 9})
	f.Add([]byte("data: a\ndata: b\n\nevent: x\n\ndata: c"), []byte{})
	f.Add([]byte("data: a\r"), []byte{0})
	f.Add([]byte("data: a\r\r\n\r\n\rdata: b\n\n"), []byte{1})
	f.Add([]byte("data: "+strings.Repeat("x", 600)+"\n\n"), []byte{4})
	f.Add([]byte(strings.Repeat("data: 0123456789\n", 60)+"\n"), []byte{17})
	f.Fuzz(func(t *testing.T, in []byte, sizes []byte) {
		for _, limit := range []int{512, 1 << 20} {
			want, wantErr := readAll(t, strings.NewReader(string(in)), limit)
			for _, rd := range []struct {
				name string
				r    io.Reader
			}{
				{"one byte", iotest.OneByteReader(strings.NewReader(string(in)))},
				{"chunks", &chunkReader{data: in, sizes: sizes}},
				{"data with EOF", iotest.DataErrReader(&chunkReader{data: in, sizes: sizes})},
			} {
				got, err := readAll(t, rd.r, limit)
				if !equalEvents(got, want) {
					t.Fatalf("limit %d, %s: events differ from reading whole\n got %v\nwant %v", limit, rd.name, got, want)
				}
				if errors.Is(err, io.EOF) != errors.Is(wantErr, io.EOF) ||
					errors.Is(err, sse.ErrEventTooLarge) != errors.Is(wantErr, sse.ErrEventTooLarge) {
					t.Fatalf("limit %d, %s: error %v, reading whole gave %v", limit, rd.name, err, wantErr)
				}
			}
			if !errors.Is(wantErr, io.EOF) && !errors.Is(wantErr, sse.ErrEventTooLarge) {
				t.Fatalf("unexpected error %v", wantErr)
			}
			for _, e := range want {
				if len(e.data) > limit {
					t.Fatalf("event of %d bytes passed a limit of %d", len(e.data), limit)
				}
			}
		}
	})
}

func BenchmarkReader(b *testing.B) {
	in := strings.Repeat(openAIStream, 20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := sse.NewReader(strings.NewReader(in), 1<<20)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// TestReleaseReusesTheBuffer: a Reader made after another was released
// reads its own stream whole, events longer than the read buffer too, and
// a second Release does nothing.
func TestReleaseReusesTheBuffer(t *testing.T) {
	long := strings.Repeat("x", 12<<10)
	for range 3 {
		r := sse.NewReader(strings.NewReader("data: a\n\ndata: "+long+"\n\nevent: e\ndata: b\n\n"), 1<<20)
		var got []string
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			got = append(got, string(ev.Name)+"="+string(ev.Data))
		}
		r.Release()
		r.Release()
		if len(got) != 3 || got[0] != "=a" || got[1] != "="+long || got[2] != "e=b" {
			t.Fatalf("events %d: %.40q", len(got), got)
		}
	}
}
