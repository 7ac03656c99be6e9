package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestFailureTable(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		op     string // fail, locked, reset
		key    string
		sec    int
		locked bool
		until  int // seconds, when locked
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"third failure locks", []step{
			{"fail", "a", 0, false, 0}, {"fail", "a", 1, false, 0}, {"fail", "a", 2, true, 62},
			{"locked", "a", 61, true, 62}, {"locked", "a", 62, false, 0}, {"locked", "b", 3, false, 0},
		}},
		{"window restarts after lockFor", []step{
			{"fail", "a", 0, false, 0}, {"fail", "a", 59, false, 0}, {"fail", "a", 60, false, 0},
			{"fail", "a", 61, false, 0}, {"fail", "a", 62, true, 122},
		}},
		{"reset forgets failures but not a lock", []step{
			{"fail", "a", 0, false, 0}, {"fail", "a", 1, false, 0}, {"reset", "a", 2, false, 0},
			{"fail", "a", 3, false, 0}, {"fail", "a", 4, false, 0}, {"fail", "a", 5, true, 65},
			{"reset", "a", 6, false, 0}, {"locked", "a", 7, true, 65},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFailureTable(3, time.Minute, 100)
			for i, s := range tc.steps {
				var until time.Time
				var locked bool
				switch s.op {
				case "fail":
					until, locked = ft.fail(s.key, at(s.sec))
				case "locked":
					until, locked = ft.locked(s.key, at(s.sec))
				case "reset":
					ft.reset(s.key, at(s.sec))
					continue
				}
				if locked != s.locked || (locked && !until.Equal(at(s.until))) {
					t.Fatalf("step %d %s %s at %ds: locked %v until %v, want %v until %ds", i, s.op, s.key, s.sec, locked, until, s.locked, s.until)
				}
			}
		})
	}
}

// TestFailureTableIsBounded: a flood of distinct keys never holds more
// than cap records, and a key that is locked right now outlives stale ones.
func TestFailureTableIsBounded(t *testing.T) {
	ft := newFailureTable(2, time.Minute, 50)
	ft.fail("target", t0)
	if _, locked := ft.fail("target", t0); !locked {
		t.Fatal("target not locked")
	}
	for i := range 10_000 {
		ft.fail(fmt.Sprintf("k%d", i), t0.Add(time.Duration(i)*time.Second))
		if len(ft.keys) > 50 {
			t.Fatalf("%d records after %d keys, cap 50", len(ft.keys), i+1)
		}
	}
	ft2 := newFailureTable(2, time.Minute, 2)
	ft2.fail("old", t0)
	ft2.fail("locked", t0.Add(30*time.Second))
	ft2.fail("locked", t0.Add(30*time.Second)) // locked until 90 s
	ft2.fail("new", t0.Add(65*time.Second))    // old's window is over: it goes first
	if _, ok := ft2.keys["old"]; ok || len(ft2.keys) != 2 {
		t.Fatalf("records %v: want the stale one dropped for the new key", ft2.keys)
	}
	if _, locked := ft2.locked("locked", t0.Add(65*time.Second)); !locked {
		t.Fatal("a lock in force was dropped")
	}
}
