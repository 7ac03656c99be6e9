package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestWaitAfter(t *testing.T) {
	const free, first, maxWait = 3, time.Second, 10 * time.Second
	for _, tc := range []struct {
		count int
		want  time.Duration
	}{
		{0, 0}, {1, 0}, {2, 0}, // before the free-th failure: no wait
		{3, time.Second}, {4, 2 * time.Second}, {5, 4 * time.Second}, {6, 8 * time.Second},
		{7, maxWait}, {8, maxWait}, {1 << 30, maxWait}, // capped, however many
	} {
		if got := waitAfter(tc.count, free, first, maxWait); got != tc.want {
			t.Errorf("waitAfter(%d) = %v, want %v", tc.count, got, tc.want)
		}
	}
	if got := waitAfter(1, 1, time.Second, time.Minute); got != time.Second {
		t.Errorf("free 1: the first failure starts a wait of %v, want 1s", got)
	}
}

// TestThrottle walks one table through failures, waits, refused attempts,
// resets and forgetting, at explicit instants (ms after t0). Parameters:
// the 2nd failure starts the first wait of 1 s, at most 8 s, forgotten after 60 s idle.
func TestThrottle(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		op      string // fail (returns until), waiting (returns until, ok), reset
		key     string
		ms      int
		until   int  // ms; fail: the wait it starts (= ms when none); waiting: when ok
		waiting bool // waiting only
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the free-th failure starts the first wait", []step{
			{op: "fail", key: "a", ms: 0, until: 0}, {op: "waiting", key: "a", ms: 0},
			{op: "fail", key: "a", ms: 10, until: 1010}, {op: "waiting", key: "a", ms: 10, until: 1010, waiting: true},
		}},
		{"waits double up to the cap", []step{
			{op: "fail", key: "a", ms: 0, until: 0}, {op: "fail", key: "a", ms: 0, until: 1000},
			{op: "waiting", key: "a", ms: 999, until: 1000, waiting: true}, {op: "waiting", key: "a", ms: 1000},
			{op: "fail", key: "a", ms: 1000, until: 3000},
			{op: "fail", key: "a", ms: 3000, until: 7000},
			{op: "fail", key: "a", ms: 7000, until: 15000},
			{op: "fail", key: "a", ms: 15000, until: 23000}, // 16 s capped at 8 s
			{op: "fail", key: "a", ms: 23000, until: 31000},
		}},
		{"an attempt inside the wait counts and restarts it, longer", []step{
			{op: "fail", key: "a", ms: 0, until: 0}, {op: "fail", key: "a", ms: 0, until: 1000},
			{op: "waiting", key: "a", ms: 500, until: 1000, waiting: true},
			{op: "fail", key: "a", ms: 500, until: 2500}, // the refused attempt: 2 s from now
			{op: "waiting", key: "a", ms: 2000, until: 2500, waiting: true},
		}},
		{"keys are independent", []step{
			{op: "fail", key: "a", ms: 0, until: 0}, {op: "fail", key: "a", ms: 0, until: 1000},
			{op: "waiting", key: "b", ms: 0}, {op: "fail", key: "b", ms: 0, until: 0},
		}},
		{"reset forgets the failures and the wait", []step{
			{op: "fail", key: "a", ms: 0, until: 0}, {op: "fail", key: "a", ms: 0, until: 1000},
			{op: "reset", key: "a", ms: 0}, {op: "waiting", key: "a", ms: 0},
			{op: "fail", key: "a", ms: 0, until: 0},
		}},
		{"an idle key starts afresh", []step{
			{op: "fail", key: "a", ms: 0, until: 0}, {op: "fail", key: "a", ms: 0, until: 1000},
			{op: "fail", key: "a", ms: 59999, until: 61999},   // 3rd failure, 59.999 s idle: counted
			{op: "fail", key: "a", ms: 119999, until: 119999}, // 60 s idle: the 1st again
			{op: "fail", key: "a", ms: 119999, until: 120999},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newThrottle(2, time.Second, 8*time.Second, time.Minute, 100)
			for i, s := range tc.steps {
				switch s.op {
				case "fail":
					if got := th.fail(s.key, at(s.ms)); !got.Equal(at(s.until)) {
						t.Fatalf("step %d: fail %s at %d ms: wait until %v, want %d ms", i, s.key, s.ms, got.Sub(t0), s.until)
					}
				case "waiting":
					until, ok := th.waiting(s.key, at(s.ms))
					if ok != s.waiting || (ok && !until.Equal(at(s.until))) {
						t.Fatalf("step %d: waiting %s at %d ms: %v until %v, want %v until %d ms", i, s.key, s.ms, ok, until.Sub(t0), s.waiting, s.until)
					}
				case "reset":
					th.reset(s.key)
				}
			}
		})
	}
}

// TestThrottleIsBounded: 100,000 distinct keys never hold more than cap
// records; the least recently failed goes first, so a key that keeps
// failing stays while idle ones are dropped.
func TestThrottleIsBounded(t *testing.T) {
	th := newThrottle(1, time.Second, time.Minute, time.Hour, 1000)
	for i := range 100_000 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		th.fail(fmt.Sprintf("name%d\x00192.0.2.%d", i, i%256), now)
		if i%10 == 0 {
			th.fail("hammered", now) // keeps failing: never the least recent
		}
		if th.len() > 1000 {
			t.Fatalf("%d records after %d keys, cap 1000", th.len(), i+1)
		}
	}
	if _, ok := th.waiting("hammered", t0.Add(100*time.Second)); !ok {
		t.Fatal("the key that kept failing was dropped, or does not wait")
	}
	if _, ok := th.keys["name0\x00192.0.2.0"]; ok {
		t.Fatal("the least recently failed key is still tracked")
	}
	if len(th.keys) != th.lru.Len() {
		t.Fatalf("map %d, list %d: out of step", len(th.keys), th.lru.Len())
	}
}
