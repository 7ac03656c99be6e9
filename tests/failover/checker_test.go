package failover

import (
	"testing"
	"time"
)

func obs(node, cluster string, level byte) Observation {
	return Observation{Node: node, ClusterID: cluster, Level: level, OK: true}
}

func TestCheckerFlagsTwoPrimariesInOneClusterId(t *testing.T) {
	var c OnePrimaryChecker
	t0 := time.Unix(1000, 0)
	rounds := []Round{
		{At: t0, Obs: []Observation{obs("a", "x", 250), obs("b", "x", 240), obs("c", "y", 250), obs("d", "y", 240)}},
		// One Primary per ClusterId, two in the mesh: fine.
		{At: t0.Add(50 * time.Millisecond), Obs: []Observation{obs("a", "x", 250), obs("b", "x", 240), obs("c", "y", 250), obs("d", "y", 250)}},
		// A node that gave no value does not count, whatever its last level.
		{At: t0.Add(100 * time.Millisecond), Obs: []Observation{{Node: "a", ClusterID: "x", Level: 250}, obs("b", "x", 250)}},
	}
	if v := c.Observe(rounds[0]); len(v) != 0 {
		t.Fatalf("round 0: %v", v)
	}
	v := c.Observe(rounds[1])
	if len(v) != 1 || v[0].ClusterID != "y" || len(v[0].Nodes) != 2 || v[0].Nodes[0] != "c" || v[0].Nodes[1] != "d" {
		t.Fatalf("round 1: %v, want c and d in y", v)
	}
	if v := c.Observe(rounds[2]); len(v) != 0 {
		t.Fatalf("round 2 (a gave no value): %v", v)
	}
	if got := len(c.Violations()); got != 1 || c.Rounds() != 3 {
		t.Fatalf("violations %d rounds %d", got, c.Rounds())
	}
}

func TestCheckerAllowIsPerClusterIdAndEnds(t *testing.T) {
	var c OnePrimaryChecker
	dual := func(id string) Round {
		return Round{Obs: []Observation{obs("a", id, 250), obs("b", id, 250)}}
	}
	c.Allow("x", "auto-down partition: both sides run alone")
	if v := c.Observe(dual("x")); len(v) != 0 {
		t.Fatalf("allowed ClusterId flagged: %v", v)
	}
	if v := c.Observe(dual("y")); len(v) != 1 {
		t.Fatalf("other ClusterId not flagged: %v", v)
	}
	c.Disallow("x")
	if v := c.Observe(dual("x")); len(v) != 1 {
		t.Fatalf("after Disallow: %v", v)
	}
	if c.Tolerated() != 1 {
		t.Fatalf("tolerated %d, want 1", c.Tolerated())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Allow without a reason did not panic")
		}
	}()
	c.Allow("x", "")
}

func TestLongestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	healthy := func(b byte) bool { return b >= Secondary }
	rounds := []Round{
		{At: at(0), Obs: []Observation{obs("a", "x", 250), obs("b", "x", 240)}},
		{At: at(50), Obs: []Observation{obs("a", "x", 0), obs("b", "x", 200)}},
		{At: at(100), Obs: []Observation{{Node: "a", ClusterID: "x"}, obs("b", "x", 200), obs("c", "y", 250)}},
		{At: at(400), Obs: []Observation{{Node: "a", ClusterID: "x"}, obs("b", "x", 250)}},
		{At: at(450), Obs: []Observation{obs("a", "x", 0), obs("b", "x", 100)}},
		{At: at(500), Obs: []Observation{obs("a", "x", 0), obs("b", "x", 100)}},
	}
	if got := LongestGap(rounds, "x", t0, healthy); got != 350*time.Millisecond {
		t.Fatalf("gap %v, want 350ms (50 → 400; another ClusterId's Primary does not close it)", got)
	}
	if got := LongestGap(rounds[:3], "x", t0, healthy); got != 50*time.Millisecond {
		t.Fatalf("open gap %v, want 50ms (to the last round)", got)
	}
	if got := LongestGap(rounds, "x", at(400), healthy); got != 50*time.Millisecond {
		t.Fatalf("gap from 400 ms: %v, want 50ms (450 → the last round, 500)", got)
	}
}
