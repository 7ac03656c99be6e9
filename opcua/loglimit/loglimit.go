// Package loglimit bounds repeated log lines: of the lines that share a
// key (a client address and a kind of refusal, a kind of certificate
// refusal), the first is written and then at most one per interval, which
// carries the number of lines suppressed since the previous one written.
//
// The decision (Limiter.Allow) is a pure function of the keys seen and
// the instants the caller passes; it reads no clock. Memory is bounded:
// at most MaxKeys keys are remembered, and keys beyond that share one
// overflow key, so a flood from many addresses still writes at most one
// line per interval for all of them together.
//
// A count suppressed after the last line written is not written unless a
// line of the same key comes later; the callers count every refusal in a
// metric as well, which is where totals are read.
package loglimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of New.
const (
	// DefaultInterval is the shortest time between two lines of one key.
	DefaultInterval = time.Minute
	// DefaultMaxKeys is the most keys remembered.
	DefaultMaxKeys = 10000
)

// Overflow is the key shared by the keys beyond MaxKeys.
const Overflow = "\x00overflow"

// Limiter decides which repeated log lines are written. Safe for
// concurrent use.
type Limiter struct {
	interval time.Duration
	maxKeys  int

	mu      sync.Mutex
	keys    map[string]*state // mu must be held.
	sweptAt time.Time         // last sweep of expired keys; mu must be held.
}

// state is what a key remembers: when its last line was written and how
// many were suppressed since.
type state struct {
	last       time.Time
	suppressed int
}

// New returns a limiter writing at most one line per interval per key and
// remembering at most maxKeys keys (≤ 0: the defaults).
func New(interval time.Duration, maxKeys int) *Limiter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Limiter{interval: interval, maxKeys: maxKeys, keys: make(map[string]*state)}
}

// Allow reports whether a line of key may be written at now and, when it
// may, how many lines of key were suppressed since the last one written.
// A key not seen for an interval is written at once, with the count it
// left behind.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.keys[key]
	if st == nil {
		key = l.admitKey(key, now)
		if st = l.keys[key]; st == nil {
			l.keys[key] = &state{last: now}
			return true, 0
		}
	}
	if now.Sub(st.last) < l.interval {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

// admitKey returns key when there is room for it, else Overflow. When
// the table is full it first forgets, at most once per interval, the keys
// whose last line is an interval old and that suppressed nothing since.
// mu must be held.
func (l *Limiter) admitKey(key string, now time.Time) string {
	if len(l.keys) < l.maxKeys {
		return key
	}
	if now.Sub(l.sweptAt) >= l.interval {
		l.sweptAt = now
		for k, st := range l.keys {
			if st.suppressed == 0 && now.Sub(st.last) >= l.interval {
				delete(l.keys, k)
			}
		}
	}
	if len(l.keys) < l.maxKeys {
		return key
	}
	return Overflow
}

// Len is the number of keys remembered.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Log writes msg with args at level through log when Allow(key, now)
// lets it, adding "suppressed" (the lines of key not written since the
// previous one) when that is not zero.
func (l *Limiter) Log(log *slog.Logger, level slog.Level, key string, now time.Time, msg string, args ...any) {
	ok, n := l.Allow(key, now)
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n, "suppressed_within", l.interval.String())
	}
	log.Log(context.Background(), level, msg, args...)
}
