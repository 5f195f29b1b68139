package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/auth"
	"freelane/backend/protocol/responses"
	"freelane/backend/redact"
	"freelane/backend/sockowner"
	"freelane/backend/store"
)

func TestServerCallerIdentity(t *testing.T) {
	const token = "inbound-token-0123456789abcdef"
	withToken := New(Options{Token: auth.NewToken(token)})
	without := New(Options{})
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7788}
	req := func(remote, header, value string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/v1/responses/resp_x", nil)
		r.RemoteAddr = remote
		if strings.HasPrefix(remote, "127.") {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, lo))
		}
		if header != "" {
			r.Header.Set(header, value)
		}
		return r
	}
	cases := []struct {
		s    *Server
		r    *http.Request
		want string
	}{
		// A network caller is the token's holder, or its address.
		{withToken, req("192.0.2.7:4000", "Authorization", "Bearer "+token), identityToken},
		{withToken, req("192.0.2.7:4000", "X-Api-Key", token), identityToken},
		{withToken, req("192.0.2.7:4000", "Authorization", "Bearer another-token-0123456789"), "net:192.0.2.7"},
		// Without a configured token, a key sent is a tool's dummy key and
		// says nothing about who sent it.
		{without, req("192.0.2.7:4000", "Authorization", "Bearer "+token), "net:192.0.2.7"},
	}
	for _, c := range cases {
		if got := c.s.callerIdentity(c.r); got != c.want || strings.Contains(got, token) {
			t.Errorf("%s %v: identity %q, want %q", c.r.RemoteAddr, c.r.Header, got, c.want)
		}
	}

	// A program of a known account is that account, token or not.
	playOwners(t, ownersKnownHere, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return 4242, nil })
	for _, r := range []*http.Request{req("127.0.0.1:5000", "Authorization", "Bearer "+token), req("127.0.0.1:5000", "", "")} {
		if got := withToken.callerIdentity(r); got != "uid:4242" {
			t.Errorf("account 4242 %v: identity %q", r.Header, got)
		}
	}

	// Where the system does not say who owns a socket, every local caller
	// is one: the token's holder, or nobody in particular.
	playOwners(t, func() error { return sockowner.ErrUnsupported }, func(netip.AddrPort, netip.AddrPort) (uint32, error) { return 0, sockowner.ErrUnsupported })
	for _, c := range []struct {
		s    *Server
		r    *http.Request
		want string
	}{
		{withToken, req("127.0.0.1:5000", "Authorization", "Bearer "+token), identityToken},
		{withToken, req("127.0.0.1:5000", "", ""), identityAnonymous},
		{without, req("127.0.0.1:5000", "Authorization", "Bearer "+token), identityAnonymous},
	} {
		if got := c.s.callerIdentity(c.r); got != c.want {
			t.Errorf("unknown owners %v: identity %q, want %q", c.r.Header, got, c.want)
		}
	}
}

// An upstream that speaks the Responses API is relayed event by event; the
// sink gives each event that carries the response FreeLane's id, leaves
// the others byte for byte, and stores the response under that id, for its
// caller, with the configured key redacted.
func TestResponsesSinkRewritesRelayedEvents(t *testing.T) {
	const key = "sk-upstream-key-0123456789abcdef"
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "freelane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rs := store.NewResponseStore(db, store.ResponseOptions{Logger: quiet})
	s := New(Options{Responses: rs, Redactor: redact.New(redact.Key(key)), Logger: quiet})

	// OpenAI's own events, as an upstream of this dialect sends them;
	// the second puts its type last.
	upstream := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_fixed","object":"response","created_at":1,"status":"in_progress","model":"gpt-x","output":[]}}`,
		`{"sequence_number":1,"response":{"id":"resp_fixed","object":"response","status":"in_progress","model":"gpt-x","output":[]},"type":"response.in_progress"}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"the key is ` + key + `"}`,
		`{"type":"response.completed","sequence_number":4,"response":{"id":"resp_fixed","object":"response","status":"completed","model":"gpt-x","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"the key is ` + key + `"}]}]}}`,
	}
	id := responses.NewResponseID()
	w := httptest.NewRecorder()
	sink := &responsesSink{sseSink: sseSink{w: w, rc: http.NewResponseController(w), codec: responses.Codec}, id: id,
		keep: &keeper{s: s, id: id, owner: identityToken, input: []byte(`[{"type":"message","role":"user","content":"hi"}]`)},
		st:   responses.FailState{ID: id}}
	for i, ev := range upstream {
		if err := sink.Send([]byte(ev), i == len(upstream)-1); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	sc := bufio.NewScanner(bytes.NewReader(w.Body.Bytes()))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, d)
		}
	}
	if len(got) != len(upstream) {
		t.Fatalf("%d events relayed of %d", len(got), len(upstream))
	}
	for i, ev := range got {
		if want := strings.ReplaceAll(upstream[i], "resp_fixed", id); ev != want {
			t.Errorf("event %d:\n got  %s\n want %s", i, ev, want)
		}
	}

	st, ok, err := rs.Get(context.Background(), id, identityToken)
	if err != nil || !ok {
		t.Fatalf("not stored under FreeLane's id: %v %v", ok, err)
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(st.Response, &obj); obj.ID != id {
		t.Errorf("stored object has id %q", obj.ID)
	}
	for what, b := range map[string][]byte{"response": st.Response, "items": st.Items} {
		if bytes.Contains(b, []byte(key)) || !bytes.Contains(b, []byte(redact.KeyMarker)) {
			t.Errorf("stored %s: %s", what, b)
		}
	}
	if _, ok, _ := rs.Get(context.Background(), "resp_fixed", identityToken); ok {
		t.Error("found under the upstream's id")
	}
	if _, ok, _ := rs.Get(context.Background(), id, identityAnonymous); ok {
		t.Error("found by another caller")
	}
}
