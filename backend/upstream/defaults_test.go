package upstream

import (
	"net/http"
	"testing"

	"freelane/backend/defaults"
	"freelane/backend/protocol/openai"
)

// TestZeroTimeoutsAreTheDefaults fails when a client built with no time
// limits uses limits other than package defaults' table, which the config
// loader fills a provider's timeouts from too.
func TestZeroTimeoutsAreTheDefaults(t *testing.T) {
	c := New(Options{BaseURL: "http://127.0.0.1:1", Dialect: openai.Dialect})
	for _, l := range []struct {
		name      string
		got, want any
	}{
		{"connect", c.o.ConnectTimeout, defaults.ConnectTimeout},
		{"header", c.o.HeaderTimeout, defaults.HeaderTimeout},
		{"first token", c.o.FirstTokenTimeout, defaults.FirstTokenTimeout},
		{"idle", c.o.IdleTimeout, defaults.IdleTimeout},
	} {
		if l.got != l.want {
			t.Errorf("%s: %v, the table says %v", l.name, l.got, l.want)
		}
	}
	tr, ok := c.http.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T", c.http.Transport)
	}
	if tr.TLSHandshakeTimeout != defaults.ConnectTimeout || tr.ResponseHeaderTimeout != defaults.HeaderTimeout ||
		tr.IdleConnTimeout != defaults.IdleConnTimeout {
		t.Errorf("transport: TLS handshake %v, headers %v, idle connections %v; the table says %v, %v, %v",
			tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout, tr.IdleConnTimeout,
			defaults.ConnectTimeout, defaults.HeaderTimeout, defaults.IdleConnTimeout)
	}
}
