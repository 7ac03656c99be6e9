package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
	"pgregory.net/rapid"
)

func TestValidateNamesAcceptedStrategies(t *testing.T) {
	cfg := DefaultConfig(m.UniqueAddress{Host: "a", Port: 1, UID: 1}, nil)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults must validate: %v", err)
	}
	cfg.Downing.Strategy = "keep-referee"
	err := cfg.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "keep-referee") || !strings.Contains(err.Error(), "auto-down, keep-oldest") {
		t.Fatalf("error must name the key's value and the accepted values: %v", err)
	}
	cfg.Downing.Strategy = StaticQuorum
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "quorum-size") {
		t.Fatalf("static-quorum without quorum-size must fail: %v", err)
	}
	cfg = DefaultConfig(m.UniqueAddress{Host: "a", Port: 1, UID: 1}, nil)
	cfg.GossipInterval = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "gossip-interval") {
		t.Fatalf("zero interval must fail: %v", err)
	}
}

func newTestNode(t *testing.T, name string, uid uint64, seeds ...string) *Node {
	t.Helper()
	self := m.UniqueAddress{Host: name, Port: MemPort, UID: uid}
	var ss []m.Address
	for _, s := range seeds {
		ss = append(ss, Address(s))
	}
	return New(DefaultConfig(self, ss))
}

func sends(effects []Effect) []string {
	var out []string
	for _, e := range effects {
		if s, ok := e.(Send); ok {
			out = append(out, describe(s.Msg))
		}
	}
	return out
}

func TestWrongIncarnationDropped(t *testing.T) {
	n := newTestNode(t, "b", 7, "a", "b")
	n.Start(0)
	from := m.UniqueAddress{Host: "a", Port: MemPort, UID: 1}
	stale := m.UniqueAddress{Host: "b", Port: MemPort, UID: 6}
	if eff := n.Step(10, Heartbeat{Header: Header{From: from, To: stale}, Seq: 1}); len(eff) != 0 {
		t.Fatalf("a stale heartbeat must produce nothing, got %v", eff)
	}
	if eff := n.Step(10, InitJoinAck{Header: Header{From: from, To: m.UniqueAddress{Host: "b", Port: MemPort}}}); len(eff) != 0 {
		t.Fatalf("uid 0 is only accepted for InitJoin, got %v", eff)
	}
	other := m.UniqueAddress{Host: "c", Port: MemPort, UID: 7}
	n.Step(10, Heartbeat{Header: Header{From: from, To: other}})
	if d := n.Dropped(); d.WrongIncarnation != 2 || d.Misaddressed != 1 {
		t.Fatalf("dropped = %+v", d)
	}
	// the right uid is answered
	got := sends(n.Step(10, Heartbeat{Header: Header{From: from, To: n.Self()}, Seq: 3}))
	if len(got) != 1 || got[0] != "b#7 -> a#1 HeartbeatRsp seq=3" {
		t.Fatalf("sends = %v", got)
	}
}

func TestInitJoinAnswers(t *testing.T) {
	asker := m.UniqueAddress{Host: "z", Port: MemPort, UID: 9}
	ask := InitJoin{Header: Header{From: asker, To: m.UniqueAddress{Host: "a", Port: MemPort}}}
	n := newTestNode(t, "a", 1, "a", "b")
	n.Start(0)
	if got := sends(n.Step(1, ask)); len(got) != 1 || !strings.HasSuffix(got[0], "InitJoinNack") {
		t.Fatalf("not in a cluster: %v", got)
	}
	solo := newTestNode(t, "a", 1, "a") // only seed: forms at once
	solo.Start(0)
	if solo.Phase() != Initialized {
		t.Fatalf("phase %v", solo.Phase())
	}
	if got := sends(solo.Step(1, ask)); len(got) != 1 || !strings.HasSuffix(got[0], "InitJoinAck") {
		t.Fatalf("member: %v", got)
	}
	solo.Step(2, Down{Header: Local(solo.Self()), Node: solo.Self().Address()})
	if got := sends(solo.Step(3, ask)); len(got) != 1 || !strings.HasSuffix(got[0], "InitJoinNack") {
		t.Fatalf("a Down node must not be used for joining: %v", got)
	}
}

func TestStoppedNodeIgnoresEverything(t *testing.T) {
	n := newTestNode(t, "a", 1, "a")
	n.Start(0)
	n.Step(1, Down{Header: Local(n.Self()), Node: n.Self().Address()})
	var shut *Shutdown
	for i := Instant(2); i < 10_000 && shut == nil; i += 100 {
		for _, e := range n.Tick(i) {
			if s, ok := e.(Shutdown); ok {
				shut = &s
			}
		}
	}
	if shut == nil || shut.Reason != ReasonDowned || n.Phase() != Stopped {
		t.Fatalf("downed node must shut down with ReasonDowned, got %v phase %v", shut, n.Phase())
	}
	if len(n.Tick(20_000)) != 0 || len(n.Step(20_000, InitJoin{Header: Header{To: n.Self()}})) != 0 {
		t.Fatal("a stopped node must ignore ticks and messages")
	}
}

// End to end through the nodes: a cluster of 3..5 split cleanly in two; each
// side's nodes detect, wait stable-after and decide on their own view. At
// most one side may still hold running Up members after the dust settles.
func TestPropPartitionLeavesOneSide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(t, "n")
		strategy := rapid.SampledFrom([]string{KeepMajority, KeepOldest, StaticQuorum}).Draw(t, "strategy")
		nw := NewNetwork()
		var all []string
		for i := 0; i < n; i++ {
			all = append(all, fmt.Sprintf("n%d", i))
		}
		quorum := n/2 + 1
		for _, name := range all {
			nw.AddNode(name, func(c *Config) {
				for _, s := range all {
					c.Seeds = append(c.Seeds, Address(s))
				}
				c.Downing.Strategy = strategy
				c.Downing.QuorumSize = quorum
				c.SelfFormAfter = 0
			})
			nw.Start(name)
		}
		nw.Advance(20_000)
		for _, h := range nw.Hosts() {
			if h.Node.Phase() != Initialized || len(h.Node.State().Gossip.Members) != n {
				t.Fatalf("%s did not join: %v %v", h.Name, h.Node.Phase(), h.Node.State().Gossip.Members)
			}
		}
		var side [2][]string
		for _, name := range all {
			i := rapid.IntRange(0, 1).Draw(t, "side-"+name)
			side[i] = append(side[i], name)
		}
		if len(side[0]) == 0 || len(side[1]) == 0 {
			t.Skip("no split")
		}
		nw.Partition(side[0], side[1])
		nw.Advance(40_000)
		alive := [2]int{}
		for i := range side {
			for _, name := range side[i] {
				h := nw.Host(name)
				if h.Alive && h.Node.State().Gossip.StatusOf(h.Node.Self()) == m.Up {
					alive[i]++
				}
			}
		}
		if alive[0] > 0 && alive[1] > 0 {
			t.Fatalf("%s: both sides run: %v (%d up) and %v (%d up)", strategy, side[0], alive[0], side[1], alive[1])
		}
		if strategy != StaticQuorum && alive[0] == 0 && alive[1] == 0 {
			t.Fatalf("%s: a clean split of a stable cluster must keep one side: %v | %v", strategy, side[0], side[1])
		}
	})
}

func TestManualJoinTo(t *testing.T) {
	nw := NewNetwork()
	nw.AddNode("a", func(c *Config) { c.Seeds = []m.Address{Address("a")} })
	nw.AddNode("c", func(c *Config) { c.SelfFormAfter = 0 }) // no seeds: waits
	nw.Start("a")
	nw.Start("c")
	nw.Advance(3000)
	if p := nw.Host("c").Node.Phase(); p != Idle {
		t.Fatalf("c without seeds must wait, phase %v", p)
	}
	c := nw.Host("c")
	for _, e := range c.Node.JoinTo(nw.Now(), Address("a")) {
		if s, ok := e.(Send); ok {
			nw.Send(s.Msg)
		}
	}
	nw.Advance(5000)
	g := c.Node.State().Gossip
	if c.Node.Phase() != Initialized || g.StatusOf(c.Node.Self()) != m.Up || len(g.Members) != 2 {
		t.Fatalf("c must have joined a: %v %v", c.Node.Phase(), g.Members)
	}
}

// TestDownNow: the crash fast path's down-at-once rule.
func TestDownNow(t *testing.T) {
	a := m.UniqueAddress{Host: "a", Port: 1, UID: 1}
	b := m.UniqueAddress{Host: "b", Port: 1, UID: 2}
	view := func(self m.UniqueAddress, bStatus m.Status, unreachable bool) m.State {
		ma := m.NewMember(a, nil, "").WithUp(1)
		mb := m.NewMember(b, nil, "").WithUp(2)
		if bStatus == m.Leaving || bStatus == m.Exiting {
			mb = mb.WithStatus(m.Leaving)
		}
		mb = mb.WithStatus(bStatus)
		g := m.NewGossip(ma, mb)
		if unreachable {
			g = g.WithReachability(g.Reachability.Unreachable(a, b))
		}
		return m.State{Gossip: g, Self: self}
	}
	cases := []struct {
		name       string
		st         m.State
		u          m.UniqueAddress
		down, keep bool
	}{
		{"leader, unreachable Up peer", view(a, m.Up, true), b, true, false},
		{"leader, unreachable Leaving peer", view(a, m.Leaving, true), b, true, false},
		{"peer answers again", view(a, m.Up, false), b, false, false},
		{"exiting peer is not downed", view(a, m.Exiting, true), b, false, false},
		{"already down", view(a, m.Down, true), b, false, false},
		{"another incarnation", view(a, m.Up, true), m.UniqueAddress{Host: "b", Port: 1, UID: 3}, false, false},
	}
	for _, tc := range cases {
		down, keep := DownNow(tc.st, tc.u)
		if down != tc.down || keep != tc.keep {
			t.Errorf("%s: DownNow = %v,%v want %v,%v", tc.name, down, keep, tc.down, tc.keep)
		}
	}
	// b observing a unreachable, with c as leader: wait
	c := m.UniqueAddress{Host: "0", Port: 1, UID: 3}
	g := m.NewGossip(m.NewMember(a, nil, "").WithUp(1), m.NewMember(b, nil, "").WithUp(2), m.NewMember(c, nil, "").WithUp(3))
	g = g.WithReachability(g.Reachability.Unreachable(b, a))
	if down, keep := DownNow(m.State{Gossip: g, Self: b}, a); down || !keep {
		t.Errorf("non-leader: DownNow = %v,%v want false,true", down, keep)
	}
}

// TestTicksWaitingForTheLeaseIgnoreInstability: once the resolver has
// decided and waits for the lease (here the minority delay of the side
// without the oldest), ticks do not re-decide — not even the instability
// rule, however long reachability has been changing (Akka's
// WaitingForLease ignores Tick). The survivor of a frozen Primary takes the
// free lease and stays Up instead of downing everyone mid-wait.
func TestTicksWaitingForTheLeaseIgnoreInstability(t *testing.T) {
	nw := NewNetwork()
	for _, name := range []string{"a", "b"} {
		nw.AddNode(name, func(c *Config) {
			c.Seeds = []m.Address{Address("a"), Address("b")}
			c.Downing.Strategy = LeaseMajority
			c.Downing.StableAfter = 1000
		})
		nw.Start(name)
	}
	nw.Advance(20_000)
	b := nw.Host("b")
	if b.Node.State().Gossip.StatusOf(b.Node.Self()) != m.Up || len(b.Node.State().Gossip.Members) != 2 {
		t.Fatalf("b did not join: %v", b.Node.State().Gossip.Members)
	}
	nw.Freeze("a")
	for start := nw.Now(); !b.Node.dn.leaseWaiting; nw.StepOnce() {
		if nw.Now()-start > 30_000 {
			t.Fatal("b never waited for the lease")
		}
	}
	// Stale statistics: reachability "changing" for a minute.
	b.Node.dn.firstChange, b.Node.dn.latestChange, b.Node.dn.changeCount = nw.Now()-60_000, nw.Now(), 5
	nw.Advance(5_000)
	g := b.Node.State().Gossip
	if st := g.StatusOf(b.Node.Self()); st != m.Up || !b.Alive {
		t.Fatalf("b is %v (alive %v) after its wait for the lease; want Up", st, b.Alive)
	}
	if _, ok := g.MemberAt(Address("a")); ok {
		t.Fatalf("a still a member of b's view: %v", g.Members)
	}
}
