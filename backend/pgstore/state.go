package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// notice is the payload of a change notification.
type notice struct {
	Instance string   `json:"instance"`
	Names    []string `json:"names"`
}

// GetState returns the document stored under name; ok is false when there
// is none.
func (d *DB) GetState(ctx context.Context, name string) (value []byte, ok bool, err error) {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	err = d.pool.QueryRow(ctx, `SELECT value FROM state WHERE name = $1`, name).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, d.errorf("load state "+name, err)
	}
	return value, true, nil
}

// UpdateState stores the documents fn puts in one transaction, all or
// none, and announces them together on Channel when the transaction
// commits (PostgreSQL delivers notifications at commit only).
func (d *DB) UpdateState(ctx context.Context, fn func(put func(name string, value []byte) error) error) error {
	ctx, cancel := d.deadline(ctx)
	defer cancel()
	var fnErr error
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		now := d.clock.Now().UnixMilli()
		msg := notice{Instance: d.instance}
		fnErr = fn(func(name string, value []byte) error {
			if _, err := tx.Exec(ctx, `INSERT INTO state (name, value, updated_at) VALUES ($1, $2, $3)
	ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, name, value, now); err != nil {
				return d.errorf("save state "+name, err)
			}
			msg.Names = append(msg.Names, name)
			return nil
		})
		if fnErr != nil || len(msg.Names) == 0 {
			return fnErr
		}
		// The names are short and few; PostgreSQL's limit on a payload
		// (8000 bytes) is far off.
		payload, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, string(payload)); err != nil {
			return d.errorf("announce the state change", err)
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil:
		return fnErr
	}
	return d.errorf("save state", err)
}

// Resync is the name Watch passes fn after it (re)connected: changes may
// have been missed while it was not listening, so every document may
// have changed.
const Resync = "*"

// Backoff bounds of Watch's reconnection.
const (
	watchMinBackoff = 100 * time.Millisecond
	watchMaxBackoff = 5 * time.Second
	// watchPing is how long Watch waits for a notification before it
	// checks that the connection still answers: a link that died without
	// closing would otherwise hide every change for good.
	watchPing = 15 * time.Second
)

// Watch listens on Channel over a connection of its own and calls fn with
// the name of every document another instance changed (one change stores
// several documents together, and fn hears of each: a caller that
// reloads everything on any name should coalesce the calls), and with Resync
// each time it starts listening again after the connection was lost
// (not the first time). It reconnects with backoff until ctx ends, and
// returns ctx's error then. fn runs on Watch's goroutine; a slow fn
// delays the next notifications, which PostgreSQL queues meanwhile.
func (d *DB) Watch(ctx context.Context, fn func(name string)) error {
	backoff := watchMinBackoff
	first := true
	for {
		err := d.listen(ctx, func() {
			backoff = watchMinBackoff
			if !first {
				fn(Resync)
			}
			first = false
		}, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.log.Warn("lost the PostgreSQL connection that tells of configuration changes from other instances; reconnecting",
			"err", err, "retry_in", backoff)
		t, fire := d.clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-fire:
		}
		backoff = min(2*backoff, watchMaxBackoff)
	}
}

// listen connects, LISTENs, calls listening, and then fn for every
// notification from another instance until the connection fails or ctx
// ends.
func (d *DB) listen(ctx context.Context, listening func(), fn func(name string)) error {
	cctx, cancel := d.deadline(ctx)
	conn, err := pgx.ConnectConfig(cctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		cancel()
		return d.errorf("connecting", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(cctx, `LISTEN `+Channel)
	cancel()
	if err != nil {
		return d.errorf("listen", err)
	}
	listening()
	for {
		wctx, cancel := context.WithTimeout(ctx, watchPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) || (err != nil && wctx.Err() != nil):
			pctx, cancel := d.deadline(ctx)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return d.errorf("listen", err)
			}
			continue
		case err != nil:
			return d.errorf("listen", err)
		}
		var msg notice
		if json.Unmarshal([]byte(n.Payload), &msg) != nil || msg.Instance == d.instance {
			continue
		}
		for _, name := range msg.Names {
			fn(name)
		}
	}
}
