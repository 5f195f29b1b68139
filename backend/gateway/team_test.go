package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"freelane/backend/config"
	"freelane/backend/gateway"
	"freelane/backend/internal/clocktest"
	"freelane/backend/internal/teamtest"
	"freelane/backend/llm"
	"freelane/backend/store"
	"freelane/backend/vault"
)

func TestMain(m *testing.M) { os.Exit(teamtest.Main(m)) }

// teamMember starts a gateway of a team on dsn, in its own data
// directory, from a file holding cfg (nil: only the team's settings).
func teamMember(t *testing.T, dir, dsn, instance, key string, cfg *config.Config, clk *clocktest.Clock) *gateway.Gateway {
	t.Helper()
	if cfg == nil {
		cfg = config.Default()
	}
	cfg.Instance, cfg.Store.Postgres = instance, dsn
	g, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: dir, ManualProbes: true, Clock: clk, Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		LookupEnv: func(n string) (string, bool) {
			if n == gateway.VaultKeyEnv {
				return key, true
			}
			return withoutCatalogKeys(n)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown(context.Background()) })
	return g
}

func eventually(t *testing.T, clk *clocktest.Clock, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		// The request log and the shipper wait on the gateway's clock.
		clk.Advance(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTeamSharesConfigurationAndLedger runs two instances on one
// PostgreSQL: b, started from a file with only the team's settings,
// serves a's configuration with its keys; a change made in a reaches b;
// and the Usage of either adds up both instances' requests.
func TestTeamSharesConfigurationAndLedger(t *testing.T) {
	t.Parallel()
	p := teamtest.StartPostgres(t)
	dsn := p.DSN(p.NewDatabase(t))
	key := vault.NewKey()
	clk := clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	a := teamMember(t, t.TempDir(), dsn, "a", key, testConfig("http://127.0.0.1:1"), clk)
	b := teamMember(t, t.TempDir(), dsn, "b", key, nil, clk)

	eff, err := b.Control().Effective()
	if err != nil {
		t.Fatal(err)
	}
	if pb, ok := eff.Provider("b"); !ok || pb.APIKey != "sk-test-b" {
		t.Fatalf("instance b does not serve provider b with a's key (%v), want a's configuration", ok)
	}
	time.Sleep(200 * time.Millisecond) // b listens
	if err := a.Control().SetDefaultChain(context.Background(), "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Control().SetDisabled(context.Background(), "c", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, clk, 2*time.Second, "a's change reaching b", func() bool {
		eff, err := b.Control().Effective()
		pc, ok := eff.Provider("c")
		return err == nil && ok && pc.Disabled
	})

	now := clk.Now()
	for i, g := range []*gateway.Gateway{a, a, b} {
		g.RecordTrace(llm.Trace{ID: "r" + string(rune('0'+i)), Start: now, Endpoint: "chat", Model: "main", Chain: "main",
			Backend: "a/ma", Status: 200, Class: llm.OK, Attempts: []llm.Attempt{{Backend: "a/ma", Class: llm.OK, Status: 200,
				Latency: time.Millisecond, PromptTokens: 10, CompletionTokens: 5}}})
	}
	q := store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(time.Hour), GroupBy: store.ByInstance}
	eventually(t, clk, 10*time.Second, "both instances' rows in the team's usage", func() bool {
		rows, err := b.Usage(context.Background(), q)
		return err == nil && len(rows) == 2 && rows[0].Key == "a" && rows[0].Requests == 2 && rows[1].Key == "b" && rows[1].Requests == 1
	})
	rows, err := a.Usage(context.Background(), store.UsageQuery{From: q.From, To: q.To, GroupBy: store.ByBackend})
	if err != nil || len(rows) != 1 || rows[0].Requests != 3 || rows[0].PromptTokens != 30 {
		t.Fatalf("a's usage by backend = %+v, %v; want 3 requests, 30 prompt tokens", rows, err)
	}

	// Past the ledger's retention the hourly roll-up folds the team's
	// rows on PostgreSQL into totals; the usage stays what it was.
	clk.Advance(31 * 24 * time.Hour)
	b.RollUp(context.Background())
	pg, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	var left int
	if err := pg.QueryRow(context.Background(), `SELECT COUNT(*) FROM ledger`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the team's ledger holds %d rows after the roll-up (%v), want them folded", left, err)
	}
	rows, err = a.Usage(context.Background(), q)
	if err != nil || len(rows) != 2 || rows[0].Requests != 2 || rows[1].Requests != 1 {
		t.Fatalf("the team's usage by instance after the roll-up = %+v, %v", rows, err)
	}
}

// TestTeamInstanceStartsWithoutPostgres starts an instance once with
// PostgreSQL, then again with PostgreSQL cut off: it serves the
// configuration it last read, its usage falls back to its own ledger,
// and a change is refused rather than kept from the team.
func TestTeamInstanceStartsWithoutPostgres(t *testing.T) {
	h := teamtest.StartHAProxy(t)
	p := teamtest.StartPostgres(t)
	dsn := p.Via(h.PostgresAddr, p.NewDatabase(t))
	key := vault.NewKey()
	clk := clocktest.Following(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	first := teamMember(t, dir, dsn, "a", key, testConfig("http://127.0.0.1:1"), clk)
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	h.Down(t, teamtest.BackendPostgres)
	t.Cleanup(func() { h.Up(t, teamtest.BackendPostgres) })
	g := teamMember(t, dir, dsn, "a", key, nil, clk)
	eff, err := g.Control().Effective()
	if err != nil {
		t.Fatal(err)
	}
	if pa, ok := eff.Provider("a"); !ok || pa.APIKey != "sk-test-a" {
		t.Fatalf("without PostgreSQL the instance does not serve provider a with its key (%v), want the last configuration", ok)
	}
	if _, err := g.Control().SetDisabled(context.Background(), "c", true); err == nil {
		t.Fatal("a change was accepted with PostgreSQL cut off")
	}
	if _, err := g.Usage(context.Background(), store.UsageQuery{From: clk.Now().Add(-time.Hour), To: clk.Now(), GroupBy: store.ByDay}); err != nil {
		t.Fatalf("usage without PostgreSQL: %v", err)
	}
}
