package drills

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// takeover polls survivor every 10 ms after a kill at `at` until it is Up
// and, in its own view, the oldest Up driver; it returns when the survivor
// first saw the dead peer unreachable (0 if never seen) and when it took
// over, both measured from `at`.
func takeover(t *testing.T, r *rig, survivor, dead string, at time.Time, total time.Duration) (unreachable, took time.Duration) {
	t.Helper()
	n := r.node(survivor)
	procs.CheckFor(t, total, 10*time.Millisecond, func() error {
		mustLive(t, n)
		v, err := view(n)
		if err != nil {
			return err
		}
		if m, ok := v.Member(r.addr(dead)); ok && !m.Reachable && unreachable == 0 {
			unreachable = time.Since(at)
		}
		if v.SelfStatus != procs.StatusUp || oldestDriver(v) != r.addr(survivor) {
			return fmt.Errorf("%s has not taken over: %s", survivor, v)
		}
		return nil
	})
	return unreachable, time.Since(at)
}

// Drill 6: SIGKILL of the oldest of a pair under auto-down → the survivor
// stays Up and becomes the oldest. With the crash fast path (the default
// for auto-down) in about a second; with DownOnConnectionRefused=false after
// detection + AutoDownUnreachableAfter. Both variants run on the production
// defaults (detector 1 s / 3 s / 10, AutoDownUnreachableAfter 15 s).
func TestDrill06SigkillOldestAutoDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		opts     []opt
		min, max time.Duration
	}{
		{"fast-path", nil, 0, 5 * time.Second},
		{"no-fast-path", []opt{clusterKeys("DownOnConnectionRefused", false)}, 15 * time.Second, 45 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := pair(t, tc.opts...)
			r.sample()
			at := kill(t, r.node("a"), syscall.SIGKILL)
			unreachable, took := takeover(t, r, "b", "a", at, tc.max+15*time.Second)
			t.Logf("drill 6 %s: SIGKILL of the oldest → survivor saw it unreachable after %v, itself oldest after %v",
				tc.name, unreachable.Round(time.Millisecond), took.Round(time.Millisecond))
			if took < tc.min || took > tc.max {
				t.Fatalf("take-over after %v, want within [%v, %v]", took, tc.min, tc.max)
			}
			views := r.waitSettled(30*time.Second, []string{"b"}, "b")
			assertOldest(t, r, views, "b")
		})
	}
}

// Drill 7: the same crash under keep-oldest → the survivor, alone in a
// 1-vs-1 split without the oldest, downs itself and exits non-zero (the
// documented pathology of keep-oldest for a pair), and never takes over.
func TestDrill07SigkillOldestKeepOldest(t *testing.T) {
	t.Parallel()
	r, _ := pair(t, strategy("keep-oldest"), shortDowning)
	s := r.sample()
	var killed, claimed atomic.Bool
	s.onRound(func(round []Observation) {
		for _, c := range Claims(round) {
			if killed.Load() && c.Node == "b" {
				claimed.Store(true)
			}
		}
	})
	killed.Store(true)
	at := kill(t, r.node("a"), syscall.SIGKILL)
	expectDowned(t, r.node("b"), 60*time.Second)
	took := time.Since(at)
	t.Logf("drill 7: keep-oldest survivor downed itself and exited %d after %v", exitDowned, took.Round(time.Millisecond))
	if took < 5*time.Second {
		t.Fatalf("the survivor went down after %v, before StableAfter (5 s)", took)
	}
	if claimed.Load() {
		t.Fatal("the keep-oldest survivor took over as oldest before it went down")
	}
}

// Drill 8: SIGKILL of the younger → the oldest downs it and stays the oldest
// throughout; under auto-down (fast path) and under keep-oldest.
func TestDrill08SigkillYounger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []opt
		max  time.Duration
	}{
		{"auto-down", nil, 5 * time.Second},
		{"keep-oldest", []opt{strategy("keep-oldest"), shortDowning}, 25 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := pair(t, tc.opts...)
			s := r.sample()
			var rec recorder
			keepsOldest(r, s, "a", "a", &rec)
			at := kill(t, r.node("b"), syscall.SIGKILL)
			r.waitSettled(tc.max+15*time.Second, []string{"a"}, "a")
			took := time.Since(at)
			t.Logf("drill 8 %s: the oldest removed the killed younger after %v", tc.name, took.Round(time.Millisecond))
			if took > tc.max {
				t.Fatalf("removal took %v, want at most %v", took, tc.max)
			}
			rec.check(t)
		})
	}
}

// Drill 9: a quick restart at the same address (SIGKILL, start again at
// once) → the old incarnation is downed and removed, the new one (new uid)
// joins as the youngest.
func TestDrill09QuickRestartSameAddress(t *testing.T) {
	t.Parallel()
	r, views := pair(t)
	oldB := views["b"].Self
	s := r.sample()
	b := r.node("b")
	at := kill(t, b, syscall.SIGKILL)
	b.Restart()
	views = r.waitSettled(60*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 9: the new incarnation of b was Up in both views %v after the kill", time.Since(at).Round(time.Millisecond))
	newB, _ := views["a"].Member(r.addr("b"))
	a, _ := views["a"].Member(r.addr("a"))
	if newB.UID == oldB.UID {
		t.Fatalf("b still has its old uid %s in a's view", oldB.UID)
	}
	if newB.UID != views["b"].Self.UID {
		t.Fatalf("a's view has b#%s, b says it is b#%s", newB.UID, views["b"].Self.UID)
	}
	if newB.UpNumber <= a.UpNumber {
		t.Fatalf("new b up-number %d, a %d: want b the youngest", newB.UpNumber, a.UpNumber)
	}
	assertOldest(t, r, views, "a")
	t.Logf("drill 9: statuses of b's old incarnation seen: %v", s.statuses(oldB.Address, oldB.UID))
}

// Drill 10: restart (SIGKILL + start) of the first seed while the others
// are Up → it rejoins their cluster as the youngest; it never forms a
// cluster of its own.
func TestDrill10RestartFirstSeed(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b", "c")
	r.startAll()
	views := r.waitSettled(40*time.Second, []string{"a", "b", "c"}, "a", "b", "c")
	oldA := views["a"].Self
	s := r.sample()
	var rec recorder
	s.onRound(func(round []Observation) {
		for _, o := range round {
			v := o.View
			if o.Node != "a" || v == nil || v.Self.UID == oldA.UID || v.SelfStatus != procs.StatusUp {
				continue
			}
			for _, other := range []string{"b", "c"} {
				if m, ok := v.Member(r.addr(other)); !ok || m.Status != procs.StatusUp {
					rec.add("restarted first seed is Up without %s (a second cluster): %s", other, v)
				}
			}
		}
	})
	// The oldest survivor: b and c joined a together, in either order.
	survivor := "b"
	mb, _ := views["a"].Member(r.addr("b"))
	mc, _ := views["a"].Member(r.addr("c"))
	if mc.UpNumber < mb.UpNumber {
		survivor = "c"
	}
	a := r.node("a")
	at := kill(t, a, syscall.SIGKILL)
	a.Restart()
	views = r.waitSettled(60*time.Second, []string{"a", "b", "c"}, "a", "b", "c")
	t.Logf("drill 10: the restarted first seed rejoined %v after the kill", time.Since(at).Round(time.Millisecond))
	assertOldest(t, r, views, survivor)
	newA, _ := views["b"].Member(r.addr("a"))
	for _, other := range []string{"b", "c"} {
		m, _ := views["b"].Member(r.addr(other))
		if newA.UpNumber <= m.UpNumber {
			t.Fatalf("restarted a up-number %d, %s %d: want a the youngest", newA.UpNumber, other, m.UpNumber)
		}
	}
	rec.check(t)
}

// Drill 11: SIGSTOP past the failure detector and the downing, then SIGCONT
// → the frozen node finds itself downed and exits non-zero; the survivor is
// unaffected. The frozen node is the younger (the -drills.long variant
// freezes the oldest).
func TestDrill11SigstopSigcont(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, frozen, survivor string }{{"younger", "b", "a"}}
	if *long {
		cases = append(cases, struct{ name, frozen, survivor string }{"oldest", "a", "b"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := pair(t, shortDowning)
			r.sample()
			frozen := r.node(tc.frozen)
			at := kill(t, frozen, syscall.SIGSTOP)
			r.waitSettled(60*time.Second, []string{tc.survivor}, tc.survivor)
			t.Logf("drill 11 %s: %s removed the frozen %s after %v", tc.name, tc.survivor, tc.frozen, time.Since(at).Round(time.Millisecond))
			cont := kill(t, frozen, syscall.SIGCONT)
			expectDowned(t, frozen, 30*time.Second)
			t.Logf("drill 11 %s: the thawed %s exited %d %v after SIGCONT", tc.name, tc.frozen, exitDowned, time.Since(cont).Round(time.Millisecond))
			views := r.waitSettled(10*time.Second, []string{tc.survivor}, tc.survivor)
			assertOldest(t, r, views, tc.survivor)
		})
	}
}
