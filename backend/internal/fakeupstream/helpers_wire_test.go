package fakeupstream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"freelane/backend/internal/goldenfile"
)

// sseEvent is one server-sent event: its "event:" name, empty when it has
// none, and its data.
type sseEvent struct {
	name, data string
}

// eventReader reads named server-sent events, with lines ending in LF or
// CRLF, the way a strict client does.
type eventReader struct {
	r *bufio.Reader
}

func newEvents(r io.Reader) *eventReader { return &eventReader{r: bufio.NewReader(r)} }

// next returns the next event; io.EOF after the last one of a stream that
// ended cleanly, io.ErrUnexpectedEOF when it ended in the middle of one.
func (e *eventReader) next() (sseEvent, error) {
	var ev sseEvent
	has := false
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && (line != "" || has) {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case line == "":
			if has {
				return ev, nil
			}
		case strings.HasPrefix(line, "event: "):
			ev.name, has = line[len("event: "):], true
		case strings.HasPrefix(line, "data: "):
			ev.data, has = line[len("data: "):], true
		default:
			return ev, fmt.Errorf("not an event line: %q", line)
		}
	}
}

// readAllEvents reads every event of a stream and closes the body. err is
// nil for a clean end.
func readAllEvents(resp *http.Response) (events []sseEvent, err error) {
	defer resp.Body.Close()
	r := newEvents(resp.Body)
	for {
		ev, err := r.next()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
}

// eventNames returns the names of events.
func eventNames(events []sseEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.name
	}
	return out
}

// postWire sends body to url with the given headers (name, value pairs) and
// fails the test on a transport error.
func postWire(t *testing.T, c *http.Client, url, body string, header ...string) *http.Response {
	t.Helper()
	return post(t, c, url, body, header...)
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// jsonUnmarshal decodes the JSON text s into v.
func jsonUnmarshal(s string, v any) error {
	return json.Unmarshal([]byte(s), v)
}

// mustJSON fails the test unless s parses as JSON.
func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	return v
}
