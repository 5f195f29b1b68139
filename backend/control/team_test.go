package control_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/internal/teamtest"
	"freelane/backend/pgstore"
	"freelane/backend/vault"
)

func TestMain(m *testing.M) { os.Exit(teamtest.Main(m)) }

// member is one instance of a team: a control on the shared PostgreSQL,
// watching it for the others' changes.
type member struct {
	c       *control.Control
	db      *pgstore.DB
	mu      sync.Mutex
	applied []*config.Config
}

func (m *member) last() *config.Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied[len(m.applied)-1]
}

func join(t *testing.T, dsn, instance string, v *vault.Vault) *member {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{Instance: instance, QueryTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{db: db}
	m.c, err = control.Open(ctx, control.Options{DB: db, Vault: v, Apply: func(cfg *config.Config) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.applied = append(m.applied, cfg)
		return nil
	}, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = db.Watch(ctx, func(string) {
			if err := m.c.Reload(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: reload: %v", instance, err)
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		db.Close()
	})
	return m
}

// TestChangeReachesTheOtherInstance adds a provider with a key in one
// instance's control and waits for the other's to apply it, key
// included, within a second.
func TestChangeReachesTheOtherInstance(t *testing.T) {
	t.Parallel()
	p := teamtest.StartPostgres(t)
	dsn := p.DSN(p.NewDatabase(t))
	v, err := vault.FromKey(vault.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	a, b := join(t, dsn, "a", v), join(t, dsn, "b", v)
	// Watch must be listening, and a must be done reloading what b stored
	// when it opened, before the change is made.
	time.Sleep(200 * time.Millisecond)
	a.mu.Lock()
	before := len(a.applied)
	a.mu.Unlock()
	in := groqInput()
	in.APIKey = ptr("gsk_live_0123456789abcdefWXYZ")
	start := time.Now()
	if _, err := a.c.AddProvider(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	for {
		if p, ok := b.last().Provider("groq"); ok {
			if p.APIKey != "gsk_live_0123456789abcdefWXYZ" {
				t.Fatalf("b applied groq with key %q", p.APIKey)
			}
			break
		}
		if time.Since(start) > time.Second {
			t.Fatal("b did not apply a's change within a second")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the change reached b in %s", time.Since(start))
	if got := b.c.Providers(); len(got) != 1 || got[0].Key.Masked != "gsk_...WXYZ" {
		t.Errorf("b's providers after the change: %+v", got)
	}
	time.Sleep(100 * time.Millisecond)
	// a ignores its own notification: its control applied the change
	// once, as an edit, and never reloaded it.
	a.mu.Lock()
	n := len(a.applied) - before
	a.mu.Unlock()
	if n != 1 {
		t.Errorf("a applied %d configurations for its own edit, want 1", n)
	}
}
