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
)

// StoredResponse is one stored Responses API answer.
type StoredResponse struct {
	ID      string
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
	DefaultResponseRetention = 30 * 24 * time.Hour
	defaultResponseMaxBytes  = 16 << 20
	defaultResponseBuffer    = 256
	defaultResponsePrune     = time.Hour
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
		o.Retention = DefaultResponseRetention
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultResponseMaxBytes
	}
	if o.Buffer <= 0 {
		o.Buffer = defaultResponseBuffer
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
	return s
}

// SetRetention changes how long responses stored from now on are kept;
// zero or less leaves it as it is.
func (s *ResponseStore) SetRetention(d time.Duration) {
	if d > 0 {
		s.retention.Store(int64(d))
	}
}

// Put accepts r for storing. It never blocks and never touches disk; it
// refuses a response over MaxBytes, and one that finds Buffer responses
// already waiting. The store takes ownership of r's slices.
func (s *ResponseStore) Put(r StoredResponse) error {
	if r.size() > s.opts.MaxBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrResponseTooLarge, r.size(), s.opts.MaxBytes)
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

// Get returns the response stored under id, if it is there and has not
// expired.
func (s *ResponseStore) Get(ctx context.Context, id string) (StoredResponse, bool, error) {
	s.mu.Lock()
	r, ok := s.pending[id]
	s.mu.Unlock()
	if ok {
		return r, true, nil
	}
	var created int64
	r.ID = id
	err := s.db.sql.QueryRowContext(ctx, `SELECT created_at, response, items FROM responses WHERE id = ? AND expires_at > ?`,
		id, s.opts.Clock.Now().UnixMilli()).Scan(&created, &r.Response, &r.Items)
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
	_, err := s.db.sql.ExecContext(ctx, `INSERT INTO responses (id, created_at, expires_at, response, items) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET created_at = excluded.created_at, expires_at = excluded.expires_at, response = excluded.response, items = excluded.items`,
		r.ID, r.Created.UnixMilli(), expires.UnixMilli(), string(r.Response), string(r.Items))
	if err != nil {
		s.log.Error("storing a response failed", "id", r.ID, "err", err)
		err = fmt.Errorf("store: write response %s: %w", r.ID, err)
	}
	s.mu.Lock()
	delete(s.pending, r.ID)
	s.mu.Unlock()
	return err
}

// prune deletes expired responses.
func (s *ResponseStore) prune(ctx context.Context) {
	if _, err := s.PruneResponses(ctx, s.opts.Clock.Now()); err != nil {
		s.log.Warn("pruning stored responses failed", "err", err)
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
