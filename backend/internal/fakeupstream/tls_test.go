package fakeupstream

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStartTLSServesHTTP2 checks that the HTTPS fake is trusted through
// the certificate it gives and speaks HTTP/2 to a client that offers it,
// as a vendor's endpoint does.
func TestStartTLSServesHTTP2(t *testing.T) {
	s, cert := StartTLS()
	defer s.Close()
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") {
		t.Fatalf("URL %q is not an https URL on loopback", s.URL)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cert) {
		t.Fatal("the certificate is not PEM")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	resp, err := client.Post(s.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("answer %d over %s: %s", resp.StatusCode, resp.Proto, b)
	}
	if _, err := http.Get(s.URL + "/models"); err == nil {
		t.Fatal("a client that does not trust the certificate was answered")
	}
}
