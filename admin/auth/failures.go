package auth

import "time"

// failureTable counts failed logins per key (a user name or a client
// address) and locks a key that reaches max failures within one window of
// lockFor: no password is checked for it until the lock ends. It is a
// plain value with no clock and no lock of its own; Service holds mu
// around every call.
type failureTable struct {
	max     int           // failures that lock the key
	lockFor time.Duration // the counting window, and how long a lock lasts
	cap     int           // most keys tracked; beyond, the stalest is dropped
	keys    map[string]*failures
}

// failures is one key's record.
type failures struct {
	count       int       // failures since windowStart
	windowStart time.Time // first failure of the current window
	lockedUntil time.Time // zero when not locked
}

func newFailureTable(max int, lockFor time.Duration, capacity int) *failureTable {
	return &failureTable{max: max, lockFor: lockFor, cap: capacity, keys: map[string]*failures{}}
}

// locked returns the end of key's lock when it is locked at now.
func (t *failureTable) locked(key string, now time.Time) (time.Time, bool) {
	f, ok := t.keys[key]
	if !ok || !now.Before(f.lockedUntil) {
		return time.Time{}, false
	}
	return f.lockedUntil, true
}

// fail records one failure of key at now and returns the end of the lock
// when this failure locks it.
func (t *failureTable) fail(key string, now time.Time) (time.Time, bool) {
	f, ok := t.keys[key]
	if !ok {
		t.makeRoom(now)
		f = &failures{}
		t.keys[key] = f
	}
	if f.count == 0 || now.Sub(f.windowStart) >= t.lockFor {
		f.count, f.windowStart = 0, now
	}
	f.count++
	if f.count < t.max {
		return time.Time{}, false
	}
	f.count = 0
	f.lockedUntil = now.Add(t.lockFor)
	return f.lockedUntil, true
}

// reset forgets key's failures (a successful login of that user). A lock
// in force is kept.
func (t *failureTable) reset(key string, now time.Time) {
	if f, ok := t.keys[key]; ok && !now.Before(f.lockedUntil) {
		delete(t.keys, key)
	}
}

// makeRoom drops the records that no longer matter (window over, not
// locked) when the table is full, and then, if it is still full, the one
// whose window began first. It runs only when a new key arrives at a full
// table, so its O(cap) scan is paid at most once per failed login.
func (t *failureTable) makeRoom(now time.Time) {
	if len(t.keys) < t.cap {
		return
	}
	var oldest string
	var oldestAt time.Time
	for k, f := range t.keys {
		if now.Sub(f.windowStart) >= t.lockFor && !now.Before(f.lockedUntil) {
			delete(t.keys, k)
			continue
		}
		if oldest == "" || f.windowStart.Before(oldestAt) {
			oldest, oldestAt = k, f.windowStart
		}
	}
	if len(t.keys) >= t.cap {
		delete(t.keys, oldest)
	}
}
