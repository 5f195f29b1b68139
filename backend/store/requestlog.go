package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/llm"
)

// LogOptions configures a RequestLog. Zero fields take their defaults.
type LogOptions struct {
	// Buffer is how many traces may wait for the writer before Record
	// starts dropping them. Default 8192.
	Buffer int
	// BatchSize is the most traces written in one transaction. Default 256.
	BatchSize int
	// FlushInterval is how long a partial batch may wait before it is
	// written. Default 250ms.
	FlushInterval time.Duration
	// Logger receives write failures and drop warnings. Default
	// slog.Default().
	Logger *slog.Logger
	// NoLedger writes the request rows only, without usage ledger rows
	// (for measuring what the ledger costs).
	NoLedger bool
	// Clock drives the flush interval, retry backoff and drop warnings
	// (default: the wall clock).
	Clock clock.Clock
	// Written, when set, is called by the writer after each batch it
	// stored; it must not block (a team's instance tells its shipper
	// there are rows to copy).
	Written func()
}

// Defaults for LogOptions.
const (
	defaultBuffer        = 8192
	defaultBatchSize     = 256
	defaultFlushInterval = 250 * time.Millisecond
)

// Write-failure policy: a failed batch is retried a few times, since the
// usual cause is a lock held past busy_timeout by another process, and then
// dropped so one bad batch cannot stall the log forever.
const (
	writeAttempts = 3
	writeBackoff  = 100 * time.Millisecond
)

// Bounds of the bodies waiting for the writer: bodies are large (up to
// twice request_log.max_body_kb each), so besides their number their bytes
// are bounded, and past either bound new bodies are dropped.
const (
	bodyQueue          = 1024
	maxQueuedBodyBytes = 64 << 20
)

// dropWarnEvery rate-limits the "buffer full" warning so a sustained
// overload does not itself flood the log.
const dropWarnEvery = 10 * time.Second

// RequestLog stores llm.Trace records in the requests tables in batches, off
// the request path: Record only enqueues, and a single writer loop (Run)
// writes batches in transactions.
//
// Lifecycle: the owner starts Run in a goroutine it owns and stops it either
// by cancelling Run's context or by calling Close. Both stop accepting new
// records and write everything already accepted before Run returns. If Run
// was never started, Close writes the pending records itself.
type RequestLog struct {
	db   *DB
	opts LogOptions
	log  *slog.Logger
	ch   chan llm.Trace
	// bodies carries body logging's records to the same writer, so they
	// are written in the traces' transactions; bodyBytes counts the bytes
	// queued in it, which maxQueuedBodyBytes bounds.
	bodies    chan Bodies
	bodyBytes atomic.Int64

	// mu makes "closed" and the channel send in Record one step: Record
	// sends under the read lock, and stop sets closed under the write lock,
	// so once stop returns no send is in flight and the channel's contents
	// are final. That is what lets the drain stop at the first empty read
	// without losing a record, and lets the channel stay open (a send on a
	// closed channel would panic in Record).
	mu     sync.RWMutex
	closed bool

	dropped       atomic.Uint64
	droppedBodies atomic.Uint64
	dropWarn      clock.Rare

	// runMu guards started and closedFirst: exactly one of Run or Close
	// becomes the writer and drains the channel.
	runMu       sync.Mutex
	started     bool
	closedFirst bool
	quit        chan struct{} // closed by Close to tell Run to drain and return
	quitOnce    sync.Once
	done        chan struct{} // closed when the writer has drained and returned
	// drainErr is the final drain's error, written before done is closed
	// and read only after, so Close can report it.
	drainErr error
}

// NewRequestLog returns a RequestLog writing to db. Nothing is written until
// Run is started (or Close drains).
func NewRequestLog(db *DB, opts LogOptions) *RequestLog {
	if opts.Buffer <= 0 {
		opts.Buffer = defaultBuffer
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultBatchSize
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = defaultFlushInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Clock = clock.OrReal(opts.Clock)
	return &RequestLog{
		db:     db,
		opts:   opts,
		log:    opts.Logger.With("component", "store.requestlog"),
		ch:     make(chan llm.Trace, opts.Buffer),
		bodies: make(chan Bodies, bodyQueue),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// Record enqueues t for writing. It never blocks and never touches disk: if
// the buffer is full, or the log is stopping or stopped, t is dropped and
// counted in Dropped. The log takes ownership of t.Attempts; the caller must
// not modify that slice afterwards. The model, error and reasons are cut to
// the llm.MaxTrace bounds before they are stored.
func (l *RequestLog) Record(t llm.Trace) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		l.drop(1, "request log closed")
		giveUp(t, errLogClosed)
		return
	}
	select {
	case l.ch <- t.Capped():
		l.mu.RUnlock()
	default:
		l.mu.RUnlock()
		l.drop(1, "request log buffer full")
		giveUp(t, errLogFull)
	}
}

// Why a trace someone waits on was not stored.
var (
	errLogClosed = errors.New("store: the request log is closed")
	errLogFull   = errors.New("store: the request log's buffer is full")
)

// giveUp tells whoever waits on t that it will not be stored.
func giveUp(t llm.Trace, err error) {
	if t.Stored != nil {
		t.Stored.Give(err)
	}
}

// Dropped reports how many traces were not stored: rejected by Record (full
// buffer or closed log) or lost to a batch that kept failing to write.
func (l *RequestLog) Dropped() uint64 { return l.dropped.Load() }

// drop counts n lost traces and warns at most once per dropWarnEvery.
func (l *RequestLog) drop(n int, why string) {
	total := l.dropped.Add(uint64(n))
	if l.dropWarn.Now(l.opts.Clock.Now(), dropWarnEvery) {
		l.log.Warn("dropping request traces", "reason", why, "dropped_total", total)
	}
}

// stop makes Record reject new traces. When it returns no Record is in the
// middle of a send, so the channel holds everything that will ever be
// accepted.
func (l *RequestLog) stop() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// Run is the writer loop; the caller owns the goroutine it runs in. It writes
// batches until ctx is cancelled or Close is called, then stops accepting
// records, writes everything already accepted and returns. Cancellation only
// ends the loop: writes in progress and the final drain are not interrupted
// by it. Run returns nil after a clean stop, and an error if the final drain
// could not write everything or if Run is called twice.
func (l *RequestLog) Run(ctx context.Context) error {
	l.runMu.Lock()
	switch {
	case l.closedFirst:
		// Close ran before this goroutine got going and has drained (or is
		// draining) the log itself; there is nothing left to do.
		l.runMu.Unlock()
		return nil
	case l.started:
		l.runMu.Unlock()
		return errors.New("store: RequestLog.Run called more than once")
	}
	l.started = true
	l.runMu.Unlock()
	defer close(l.done)

	// Writes must survive the cancellation that stops the loop, or the
	// shutdown drain would fail on its first statement.
	wctx := context.WithoutCancel(ctx)
	ticker, tick := l.opts.Clock.NewTicker(l.opts.FlushInterval)
	defer ticker.Stop()
	w := l.newWork()
	for {
		select {
		case t := <-l.ch:
			w.add(t)
			// A trace whose answer is held back is written as soon as
			// nothing else is queued right behind it: traces that arrive
			// while one batch is being written go together in the next, so
			// under load the commits stay few (group commit) and idle they
			// wait for nothing.
			if w.full(l.opts.BatchSize) || w.waited && len(l.ch) == 0 {
				_ = l.flush(wctx, w)
				w.reset()
			}
		case b := <-l.bodies:
			w.bodies = append(w.bodies, b)
			if w.full(l.opts.BatchSize) {
				_ = l.flush(wctx, w)
				w.reset()
			}
		case <-tick:
			if !w.empty() {
				_ = l.flush(wctx, w)
				w.reset()
			}
		case <-l.quit:
			// Close has already called stop.
			l.drainErr = l.drain(wctx, w)
			return l.drainErr
		case <-ctx.Done():
			l.stop()
			l.drainErr = l.drain(wctx, w)
			return l.drainErr
		}
	}
}

// Close stops accepting records, writes everything already accepted and
// waits for that to finish or for ctx to expire. If Run is running, Close
// tells it to drain and waits for it to return; if Run was never started,
// Close drains in the calling goroutine, and a later Run returns at once.
// It returns the final drain's error, if any. Close may be called more than
// once and concurrently with Run's context being cancelled.
func (l *RequestLog) Close(ctx context.Context) error {
	l.stop()
	l.quitOnce.Do(func() { close(l.quit) })

	l.runMu.Lock()
	if !l.started {
		l.started = true
		l.closedFirst = true
		l.runMu.Unlock()
		l.drainErr = l.drain(ctx, l.newWork())
		close(l.done)
		return l.drainErr
	}
	l.runMu.Unlock()

	select {
	case <-l.done:
		return l.drainErr
	case <-ctx.Done():
		return fmt.Errorf("store: waiting for request log to drain: %w", ctx.Err())
	}
}

// work is what the writer has taken off the queues for its next
// transaction.
type work struct {
	traces []llm.Trace
	bodies []Bodies
	// waited says a trace in traces has an answer waiting on it.
	waited bool
}

// add takes t into the batch.
func (w *work) add(t llm.Trace) {
	w.traces = append(w.traces, t)
	w.waited = w.waited || t.Stored != nil
}

func (w *work) full(n int) bool { return len(w.traces) >= n || len(w.bodies) >= n }
func (w *work) empty() bool     { return len(w.traces) == 0 && len(w.bodies) == 0 }

// reset empties w for reuse, clearing the elements so written traces
// (and their Attempts slices) and bodies can be garbage collected.
func (w *work) reset() {
	w.traces = resetBatch(w.traces)
	clear(w.bodies)
	w.bodies = w.bodies[:0]
	w.waited = false
}

// acknowledge tells whoever waits on a trace of w how its write went.
func (w *work) acknowledge(err error) {
	if !w.waited {
		return
	}
	for i := range w.traces {
		if a := w.traces[i].Stored; a != nil {
			a.Give(err)
		}
	}
}

// drain writes w and everything left in the queues. It must only be
// called after stop, so empty queues mean nothing more will arrive.
func (l *RequestLog) drain(ctx context.Context, w *work) error {
	var errs []error
	for {
		select {
		case t := <-l.ch:
			w.add(t)
		case b := <-l.bodies:
			w.bodies = append(w.bodies, b)
		default:
			if !w.empty() {
				errs = append(errs, l.flush(ctx, w))
			}
			return errors.Join(errs...)
		}
		if w.full(l.opts.BatchSize) {
			errs = append(errs, l.flush(ctx, w))
			w.reset()
		}
	}
}

// flush writes one batch, retrying a few times before giving it up as
// dropped. Failures are logged here because the loop has no caller to
// return them to; the error is returned for the final drain.
func (l *RequestLog) flush(ctx context.Context, w *work) error {
	defer func() {
		for i := range w.bodies {
			l.bodyBytes.Add(-int64(len(w.bodies[i].Request) + len(w.bodies[i].Answer)))
		}
	}()
	var err error
	for attempt := 1; attempt <= writeAttempts; attempt++ {
		var skipped int
		skipped, err = l.db.writeBatch(ctx, w.traces, w.bodies, !l.opts.NoLedger)
		if err == nil {
			if skipped > 0 {
				l.log.Warn("skipped request traces with duplicate IDs", "skipped", skipped)
			}
			w.acknowledge(nil)
			if l.opts.Written != nil {
				l.opts.Written()
			}
			return nil
		}
		if ctx.Err() != nil || attempt == writeAttempts {
			break
		}
		l.log.Warn("request log write failed; retrying", "rows", len(w.traces), "attempt", attempt, "err", err)
		clock.Sleep(l.opts.Clock, writeBackoff*time.Duration(attempt), ctx.Done())
	}
	l.log.Error("request log write failed; dropping batch", "rows", len(w.traces), "err", err)
	l.dropped.Add(uint64(len(w.traces)))
	l.droppedBodies.Add(uint64(len(w.bodies)))
	err = fmt.Errorf("store: request log dropped %d traces: %w", len(w.traces), err)
	w.acknowledge(err)
	return err
}

// newWork allocates the batch buffers. The capacity is only a starting
// size, capped by the buffer so that a huge BatchSize used to mean "flush
// on the interval only" is not allocated up front; append grows it if
// needed. The bodies' buffer starts empty: body logging is off by default.
func (l *RequestLog) newWork() *work {
	return &work{traces: make([]llm.Trace, 0, min(l.opts.BatchSize, l.opts.Buffer+1))}
}

// resetBatch empties batch for reuse, clearing the elements so written
// traces (and their Attempts slices) can be garbage collected.
func resetBatch(batch []llm.Trace) []llm.Trace {
	clear(batch)
	return batch[:0]
}
