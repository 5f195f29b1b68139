package control_test

import (
	"context"
	"errors"
	"testing"

	"freelane/backend/control"
	"freelane/backend/store"
)

// errInjected is the failure faultyStore injects.
var errInjected = errors.New("injected store failure")

// faultyStore is the real SQLite store with a failure injected into a
// change: while failAt > 0, the failAt-th document a change puts fails,
// after the ones before it went through.
type faultyStore struct {
	*store.DB
	failAt int
}

func (f *faultyStore) UpdateState(ctx context.Context, fn func(put func(string, []byte) error) error) error {
	return f.DB.UpdateState(ctx, func(put func(string, []byte) error) error {
		n := 0
		return fn(func(name string, value []byte) error {
			n++
			if f.failAt > 0 && n == f.failAt {
				return errInjected
			}
			return put(name, value)
		})
	})
}

// storedDocs returns every document control keeps, as stored.
func storedDocs(t *testing.T, db *store.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"config", "keys", "headers", "pool_keys"} {
		v, ok, err := db.GetState(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out[name] = string(v)
		}
	}
	return out
}

func TestAFailedChangeLeavesNothingHalfWritten(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	fs := &faultyStore{DB: r.db}
	c, err := control.Open(ctx, control.Options{DB: fs, Vault: r.v,
		LookupEnv: func(n string) (string, bool) { v, ok := r.env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	in := groqInput()
	in.APIKey = ptr("gsk_live_0123456789abcdefWXYZ")
	if _, err := c.AddProvider(ctx, in); err != nil {
		t.Fatal(err)
	}
	before := storedDocs(t, r.db)

	// A provider with a key and a header value changes the header values,
	// the configuration and the keys together; the third document fails,
	// after two went through.
	other := groqInput()
	other.Name, other.BaseURL = "other", "https://other.example/v1"
	other.APIKey = ptr("sk-other-0123456789abcdef")
	other.Headers = map[string]string{"X-Account": "acct-1234"}
	fs.failAt = 3
	if _, err := c.AddProvider(ctx, other); !errors.Is(err, errInjected) {
		t.Fatalf("AddProvider with a failing store: err = %v, want the injected failure", err)
	}
	after := storedDocs(t, r.db)
	for name, v := range before {
		if after[name] != v {
			t.Errorf("document %s changed by a change that failed:\nbefore %s\nafter  %s", name, v, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("document %s was stored by a change that failed", name)
		}
	}
	if _, err := c.Provider("other"); err == nil {
		t.Error("the failed change is in effect")
	}

	// The same change goes through once the store works, and a restart
	// finds both providers with their keys.
	fs.failAt = 0
	if _, err := c.AddProvider(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := storedDocs(t, r.db); got["config"] == before["config"] || got["headers"] == before["headers"] || got["keys"] == before["keys"] {
		t.Error("a change that succeeded did not store its documents")
	}
	c = r.open(nil)
	for _, name := range []string{"groq", "other"} {
		if p, ok := r.last().Provider(name); !ok || p.APIKey == "" {
			t.Errorf("after restart: provider %s found %v, with key %v", name, ok, ok && p.APIKey != "")
		}
	}
	if p, _ := r.last().Provider("other"); p.Headers["X-Account"] != "acct-1234" {
		t.Errorf("after restart: header X-Account = %q", p.Headers["X-Account"])
	}
	_ = c
}
