package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
)

func withProtocol(g wire.Generations) func(*Options) { return func(o *Options) { o.Protocol = g } }

// TestIncompatibleProtocolIsRefused: a pair of this release forms; a node
// announcing generation 2 that no longer works with generation 1 never
// becomes a member, the pair logs one line naming both generations and
// the release notes, and the joiner logs why it was refused. A node of
// generation 2 that still works with 1 then joins (positive control).
func TestIncompatibleProtocolIsRefused(t *testing.T) {
	c := newMemCluster(t)
	a := c.start("a", []string{"a", "b"}, nil)
	b := c.start("b", []string{"a", "b"}, nil)
	c.until(10*time.Second, "a and b Up on both", func() bool { return allUp(a, "a", "b")() && allUp(b, "a", "b")() })

	x := c.startWith("x", []string{"a", "b", "x"}, nil, withProtocol(wire.Generations{Speaks: 2, Oldest: 2}))
	defer func() {
		if t.Failed() {
			t.Logf("a:\n%s\nx:\n%s", a.log.String(), x.log.String())
		}
	}()
	receiverSays := LogRefusedJoin + " x:2552: it speaks cluster protocol generation 2 (works with 2 and newer) and this node generation 1 (works with 1 and newer); the two releases cannot run side by side in one cluster, see docs/releases.md (Compatibility)"
	joinerSays := LogJoinRefusedBy + " a:2552: it speaks cluster protocol generation 1 (works with 1 and newer) and this node generation 2 (works with 2 and newer)"
	c.until(5*time.Second, "the refusal logged on both sides", func() bool {
		return strings.Contains(a.log.String(), receiverSays) && strings.Contains(x.log.String(), joinerSays)
	})
	c.advance(15 * time.Second)
	for _, n := range []*memNode{a, b, x} {
		if n.d.Snapshot().Gossip.HasMember(x.d.self) {
			t.Fatalf("x is a member in %s's view:\n%s", n.name, c.views())
		}
	}
	if !allUp(a, "a", "b")() || !allUp(b, "a", "b")() {
		t.Fatalf("the pair changed:\n%s", c.views())
	}
	if a.d.Stats().RefusedProtocol == 0 {
		t.Fatal("RefusedProtocol not counted")
	}
	if n := strings.Count(a.log.String(), receiverSays); n != 1 {
		t.Fatalf("the refusal logged %d times in 15 s, want once (once a minute per address)", n)
	}
	if !strings.Contains(x.log.String(), `"hint":"the two releases cannot run side by side in one cluster; see docs/releases.md (Compatibility)"`) {
		t.Fatalf("x's line does not point to the release notes:\n%s", x.log.String())
	}

	x = c.startWith("x", []string{"a", "b", "x"}, nil, withProtocol(wire.Generations{Speaks: 2, Oldest: 1}))
	c.until(10*time.Second, "x, a later generation that works with 1, joins", func() bool {
		return allUp(a, "a", "b", "x")() && allUp(x, "a", "b", "x")()
	})
}

// TestJoinerRefusesAnOlderSeedItCannotWorkWith: a node of generation 2
// that no longer works with generation 1 gets the answers of a v0.1.0
// seed, which sends no Protocol and checks none: it refuses them, logs
// both generations, and never forms a cluster of its own beside the one it
// cannot join.
func TestJoinerRefusesAnOlderSeedItCannotWorkWith(t *testing.T) {
	c := newMemCluster(t)
	x := c.startWith("x", []string{"x", "old"}, func(cfg *node.Config) { cfg.SelfFormAfter = 3000 },
		withProtocol(wire.Generations{Speaks: 2, Oldest: 2}))
	self := x.d.self
	to := &wire.UniqueAddress{Host: self.Host, Port: uint32(self.Port), Uid: self.UID}
	old := &wire.UniqueAddress{Host: "old", Port: 2552, Uid: 7}
	// What a v0.1.0 seed that is a member answers x's InitJoin with.
	x.d.root.Send(x.d.pid, &wire.InitJoinAck{From: old, To: to})
	want := LogRefusedJoin + " old:2552: it speaks cluster protocol generation 1 (works with 1 and newer) and this node generation 2 (works with 2 and newer)"
	c.until(5*time.Second, "x refuses the old seed's answer", func() bool { return strings.Contains(x.log.String(), want) })
	c.advance(time.Duration(x.d.opts.Node.SeedNodeTimeout)*time.Millisecond + 5*time.Second)
	if x.d.Snapshot().Gossip.HasMember(self) || strings.Contains(x.log.String(), LogJoined) {
		t.Fatalf("x formed a cluster of its own:\n%s", x.log.String())
	}
	if !strings.Contains(x.log.String(), LogNotFormingAlone+": old:2552 refused this node (incompatible cluster protocol generation: see docs/releases.md)") {
		t.Fatalf("x does not say why it does not form a cluster:\n%s", x.log.String())
	}
	if x.d.Stats().RefusedProtocol == 0 {
		t.Fatal("RefusedProtocol not counted")
	}
}
