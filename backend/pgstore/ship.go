package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/store"
)

// Spool is the local database a Shipper copies from: the ledger's rows and
// the request log's are written there first, so that nothing on the
// request path waits for PostgreSQL. *store.DB is one.
type Spool interface {
	LedgerAfter(ctx context.Context, after int64, limit int) ([]store.LedgerRow, error)
	LedgerSeq(ctx context.Context) (int64, error)
	RaiseLedgerSeq(ctx context.Context, n int64) error
	RowsAfter(ctx context.Context, t store.Table, after int64, limit int) ([]store.Row, error)
	Sequence(ctx context.Context, t store.Table) (int64, error)
	RaiseSequence(ctx context.Context, t store.Table, n int64) error
	GetState(ctx context.Context, name string) ([]byte, bool, error)
	PutState(ctx context.Context, name string, value []byte) error
}

var _ Spool = (*store.DB)(nil)

// WatermarkState is the spool's state document that holds the seq of the
// last ledger row copied; RequestsWatermarkState and BodiesWatermarkState
// hold those of the request log's rows and bodies.
const (
	WatermarkState         = "pg_ledger_shipped"
	RequestsWatermarkState = "pg_requests_shipped"
	BodiesWatermarkState   = "pg_bodies_shipped"
)

// Shipping defaults.
const (
	DefaultShipBatch = 500
	// defaultRequestBatch and defaultBodiesBatch are smaller: a request
	// row holds its attempts and decision, and a row of bodies up to twice
	// request_log.max_body_kb.
	defaultRequestBatch = 200
	defaultBodiesBatch  = 20
	DefaultShipEvery    = 2 * time.Second
	// DefaultShipGap is how long a Shipper told of new rows waits before
	// it copies them, so that a busy instance copies a batch at a time
	// rather than a transaction per request.
	DefaultShipGap = 250 * time.Millisecond
	// maxShipBackoff bounds the wait between tries while PostgreSQL is
	// unreachable.
	maxShipBackoff = 30 * time.Second
)

// ShipOptions configure a Shipper.
type ShipOptions struct {
	// Batch is how many rows one transaction copies; 0 means
	// DefaultShipBatch ledger rows, and fewer of the wider rows of the
	// request log and its bodies.
	Batch int
	// Every is how often Run looks for new rows (DefaultShipEvery).
	Every time.Duration
	// Gap is how long Run waits after Nudge before it copies
	// (DefaultShipGap).
	Gap    time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Shipper copies the spool's ledger rows, request rows and bodies to
// PostgreSQL, each after a watermark of its own, in batches, advancing a
// watermark only once its batch committed. A crash or an outage between
// the commit and the watermark's write copies the batch again, which
// PostgreSQL ignores (the rows are keyed by instance and seq), so every
// row arrives exactly once.
type Shipper struct {
	o      ShipOptions
	ledger *lane[store.LedgerRow]
	lanes  []shipLane
	nudge  chan struct{}
	// beforeCommit and afterCommit, when set, run around a ledger batch's
	// commit (tests stop the shipper there).
	beforeCommit, afterCommit func()
}

// shipLane is one table a Shipper copies.
type shipLane interface {
	ship(ctx context.Context) (int, error)
}

// states are where a lane keeps its watermark: the spool's state
// documents.
type states interface {
	GetState(ctx context.Context, name string) ([]byte, bool, error)
	PutState(ctx context.Context, name string, value []byte) error
}

// lane copies the rows of one local table, numbered by a seq that is never
// reused, after a watermark kept in the spool's state document.
type lane[R any] struct {
	what   string // for the log: "ledger rows"
	state  string // the watermark's document
	batch  int
	log    *slog.Logger
	states states
	// after reads the rows after a seq, seq tells a row's, insert copies
	// a batch in one transaction.
	after  func(ctx context.Context, after int64, limit int) ([]R, error)
	seq    func(R) int64
	insert func(ctx context.Context, rows []R) error
	// local and raise read and raise the spool's seq; remote is the
	// highest seq PostgreSQL holds of this instance's rows.
	local  func(ctx context.Context) (int64, error)
	raise  func(ctx context.Context, n int64) error
	remote func(ctx context.Context) (int64, error)
	// pruned is true for rows PostgreSQL deletes on its own (the request
	// log's, after request_log.keep_days): fewer rows there than copied is
	// then no sign of another database.
	pruned     bool
	afterWrite func()
	// mark is the watermark once loaded; loaded is only touched by the
	// goroutine that ships.
	mark   atomic.Int64
	loaded bool
}

// NewShipper copies spool's rows to db.
func NewShipper(spool Spool, db *DB, o ShipOptions) *Shipper {
	if o.Every <= 0 {
		o.Every = DefaultShipEvery
	}
	if o.Gap <= 0 {
		o.Gap = DefaultShipGap
	}
	o.Clock = clock.OrReal(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	batch := func(n int) int { return cmp.Or(o.Batch, n) }
	s := &Shipper{o: o, nudge: make(chan struct{}, 1)}
	s.ledger = &lane[store.LedgerRow]{
		what: "ledger rows", state: WatermarkState, batch: batch(DefaultShipBatch), log: o.Logger, states: spool,
		after: spool.LedgerAfter,
		seq:   func(r store.LedgerRow) int64 { return r.Seq },
		insert: func(ctx context.Context, rows []store.LedgerRow) error {
			return db.insertLedger(ctx, rows, s.beforeCommit)
		},
		local: spool.LedgerSeq, raise: spool.RaiseLedgerSeq, remote: db.ShippedSeq,
		afterWrite: func() {
			if s.afterCommit != nil {
				s.afterCommit()
			}
		},
	}
	rowLane := func(t store.Table, what, state string, n int) *lane[store.Row] {
		return &lane[store.Row]{
			what: what, state: state, batch: batch(n), log: o.Logger, states: spool, pruned: true,
			after: func(ctx context.Context, after int64, limit int) ([]store.Row, error) {
				return spool.RowsAfter(ctx, t, after, limit)
			},
			seq:    func(r store.Row) int64 { return r.Seq },
			insert: func(ctx context.Context, rows []store.Row) error { return db.insertRows(ctx, t, rows) },
			local:  func(ctx context.Context) (int64, error) { return spool.Sequence(ctx, t) },
			raise:  func(ctx context.Context, n int64) error { return spool.RaiseSequence(ctx, t, n) },
			remote: func(ctx context.Context) (int64, error) { return db.shippedSeqOf(ctx, t) },
		}
	}
	s.lanes = []shipLane{s.ledger,
		rowLane(store.RequestsTable, "request log rows", RequestsWatermarkState, defaultRequestBatch),
		rowLane(store.BodiesTable, "request bodies", BodiesWatermarkState, defaultBodiesBatch)}
	return s
}

// Shipped is the seq of the last ledger row known to be in PostgreSQL:
// the local roll-up may fold the rows up to it, and must keep those after
// it. It is 0 until the shipper first read its watermark.
func (s *Shipper) Shipped() int64 { return s.ledger.mark.Load() }

// Nudge tells the shipper that rows were written: Run copies them after
// Gap rather than at its next tick. It never blocks.
func (s *Shipper) Nudge() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

type watermark struct {
	Seq int64 `json:"seq"`
}

// load reads the watermark and squares it with what PostgreSQL holds: a
// database that holds fewer of this instance's rows than the watermark
// says (another database, or one restored from an older backup) gets
// them again, and a spool whose seq is behind PostgreSQL's (a data
// directory started afresh under a name that shipped rows before) moves
// its seq past them, so that new rows are not taken for copies.
func (l *lane[R]) load(ctx context.Context) error {
	var w watermark
	raw, ok, err := l.states.GetState(ctx, l.state)
	if err != nil {
		return err
	}
	if ok {
		if err := json.Unmarshal(raw, &w); err != nil {
			l.log.Warn("a shipper's watermark is damaged; copying the rows again (PostgreSQL keeps each row once)", "rows", l.what, "err", err)
			w = watermark{}
		}
	}
	remote, err := l.remote(ctx)
	if err != nil {
		return err
	}
	if remote < w.Seq && !l.pruned {
		l.log.Warn("PostgreSQL holds fewer of this instance's rows than were copied to it; copying them again",
			"rows", l.what, "copied_through", w.Seq, "postgres_holds_through", remote)
		w.Seq = remote
	}
	local, err := l.local(ctx)
	if err != nil {
		return err
	}
	if local < remote {
		l.log.Warn("this data directory is behind the rows PostgreSQL holds for this instance name; its new rows are numbered after them",
			"rows", l.what, "local_seq", local, "postgres_seq", remote)
		if err := l.raise(ctx, remote); err != nil {
			return err
		}
		w.Seq = max(w.Seq, remote)
	}
	l.mark.Store(w.Seq)
	l.loaded = true
	return nil
}

// ship copies every row after the watermark, a batch at a time, and
// returns how many it copied; it stops at the first error, having kept
// the batches that committed.
func (l *lane[R]) ship(ctx context.Context) (int, error) {
	if !l.loaded {
		if err := l.load(ctx); err != nil {
			return 0, err
		}
	}
	total := 0
	for {
		rows, err := l.after(ctx, l.mark.Load(), l.batch)
		if err != nil || len(rows) == 0 {
			return total, err
		}
		if err := l.insert(ctx, rows); err != nil {
			return total, err
		}
		if l.afterWrite != nil {
			l.afterWrite()
		}
		last := l.seq(rows[len(rows)-1])
		raw, _ := json.Marshal(watermark{Seq: last})
		if err := l.states.PutState(ctx, l.state, raw); err != nil {
			return total, fmt.Errorf("pgstore: saving the watermark of the %s copied: %w", l.what, err)
		}
		l.mark.Store(last)
		total += len(rows)
		if len(rows) < l.batch {
			return total, nil
		}
	}
}

// Ship copies every row after each watermark, the ledger's first, and
// returns how many it copied; it stops at the first error, having kept
// the batches that committed.
func (s *Shipper) Ship(ctx context.Context) (int, error) {
	total := 0
	for _, l := range s.lanes {
		n, err := l.ship(ctx)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Run ships every Every, and Gap after a Nudge, until ctx ends, backing
// off while PostgreSQL cannot be reached; it logs when shipping stops
// working and when it works again, not at every try.
func (s *Shipper) Run(ctx context.Context) {
	failing := false
	wait := s.o.Every
	for {
		n, err := s.Ship(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				s.o.Logger.Warn("cannot copy rows to PostgreSQL; they wait in the local database and are copied once it is back", "err", err)
			}
			failing = true
			wait = min(2*wait, maxShipBackoff)
		default:
			if failing {
				s.o.Logger.Info("copying rows to PostgreSQL again", "rows", n)
			}
			failing, wait = false, s.o.Every
		}
		// While PostgreSQL is away only the backoff's timer tries again.
		nudge := s.nudge
		if failing {
			nudge = nil
		}
		t, fire := s.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-fire:
		case <-nudge:
			t.Stop()
			if !clock.Sleep(s.o.Clock, s.o.Gap, ctx.Done()) {
				return
			}
		}
	}
}
