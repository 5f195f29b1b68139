package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"freelane/backend/clock"
	"freelane/backend/defaults"
)

// StoredResponse is one stored Responses API answer.
type StoredResponse struct {
	ID string
	// Owner is the identity of the caller that created the response; only
	// a caller of the same identity finds it (Get).
	Owner   string
	Created time.Time
	// Response is the response object as the client got it.
	Response []byte
	// Items is the conversation through this response, as a JSON array
	// of input and output items.
	Items []byte
}

func (r StoredResponse) size() int { return len(r.Response) + len(r.Items) }

// ResponseOptions configures a ResponseStore. Zero fields take their
// defaults.
type ResponseOptions struct {
	// Retention is how long a response is kept. Default 30 days.
	Retention time.Duration
	// MaxBytes bounds one stored response (its object and its
	// conversation). Default 16 MiB.
	MaxBytes int
	// MaxTotal bounds the bytes of all stored responses (their objects and
	// conversations); past it the oldest are deleted, down to nine tenths
	// of it. Default 512 MiB.
	MaxTotal int64
	// Buffer is how many responses may wait for the writer; past it Put
	// refuses. Default 256.
	Buffer int
	// PruneEvery is how often expired responses are deleted. Default 1 h.
	PruneEvery time.Duration
	Logger     *slog.Logger
	Clock      clock.Clock
}

// Defaults for ResponseOptions.
const (
	defaultResponseMaxBytes = 16 << 20
	defaultResponseBuffer   = 256
	defaultResponsePrune    = time.Hour
)

// Errors of Put.
var (
	ErrResponseTooLarge = errors.New("store: response too large to store")
	ErrResponseBacklog  = errors.New("store: too many responses waiting to be written")
	ErrResponsesClosed  = errors.New("store: response store closed")
)

// ResponseStore keeps Responses API answers for a while, off the request
// path as the request log does: Put only hands the response to a single
// writer loop (Run) and keeps it in memory until it is written, so Get finds
// it at once, before any disk write.
//
// Lifecycle: the owner runs Run in a goroutine it owns and stops it by
// cancelling Run's context or by calling Close; either writes what was
// accepted before Run returns.
type ResponseStore struct {
	db        *DB
	opts      ResponseOptions
	log       *slog.Logger
	retention atomic.Int64
	maxTotal  atomic.Int64
	// total is the bytes stored, as the writer counts them; only the
	// writer (Run, or Close when Run never started) touches it, and it is
	// read from the table on the writer's first need and after each
	// hourly prune.
	total      int64
	totalKnown bool

	mu      sync.Mutex
	pending map[string]StoredResponse
	closed  bool
	ch      chan StoredResponse

	runMu       sync.Mutex
	started     bool
	closedFirst bool
	quit        chan struct{}
	quitOnce    sync.Once
	done        chan struct{}
}

// NewResponseStore returns a store writing to db.
func NewResponseStore(db *DB, o ResponseOptions) *ResponseStore {
	if o.Retention <= 0 {
		o.Retention = defaults.ResponseRetention
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultResponseMaxBytes
	}
	if o.Buffer <= 0 {
		o.Buffer = defaultResponseBuffer
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = defaults.ResponseStoreMB * defaults.MiB
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = defaultResponsePrune
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Clock = clock.OrReal(o.Clock)
	s := &ResponseStore{
		db: db, opts: o, log: o.Logger.With("component", "store.responses"),
		pending: map[string]StoredResponse{}, ch: make(chan StoredResponse, o.Buffer),
		quit: make(chan struct{}), done: make(chan struct{}),
	}
	s.retention.Store(int64(o.Retention))
	s.maxTotal.Store(o.MaxTotal)
	return s
}

// SetMaxTotal changes the bound on the bytes of all stored responses; zero
// or less leaves it as it is. A lower bound takes effect with the next
// response written or the next hourly prune.
func (s *ResponseStore) SetMaxTotal(n int64) {
	if n > 0 {
		s.maxTotal.Store(n)
	}
}

// SetRetention changes how long responses stored from now on are kept;
// zero or less leaves it as it is.
func (s *ResponseStore) SetRetention(d time.Duration) {
	if d > 0 {
		s.retention.Store(int64(d))
	}
}

// Put accepts r for storing. It never blocks and never touches disk; it
// refuses a response over MaxBytes (or over MaxTotal, which it could not
// fit in), and one that finds Buffer responses already waiting. The store
// takes ownership of r's slices.
func (s *ResponseStore) Put(r StoredResponse) error {
	if limit := min(int64(s.opts.MaxBytes), s.maxTotal.Load()); int64(r.size()) > limit {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrResponseTooLarge, r.size(), limit)
	}
	if r.Created.IsZero() {
		r.Created = s.opts.Clock.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrResponsesClosed
	}
	select {
	case s.ch <- r:
		s.pending[r.ID] = r
		return nil
	default:
		return ErrResponseBacklog
	}
}

// Get returns the response stored under id for owner, if it is there and
// has not expired. A response another owner stored is not found, exactly
// as an unknown id is not: its existence is not told.
func (s *ResponseStore) Get(ctx context.Context, id, owner string) (StoredResponse, bool, error) {
	s.mu.Lock()
	r, ok := s.pending[id]
	s.mu.Unlock()
	if ok {
		if r.Owner != owner {
			return StoredResponse{}, false, nil
		}
		return r, true, nil
	}
	var created int64
	r.ID, r.Owner = id, owner
	err := s.db.sql.QueryRowContext(ctx, `SELECT created_at, response, items FROM responses WHERE id = ? AND owner = ? AND expires_at > ?`,
		id, owner, s.opts.Clock.Now().UnixMilli()).Scan(&created, &r.Response, &r.Items)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredResponse{}, false, nil
	}
	if err != nil {
		return StoredResponse{}, false, fmt.Errorf("store: read response: %w", err)
	}
	r.Created = time.UnixMilli(created)
	return r, true, nil
}

// Run is the writer loop, which also deletes expired responses. It returns
// when ctx is cancelled or Close is called, after writing what was
// accepted.
func (s *ResponseStore) Run(ctx context.Context) error {
	s.runMu.Lock()
	switch {
	case s.closedFirst:
		s.runMu.Unlock()
		return nil
	case s.started:
		s.runMu.Unlock()
		return errors.New("store: ResponseStore.Run called more than once")
	}
	s.started = true
	s.runMu.Unlock()
	defer close(s.done)
	wctx := context.WithoutCancel(ctx)
	s.prune(wctx)
	ticker, tick := s.opts.Clock.NewTicker(s.opts.PruneEvery)
	defer ticker.Stop()
	for {
		select {
		case r := <-s.ch:
			s.write(wctx, r)
		case <-tick:
			s.prune(wctx)
		case <-s.quit:
			return s.drain(wctx)
		case <-ctx.Done():
			s.stop()
			return s.drain(wctx)
		}
	}
}

// Close stops accepting responses, writes those accepted and waits for
// that, or for ctx.
func (s *ResponseStore) Close(ctx context.Context) error {
	s.stop()
	s.quitOnce.Do(func() { close(s.quit) })
	s.runMu.Lock()
	if !s.started {
		s.started, s.closedFirst = true, true
		s.runMu.Unlock()
		err := s.drain(ctx)
		close(s.done)
		return err
	}
	s.runMu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("store: waiting for response store to drain: %w", ctx.Err())
	}
}

func (s *ResponseStore) stop() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// drain writes what is left; after stop nothing more arrives.
func (s *ResponseStore) drain(ctx context.Context) error {
	var errs []error
	for {
		select {
		case r := <-s.ch:
			errs = append(errs, s.write(ctx, r))
		default:
			return errors.Join(errs...)
		}
	}
}

// write stores one response and then forgets its in-memory copy. A failed
// write is logged and the response given up: the client can still send the
// whole conversation.
func (s *ResponseStore) write(ctx context.Context, r StoredResponse) error {
	expires := r.Created.Add(time.Duration(s.retention.Load()))
	// The count is read before the row is added, which then counts it.
	counted := s.countTotal(ctx) == nil
	_, err := s.db.sql.ExecContext(ctx, `INSERT INTO responses (id, owner, created_at, expires_at, response, items, size) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, created_at = excluded.created_at, expires_at = excluded.expires_at,
	response = excluded.response, items = excluded.items, size = excluded.size`,
		r.ID, r.Owner, r.Created.UnixMilli(), expires.UnixMilli(), string(r.Response), string(r.Items), r.size())
	if err != nil {
		s.log.Error("storing a response failed", "id", r.ID, "err", err)
		err = fmt.Errorf("store: write response %s: %w", r.ID, err)
	}
	s.mu.Lock()
	delete(s.pending, r.ID)
	s.mu.Unlock()
	if err == nil {
		// The id is new in all but a replayed write, whose bytes are
		// counted twice until the next hourly recount: the bound then
		// errs on the side of pruning early.
		if counted {
			s.total += int64(r.size())
		}
		s.bound(ctx)
	}
	return err
}

// countTotal reads the bytes stored from the table once; after that the
// writer keeps the count.
func (s *ResponseStore) countTotal(ctx context.Context) error {
	if s.totalKnown {
		return nil
	}
	if err := s.db.sql.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM responses`).Scan(&s.total); err != nil {
		s.log.Warn("counting the stored responses' size failed", "err", err)
		return fmt.Errorf("store: count response bytes: %w", err)
	}
	s.totalKnown = true
	return nil
}

// bound deletes the oldest responses once their total passes MaxTotal,
// down to nine tenths of it, so that a full store prunes once in a while
// rather than at every write; each pruning is logged once.
func (s *ResponseStore) bound(ctx context.Context) {
	limit := s.maxTotal.Load()
	if !s.totalKnown || s.total <= limit {
		return
	}
	n, freed, err := s.pruneOldest(ctx, limit-limit/10)
	if err != nil {
		s.log.Warn("pruning the oldest stored responses failed", "err", err)
		return
	}
	s.log.Warn("the stored responses passed their size limit (requests.response_store_mb), so the oldest were deleted",
		"deleted", n, "freed_bytes", freed, "limit_bytes", limit, "kept_bytes", s.total)
}

// pruneOldest deletes the oldest responses until the bytes of those left
// are at most target, and returns how many it deleted and their bytes.
func (s *ResponseStore) pruneOldest(ctx context.Context, target int64) (int, int64, error) {
	if err := s.countTotal(ctx); err != nil {
		return 0, 0, err
	}
	excess := s.total - target
	if excess <= 0 {
		return 0, 0, nil
	}
	// A row goes when the rows older than it hold less than the excess:
	// the oldest rows whose bytes together cover it.
	rows, err := s.db.sql.QueryContext(ctx, `DELETE FROM responses WHERE id IN (
	SELECT id FROM (SELECT id, size, SUM(size) OVER (ORDER BY created_at, id ROWS UNBOUNDED PRECEDING) AS run FROM responses)
	WHERE run - size < ?)
RETURNING size`, excess)
	if err != nil {
		return 0, 0, fmt.Errorf("store: prune oldest responses: %w", err)
	}
	defer rows.Close()
	n, freed := 0, int64(0)
	for rows.Next() {
		var size int64
		if err := rows.Scan(&size); err != nil {
			return n, freed, fmt.Errorf("store: prune oldest responses: %w", err)
		}
		n++
		freed += size
	}
	if err := rows.Err(); err != nil {
		return n, freed, fmt.Errorf("store: prune oldest responses: %w", err)
	}
	s.total -= freed
	return n, freed, nil
}

// prune deletes expired responses, counts the bytes of those left afresh
// and holds them to the size bound.
func (s *ResponseStore) prune(ctx context.Context) {
	if _, err := s.PruneResponses(ctx, s.opts.Clock.Now()); err != nil {
		s.log.Warn("pruning stored responses failed", "err", err)
	}
	s.totalKnown = false
	if s.countTotal(ctx) == nil {
		s.bound(ctx)
	}
}

// PruneResponses deletes the responses that expired by now and returns how
// many it deleted.
func (s *ResponseStore) PruneResponses(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.sql.ExecContext(ctx, `DELETE FROM responses WHERE expires_at <= ?`, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("store: prune responses: %w", err)
	}
	return res.RowsAffected()
}
