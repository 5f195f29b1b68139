package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/store"
)

// Spool is the local ledger a Shipper copies from: rows are written there
// first, so that nothing on the request path waits for PostgreSQL.
// *store.DB is one.
type Spool interface {
	LedgerAfter(ctx context.Context, after int64, limit int) ([]store.LedgerRow, error)
	LedgerSeq(ctx context.Context) (int64, error)
	RaiseLedgerSeq(ctx context.Context, n int64) error
	GetState(ctx context.Context, name string) ([]byte, bool, error)
	PutState(ctx context.Context, name string, value []byte) error
}

var _ Spool = (*store.DB)(nil)

// WatermarkState is the spool's state document that holds the seq of the
// last row copied.
const WatermarkState = "pg_ledger_shipped"

// Shipping defaults.
const (
	DefaultShipBatch = 500
	DefaultShipEvery = 2 * time.Second
	// maxShipBackoff bounds the wait between tries while PostgreSQL is
	// unreachable.
	maxShipBackoff = 30 * time.Second
)

// ShipOptions configure a Shipper.
type ShipOptions struct {
	// Batch is how many rows one transaction copies (DefaultShipBatch).
	Batch int
	// Every is how often Run looks for new rows (DefaultShipEvery).
	Every  time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Shipper copies the spool's ledger rows to PostgreSQL after a watermark,
// in batches, advancing the watermark only once a batch committed. A
// crash or an outage between the commit and the watermark's write copies
// the batch again, which PostgreSQL ignores (the rows are keyed by
// instance and seq), so every row arrives exactly once.
type Shipper struct {
	spool Spool
	db    *DB
	o     ShipOptions
	// mark is the watermark once loaded; loaded is only touched by the
	// goroutine that ships.
	mark   atomic.Int64
	loaded bool
	// beforeCommit and afterCommit, when set, run around a batch's commit
	// (tests stop the shipper there).
	beforeCommit, afterCommit func()
}

// NewShipper copies spool's rows to db.
func NewShipper(spool Spool, db *DB, o ShipOptions) *Shipper {
	if o.Batch <= 0 {
		o.Batch = DefaultShipBatch
	}
	if o.Every <= 0 {
		o.Every = DefaultShipEvery
	}
	o.Clock = clock.OrReal(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Shipper{spool: spool, db: db, o: o}
}

// Shipped is the seq of the last row known to be in PostgreSQL: the local
// roll-up may fold the rows up to it, and must keep those after it. It is
// 0 until the shipper first read its watermark.
func (s *Shipper) Shipped() int64 { return s.mark.Load() }

type watermark struct {
	Seq int64 `json:"seq"`
}

// load reads the watermark and squares it with what PostgreSQL holds: a
// database that holds fewer of this instance's rows than the watermark
// says (another database, or one restored from an older backup) gets
// them again, and a spool whose seq is behind PostgreSQL's (a data
// directory started afresh under a name that shipped rows before) moves
// its seq past them, so that new rows are not taken for copies.
func (s *Shipper) load(ctx context.Context) error {
	var w watermark
	raw, ok, err := s.spool.GetState(ctx, WatermarkState)
	if err != nil {
		return err
	}
	if ok {
		if err := json.Unmarshal(raw, &w); err != nil {
			s.o.Logger.Warn("the ledger shipper's watermark is damaged; copying the whole ledger again (PostgreSQL keeps each row once)", "err", err)
			w = watermark{}
		}
	}
	remote, err := s.db.ShippedSeq(ctx)
	if err != nil {
		return err
	}
	if remote < w.Seq {
		s.o.Logger.Warn("PostgreSQL holds fewer of this instance's ledger rows than were copied to it; copying them again",
			"instance", s.db.instance, "copied_through", w.Seq, "postgres_holds_through", remote)
		w.Seq = remote
	}
	local, err := s.spool.LedgerSeq(ctx)
	if err != nil {
		return err
	}
	if local < remote {
		s.o.Logger.Warn("this data directory's ledger is behind the rows PostgreSQL holds for this instance name; its new rows are numbered after them",
			"instance", s.db.instance, "local_seq", local, "postgres_seq", remote)
		if err := s.spool.RaiseLedgerSeq(ctx, remote); err != nil {
			return err
		}
		w.Seq = max(w.Seq, remote)
	}
	s.mark.Store(w.Seq)
	s.loaded = true
	return nil
}

// Ship copies every row after the watermark, a batch at a time, and
// returns how many it copied; it stops at the first error, having kept
// the batches that committed.
func (s *Shipper) Ship(ctx context.Context) (int, error) {
	if !s.loaded {
		if err := s.load(ctx); err != nil {
			return 0, err
		}
	}
	total := 0
	for {
		rows, err := s.spool.LedgerAfter(ctx, s.mark.Load(), s.o.Batch)
		if err != nil || len(rows) == 0 {
			return total, err
		}
		if err := s.db.insertLedger(ctx, rows, s.beforeCommit); err != nil {
			return total, err
		}
		if s.afterCommit != nil {
			s.afterCommit()
		}
		last := rows[len(rows)-1].Seq
		raw, _ := json.Marshal(watermark{Seq: last})
		if err := s.spool.PutState(ctx, WatermarkState, raw); err != nil {
			return total, fmt.Errorf("pgstore: saving the ledger shipper's watermark: %w", err)
		}
		s.mark.Store(last)
		total += len(rows)
		if len(rows) < s.o.Batch {
			return total, nil
		}
	}
}

// Run ships every Every until ctx ends, backing off while PostgreSQL
// cannot be reached; it logs when shipping stops working and when it
// works again, not at every try.
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
				s.o.Logger.Warn("cannot copy ledger rows to PostgreSQL; they wait in the local database and are copied once it is back", "err", err)
			}
			failing = true
			wait = min(2*wait, maxShipBackoff)
		default:
			if failing {
				s.o.Logger.Info("copying ledger rows to PostgreSQL again", "rows", n)
			}
			failing, wait = false, s.o.Every
		}
		t, fire := s.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-fire:
		}
	}
}
