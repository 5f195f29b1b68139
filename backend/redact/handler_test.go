package redact_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"freelane/backend/redact"
)

// TestHandlerRedactsRecords logs the key in the message and in every kind
// of attribute through a JSON handler and reads what reached the output.
func TestHandlerRedactsRecords(t *testing.T) {
	var out bytes.Buffer
	r := redact.New(redact.Key(key))
	log := slog.New(redact.Handler(slog.NewJSONHandler(&out, nil), r))
	type detail struct{ Body string }
	log.With("bound", strings.ToUpper(key)).WithGroup("g").Warn("upstream said "+key,
		"reason", every(key, "%%%02x"),
		"err", errors.New("HTTP 401: Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+key))),
		"body", []byte(`{"k":"`+every(key, `\u%04x`)+`"}`),
		slog.Group("inner", "k", key[1:27]),
		"detail", detail{Body: key},
		"n", 3)
	got := out.String()
	if l := leak(got, key); l != "" {
		t.Fatal(l)
	}
	for _, want := range []string{`"msg":"upstream said [redacted key]"`, `"bound":"[redacted key]"`, `"reason":"[redacted key]"`,
		`"inner":{"k":"[redacted key]"}`, `"detail":"{[redacted key]}"`, `"n":3`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if strings.Count(got, redact.KeyMarker) != 7 {
		t.Errorf("got %s", got)
	}
}
