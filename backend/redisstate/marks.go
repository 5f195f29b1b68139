package redisstate

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"freelane/backend/breaker"
	"freelane/backend/llm"
)

// Breakers is what the shared state tells of the marks other instances
// sent and of failures counted across the team; *breaker.Set implements
// it.
type Breakers interface {
	Apply(m breaker.Mark, from string)
	TripByTeam(id llm.BackendID, failures int, why string)
}

var (
	marksKey                    = key("marks")
	marksChannel                = key("marks")
	_            breaker.Team   = (*State)(nil)
	_            breaker.Trials = (*State)(nil)
)

// markFailing is the channel's word that a backend failed on an
// instance; it is not a breaker mark and is not kept in the hash.
const markFailing breaker.MarkKind = 0

// trialFor is how long a half-open trial is held for an instance that
// claimed it; one that dies with it frees it after this.
const trialFor = 2 * time.Minute

// wireMark is a mark as it travels: on the channel to the instances
// listening now, and in the marks hash for those that reconcile later.
type wireMark struct {
	Kind    breaker.MarkKind `json:"k"`
	Backend string           `json:"b"`
	Until   int64            `json:"u,omitempty"` // unix ms
	Level   int              `json:"l,omitempty"`
	Why     string           `json:"w"`
	From    string           `json:"f"` // the sending run's member
	At      int64            `json:"t"` // unix ms, when it was sent
}

// markOp is one thing the mark worker sends: a mark, a failure or a
// success.
type markOp struct {
	mark      *breaker.Mark
	failed    llm.BackendID
	threshold int
	why       string
}

// marks is the breaker side of State.
type marks struct {
	mu        sync.Mutex
	breakers  Breakers
	queue     []markOp
	successes map[llm.BackendID]bool
	// elsewhere is until when another instance was found holding a
	// backend's trial, so that the requests meanwhile do not each ask.
	elsewhere map[llm.BackendID]time.Time
	// applied is the newest sending time applied per marks-hash field,
	// so that reconciling applies each mark once.
	applied map[string]int64
	// failing are the backends with a run of failures on the team's
	// count, as this instance heard: only a success of one of those needs
	// telling, so a healthy backend's successes cost nothing.
	failing map[llm.BackendID]bool
	wake    chan struct{}
}

// ShareBreakers makes the state carry b's marks to the other instances
// and theirs to b. Call it before Run; b.ShareWith(s) is the other half.
func (s *State) ShareBreakers(b Breakers) {
	s.marks.mu.Lock()
	defer s.marks.mu.Unlock()
	s.marks.breakers = b
}

func (m *marks) init() {
	m.successes = map[llm.BackendID]bool{}
	m.elsewhere = map[llm.BackendID]time.Time{}
	m.applied = map[string]int64{}
	m.failing = map[llm.BackendID]bool{}
	m.wake = make(chan struct{}, 1)
}

func (m *marks) push(op markOp) {
	m.mu.Lock()
	if len(m.queue) < maxPending {
		m.queue = append(m.queue, op)
	}
	m.mu.Unlock()
	m.poke()
}

func (m *marks) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Tell queues a mark for the other instances (breaker.Team).
func (s *State) Tell(mk breaker.Mark) { s.marks.push(markOp{mark: &mk}) }

// Failed queues a failure for the team's count (breaker.Team).
func (s *State) Failed(id llm.BackendID, threshold int, why string) {
	s.marks.push(markOp{failed: id, threshold: threshold, why: why})
}

// Succeeded ends the team's run of failures of id (breaker.Team). Many
// successes of one backend between two sends are one.
func (s *State) Succeeded(id llm.BackendID) {
	m := &s.marks
	m.mu.Lock()
	if !m.failing[id] {
		m.mu.Unlock()
		return
	}
	delete(m.failing, id)
	m.successes[id] = true
	m.mu.Unlock()
	m.poke()
}

// ClaimTrial takes id's half-open trial for this instance, unless
// another holds it (breaker.Trials). With Redis unreachable each instance
// sends its own trial: one per instance is still few.
func (s *State) ClaimTrial(id llm.BackendID) bool {
	if !s.up.Load() {
		return true
	}
	now := s.clock.Now()
	m := &s.marks
	m.mu.Lock()
	busy := m.elsewhere[id].After(now)
	m.mu.Unlock()
	if busy {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	ok, err := s.rdb.SetNX(ctx, trialKey(id), s.member, trialFor).Result()
	if err != nil {
		s.fault(err)
		return true
	}
	if !ok {
		m.mu.Lock()
		m.elsewhere[id] = now.Add(time.Second)
		m.mu.Unlock()
	}
	return ok
}

func trialKey(id llm.BackendID) string { return key("trial:" + id.String()) }
func failsKey(id llm.BackendID) string { return key("fails:" + id.String()) }

// runMarks sends what the breakers queued and listens for the other
// instances' marks until ctx is done.
func (s *State) runMarks(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.listen(ctx)
	}()
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.marks.wake:
			if s.up.Load() {
				s.sendMarks(ctx)
				s.sendPause(ctx)
				s.sendHomes(ctx)
				s.sendLearned(ctx)
			}
		}
	}
}

// sendMarks sends the queued marks, failures and successes in one
// pipeline, then trips the backends whose team failures reached their
// threshold.
func (s *State) sendMarks(ctx context.Context) {
	m := &s.marks
	m.mu.Lock()
	ops, succ := m.queue, m.successes
	m.queue, m.successes = nil, map[llm.BackendID]bool{}
	m.mu.Unlock()
	if len(ops) == 0 && len(succ) == 0 {
		return
	}
	now := s.clock.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	type counted struct {
		op  markOp
		cmd *redis.IntCmd
	}
	var fails []counted
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id := range succ {
			p.Del(ctx, failsKey(id))
		}
		for _, op := range ops {
			if op.mark == nil {
				k := failsKey(op.failed)
				fails = append(fails, counted{op, p.Incr(ctx, k)})
				p.PExpire(ctx, k, 10*time.Minute)
				// The others learn that the backend is failing, so that
				// their next success of it ends the run.
				b, _ := json.Marshal(wireMark{Kind: markFailing, Backend: op.failed.String(), From: s.member, At: now.UnixMilli()})
				p.Publish(ctx, marksChannel, b)
				continue
			}
			mk := op.mark
			w := wireMark{Kind: mk.Kind, Backend: mk.ID.String(), Level: mk.Level, Why: mk.Why, From: s.member, At: now.UnixMilli()}
			if !mk.Until.IsZero() {
				w.Until = mk.Until.UnixMilli()
			}
			b, _ := json.Marshal(w)
			field := markField(mk.Kind, w.Backend)
			switch mk.Kind {
			case breaker.MarkClosed:
				p.HDel(ctx, marksKey, markField(breaker.MarkOpen, w.Backend))
				p.Del(ctx, trialKey(mk.ID), failsKey(mk.ID))
			case breaker.MarkOpen:
				// A trial that failed reopened the breaker: the next
				// trial is due after the new open time.
				p.Del(ctx, trialKey(mk.ID), failsKey(mk.ID))
				p.HDel(ctx, marksKey, markField(breaker.MarkClosed, w.Backend))
			}
			p.HSet(ctx, marksKey, field, b)
			p.Publish(ctx, marksChannel, b)
		}
		return nil
	})
	if err != nil {
		s.fault(err)
		// Failures and marks of a time Redis was away are not resent: the
		// breakers of each instance judged on their own meanwhile.
		return
	}
	m.mu.Lock()
	br := m.breakers
	m.mu.Unlock()
	if br == nil {
		return
	}
	m.mu.Lock()
	for _, f := range fails {
		m.failing[f.op.failed] = true
	}
	m.mu.Unlock()
	for _, f := range fails {
		if n := int(f.cmd.Val()); n >= f.op.threshold && f.op.threshold > 0 {
			br.TripByTeam(f.op.failed, n, f.op.why)
		}
	}
}

func markField(k breaker.MarkKind, backend string) string {
	return strconv.Itoa(int(k)) + "|" + backend
}

// listen applies the marks, the changes of the routing pause and the
// learned limits other instances publish, resubscribing after Redis comes back (go-redis
// reconnects the subscription itself).
func (s *State) listen(ctx context.Context) {
	sub := s.rdb.Subscribe(ctx, marksChannel, pauseChannel, learnedChannel)
	defer sub.Close()
	ch := sub.Channel(redis.WithChannelHealthCheckInterval(5 * time.Second))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			switch msg.Channel {
			case pauseChannel:
				s.applyPauseWire([]byte(msg.Payload))
			case learnedChannel:
				s.applyLearnedWire([]byte(msg.Payload))
			default:
				s.applyWire([]byte(msg.Payload))
			}
		}
	}
}

// applyWire applies one mark another instance sent, once.
func (s *State) applyWire(b []byte) {
	var w wireMark
	if err := json.Unmarshal(b, &w); err != nil || w.From == s.member {
		return
	}
	id, err := llm.ParseBackendID(w.Backend)
	if err != nil {
		return
	}
	if w.Kind == markFailing {
		s.marks.mu.Lock()
		s.marks.failing[id] = true
		s.marks.mu.Unlock()
		return
	}
	if w.Kind == breaker.MarkClosed && w.At < s.clock.Now().Add(-10*time.Second).UnixMilli() {
		// A close is news only while fresh: found later in the hash, it
		// could undo an opening this instance made since.
		return
	}
	m := &s.marks
	field := markField(w.Kind, w.Backend)
	m.mu.Lock()
	if m.applied[field] >= w.At {
		m.mu.Unlock()
		return
	}
	m.applied[field] = w.At
	br := m.breakers
	if w.Kind == breaker.MarkOpen || w.Kind == breaker.MarkClosed {
		delete(m.elsewhere, id)
	}
	m.mu.Unlock()
	if br == nil {
		return
	}
	mk := breaker.Mark{Kind: w.Kind, ID: id, Level: w.Level, Why: w.Why}
	if w.Until != 0 {
		mk.Until = time.UnixMilli(w.Until)
	}
	br.Apply(mk, memberName(w.From))
}

// reconcile applies the marks in the hash that the channel did not bring
// (sent while this instance was not listening), and drops marks of a day
// ago; then it takes the team's routing pause and learned limits the
// same way.
func (s *State) reconcile(ctx context.Context) {
	defer s.reconcileLearned(ctx)
	defer s.reconcilePause(ctx)
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 500*time.Millisecond))
	defer cancel()
	all, err := s.rdb.HGetAll(ctx, marksKey).Result()
	if err != nil {
		return
	}
	old := s.clock.Now().Add(-24 * time.Hour).UnixMilli()
	for field, v := range all {
		var w wireMark
		if json.Unmarshal([]byte(v), &w) != nil || w.At < old {
			_ = s.rdb.HDel(ctx, marksKey, field).Err()
			continue
		}
		s.applyWire([]byte(v))
	}
}

// memberName is the instance's name in a run's member.
func memberName(member string) string {
	if i := strings.LastIndexByte(member, '#'); i >= 0 {
		return member[:i]
	}
	return member
}
