package failover

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/demo"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// The redundancy contract's timings (DESIGN.md, Redundancy): the drills
// assert against these numbers, not against the runtime's constants.
const (
	debounce   = 250 * time.Millisecond // RedundancyStateActor debounce
	healthTick = 5 * time.Second        // OpcUaPublishActor recomputes
	heartbeat  = 10 * time.Second       // snapshot republished
	freshFor   = 30 * time.Second       // DB verdict, snapshot and probe freshness
	// The Config DB probe: SELECT 1 every dbProbeEvery, a verdict after
	// dbProbeTimeout at the latest.
	dbProbeEvery   = 5 * time.Second
	dbProbeTimeout = 2 * time.Second
	// slack covers delivery on two loaded cores: pub/sub, the OPC UA
	// publishing interval (50 ms) and the test's polling.
	slack = time.Second
	// formTimeout bounds the formation of a rig (the second seed joins
	// after the first seed's InitJoin round, ≈ 5 s).
	formTimeout = 60 * time.Second
)

// healthyRig starts every node of r, waits until all are Up and every
// driver publishes its healthy level, and returns those levels.
func healthyRig(t *testing.T, r *rig) map[string]byte {
	t.Helper()
	r.startAll()
	var names []string
	for _, s := range r.specs {
		names = append(names, s.name)
	}
	v, _ := r.waitAllUp(formTimeout, names...)
	want := r.expectedLevels(v, names...)
	r.waitLevels(30*time.Second, want)
	t.Logf("healthy: %s", r.levelsString())
	return want
}

// pairRoles returns the Primary and the Secondary of a healthy pair.
func pairRoles(t *testing.T, want map[string]byte) (primary, secondary string) {
	t.Helper()
	for _, n := range sortedKeys(want) {
		switch want[n] {
		case Primary:
			primary = n
		case Secondary:
			secondary = n
		}
	}
	if primary == "" || secondary == "" {
		t.Fatalf("not a healthy pair: %v", want)
	}
	return primary, secondary
}

// holdLevels asserts that the levels stay as wanted for d: the failure
// detector gathers heartbeats meanwhile, as in a running pair.
func (r *rig) holdLevels(d time.Duration, want map[string]byte) {
	r.t.Helper()
	procs.Holds(r.t, d, 50*time.Millisecond, func() error { return r.levelsAre(want) })
}

// reachedAt is when name's subscribed client first saw its current level
// (the start of the trailing run of readings with that level).
func (r *rig) reachedAt(name string) time.Time {
	h := r.watcher(name).history()
	var at time.Time
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Known != h[len(h)-1].Known || h[i].Level != h[len(h)-1].Level {
			break
		}
		at = h[i].At
	}
	return at
}

// Drill 1: a healthy pair publishes 250 on the oldest member and 240 on the
// other within 2 s of both being Up.
func TestDrill01HealthyPair(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	r.startAll()
	v, upAt := r.waitAllUp(formTimeout, "a", "b")
	want := r.expectedLevels(v, "a", "b")
	if p := primaryOf(want); len(p) != 1 {
		t.Fatalf("expected one oldest driver, got %v from %s", p, v)
	}
	oldest, _ := v.OldestUp(driver, "site")
	if r.nameOf(oldest.Address) != "a" {
		t.Logf("note: the oldest is %s, not the first seed", r.nameOf(oldest.Address))
	}
	const within = 2 * time.Second
	procs.CheckFor(t, max(within-time.Since(upAt), 10*time.Millisecond), 10*time.Millisecond, func() error {
		return r.levelsAre(want)
	})
	// When did each node reach its level, as its subscribed client saw it?
	var settled time.Time
	for name := range want {
		if at := r.reachedAt(name); at.After(settled) {
			settled = at
		}
	}
	t.Logf("both Up (seen by polling /api/cluster/members) at +0; levels %v settled at %+v", want, settled.Sub(upAt).Round(time.Millisecond))
	r.holdLevels(2*time.Second, want)
	r.assertInvariant()
}

// killPrimary SIGKILLs the Primary of a healthy pair and returns when the
// survivor's subscribed client saw 250, and how long that took.
func killPrimary(t *testing.T, r *rig, primary, survivor string) (time.Time, time.Duration) {
	t.Helper()
	r.node(primary).Signal(syscall.SIGKILL)
	at := time.Now()
	rd := r.waitFirst(30*time.Second, survivor, at, "250", is(Primary))
	took := rd.At.Sub(at)
	t.Logf("SIGKILL of the Primary %s → %s at 250 seen by a subscribed OPC UA client after %v", primary, survivor, took.Round(time.Millisecond))
	return rd.At, took
}

// Drill 2: SIGKILL of the Primary → the survivor publishes 250 (crash fast
// path on, the auto-down default).
func TestDrill02KillPrimary(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	r.holdLevels(3*time.Second, want)
	_, took := killPrimary(t, r, p, s)
	if took > 5*time.Second {
		t.Fatalf("take-over after %v; with the crash fast path it takes about a second", took)
	}
	r.holdLevels(2*time.Second, map[string]byte{s: Primary})
	r.assertInvariant()
}

// Drill 3: the killed Primary restarts → it joins as the youngest member
// and publishes 240; the survivor keeps 250 throughout.
func TestDrill03KilledNodeRejoins(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	before, err := r.view(p)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := before.SelfMember()
	r.holdLevels(3*time.Second, want)
	tookOver, _ := killPrimary(t, r, p, s)

	r.node(p).Restart()
	restarted := time.Now()
	v, _ := r.waitAllUp(formTimeout, p, s)
	mp, _ := v.Member(r.addr(p))
	ms, _ := v.Member(r.addr(s))
	if mp.UID == self.UID {
		t.Fatalf("%s rejoined with its old uid %s", p, mp.UID)
	}
	if mp.UpNumber <= ms.UpNumber {
		t.Fatalf("%s rejoined with up-number %d, not younger than %s (%d): %s", p, mp.UpNumber, s, ms.UpNumber, v)
	}
	after := map[string]byte{p: Secondary, s: Primary}
	r.waitLevels(30*time.Second, after)
	t.Logf("%s back at 240 %v after its restart", p, time.Since(restarted).Round(time.Millisecond))
	r.holdLevels(3*time.Second, after)
	for _, rd := range r.readingsSince(s, tookOver) {
		if !rd.Known || rd.Level != Primary {
			t.Fatalf("the survivor %s left 250 while %s rejoined: %v at %s", s, p, rd, rd.At.Format("15:04:05.000"))
		}
	}
	for _, rd := range r.readingsSince(p, restarted) {
		if rd.Known && rd.Level == Primary {
			t.Fatalf("the restarted %s published 250 at %s", p, rd.At.Format("15:04:05.000"))
		}
	}
	r.assertInvariant()
}

// Drill 4: the networked Config DB stops → both nodes publish 100 within
// one probe interval plus its timeout; it comes back → 250/240 again.
func TestDrill04ConfigDbOutage(t *testing.T) {
	t.Parallel()
	db := pg.Start(t)
	r := newRig(t, pairSpecs("site", "a", "b")...)
	r.configure("", func(cfg map[string]any) {
		cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": db.DSN()}
	})
	want := healthyRig(t, r)

	db.Stop()
	stopped := time.Now()
	bound := dbProbeEvery + dbProbeTimeout + slack
	for _, n := range sortedKeys(want) {
		rd := r.waitFirst(bound+healthTick+10*time.Second, n, stopped, "100", is(100))
		took := rd.At.Sub(stopped)
		t.Logf("Config DB stopped → %s at 100 after %v", n, took.Round(time.Millisecond))
		if took > bound {
			t.Errorf("%s reached 100 after %v, want within one probe interval plus its timeout (%v + %v, + %v delivery)", n, took, dbProbeEvery, dbProbeTimeout, slack)
		}
	}
	r.waitLevels(time.Second, map[string]byte{"a": 100, "b": 100})

	db.Start()
	started := time.Now()
	r.waitLevels(dbProbeEvery+dbProbeTimeout+healthTick+slack+10*time.Second, want)
	back := time.Since(started)
	t.Logf("Config DB back → 250/240 after %v", back.Round(time.Millisecond))
	if limit := dbProbeEvery + dbProbeTimeout + healthTick + slack; back > limit {
		t.Errorf("recovery took %v, want within %v (next probe, its timeout, one HealthTick)", back, limit)
	}
	r.assertInvariant()
}

// Drill 4b: redundancy snapshots stop reaching the driver nodes while the
// Config DB answers (the only admin node is killed and stays down) → each
// driver publishes 200 once its last snapshot is older than 30 s, not
// before; the admin node returns → 250/240.
func TestDrill04bSnapshotsStop(t *testing.T) {
	t.Parallel()
	r := newRig(t,
		spec{name: "adm", clusterID: "site", roles: []string{admin}},
		spec{name: "d1", clusterID: "site", roles: []string{driver}},
		spec{name: "d2", clusterID: "site", roles: []string{driver}},
	)
	want := healthyRig(t, r)
	delete(want, "adm")
	if len(want) != 2 || len(primaryOf(want)) != 1 {
		t.Fatalf("driver levels %v", want)
	}

	r.node("adm").Signal(syscall.SIGKILL)
	killed := time.Now()
	// The last snapshot left at most one heartbeat before the kill, so the
	// drivers keep their levels for at least freshFor − heartbeat.
	earliest := freshFor - heartbeat - slack
	r.holdLevels(earliest, want)
	latest := freshFor + healthTick + slack
	for _, n := range sortedKeys(want) {
		rd := r.waitFirst(latest-time.Since(killed)+10*time.Second, n, killed, "200", is(200))
		took := rd.At.Sub(killed)
		t.Logf("admin node killed → %s at 200 after %v", n, took.Round(time.Millisecond))
		if took < earliest || took > latest {
			t.Errorf("%s reached 200 %v after the last admin node died; want between %v and %v (snapshot older than %v)", n, took, earliest, latest, freshFor)
		}
	}
	for _, n := range sortedKeys(want) {
		mustLive(t, r.node(n))
	}

	r.node("adm").Restart()
	restarted := time.Now()
	r.waitLevels(formTimeout, want)
	t.Logf("admin node back → %v after %v", want, time.Since(restarted).Round(time.Millisecond))
	r.assertInvariant()
}

// Drill 5: the Primary's OPC UA port is blocked for its peer only
// (REJECT on 4840 in the Primary's network namespace) while the cluster
// link stays up → the peer's probe reports it, the Primary drops to 200
// and a client following the highest ServiceLevel prefers the other node;
// unblocked → 250 again.
func TestDrill05OpcUaPortBlocked(t *testing.T) {
	t.Parallel()
	r := newHostRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	hp, hs := r.net.Host(p), r.net.Host(s)
	rule := []string{"INPUT", "-s", hs.Addr, "-p", "tcp", "--dport", "4840", "-j", "REJECT", "--reject-with", "tcp-reset"}
	iptables := func(op string) {
		t.Helper()
		if out, err := hp.Output(append([]string{"iptables", "-w", op}, rule...)...); err != nil {
			t.Fatalf("iptables %s: %v\n%s", op, err, out)
		}
	}
	iptables("-A")
	blocked := time.Now()
	unblocked := false
	t.Cleanup(func() {
		if !unblocked {
			_, _ = hp.Output(append([]string{"iptables", "-w", "-D"}, rule...)...)
		}
	})

	// Probe period + its 2 s timeout + a HealthTick, generously.
	const bound = 20 * time.Second
	rd := r.waitFirst(bound, p, blocked, "200", is(200))
	t.Logf("OPC UA port of %s blocked for %s → %s at 200 after %v", p, s, p, rd.At.Sub(blocked).Round(time.Millisecond))
	r.waitLevels(time.Second, map[string]byte{p: 200, s: Secondary})
	if best := preferred(r, p, s); best != s {
		t.Fatalf("a client following the highest ServiceLevel picks %s, want %s (%s)", best, s, r.levelsString())
	}
	// The cluster link stayed up: nobody was downed, the Primary by age
	// did not change.
	v, err := r.allUp([]string{p, s})
	if err != nil {
		t.Fatalf("the cluster link did not stay up: %v", err)
	}
	if old, _ := v.OldestUp(driver, "site"); r.nameOf(old.Address) != p {
		t.Fatalf("the oldest driver changed to %s: %s", r.nameOf(old.Address), v)
	}

	iptables("-D")
	unblocked = true
	healed := time.Now()
	r.waitLevels(freshFor+healthTick+slack, want)
	t.Logf("unblocked → %v after %v", want, time.Since(healed).Round(time.Millisecond))
	r.assertInvariant()
}

// preferred is the node a client following the highest ServiceLevel picks
// ("" when none is known).
func preferred(r *rig, names ...string) string {
	best, level := "", -1
	for _, n := range names {
		if rd := r.level(n); rd.Known && int(rd.Level) > level {
			best, level = n, int(rd.Level)
		}
	}
	return best
}

// Drill 6: a node that subscribes after the last topology change (it
// joins, and the snapshot that follows may reach it before its own
// subscription is known) converges within the 10 s heartbeat.
func TestDrill06LateSubscriberConverges(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b", "c")...)
	r.start("a")
	r.start("b")
	v, _ := r.waitAllUp(formTimeout, "a", "b")
	want := r.expectedLevels(v, "a", "b")
	r.waitLevels(30*time.Second, want)
	joinFrom := time.Now()
	r.start("c")
	_, upAt := r.waitAllUp(formTimeout, "a", "b", "c")
	bound := heartbeat + debounce + slack
	rd := r.waitFirst(bound+10*time.Second, "c", joinFrom, "240", is(Secondary))
	took := max(rd.At.Sub(upAt), 0)
	t.Logf("c Up → c at 240 after %v", took.Round(time.Millisecond))
	if took > bound {
		t.Fatalf("c converged %v after it was Up, want within the heartbeat (%v + %v debounce + %v)", took, heartbeat, debounce, slack)
	}
	want["c"] = Secondary
	r.holdLevels(2*time.Second, want)
	for _, n := range []string{"a", "b"} {
		for _, rd := range r.readingsSince(n, joinFrom) {
			if !rd.Known || rd.Level != want[n] {
				t.Fatalf("%s changed to %v while c joined", n, rd)
			}
		}
	}
	r.assertInvariant()
}

// Drill 7: six nodes in one mesh, three ClusterIds → exactly one 250 per
// ClusterId; killing one Primary changes only its own pair.
func TestDrill07ThreePairsOneMesh(t *testing.T) {
	t.Parallel()
	var specs []spec
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("site%d", i)
		specs = append(specs, pairSpecs(id, id+"a", id+"b")...)
	}
	r := newRig(t, specs...)
	want := healthyRig(t, r)
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("site%d", i)
		pair := map[string]byte{id + "a": want[id+"a"], id + "b": want[id+"b"]}
		if p := primaryOf(pair); len(p) != 1 {
			t.Fatalf("%s: Primaries %v, want exactly one", id, p)
		}
	}
	r.holdLevels(3*time.Second, want)
	victim, survivor := pairRoles(t, map[string]byte{"site2a": want["site2a"], "site2b": want["site2b"]})
	at := time.Now()
	killPrimary(t, r, victim, survivor)
	others := map[string]byte{}
	for n, l := range want {
		if n != victim && n != survivor {
			others[n] = l
		}
	}
	others[survivor] = Primary
	r.holdLevels(5*time.Second, others)
	// Nothing changed in the other pairs, as their clients saw it and as
	// the sampler read it.
	for n := range others {
		if n == survivor {
			continue
		}
		for _, rd := range r.readingsSince(n, at) {
			if !rd.Known || rd.Level != want[n] {
				t.Fatalf("%s (another pair) changed to %v when %s was killed", n, rd, victim)
			}
		}
	}
	rounds, answered := 0, map[string]int{}
	for _, rd := range r.sampler.Rounds() {
		if rd.At.Before(at) {
			continue
		}
		rounds++
		for n := range others {
			if n == survivor {
				continue
			}
			o, ok := rd.Level(n)
			if !ok || !o.OK {
				continue // no answer within the round's timeout on a loaded machine
			}
			answered[n]++
			if o.Level != want[n] {
				t.Fatalf("sampler at %s: %s (another pair) read %d, want %d", rd.At.Format("15:04:05.000"), n, o.Level, want[n])
			}
		}
	}
	if rounds < 20 {
		t.Fatalf("only %d sampler rounds around the kill", rounds)
	}
	for n := range others {
		if n != survivor && answered[n] < rounds*8/10 {
			t.Fatalf("%s answered the sampler in %d of %d rounds around the kill", n, answered[n], rounds)
		}
	}
	r.assertInvariant()
}

// Drill 8: SIGTERM of the Primary (graceful leave) → the survivor
// publishes 250, and no interval where neither node reads ≥ 240 lasts
// longer than the debounce plus one HealthTick.
func TestDrill08GracefulLeave(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	r.holdLevels(2*time.Second, want)
	r.node(p).Signal(syscall.SIGTERM)
	at := time.Now()
	rd := r.waitFirst(30*time.Second, s, at, "250", is(Primary))
	t.Logf("SIGTERM of the Primary %s → %s at 250 after %v", p, s, rd.At.Sub(at).Round(time.Millisecond))
	if code := r.node(p).WaitExit(30 * time.Second); code != 0 {
		t.Fatalf("%s exited with code %d after SIGTERM, want 0", p, code)
	}
	r.holdLevels(time.Second, map[string]byte{s: Primary})
	gap := LongestGap(r.sampler.Rounds(), "site", at, func(l byte) bool { return l >= Secondary })
	t.Logf("longest interval with no node ≥ 240: %v", gap.Round(time.Millisecond))
	if limit := debounce + healthTick; gap > limit {
		t.Fatalf("no node of the pair read ≥ 240 for %v, want at most %v", gap, limit)
	}
	r.assertInvariant()
}

// TestSamplerCatchesTwoPrimaries is the sampler's positive control: two
// nodes with the same ClusterId that never join each other (each its own
// only seed) both run as Primary; the sampler must report it, and
// tolerate it only while allowed.
func TestSamplerCatchesTwoPrimaries(t *testing.T) {
	t.Parallel()
	s := NewSampler(50*time.Millisecond, 300*time.Millisecond)
	dir := t.TempDir()
	var nodes []*procs.Node
	for _, name := range []string{"x1", "x2"} {
		cfg := procs.BaseConfig(name, procs.NewPorts(t))
		cfg["Node"].(map[string]any)["ClusterId"] = "split"
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + dir + "/config.db"}
		n := procs.Start(t, name, cfg)
		w := demo.Watch(context.Background(), n.Endpoint(), demo.WatchOptions{}, nil)
		t.Cleanup(w.Close)
		s.Add(Target{Name: name, ClusterID: "split", Read: w.Read})
		nodes = append(nodes, n)
	}
	s.Allow("split", "positive control: two separate clusters")
	s.Start()
	defer s.Stop()
	procs.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		rs := s.Rounds()
		if len(rs) == 0 {
			return fmt.Errorf("no round yet")
		}
		last := rs[len(rs)-1]
		for _, n := range nodes {
			mustLive(t, n)
			if o, _ := last.Level(n.Name); !o.OK || o.Level != Primary {
				return fmt.Errorf("%s reads %+v", n.Name, o)
			}
		}
		return nil
	})
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations while allowed: %v", v)
	}
	s.Disallow("split")
	procs.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if len(s.Violations()) == 0 {
			return fmt.Errorf("two nodes at 250 in ClusterId split, but no violation reported")
		}
		return nil
	})
	v := s.Violations()[0]
	if v.ClusterID != "split" || !slices.Equal(v.Nodes, []string{"x1", "x2"}) {
		t.Fatalf("violation %v", v)
	}
}
