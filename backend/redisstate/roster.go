package redisstate

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// statusKey is the hash of the instances' status records, one field per
// run member. Redis before 7.4 cannot expire one field of a hash, so a
// record carries the time it was written: readers show only the records
// of live members, and each heartbeat deletes the records of members no
// longer alive. The key as a whole expires an hour after the last beat
// of any instance.
var statusKey = key("status")

// statusTTL is how long the records outlive the last instance's beat.
const statusTTL = time.Hour

// Report is what an instance tells the rest of the team about itself in
// its status record, besides its name, when it started and how many
// counter changes wait for Redis, which the State knows.
type Report struct {
	// Version is the instance's FreeLane version.
	Version string
	// Postgres reports whether the instance reaches the team's PostgreSQL
	// (store.postgres); nil when it uses none.
	Postgres func() bool
	// Served counts the requests the instance served since it started;
	// nil counts none.
	Served func() int64
}

// How an instance sees a shared part, in Status and the status records.
const (
	Connected   = "connected"
	Unreachable = "unreachable"
)

// roster holds the instance's own report for its status record.
type roster struct {
	mu     sync.Mutex
	report Report
}

// record is one instance's status record as it is stored on Redis. It
// holds nothing secret: no URL, no key, no address.
type record struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Started and Seen are unix milliseconds: when the instance started
	// and when it wrote the record.
	Started int64 `json:"started"`
	Seen    int64 `json:"seen"`
	// Postgres is Connected, Unreachable, or "" for an instance without
	// store.postgres.
	Postgres string `json:"postgres,omitempty"`
	Pending  int    `json:"pending"`
	Served   int64  `json:"served"`
}

// SetReport gives the State what the instance's status record says of
// it. Call it before Run; without it the record carries the name, the
// start time and the pending count only.
func (s *State) SetReport(r Report) {
	s.roster.mu.Lock()
	defer s.roster.mu.Unlock()
	s.roster.report = r
}

// selfRecord is the instance's own record as of now.
func (s *State) selfRecord(now time.Time) record {
	s.roster.mu.Lock()
	r := s.roster.report
	s.roster.mu.Unlock()
	s.mu.Lock()
	pending := len(s.pending)
	s.mu.Unlock()
	rec := record{Name: s.name, Version: r.Version, Started: s.started.UnixMilli(), Seen: now.UnixMilli(), Pending: pending}
	if r.Postgres != nil {
		rec.Postgres = Unreachable
		if r.Postgres() {
			rec.Postgres = Connected
		}
	}
	if r.Served != nil {
		rec.Served = r.Served()
	}
	return rec
}

// writeRecord queues the instance's record and the read of everyone's
// on p, a heartbeat's pipeline.
func (s *State) writeRecord(ctx context.Context, p redis.Pipeliner, now time.Time) *redis.MapStringStringCmd {
	b, _ := json.Marshal(s.selfRecord(now))
	p.HSet(ctx, statusKey, s.member, b)
	p.PExpire(ctx, statusKey, statusTTL)
	return p.HGetAll(ctx, statusKey)
}

// liveRecords parses the records a heartbeat read, keeping those of the
// live members, and names the fields of the others, for deletion.
func liveRecords(all map[string]string, live map[string]bool) (recs map[string]record, stale []string) {
	recs = make(map[string]record, len(live))
	for m, v := range all {
		if !live[m] {
			stale = append(stale, m)
			continue
		}
		var r record
		if json.Unmarshal([]byte(v), &r) == nil {
			recs[m] = r
		}
	}
	return recs, stale
}

// withRecord fills a peer's status from its record.
func (p Peer) withRecord(r record) Peer {
	p.Version = r.Version
	if r.Started > 0 {
		t := time.UnixMilli(r.Started).UTC()
		p.Started = &t
	}
	p.Postgres, p.Pending, p.Served = r.Postgres, r.Pending, r.Served
	return p
}
