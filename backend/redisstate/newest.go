package redisstate

import "sync"

// newest keeps, per key, the newest value waiting to be sent to Redis, at
// most maxHomes of them: a busy session or backend is one write per send
// however often it changed, and while Redis is unreachable what waits
// stays bounded. Its zero value is ready to use.
type newest[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// put queues v under k, replacing what k held; a new key is dropped when
// the queue is full.
func (q *newest[V]) put(k string, v V) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = map[string]V{}
	}
	if _, ok := q.m[k]; ok || len(q.m) < maxHomes {
		q.m[k] = v
	}
}

// take empties the queue and returns what it held.
func (q *newest[V]) take() map[string]V {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.m
	q.m = nil
	return batch
}

// restore queues again a batch that could not be sent, except the keys
// that were given a newer value meanwhile.
func (q *newest[V]) restore(batch map[string]V) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.m == nil {
		q.m = map[string]V{}
	}
	for k, v := range batch {
		if _, newer := q.m[k]; !newer && len(q.m) < maxHomes {
			q.m[k] = v
		}
	}
}
