package leasepg

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// report logs the figures every drill ends with: the device log, the
// writer's outcomes, the level changes and the nodes' lease lines.
func (r *rig) report(from time.Time) {
	r.t.Helper()
	r.t.Logf("device since the event: %s", r.devSummary(from))
	for _, n := range []string{"a", "b"} {
		r.t.Logf("%s: writes %s; levels %s", n, r.writer.summary(n, from), r.sampler.changes(n, from))
		r.t.Logf("%s lease log:\n%s", n, r.logLines(n))
	}
}

// noWritesBy fails when the device received a value of node's at or after
// from.
func (r *rig) noWritesBy(node string, from time.Time, what string) {
	r.t.Helper()
	if n := r.countBy(node, from, time.Time{}); n > 0 {
		w, _ := r.firstBy(node, from)
		l, _ := r.lastBy(node, from)
		r.report(from)
		r.t.Fatalf("%s: %d of %s's values reached the device after %s, the first (%d, %s) at %s (%v after), the last (%d) at %s (%v after)\n%s",
			what, n, node, from.Format("15:04:05.000"), w.Value, r.writer.attemptOf(w.Value), w.At.Format("15:04:05.000"), w.At.Sub(from).Round(time.Millisecond),
			l.Value, l.At.Format("15:04:05.000"), l.At.Sub(from).Round(time.Millisecond), r.devSummary(from))
	}
}

// waitWritesBy waits until the device received a value of node's at or
// after from, and returns it.
func (r *rig) waitWritesBy(total time.Duration, node string, from time.Time) devWrite {
	r.t.Helper()
	var got devWrite
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		w, ok := r.firstBy(node, from)
		if !ok {
			return fmt.Errorf("no value of %s's at the device since %s (%s; writer %s)", node, from.Format("15:04:05.000"), r.devSummary(from), r.writer.summary(node, from))
		}
		got = w
		return nil
	})
	return got
}

// staysUp fails the drill unless node (named role in the message) keeps
// running for the next 3 s.
func (r *rig) staysUp(node, role string) {
	r.t.Helper()
	procs.Holds(r.t, 3*time.Second, 100*time.Millisecond, func() error {
		if code, done := r.nodes[node].Exited(); done {
			return fmt.Errorf("%s exited with code %d", role, code)
		}
		return nil
	})
}

// Drill (a): SIGKILL of the Primary → the crash fast path takes the lease
// and the survivor reads 250 (≈ 0.2 s documented); from then on only the
// survivor's values reach the device.
func TestLeasePGKillPrimary(t *testing.T) {
	r := newRig(t)
	p, s := r.healthy()
	begin := time.Now()
	killed := r.signal(p, syscall.SIGKILL)
	up := r.waitLevel(30*time.Second, s, primary, killed)
	t.Logf("drill a: SIGKILL of %s → %s at 250 after %v", p, s, up.Sub(killed).Round(time.Millisecond))
	first := r.waitWritesBy(20*time.Second, s, killed)
	t.Logf("drill a: first value of %s's at the device %v after the kill", s, first.At.Sub(killed).Round(time.Millisecond))
	r.staysUp(s, "the survivor")
	r.noWritesBy(p, up, "after the survivor's promotion")
	if n := r.countBy(s, up, time.Time{}); n < 10 {
		t.Fatalf("only %d of the survivor's values reached the device in the 3 s after its promotion: %s", n, r.devSummary(up))
	}
	log := r.nodes[s].Log()
	if !strings.Contains(log, `"msg":"lease acquired"`) {
		t.Fatalf("the survivor never logged lease acquired\n%s", r.logLines(s))
	}
	if !strings.Contains(log, "cluster crash fast path") {
		t.Logf("note: the survivor's log has no crash fast path line")
	}
	r.assertOnePrimary(begin)
	r.report(killed)
}

// Drill (b): SIGSTOP of the Primary → the survivor takes the lease after
// stable-after and the minority delay, downs the frozen node and reads 250
// after its promotion hold (≈ 10 s documented). SIGCONT → the woken node
// never reads 250 beside the survivor, none of its values reaches the
// device after the survivor's promotion, and it exits with code 3.
func TestLeasePGFreezePrimary(t *testing.T) {
	r := newRig(t)
	p, s := r.healthy()
	begin := time.Now()
	frozen := r.signal(p, syscall.SIGSTOP)
	up := r.waitLevel(60*time.Second, s, primary, frozen)
	t.Logf("drill b: SIGSTOP of %s → %s at 250 after %v", p, s, up.Sub(frozen).Round(time.Millisecond))
	if !strings.Contains(r.nodes[s].Log(), "promotion hold") {
		t.Fatalf("the survivor took over a frozen (maybe alive) Primary without its promotion hold\n%s", r.logLines(s))
	}
	first := r.waitWritesBy(20*time.Second, s, frozen)
	t.Logf("drill b: first value of %s's at the device %v after the freeze (%v after its 250)", s, first.At.Sub(frozen).Round(time.Millisecond), first.At.Sub(up).Round(time.Millisecond))
	if last, ok := r.lastBy(p, begin); ok {
		t.Logf("drill b: the frozen node's last value at the device %v after the freeze", last.At.Sub(frozen).Round(time.Millisecond))
	}
	woke := r.signal(p, syscall.SIGCONT)
	code := r.nodes[p].WaitExit(60 * time.Second)
	t.Logf("drill b: SIGCONT of %s → exited with code %d after %v", p, code, time.Since(woke).Round(time.Millisecond))
	// Give the survivor's writes a moment to continue after the exit.
	afterExit := time.Now()
	r.waitWritesBy(20*time.Second, s, afterExit)
	r.noWritesBy(p, up, "after the survivor's promotion")
	if code != 3 {
		t.Fatalf("the woken node exited with code %d, want 3 (downed)\n%s", code, r.logLines(p))
	}
	r.assertOnePrimary(begin)
	for _, rd := range r.sampler.since(woke) {
		if o := rd.obs[p]; o.ok && o.level == primary {
			t.Fatalf("the woken node read 250 at %s", rd.at.Format("15:04:05.000"))
		}
	}
	r.report(frozen)
}

// Drill (c): a partition between the nodes (iptables DROP both ways), both
// still reaching PostgreSQL → the Primary keeps the lease and 250, the
// Secondary downs itself (exit 3); no sampled instant with two 250s, and
// only the Primary's values reach the device.
func TestLeasePGPartition(t *testing.T) {
	r := newRig(t)
	p, s := r.healthy()
	begin := time.Now()
	cut := time.Now()
	r.net.Partition([]*netem.Host{r.net.Host(p)}, []*netem.Host{r.net.Host(s)}, netem.Drop)
	code := r.nodes[s].WaitExit(stableAfter + 60*time.Second)
	exited := time.Now()
	t.Logf("drill c: partition → the Secondary %s exited with code %d after %v", s, code, exited.Sub(cut).Round(time.Millisecond))
	if code != 3 {
		t.Fatalf("the Secondary exited with code %d, want 3 (it lost the lease and downed itself)\n%s", code, r.logLines(s))
	}
	r.staysUp(p, "the Primary")
	r.waitWritesBy(20*time.Second, p, exited)
	r.noWritesBy(s, cut, "partition")
	if n := r.switches(cut); n != 0 {
		t.Fatalf("the device's writer changed %d times after the partition: %s", n, r.devSummary(cut))
	}
	if !strings.Contains(r.nodes[p].Log(), `"msg":"lease acquired"`) {
		t.Fatalf("the Primary never acquired the lease\n%s", r.logLines(p))
	}
	// The Primary's longest gap in device writes after the cut.
	var gap time.Duration
	prev := cut
	for _, w := range r.writes(cut, time.Time{}) {
		gap = max(gap, w.At.Sub(prev))
		prev = w.At
	}
	t.Logf("drill c: the Primary's longest gap between values at the device after the cut: %v", gap.Round(time.Millisecond))
	r.assertOnePrimary(begin)
	r.report(cut)
}

// Drill (d): the Primary loses its peer AND the Config DB (partitioned
// from b, its path to PostgreSQL blackholed) → it cannot take the lease,
// so it is fenced (gate "fenced", ServiceLevel 100) once the peer has been
// silent for the acceptable pause (≈ 3 s) and none of its values reaches
// the device after that; b takes the lease and reads 250; no sampled
// instant with two 250s.
func TestLeasePGPrimaryLosesPeerAndDB(t *testing.T) {
	r := newRig(t)
	p, s := r.healthy()
	begin := time.Now()
	cut := time.Now()
	if err := r.dbPath[p].SetMode(netem.Blackhole); err != nil {
		t.Fatal(err)
	}
	r.net.Partition([]*netem.Host{r.net.Host(p)}, []*netem.Host{r.net.Host(s)}, netem.Drop)
	fenceBound := pause + slack
	low := r.waitLevelAtMost(fenceBound+10*time.Second, p, degraded, cut)
	t.Logf("drill d: the cut-off Primary %s at ≤ 100 after %v", p, low.Sub(cut).Round(time.Millisecond))
	up := r.waitLevel(90*time.Second, s, primary, cut)
	t.Logf("drill d: %s at 250 after %v", s, up.Sub(cut).Round(time.Millisecond))
	r.waitWritesBy(20*time.Second, s, up)
	// The cut-off node fails its own lease attempt and downs itself (exit
	// 3); it stays out meanwhile and as it leaves, while the new Primary
	// serves. The device log is judged once it is gone.
	code := r.nodes[p].WaitExit(90 * time.Second)
	t.Logf("drill d: the cut-off Primary exited with code %d %v after the cut", code, time.Since(cut).Round(time.Millisecond))
	last, ok := r.lastBy(p, cut)
	if ok {
		t.Logf("drill d: the cut-off Primary's last value at the device %v after the cut", last.At.Sub(cut).Round(time.Millisecond))
	} else {
		t.Logf("drill d: no value of the cut-off Primary's reached the device after the cut")
	}
	if ok && last.At.Sub(cut) > fenceBound {
		first, _ := r.firstBy(p, cut.Add(fenceBound))
		r.report(cut)
		t.Fatalf("the cut-off Primary's values reached the device until %v after the cut, beyond the fence bound %v (pause %v + slack): %d of them after the bound, the first (%d, %s) %v after the cut; the new Primary read 250 %v after the cut\n%s",
			last.At.Sub(cut).Round(time.Millisecond), fenceBound, pause, r.countBy(p, cut.Add(fenceBound), time.Time{}), first.Value, r.writer.attemptOf(first.Value),
			first.At.Sub(cut).Round(time.Millisecond), up.Sub(cut).Round(time.Millisecond), r.devSummary(cut))
	}
	if low.Sub(cut) > fenceBound {
		t.Fatalf("the cut-off Primary read ≤ 100 only %v after the cut, beyond the fence bound %v", low.Sub(cut).Round(time.Millisecond), fenceBound)
	}
	r.noWritesBy(p, cut.Add(fenceBound), "after the fence bound")
	if code != 3 {
		t.Fatalf("the cut-off Primary exited with code %d, want 3 (it could not take the lease and downed itself)\n%s", code, r.logLines(p))
	}
	r.assertOnePrimary(begin)
	r.report(cut)
}

// waitLevelAtMost waits for the first round at or after since where node
// answers with a level ≤ max, and returns it.
func (r *rig) waitLevelAtMost(total time.Duration, node string, most byte, since time.Time) time.Time {
	r.t.Helper()
	var at time.Time
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		for _, rd := range r.sampler.since(since) {
			if o := rd.obs[node]; o.ok && o.level <= most {
				at = rd.at
				return nil
			}
		}
		return fmt.Errorf("%s has not read ≤ %d since %s; last %s", node, most, since.Format("15:04:05.000"), r.sampler.last())
	})
	return at
}

// Drill (e): PostgreSQL stops while both nodes see each other → no
// failover, no downing (the set is whole: no lease needed), both read 100,
// the Primary keeps servicing writes, the Secondary's writes never reach
// the device. PostgreSQL starts again → 250 and 240.
func TestLeasePGConfigDBDown(t *testing.T) {
	r := newRig(t)
	p, s := r.healthy()
	begin := time.Now()
	r.db.Stop()
	stopped := time.Now()
	settled := r.waitLevels(60*time.Second, map[string]byte{p: degraded, s: degraded})
	t.Logf("drill e: Config DB stopped → both at 100 after %v", settled.Sub(stopped).Round(time.Millisecond))
	// The documented state holds for longer than stable-after + TTL.
	hold := stableAfter + ttl + 6*time.Second
	holdFrom := time.Now()
	procs.Holds(t, hold, 100*time.Millisecond, func() error {
		for _, n := range []string{p, s} {
			if code, done := r.nodes[n].Exited(); done {
				return fmt.Errorf("%s exited with code %d during the Config DB outage", n, code)
			}
		}
		from := time.Now().Add(-200 * time.Millisecond)
		if from.Before(settled) {
			from = settled
		}
		rd := r.sampler.since(from)
		for _, x := range rd {
			for _, n := range []string{p, s} {
				if o := x.obs[n]; o.ok && o.level != degraded {
					return fmt.Errorf("%s read %d at %s during the Config DB outage, want 100", n, o.level, x.at.Format("15:04:05.000"))
				}
			}
		}
		return nil
	})
	n := r.countBy(p, holdFrom, time.Time{})
	t.Logf("drill e: %d of the Primary's values reached the device in the %v held (writer %s)", n, hold, r.writer.summary(p, holdFrom))
	if n < int(hold/(100*time.Millisecond))/2 {
		t.Fatalf("the Primary serviced only %d writes in %v of Config DB outage, want about one per 100 ms: %s", n, hold, r.devSummary(holdFrom))
	}
	r.noWritesBy(s, stopped, "Config DB outage")
	for _, n := range []string{p, s} {
		if strings.Contains(r.nodes[n].Log(), `"msg":"cluster member downed"`) {
			t.Fatalf("%s downed a member during the Config DB outage\n%s", n, r.logLines(n))
		}
	}
	r.report(stopped)
	r.db.Start()
	restarted := time.Now()
	back := r.waitLevels(90*time.Second, map[string]byte{p: primary, s: secondary})
	t.Logf("drill e: Config DB started again → 250/240 after %v", back.Sub(restarted).Round(time.Millisecond))
	r.assertOnePrimary(begin)
}

// Drill (f): partition AND Config DB outage together → neither node can
// take the lease: no node's values reach the device after the fence
// bound, and both read ≤ 100 (or are gone).
func TestLeasePGPartitionAndDBDown(t *testing.T) {
	r := newRig(t)
	p, s := r.healthy()
	begin := time.Now()
	r.db.Stop()
	r.net.Partition([]*netem.Host{r.net.Host(p)}, []*netem.Host{r.net.Host(s)}, netem.Drop)
	cut := time.Now()
	fenceBound := pause + slack
	low := r.waitLevelAtMost(fenceBound+10*time.Second, p, degraded, cut)
	t.Logf("drill f: the Primary %s at ≤ 100 after %v", p, low.Sub(cut).Round(time.Millisecond))
	// Watch long enough for every decision: detector, stable-after, the
	// minority delay, a lease attempt timing out (TTL/2) and more. Levels
	// fail at once; the device log is judged at the end, so that its
	// figures cover the whole window.
	watchFrom := cut.Add(fenceBound)
	procs.Holds(t, fenceBound+stableAfter+2*time.Second+ttl+10*time.Second, 100*time.Millisecond, func() error {
		for _, rd := range r.sampler.since(watchFrom) {
			for _, n := range []string{p, s} {
				if o := rd.obs[n]; o.ok && o.level > degraded {
					return fmt.Errorf("%s read %d at %s (%v after the cut), want ≤ 100", n, o.level, rd.at.Format("15:04:05.000"), rd.at.Sub(cut).Round(time.Millisecond))
				}
			}
		}
		return nil
	})
	for _, n := range []string{p, s} {
		if code, done := r.nodes[n].Exited(); done {
			t.Logf("drill f: %s exited with code %d", n, code)
		} else {
			t.Logf("drill f: %s still running", n)
		}
	}
	if last, ok := r.lastBy(p, cut); ok {
		t.Logf("drill f: the Primary's last value at the device %v after the cut", last.At.Sub(cut).Round(time.Millisecond))
	} else {
		t.Logf("drill f: no value reached the device after the cut")
	}
	if ws := r.writes(watchFrom, time.Time{}); len(ws) > 0 {
		r.report(cut)
		t.Fatalf("the device received %d values after the fence bound (%v after the cut), the first %d (by %s) %v after the cut, the last %d (by %s) %v after it",
			len(ws), fenceBound, ws[0].Value, by(ws[0].Value), ws[0].At.Sub(cut).Round(time.Millisecond),
			ws[len(ws)-1].Value, by(ws[len(ws)-1].Value), ws[len(ws)-1].At.Sub(cut).Round(time.Millisecond))
	}
	r.noWritesBy(s, cut, "partition and Config DB outage")
	r.assertOnePrimary(begin)
	r.report(cut)
}
