package config

import "testing"

// FuzzParse feeds arbitrary files to the loader: it may refuse them, with
// problems that name a line, but never panic, and a file it accepts has
// every default filled in and every limit within its range.
func FuzzParse(f *testing.F) {
	f.Add(Example)
	f.Add([]byte("listen: 127.0.0.1:9000\nmax_body_mb: 4\nrequests:\n  body_read_timeout: 5s\n"))
	f.Add([]byte("providers:\n  - name: x\n    kind: openai\n    tier: free\n    base_url: http://h/v1\n    api_key: ${K}\n    models: [{id: m}]\n"))
	env := map[string]string{"K": "sk-fuzz", "EMPTY": ""}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := Parse("fuzz.yaml", data, lookup)
		if err != nil {
			return
		}
		switch {
		case cfg.Listen == "":
			t.Fatal("accepted without a listen address")
		case cfg.MaxBodyMB < 1 || cfg.MaxBodyMB > MaxMaxBodyMB:
			t.Fatalf("accepted max_body_mb %d", cfg.MaxBodyMB)
		case cfg.Requests.BodyReadTimeout < 0 || cfg.Requests.BodyReadTimeout > MaxBodyReadTimeout:
			t.Fatalf("accepted body_read_timeout %s", cfg.Requests.BodyReadTimeout)
		case cfg.Requests.MaxInflightBodyMB < 1 || cfg.Requests.MaxInflightBodyMB > MaxMaxInflightBodyMB:
			t.Fatalf("accepted max_inflight_body_mb %d", cfg.Requests.MaxInflightBodyMB)
		}
	})
}
