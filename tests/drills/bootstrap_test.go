package drills

import (
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// Drill 1: both seeds start together → one cluster, the first seed oldest.
func TestDrill01BothSeedsStartTogether(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b")
	r.sample()
	start := time.Now()
	r.startAll()
	views := r.waitSettled(30*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 1: one cluster of 2 after %v", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "a")
	a, _ := views["a"].Member(r.addr("a"))
	b, _ := views["a"].Member(r.addr("b"))
	if a.UpNumber >= b.UpNumber {
		t.Fatalf("first seed a up-number %d, b %d: want a older", a.UpNumber, b.UpNumber)
	}
}

// assertOldest checks that every view names want as the oldest Up driver,
// by the election rule over its member list and in the endpoint's own
// "oldest" field.
func assertOldest(t *testing.T, r *rig, views map[string]*procs.ClusterView, want string) {
	t.Helper()
	for name, v := range views {
		if got := oldestDriver(v); got != r.addr(want) {
			t.Fatalf("%s: oldest Up driver %s, want %s (%s): %s", name, got, want, r.addr(want), v)
		}
		if got := v.Oldest[DriverRole]; got != r.addr(want) {
			t.Fatalf("%s: \"oldest\".driver is %q, want %s: %s", name, got, r.addr(want), v)
		}
	}
}

// Drill 2: the first seed is absent → the others wait (no cluster), and join
// it when it starts. The fallback window is set far beyond the drill so
// that only the join protocol is exercised (drill 15 covers the fallback).
func TestDrill02FirstSeedAbsent(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b")
	b := r.start("b", selfFormEx("120s"))
	waitNone(t, b, 30*time.Second)
	staysUnjoined(t, b, 4*time.Second)
	r.sample()
	start := time.Now()
	r.start("a", selfFormEx("120s"))
	views := r.waitSettled(40*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 2: b joined the first seed %v after it started", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "a")
}

// Drill 3: the second seed is absent → the first seed forms alone (after
// seed-node-timeout) and the second joins later as the youngest.
func TestDrill03SecondSeedAbsent(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b")
	r.sample()
	start := time.Now()
	r.start("a")
	r.waitSettled(40*time.Second, []string{"a"}, "a")
	t.Logf("drill 3: the first seed formed alone after %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	r.start("b")
	views := r.waitSettled(40*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 3: b joined %v after it started", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "a")
	a, _ := views["b"].Member(r.addr("a"))
	b, _ := views["b"].Member(r.addr("b"))
	if b.UpNumber <= a.UpNumber {
		t.Fatalf("b up-number %d, a %d: want b the youngest", b.UpNumber, a.UpNumber)
	}
}

// Drill 15: cold start of a lone non-first seed → it self-forms once
// SelfFormAfter has passed (the first seed's port refuses connections), not
// before, and within a few seconds after (no second window).
func TestDrill15LoneNonFirstSeedSelfForms(t *testing.T) {
	t.Parallel()
	const window = 3 * time.Second
	r := loopRig(t, "a", "b") // a is never started: its port stays closed
	start := time.Now()
	r.start("b", selfFormEx("3s"))
	views := r.waitSettled(30*time.Second, []string{"b"}, "b")
	took := time.Since(start)
	t.Logf("drill 15: the lone non-first seed self-formed %v after start (SelfFormAfter %v)", took.Round(time.Millisecond), window)
	if took < window {
		t.Fatalf("b was Up %v after start, before SelfFormAfter (%v) expired", took, window)
	}
	if limit := window + 5*time.Second; took > limit {
		t.Fatalf("b self-formed %v after start, more than %v: a window was wasted; b's cluster decisions:\n%s",
			took, limit, grepLog(r.node("b"), "starting", "decision", "self-form", "joined"))
	}
	assertOldest(t, r, views, "b")
}

// Drill 16: SelfFormAfter "0" disables the fallback → the node keeps
// waiting past the default window; positive control: start the first seed
// and the node joins it.
func TestDrill16SelfFormDisabled(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b")
	b := r.start("b", selfFormEx("0"))
	waitNone(t, b, 30*time.Second)
	staysUnjoined(t, b, 13*time.Second) // beyond the default 10 s window
	start := time.Now()
	r.start("a", selfFormEx("0"))
	views := r.waitSettled(40*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 16: positive control: b joined %v after the first seed started", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "a")
}

// Drill 17: a node that is not in its own seed list never self-forms;
// positive control: start its seed and it joins.
func TestDrill17NotInOwnSeedList(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b")
	b := r.start("b", seeds("a"), selfFormEx("2s"))
	waitNone(t, b, 30*time.Second)
	staysUnjoined(t, b, 7*time.Second) // three windows and more
	start := time.Now()
	r.start("a", seeds("a", "b"))
	views := r.waitSettled(40*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 17: positive control: b joined %v after its seed started", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "a")
}

// Drill 18: the other seed's address accepts TCP but never answers a join
// (a bare listener: the proxy in blackhole mode) → no self-form while it
// listens; after it goes, the node self-forms.
func TestDrill18ReachableSilentSeedSuppressesSelfForm(t *testing.T) {
	t.Parallel()
	r := loopRig(t, "a", "b")
	hole := netem.NewProxy(t, r.addr("a"), "127.0.0.1:1")
	if err := hole.SetMode(netem.Blackhole); err != nil {
		t.Fatal(err)
	}
	b := r.start("b", selfFormEx("2s"))
	waitNone(t, b, 30*time.Second)
	staysUnjoined(t, b, 7*time.Second)
	if n := hole.Stats().Accepted; n == 0 {
		t.Fatalf("b never connected to the listener on the other seed's address: the guard was not exercised")
	} else {
		t.Logf("drill 18: the listener on a's address accepted %d connections from b while b waited", n)
	}
	if err := hole.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	views := r.waitSettled(20*time.Second, []string{"b"}, "b")
	t.Logf("drill 18: b self-formed %v after the listener went", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "b")
}

// Drill 20: six processes of three ClusterIds (two each) form one cluster,
// and /api/cluster/members agrees on every node; each ClusterId has one
// oldest driver, the older of its pair.
func TestDrill20SixNodesThreeClusterIds(t *testing.T) {
	t.Parallel()
	names := []string{"a1", "a2", "b1", "b2", "c1", "c2"}
	r := loopRig(t, names...)
	r.sample()
	start := time.Now()
	for _, n := range names {
		r.start(n, seeds("a1", "a2"), clusterID("site-"+n[:1]))
	}
	views := r.waitSettled(120*time.Second, names, names...)
	t.Logf("drill 20: 6 nodes Up and converged, every view equal, after %v", time.Since(start).Round(time.Millisecond))

	var round []Observation
	for _, n := range names {
		round = append(round, Observation{Node: n, View: views[n]})
	}
	byCluster := map[string][]string{}
	for _, c := range Claims(round) {
		byCluster[c.ClusterID] = append(byCluster[c.ClusterID], c.Node)
	}
	for _, site := range []string{"a", "b", "c"} {
		id := "site-" + site
		claim := byCluster[id]
		if len(claim) != 1 {
			t.Fatalf("ClusterId %s: oldest drivers %v, want exactly one", id, claim)
		}
		m1, _ := views["a1"].Member(r.addr(site + "1"))
		m2, _ := views["a1"].Member(r.addr(site + "2"))
		older := site + "1"
		if m2.UpNumber < m1.UpNumber || m2.UpNumber == m1.UpNumber && procs.AddressLess(m2.Address, m1.Address) {
			older = site + "2"
		}
		if claim[0] != older {
			t.Fatalf("ClusterId %s: %s claims oldest, but %s is older (%d vs %d)", id, claim[0], older, m1.UpNumber, m2.UpNumber)
		}
		if m1.ClusterID != id || m2.ClusterID != id {
			t.Fatalf("members of %s carry ClusterIds %q, %q", id, m1.ClusterID, m2.ClusterID)
		}
	}
	if len(byCluster) != 3 {
		t.Fatalf("claims in %d ClusterIds, want 3: %v", len(byCluster), byCluster)
	}
}
