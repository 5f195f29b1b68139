package protocol_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/protocol"
)

func TestKeyHeader(t *testing.T) {
	bearer := protocol.KeyHeader{Name: "Authorization", Scheme: "Bearer"}
	plain := protocol.KeyHeader{Name: "x-api-key"}
	cases := []struct {
		k      protocol.KeyHeader
		header string
		value  string
		key    string
		ok     bool
	}{
		{bearer, "Authorization", "Bearer k", "k", true},
		{bearer, "Authorization", "bEARER  k ", "k", true},
		{bearer, "Authorization", "Bearer  ", "", true},
		{bearer, "Authorization", "Bearer", "", false},
		{bearer, "Authorization", "Basic k", "", false},
		{bearer, "Authorization", "Bearerk", "", false},
		{bearer, "X-Other", "Bearer k", "", false},
		{plain, "X-Api-Key", "k", "k", true},
		{plain, "x-api-key", " k", " k", true},
		{plain, "X-Api-Key", "", "", false},
	}
	for _, c := range cases {
		h := http.Header{}
		h.Set(c.header, c.value)
		if key, ok := c.k.Key(h); key != c.key || ok != c.ok {
			t.Errorf("%s for %s: %q: got %q %v, want %q %v", c.k, c.header, c.value, key, ok, c.key, c.ok)
		}
	}
	if bearer.String() != "Authorization: Bearer" || plain.String() != "x-api-key" {
		t.Errorf("named %q and %q", bearer, plain)
	}
}

func TestRequestError(t *testing.T) {
	cases := []struct {
		err  error
		want protocol.ErrorInfo
	}{
		{llm.BadRequest("model", "model is required"), protocol.ErrorInfo{Status: 400, Code: "invalid_request", Message: "model is required", Param: "model"}},
		{llm.ModelTooLong(300), protocol.ErrorInfo{Status: 400, Code: llm.ModelTooLong(300).Code, Message: llm.ModelTooLong(300).Message, Param: "model"}},
		{fmt.Errorf("wrapped: %w", protocol.Refuse(404, "unknown_endpoint", "no such method", "")), protocol.ErrorInfo{Status: 404, Code: "unknown_endpoint", Message: "no such method"}},
		{fmt.Errorf("plain"), protocol.ErrorInfo{Status: 400, Code: "invalid_request", Message: "plain"}},
	}
	for _, c := range cases {
		if got := protocol.RequestError(c.err); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.err, got, c.want)
		}
	}
}

// echoCodec is just enough of a codec to show WriteError's framing.
type echoCodec struct{ protocol.Codec }

func (echoCodec) EncodeError(e protocol.ErrorInfo) []byte { return []byte(`{"e":"` + e.Message + `"}`) }

func TestWriteError(t *testing.T) {
	w := httptest.NewRecorder()
	protocol.WriteError(w, echoCodec{}, protocol.ErrorInfo{Status: 418, Message: "tea"})
	if w.Code != 418 || w.Body.String() != `{"e":"tea"}` || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Content-Length") != "11" {
		t.Errorf("%d %v %s", w.Code, w.Header(), w.Body)
	}
}
