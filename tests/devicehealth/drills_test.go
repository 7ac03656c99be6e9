package devicehealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// TestDeviceLossHandsOver: the Primary a loses its device, its level
// enters the Degraded band within one poll plus one HealthTick, and the
// Primary role moves to b through the manual failover path; a write
// through b lands; a comes back as Secondary; with a's path restored and
// b's cut, b keeps the role for the hold, then hands it back.
func TestDeviceLossHandsOver(t *testing.T) {
	r := newRig(t)
	aPrimary := r.healthy()

	cutAt := r.cut("a")
	degradedAt := r.waitLevel("a", 30*time.Second, cutAt, degraded)
	bound := pollWithTimeout + healthTick + slack
	t.Logf("a's level entered the Degraded band %v after the cut (bound: poll %v + HealthTick %v + slack %v); a: %s",
		degradedAt.Sub(cutAt).Round(time.Millisecond), pollWithTimeout, healthTick, slack, r.sample.changes("a", cutAt))
	if d := degradedAt.Sub(cutAt); d > bound {
		t.Fatalf("a entered the Degraded band %v after the cut, more than %v", d, bound)
	}
	if l, _ := r.sample.latest("b"); l != secondary {
		t.Fatalf("b reads %d while a is degraded, want 240 (it reaches the device)", l)
	}

	// The hand-over is due once a has been behind for DeviceFailoverAfter
	// and Primary for the hold, then the drain and the leave.
	due := cutAt.Add(after)
	if h := aPrimary.Add(holdFor); h.After(due) {
		due = h
	}
	promotedAt := r.waitLevel("b", time.Until(due)+healthTick+drain+30*time.Second, cutAt, is(primary))
	t.Logf("b became Primary %v after the cut and %v after a's tenure began (DeviceFailoverAfter %v, hold %v, then drain %v and leave): %v after the hand-over was due",
		promotedAt.Sub(cutAt).Round(time.Millisecond), promotedAt.Sub(aPrimary).Round(time.Millisecond), after, holdFor, drain, promotedAt.Sub(due).Round(time.Millisecond))
	if d := promotedAt.Sub(cutAt); d < after {
		t.Fatalf("b became Primary %v after the cut, before DeviceFailoverAfter %v", d, after)
	}
	if d := promotedAt.Sub(aPrimary); d < holdFor-time.Second {
		t.Fatalf("b became Primary %v after a's tenure began, within the hold %v", d, holdFor)
	}
	if code := r.nodes["a"].WaitExit(60 * time.Second); code != 0 {
		t.Fatalf("a exited with code %d after the hand-over, want 0 (a graceful leave)", code)
	}
	rows := r.deviceAudit()
	if len(rows) != 1 || rows[0].Action != "cluster.manual-failover" || !strings.HasPrefix(rows[0].Target, r.net.Host("a").Addr+":") ||
		!strings.Contains(rows[0].Detail, "reason=device health: this Primary reaches 0 of 1 devices, a peer reaches 1") {
		t.Fatalf("device hand-over audit rows %+v, want one for a with its reason", rows)
	}
	t.Logf("audit: %s %s %s %s", rows[0].Actor, rows[0].Action, rows[0].Target, rows[0].Detail)
	r.write("b", 4242)

	// b loses the device now, and a comes back (restarted as a supervisor
	// would) with its path restored: a reaches more than b, within b's
	// hold.
	r.cut("b")
	r.restore("a")
	r.nodes["a"].Restart()
	r.nodes["a"].WaitReady(60 * time.Second)
	r.waitDevice("a", true, 60*time.Second)
	backAt := r.waitLevel("a", 60*time.Second, promotedAt, is(secondary))
	holdEnd := promotedAt.Add(holdFor)
	t.Logf("a back as Secondary %v after b's promotion; b's hold ends %v after it", backAt.Sub(promotedAt).Round(time.Millisecond), holdFor)
	if until := time.Until(holdEnd.Add(-time.Second)); until > 0 {
		procs.Holds(t, until, 100*time.Millisecond, func() error {
			if l, _ := r.sample.latest("a"); l == primary {
				return fmt.Errorf("a became Primary within b's hold (a: %s)", r.sample.changes("a", promotedAt))
			}
			if code, gone := r.nodes["b"].Exited(); gone {
				return fmt.Errorf("b exited (code %d) within its hold", code)
			}
			return nil
		})
	} else {
		t.Fatalf("a came back %v after b's promotion, after the hold (%v): the hold was not exercised", backAt.Sub(promotedAt), holdFor)
	}
	if s, ok := r.sample.first("a", promotedAt, is(primary)); ok {
		t.Fatalf("a read 250 at %s, within b's hold", s.at.Format("15:04:05.000"))
	}
	// After the hold, b hands the role back: a reaches the device, b not.
	handBack := r.waitLevel("a", healthTick+after+drain+30*time.Second, holdEnd.Add(-time.Second), is(primary))
	t.Logf("a Primary again %v after b's hold ended; b: %s", handBack.Sub(holdEnd).Round(time.Millisecond), r.sample.changes("b", promotedAt))
	if code := r.nodes["b"].WaitExit(60 * time.Second); code != 0 {
		t.Fatalf("b exited with code %d after its hand-over, want 0", code)
	}
	if rows := r.deviceAudit(); len(rows) != 2 {
		t.Fatalf("device hand-over audit rows %+v, want two", rows)
	}
}

// TestBothPathsCutNothingMoves: both nodes lose the device; nobody hands
// over and no level moves for the window (20 s; 60 s with -drill.long).
func TestBothPathsCutNothingMoves(t *testing.T) {
	window := 20 * time.Second
	if *long {
		window = 60 * time.Second
	}
	r := newRig(t)
	r.healthy()
	// b first, until it shows the loss (Secondary, 1 of 1 lost: 2) and so
	// has advertised that it reaches nothing; then a.
	cutB := r.cut("b")
	r.waitLevel("b", pollWithTimeout+healthTick+slack, cutB, degraded)
	cutAt := r.cut("a")
	for _, name := range []string{"a", "b"} {
		r.waitDevice(name, false, 30*time.Second)
	}
	// Settled: b heard that a reaches nothing either (one HealthTick).
	settled := r.waitLevel("b", healthTick+slack+10*time.Second, cutAt, is(secondary))
	t.Logf("both cut; settled %v after a's cut (a: %s, b: %s); holding for %v",
		settled.Sub(cutAt).Round(time.Millisecond), r.sample.changes("a", cutB), r.sample.changes("b", cutB), window)
	r.steady(window, map[string]byte{"a": primary, "b": secondary})
	if rows := r.deviceAudit(); len(rows) != 0 {
		t.Fatalf("device hand-overs with both paths cut: %+v", rows)
	}
	if l, moved := r.sample.first("a", cutAt, func(l byte) bool { return l != primary }); moved {
		t.Fatalf("a left 250 (read %d at %s) after both were cut (a: %s)", l.level, l.at.Format("15:04:05.000"), r.sample.changes("a", cutB))
	}
}
