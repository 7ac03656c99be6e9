package auth

import (
	"container/list"
	"time"
)

// throttle counts failed logins per key (a user name with a client
// address, or a client address alone) and says how long a key must wait
// before its next attempt is checked. After free failures of a key each
// further attempt must wait: the free-th failure starts a wait of first,
// each one after it a wait twice as long, at most maxWait. An attempt made
// while the key waits is refused unchecked and counted as one more failure,
// so hammering a key only lengthens its own wait. A key without a failure
// for forget is forgotten.
//
// It is a plain value with no clock and no lock of its own: every call
// takes the instant it happens at, and Service holds mu around every call.
type throttle struct {
	free    int           // the failure that starts the first wait
	first   time.Duration // the first wait (waitAfter)
	maxWait time.Duration // the longest wait
	forget  time.Duration // a key idle this long starts afresh
	cap     int           // most keys tracked; beyond, the least recently failed is dropped

	keys map[string]*list.Element // of *failures, in lru
	lru  *list.List               // front: most recently failed
}

// failures is one key's record.
type failures struct {
	key   string
	count int       // failures (checked or refused) since the key was last forgotten
	last  time.Time // the last failure
	until time.Time // no attempt is checked before this instant
}

func newThrottle(free int, first, maxWait, forget time.Duration, capacity int) *throttle {
	return &throttle{free: free, first: first, maxWait: maxWait, forget: forget, cap: capacity,
		keys: map[string]*list.Element{}, lru: list.New()}
}

// waitAfter is the wait after the count-th failure of a key: none before
// the free-th, then first, 2×first, 4×first… up to maxWait.
func waitAfter(count, free int, first, maxWait time.Duration) time.Duration {
	if count < free {
		return 0
	}
	w := first
	for i := free; i < count && w < maxWait; i++ {
		w *= 2
	}
	return min(w, maxWait)
}

// waiting returns the end of key's wait when an attempt at now must not be
// checked.
func (t *throttle) waiting(key string, now time.Time) (time.Time, bool) {
	e, ok := t.keys[key]
	if !ok {
		return time.Time{}, false
	}
	f := e.Value.(*failures)
	if !now.Before(f.until) {
		return time.Time{}, false
	}
	return f.until, true
}

// fail records one failure of key at now (a wrong password, or an attempt
// refused while the key waited) and returns the end of the wait it starts
// (now when it starts none).
func (t *throttle) fail(key string, now time.Time) time.Time {
	f := t.record(key, now)
	if now.Sub(f.last) >= t.forget {
		f.count = 0
	}
	f.count++
	f.last = now
	f.until = now.Add(waitAfter(f.count, t.free, t.first, t.maxWait))
	return f.until
}

// reset forgets key's failures (a successful login).
func (t *throttle) reset(key string) {
	if e, ok := t.keys[key]; ok {
		t.lru.Remove(e)
		delete(t.keys, key)
	}
}

// record returns key's record, moved to the front of lru, making one when
// it has none: when the table is full, the least recently failed key is
// dropped first (O(1)).
func (t *throttle) record(key string, now time.Time) *failures {
	if e, ok := t.keys[key]; ok {
		t.lru.MoveToFront(e)
		return e.Value.(*failures)
	}
	if len(t.keys) >= t.cap {
		oldest := t.lru.Back()
		t.lru.Remove(oldest)
		delete(t.keys, oldest.Value.(*failures).key)
	}
	f := &failures{key: key, last: now}
	t.keys[key] = t.lru.PushFront(f)
	return f
}

// len is the number of keys tracked.
func (t *throttle) len() int { return len(t.keys) }
