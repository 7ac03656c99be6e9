package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
)

func TestLookAgain(t *testing.T) {
	R, T, A := fastpath.Refused, fastpath.Timeout, fastpath.Accepted
	cases := []struct {
		trigger Trigger
		probes  []fastpath.ProbeResult
		want    bool
	}{
		{ByConnection, []fastpath.ProbeResult{A}, true},        // a dying listener, or a live peer
		{ByConnection, []fastpath.ProbeResult{R, A}, true},     // a listener came up between connects
		{ByConnection, []fastpath.ProbeResult{T}, false},       // silence is the detector's
		{ByConnection, []fastpath.ProbeResult{R, R, R}, false}, // conclusive
		{ByDetector, []fastpath.ProbeResult{A}, false},         // only a broken connection is looked at twice
		{BySecondLook, []fastpath.ProbeResult{A}, false},       // no third look
	}
	for _, c := range cases {
		if got := lookAgain(c.trigger, c.probes); got != c.want {
			t.Errorf("lookAgain(%v, %v) = %v, want %v", c.trigger, c.probes, got, c.want)
		}
	}
}

// fastPathPair returns a network where a (leader) and b are Up, and a's
// node, driven directly from then on.
func fastPathPair(t *testing.T) (*Network, *Node, m.UniqueAddress) {
	t.Helper()
	nw := NewNetwork()
	for _, name := range []string{"a", "b"} {
		nw.AddNode(name, func(c *Config) { c.Seeds = []m.Address{Address("a"), Address("b")} })
		nw.Start(name)
	}
	nw.Advance(20_000)
	a, b := nw.Host("a").Node, nw.Host("b").Node.Self()
	if st := a.State(); st.Gossip.StatusOf(b) != m.Up || !st.IsLeader(a.Self()) {
		t.Fatalf("a must lead with b Up: %v", st.Gossip.Members)
	}
	return nw, a, b
}

func effectsOf[E Effect](effects []Effect) []E {
	var out []E
	for _, e := range effects {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestFastPathDecidesOnlyOnItsOwnProbes: the node probes a member once at
// a time, and only the answer to a probe it asked for moves it — a driver
// cannot make it decide on probes of its own.
func TestFastPathDecidesOnlyOnItsOwnProbes(t *testing.T) {
	nw, a, b := fastPathPair(t)
	now := nw.Now()
	refused := []fastpath.ProbeResult{fastpath.Refused, fastpath.Refused, fastpath.Refused}
	result := PeerProbeResult{Header: Local(a.Self()), Peer: b, Results: refused}

	if effs := a.Step(now, result); len(effectsOf[FastPathVerdict](effs)) != 0 || a.State().Gossip.StatusOf(b) != m.Up {
		t.Fatalf("an unasked probe result moved the node: %v", effs)
	}
	lost := ConnectionLost{Header: Local(a.Self()), Peer: b}
	if probes := effectsOf[ProbePeer](a.Step(now, lost)); len(probes) != 1 || probes[0].Peer != b {
		t.Fatalf("a broken connection must ask for one probe of b: %v", probes)
	}
	if probes := effectsOf[ProbePeer](a.Step(now, lost)); len(probes) != 0 {
		t.Fatalf("a second break while the probe is out asked again: %v", probes)
	}
	effs := a.Step(now+50, result)
	v := effectsOf[FastPathVerdict](effs)
	if len(v) != 1 || v[0].Trigger != ByConnection || v[0].Verdict != fastpath.MarkUnreachableNow {
		t.Fatalf("verdict = %v, want one MarkUnreachableNow on the connection trigger", v)
	}
	if st := a.State().Gossip.StatusOf(b); st != m.Down {
		t.Fatalf("the leader must down a refusing peer at once; b is %v", st)
	}
	if !slices.Contains(a.ProvenDead(), b) {
		t.Fatalf("ProvenDead = %v, want b", a.ProvenDead())
	}
	if effs := a.Step(now+60, result); len(effectsOf[FastPathVerdict](effs)) != 0 {
		t.Fatalf("a repeated answer was decided again: %v", effs)
	}
}

// TestSecondLookIsTakenOnceOnTime: a broken connection whose port accepts
// is probed again FastPathRecheckAfter later, on the node's tick, and
// never a third time.
func TestSecondLookIsTakenOnceOnTime(t *testing.T) {
	nw, a, b := fastPathPair(t)
	now := nw.Now()
	accepted := PeerProbeResult{Header: Local(a.Self()), Peer: b, Results: []fastpath.ProbeResult{fastpath.Accepted}}
	a.Step(now, ConnectionLost{Header: Local(a.Self()), Peer: b})
	v := effectsOf[FastPathVerdict](a.Step(now+100, accepted))
	if len(v) != 1 || v[0].Verdict != fastpath.DeferToDetector {
		t.Fatalf("verdict = %v, want DeferToDetector", v)
	}
	if probes := effectsOf[ProbePeer](a.Tick(now + 100 + FastPathRecheckAfter - 1)); len(probes) != 0 {
		t.Fatalf("second look taken early: %v", probes)
	}
	if probes := effectsOf[ProbePeer](a.Tick(now + 100 + FastPathRecheckAfter)); len(probes) != 1 || probes[0].Peer != b {
		t.Fatalf("second look not taken when due: %v", probes)
	}
	v = effectsOf[FastPathVerdict](a.Step(now+500, accepted))
	if len(v) != 1 || v[0].Trigger != BySecondLook || v[0].Verdict != fastpath.DeferToDetector {
		t.Fatalf("verdict = %v, want DeferToDetector on the second look", v)
	}
	for at := now + 500; at <= now+2_000; at += 100 {
		if probes := effectsOf[ProbePeer](a.Tick(at)); len(probes) != 0 {
			t.Fatalf("a third look at %d: %v", at, probes)
		}
	}
	if st := a.State().Gossip.StatusOf(b); st != m.Up || len(a.ProvenDead()) != 0 {
		t.Fatalf("a live peer must stay Up and unproven: %v %v", st, a.ProvenDead())
	}
}

// TestProvenDeadRecord: bounded, without repeats, and never written in
// place (the daemon hands the slice to other goroutines).
func TestProvenDeadRecord(t *testing.T) {
	f := newFPState()
	u := func(i int) m.UniqueAddress {
		return m.UniqueAddress{Host: fmt.Sprint("h", i), Port: 1, UID: uint64(i + 1)}
	}
	f.prove(u(0))
	f.prove(u(0))
	first := f.proven
	if len(first) != 1 {
		t.Fatalf("a repeat was recorded: %v", first)
	}
	for i := 1; i <= ProvenDeadSize; i++ {
		f.prove(u(i))
	}
	if len(first) != 1 || first[0] != u(0) {
		t.Fatalf("a slice handed out changed: %v", first)
	}
	if len(f.proven) != ProvenDeadSize || f.proven[0] != u(1) || f.proven[ProvenDeadSize-1] != u(ProvenDeadSize) {
		t.Fatalf("the record must keep the newest %d: len %d, first %v", ProvenDeadSize, len(f.proven), f.proven[0])
	}
}
