package gateway

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"freelane/backend/clock"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/pgstore"
	"freelane/backend/store"
	"freelane/backend/vault"
)

// VaultKeyEnv is the environment variable that gives the master key of
// a team's instances.
const VaultKeyEnv = "FREELANE_VAULT_KEY"

// errNoVaultKey and errBadVaultKey refuse a start in team mode without a
// usable shared master key. Neither quotes the variable's value.
var (
	errNoVaultKey = errors.New("store.postgres is set, so every instance must seal and open the shared API keys with the same master key: " +
		"set " + VaultKeyEnv + " to one base64-encoded 32-byte key, the same on every instance (make one with: openssl rand -base64 32)")
	errBadVaultKey = errors.New(VaultKeyEnv + " is not a base64-encoded 32-byte key (make one with: openssl rand -base64 32)")
)

// openVault opens the key vault: with the master key FREELANE_VAULT_KEY
// gives when it is set, which team mode (shared) requires, since the keys
// sealed in the shared database must open on every instance; otherwise
// with the master key in the keychain or the data directory.
func openVault(ctx context.Context, o Options, shared bool) (*vault.Vault, error) {
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	key, ok := lookup(VaultKeyEnv)
	switch {
	case ok && key != "":
		v, err := vault.FromKey(key)
		if err != nil {
			return nil, errBadVaultKey
		}
		return v, nil
	case shared:
		return nil, errNoVaultKey
	}
	return vault.Open(ctx, vault.Options{DataDir: o.DataDir, UseKeychain: o.Keychain, Clock: o.Clock})
}

// instanceName is the instance's name among a team's: instance from the
// config file, else the host name and the port it listens on, which stay
// the same from one run to the next.
func instanceName(cfg *config.Config, listen string) string {
	if cfg.Instance != "" {
		return cfg.Instance
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "freelane"
	}
	if _, port, err := net.SplitHostPort(cmp.Or(listen, cfg.Listen)); err == nil && port != "" && port != "0" {
		host += ":" + port
	}
	return host
}

// team is an instance's part in a team that shares one PostgreSQL: the
// control plane's documents live there (and, as they were last read, in
// the local SQLite file, so that the instance starts and serves while
// PostgreSQL is away), the ledger's rows are copied there, and the
// dashboard's usage is read from there.
type team struct {
	url      string
	instance string
	local    *store.DB
	log      *slog.Logger
	clock    clock.Clock

	mu      sync.Mutex
	db      *pgstore.DB // nil until connected
	shipper *pgstore.Shipper
	// shipping is shipper once connected, for nudge, which the request
	// log's writer calls after every batch without taking mu.
	shipping atomic.Pointer[pgstore.Shipper]
	// opened is true once the control plane opened: a change that cannot
	// reach PostgreSQL is refused from then on, but while opening it is
	// kept locally, so that the instance can start without PostgreSQL.
	opened bool
	// usageDown and requestsDown are true while usage and the request
	// log are read from the local file.
	usageDown, requestsDown bool
	// reachable is whether PostgreSQL answered the last time it was
	// asked (connect or the ping of watchReach).
	reachable atomic.Bool
}

// pingEvery is how often an instance checks that PostgreSQL answers, for
// the team's view on the dashboard.
const pingEvery = 2 * time.Second

// Reachable reports whether PostgreSQL answered when last asked.
func (t *team) Reachable() bool { return t.reachable.Load() }

// watchReach pings PostgreSQL every pingEvery until ctx ends, so that the
// dashboard shows an instance that lost it.
func (t *team) watchReach(ctx context.Context, db *pgstore.DB) {
	tick, c := t.clock.NewTicker(pingEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
			t.reachable.Store(db.Ping(ctx) == nil)
		}
	}
}

// errTeamStoreDown refuses a change while PostgreSQL cannot be reached:
// the other instances would never see it.
var errTeamStoreDown = errors.New("the change was not saved: the shared configuration on PostgreSQL (store.postgres) cannot be reached; " +
	"this instance keeps serving the configuration it last read, and changes can be made again once PostgreSQL is back")

// connect opens the PostgreSQL store; the caller retries on failure.
func (t *team) connect(ctx context.Context) error {
	db, err := pgstore.Open(ctx, t.url, pgstore.Options{Instance: t.instance, Clock: t.clock, Logger: t.log})
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.db = db
	t.shipper = pgstore.NewShipper(t.local, db, pgstore.ShipOptions{Clock: t.clock, Logger: t.log})
	t.shipping.Store(t.shipper)
	t.reachable.Store(true)
	return nil
}

func (t *team) current() *pgstore.DB {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.db
}

// GetState reads a document from PostgreSQL and keeps it in the local
// file too; when PostgreSQL cannot be reached it reads the local copy.
func (t *team) GetState(ctx context.Context, name string) ([]byte, bool, error) {
	if db := t.current(); db != nil {
		v, ok, err := db.GetState(ctx, name)
		if err == nil {
			if ok {
				if err := t.local.PutState(ctx, name, v); err != nil {
					t.log.Warn("could not keep a copy of the shared configuration in the local database", "err", err)
				}
			}
			return v, ok, nil
		}
		t.log.Warn("the shared configuration on PostgreSQL cannot be read; using the copy last read", "document", name, "err", err)
	}
	return t.local.GetState(ctx, name)
}

// UpdateState stores the documents in PostgreSQL and then in the local
// file. Without PostgreSQL it refuses, except while the control plane
// opens: then the documents go to the local file only, and the shared
// ones replace them once PostgreSQL answers (see run).
func (t *team) UpdateState(ctx context.Context, fn func(put func(name string, value []byte) error) error) error {
	t.mu.Lock()
	db, opened := t.db, t.opened
	t.mu.Unlock()
	if db != nil {
		type doc struct {
			name  string
			value []byte
		}
		var docs []doc
		var putErr, fnErr error
		err := db.UpdateState(ctx, func(put func(string, []byte) error) error {
			fnErr = fn(func(name string, value []byte) error {
				if err := put(name, value); err != nil {
					putErr = err
					return err
				}
				docs = append(docs, doc{name, value})
				return nil
			})
			return fnErr
		})
		switch {
		case err == nil:
			return t.local.UpdateState(ctx, func(put func(string, []byte) error) error {
				for _, d := range docs {
					if err := put(d.name, d.value); err != nil {
						return err
					}
				}
				return nil
			})
		case fnErr != nil && putErr == nil:
			// The change itself failed; PostgreSQL did not.
			return fnErr
		case opened:
			t.log.Warn("a configuration change could not be saved to PostgreSQL", "err", err)
			return errTeamStoreDown
		}
	} else if opened {
		return errTeamStoreDown
	}
	t.log.Warn("PostgreSQL cannot be reached while starting: this instance serves the configuration it last read, and takes the shared one once PostgreSQL answers")
	return t.local.UpdateState(ctx, fn)
}

// shipped is the seq through which the local roll-up may fold ledger
// rows: those after it are not in PostgreSQL yet.
func (t *team) shipped() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shipper == nil {
		return 0
	}
	return t.shipper.Shipped()
}

// nudge tells the shipper that the request log stored rows.
func (t *team) nudge() {
	if s := t.shipping.Load(); s != nil {
		s.Nudge()
	}
}

// usageReader answers the Usage screen's queries.
type usageReader interface {
	Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
}

// usage reads the whole team's usage from PostgreSQL, and this
// instance's own from the local file while PostgreSQL cannot be reached.
func (t *team) usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	var shared usageReader
	if db := t.current(); db != nil {
		shared = db
	}
	if shared != nil {
		rows, err := shared.Usage(ctx, q)
		if err == nil {
			t.setUsageDown(false, nil)
			return rows, nil
		}
		t.setUsageDown(true, err)
	}
	rows, err := t.local.Usage(ctx, q)
	if err == nil && q.GroupBy == store.ByInstance {
		for i := range rows {
			rows[i].Key = t.instance
		}
	}
	return rows, err
}

func (t *team) setUsageDown(down bool, err error) {
	t.setDown(&t.usageDown, down, err,
		"the team's usage cannot be read from PostgreSQL; the Usage screen shows this instance's own until it is back",
		"the Usage screen shows the whole team's usage again")
}

// setDown records whether a screen is read from the local file, and logs
// when that changes, not at every read.
func (t *team) setDown(flag *bool, down bool, err error, downMsg, backMsg string) {
	t.mu.Lock()
	was := *flag
	*flag = down
	t.mu.Unlock()
	switch {
	case down && !was:
		t.log.Warn(downMsg, "err", err)
	case !down && was:
		t.log.Info(backMsg)
	}
}

// setRequestsDown logs the Requests screen's fall back to this instance's
// own log, and its return.
func (t *team) setRequestsDown(down bool, err error) {
	t.setDown(&t.requestsDown, down, err,
		"the team's request log cannot be read from PostgreSQL; the Requests screen shows this instance's own requests until it is back",
		"the Requests screen shows the whole team's requests again")
}

// requests reads a page of the whole team's request log from PostgreSQL,
// and of this instance's own from the local file while PostgreSQL cannot
// be reached. A cursor is the same for both: one written by a page of the
// other continues from its row's place in this one's order.
func (t *team) requests(ctx context.Context, q store.RequestQuery) (store.RequestPage, error) {
	if db := t.current(); db != nil {
		page, err := db.QueryRequests(ctx, q)
		if err == nil || errors.Is(err, store.ErrBadCursor) {
			t.setRequestsDown(false, nil)
			return page, err
		}
		if ctx.Err() != nil {
			return page, err
		}
		t.setRequestsDown(true, err)
	}
	return t.local.QueryRequests(ctx, q)
}

// request finds one request of any instance in PostgreSQL, and in the
// local file when PostgreSQL cannot be reached or does not hold it yet
// (rows are copied a moment after they are stored).
func (t *team) request(ctx context.Context, id string) (llm.Trace, bool, error) {
	return findShared(ctx, t, id, (*pgstore.DB).RequestByID, t.local.RequestByID)
}

// bodies finds one request's bodies, as request finds the request.
func (t *team) bodies(ctx context.Context, id string) (store.StoredBodies, bool, error) {
	return findShared(ctx, t, id, (*pgstore.DB).RequestBodies, t.local.RequestBodies)
}

// findShared looks id up in PostgreSQL, and in the local file when
// PostgreSQL cannot be reached or does not hold it.
func findShared[T any](ctx context.Context, t *team, id string, shared func(*pgstore.DB, context.Context, string) (T, bool, error),
	local func(context.Context, string) (T, bool, error)) (T, bool, error) {
	if db := t.current(); db != nil {
		v, found, err := shared(db, ctx, id)
		if err == nil && found {
			return v, true, nil
		}
		if err != nil {
			t.setRequestsDown(true, err)
		}
	}
	return local(ctx, id)
}

// run connects (retrying with backoff when PostgreSQL is away at start,
// then taking the shared configuration), and then ships the ledger and
// follows the other instances' changes until ctx ends.
func (t *team) run(ctx context.Context, reload func(context.Context) error) {
	if t.current() == nil {
		wait := time.Second
		for {
			err := t.connect(ctx)
			if err == nil {
				break
			}
			t.log.Warn("cannot reach PostgreSQL (store.postgres); retrying", "err", err, "retry_in", wait)
			if !clock.Sleep(t.clock, wait, ctx.Done()) {
				return
			}
			wait = min(2*wait, 30*time.Second)
		}
		t.log.Info("connected to PostgreSQL (store.postgres); taking the shared configuration")
		if err := reload(ctx); err != nil {
			t.log.Warn("could not apply the shared configuration", "err", err)
		}
	}
	t.mu.Lock()
	db, shipper := t.db, t.shipper
	t.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { shipper.Run(ctx) })
	wg.Go(func() { t.watchReach(ctx, db) })
	// Watch hears of every document of a change; one reload takes them
	// all, so the calls are folded into a pending flag.
	pending := make(chan struct{}, 1)
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-pending:
				if err := reload(ctx); err != nil && ctx.Err() == nil {
					t.log.Warn("could not apply another instance's configuration change", "err", err)
				}
			}
		}
	})
	_ = db.Watch(ctx, func(string) {
		select {
		case pending <- struct{}{}:
		default:
		}
	})
}

// close closes the connections to PostgreSQL.
func (t *team) close() {
	if db := t.current(); db != nil {
		db.Close()
	}
}

var _ control.Store = (*team)(nil)

// defaultConfig reports whether cfg says nothing but the defaults, as a
// file holding only the team's settings (instance, state, store, server)
// does once they are taken out.
func defaultConfig(cfg *config.Config) bool {
	a, err := yaml.Marshal(cfg)
	if err != nil {
		return false
	}
	b, err := yaml.Marshal(config.Default())
	return err == nil && bytes.Equal(a, b)
}
