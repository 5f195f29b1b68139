package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Bodies are what a client sent and what it got back for one request, as
// body logging keeps them. The request log's writer redacts them and cuts
// each to Max bytes before it stores them.
type Bodies struct {
	RequestID string
	Start     time.Time
	Request   []byte
	Answer    []byte
	// Max is the most bytes kept of each; the rest is cut off and marked.
	Max int
	// RequestCut and AnswerCut say the caller already left bytes out
	// (it copies only a little more than Max off the request path).
	RequestCut, AnswerCut bool
}

// StoredBodies are the bodies of one request as the log keeps them.
type StoredBodies struct {
	Request string `json:"request"`
	Answer  string `json:"answer"`
}

// CutMarker ends a body that was longer than the configured size.
const CutMarker = "\n[… cut: longer than request_log.max_body_kb]"

const insertBodiesSQL = `INSERT INTO request_bodies (request_id, started_at, request, answer) VALUES (?, ?, ?, ?)
ON CONFLICT (request_id) DO NOTHING`

// RecordBodies enqueues b for the writer like Record: it never blocks and
// never touches disk, and drops b when the queue is full or the log is
// closed. The log takes ownership of b's slices.
func (l *RequestLog) RecordBodies(b Bodies) {
	n := int64(len(b.Request) + len(b.Answer))
	if l.bodyBytes.Add(n) > maxQueuedBodyBytes {
		l.bodyBytes.Add(-n)
		l.droppedBodies.Add(1)
		return
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		l.bodyBytes.Add(-n)
		l.droppedBodies.Add(1)
		return
	}
	select {
	case l.bodies <- b:
		l.mu.RUnlock()
	default:
		l.mu.RUnlock()
		l.bodyBytes.Add(-n)
		l.droppedBodies.Add(1)
	}
}

// DroppedBodies reports how many bodies were not stored because the queue
// was full or the log closed.
func (l *RequestLog) DroppedBodies() uint64 { return l.droppedBodies.Load() }

// bodyText is a body as stored: redacted first, so that the cut never
// leaves part of a secret, then cut to max bytes on a character boundary.
func (d *DB) bodyText(b []byte, max int, cut bool) string {
	s := d.redact(string(b))
	if len(s) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	if cut {
		s += CutMarker
	}
	return s
}

// writeBodies stores bodies in tx.
func (d *DB) writeBodies(ctx context.Context, tx *sql.Tx, bodies []Bodies) error {
	if len(bodies) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, insertBodiesSQL)
	if err != nil {
		return fmt.Errorf("store: write bodies: prepare: %w", err)
	}
	defer stmt.Close()
	for i := range bodies {
		b := &bodies[i]
		start := b.Start
		if start.IsZero() {
			start = d.clock.Now()
		}
		if _, err := stmt.ExecContext(ctx, b.RequestID, start.UnixMilli(),
			d.bodyText(b.Request, b.Max, b.RequestCut), d.bodyText(b.Answer, b.Max, b.AnswerCut)); err != nil {
			return fmt.Errorf("store: write bodies of %s: %w", b.RequestID, err)
		}
	}
	return nil
}

// RequestBodies returns the stored bodies of one request; found is false
// when none were kept.
func (d *DB) RequestBodies(ctx context.Context, id string) (b StoredBodies, found bool, err error) {
	err = d.sql.QueryRowContext(ctx, `SELECT request, answer FROM request_bodies WHERE request_id = ?`, id).Scan(&b.Request, &b.Answer)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredBodies{}, false, nil
	}
	if err != nil {
		return StoredBodies{}, false, fmt.Errorf("store: read bodies of %s: %w", id, err)
	}
	return b, true, nil
}

// pruneBodies deletes the bodies of requests that started before cutoff
// (unix milliseconds), in chunks like PruneRequests.
func (d *DB) pruneBodies(ctx context.Context, cutoff int64) (int64, error) {
	const q = `DELETE FROM request_bodies WHERE rowid IN (
	SELECT rowid FROM request_bodies WHERE started_at < ? LIMIT ?)`
	var total int64
	for {
		res, err := d.sql.ExecContext(ctx, q, cutoff, pruneChunk)
		if err != nil {
			return total, fmt.Errorf("store: prune request bodies: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("store: prune request bodies: %w", err)
		}
		total += n
		if n < pruneChunk {
			return total, nil
		}
	}
}
