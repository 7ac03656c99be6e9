package node

import (
	"fmt"
	"slices"

	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// FastPathRecheckAfter is when, in ms, the crash fast path looks a second
// time at a peer whose connection broke while its port still accepted: a
// process killed by SIGKILL drops its connections a moment before its
// listening socket, whose backlog accepts meanwhile. A live peer whose
// stream broke accepts again and keeps answering heartbeats.
const FastPathRecheckAfter = 300

// ProvenDeadSize bounds the incarnations ProvenDead remembers.
const ProvenDeadSize = 256

// Trigger is what started a crash fast-path probe.
type Trigger uint8

// Triggers.
const (
	// ByConnection: the transport reported the peer's connection broken
	// (ConnectionLost).
	ByConnection Trigger = iota + 1
	// ByDetector: this node's failure detector marked the peer unreachable
	// (the connection may never have reported a break).
	ByDetector
	// BySecondLook: FastPathRecheckAfter after a connection loss whose
	// probe found the port accepting. There is no third look.
	BySecondLook
)

func (t Trigger) String() string {
	switch t {
	case ByConnection:
		return "connection lost"
	case ByDetector:
		return "detector"
	case BySecondLook:
		return "second look"
	}
	return fmt.Sprintf("Trigger(%d)", t)
}

// fpState is the crash fast path: the probes out, the peers it marked
// unreachable (until they answer a heartbeat), those whose port refused
// every probe (DownNow applies, now or once this node leads), the second
// looks due, the fast-path leases asked for, and the record ProvenDead
// reads.
type fpState struct {
	probing map[m.UniqueAddress]Trigger // a ProbePeer is out, started by
	forced  map[m.UniqueAddress]bool
	refused map[m.UniqueAddress]bool
	recheck map[m.UniqueAddress]Instant // a second look is due then
	leasing map[m.UniqueAddress]bool    // an AcquireFastPathLease is out
	// proven lists the incarnations whose port refused every probe, oldest
	// first, at most ProvenDeadSize. It is copied on every change, never
	// written in place: ProvenDead hands it out.
	proven []m.UniqueAddress
}

func newFPState() fpState {
	return fpState{
		probing: map[m.UniqueAddress]Trigger{},
		forced:  map[m.UniqueAddress]bool{},
		refused: map[m.UniqueAddress]bool{},
		recheck: map[m.UniqueAddress]Instant{},
		leasing: map[m.UniqueAddress]bool{},
	}
}

// sync forgets the probes, marks and second looks of peers that are no
// longer members (a late probe result for one is ignored).
func (f *fpState) sync(g m.Gossip) {
	for u := range f.forced {
		if !g.HasMember(u) {
			delete(f.forced, u)
		}
	}
	for u := range f.probing {
		if !g.HasMember(u) {
			delete(f.probing, u)
		}
	}
	for u := range f.recheck {
		if !g.HasMember(u) {
			delete(f.recheck, u)
		}
	}
}

func (f *fpState) prove(u m.UniqueAddress) {
	if slices.Contains(f.proven, u) {
		return
	}
	p := f.proven
	if len(p) >= ProvenDeadSize {
		p = p[len(p)-ProvenDeadSize+1:]
	}
	f.proven = append(slices.Clip(p), u)
}

// ProvenDead lists the incarnations whose cluster port the crash fast path
// found refusing every probe (the process is gone, not silent), oldest
// first, at most ProvenDeadSize. The slice is never modified afterwards:
// the driver may hand it to other goroutines.
func (n *Node) ProvenDead() []m.UniqueAddress { return n.fp.proven }

// onConnectionLost starts the crash fast path for a reachable member.
func (n *Node) onConnectionLost(peer m.UniqueAddress) {
	if !n.fastPathOn() || !n.state.Gossip.Reachability.IsReachableFrom(n.cfg.Self, peer) {
		return
	}
	n.probe(peer, ByConnection)
}

// onDetectorSuspects starts the crash fast path for a member this node's
// own failure detector just marked unreachable, unless its port was
// already found refusing.
func (n *Node) onDetectorSuspects(peer m.UniqueAddress) {
	if !n.fastPathOn() || n.fp.refused[peer] {
		return
	}
	n.probe(peer, ByDetector)
}

func (n *Node) fastPathOn() bool { return n.cfg.CrashFastPath && n.phase == Initialized }

// probe asks the driver to probe a member's port, unless a probe of it is
// out (its result answers this trigger too).
func (n *Node) probe(peer m.UniqueAddress, t Trigger) {
	if _, out := n.fp.probing[peer]; out || peer == n.cfg.Self || !n.state.Gossip.HasMember(peer) {
		return
	}
	delete(n.fp.recheck, peer)
	n.fp.probing[peer] = t
	n.out = append(n.out, ProbePeer{Peer: peer})
}

// onPeerProbeResult decides, once, on the probes of a member's port.
func (n *Node) onPeerProbeResult(peer m.UniqueAddress, results []fastpath.ProbeResult) {
	t, out := n.fp.probing[peer]
	delete(n.fp.probing, peer)
	if !out || n.phase != Initialized || !n.state.Gossip.HasMember(peer) {
		return
	}
	v := fastpath.Decide(fastpath.Input{ConnectionBroken: t != ByDetector, DetectorUnreachable: t == ByDetector, Probes: results})
	n.out = append(n.out, FastPathVerdict{Peer: peer, Trigger: t, Probes: slices.Clone(results), Verdict: v})
	if v != fastpath.MarkUnreachableNow {
		delete(n.fp.refused, peer)
		if lookAgain(t, results) {
			n.fp.recheck[peer] = n.now + FastPathRecheckAfter
		}
		return
	}
	n.fp.refused[peer] = true
	n.fp.prove(peer)
	if n.state.Gossip.Reachability.IsReachableFrom(n.cfg.Self, peer) {
		n.fp.forced[peer] = true
		g := n.state.Gossip
		n.updateLatestGossip(g.WithReachability(g.Reachability.Unreachable(n.cfg.Self, peer)))
	}
	n.downRefused()
}

// lookAgain is the retry rule: a connection that broke while the port
// still accepted gets one second look, FastPathRecheckAfter later.
func lookAgain(t Trigger, results []fastpath.ProbeResult) bool {
	return t == ByConnection && slices.Contains(results, fastpath.Accepted)
}

// tickFastPath takes the second looks that are due, then applies DownNow.
func (n *Node) tickFastPath() {
	for _, u := range sortedKeys(n.fp.recheck) {
		if n.now < n.fp.recheck[u] {
			continue
		}
		delete(n.fp.recheck, u)
		if n.fastPathOn() && n.state.Gossip.Reachability.IsReachableFrom(n.cfg.Self, u) {
			n.probe(u, BySecondLook)
		}
	}
	n.downRefused()
}

// DownNow is the crash fast path's down-at-once rule, decided on the view
// st for a peer u whose cluster port refused every probe: down it now when
// st.Self is the leader, u is still the member at its address, st.Self
// holds it unreachable, and it is neither Down nor Exiting (a graceful
// leaver is removed by its exit, not downed). keep reports whether the
// rule may apply later (this node may become leader).
func DownNow(st m.State, u m.UniqueAddress) (down, keep bool) {
	mb, ok := st.Gossip.Member(u)
	if !ok || mb.Status == m.Down || mb.Status == m.Exiting || st.Gossip.Reachability.StatusFrom(st.Self, u) == m.Reachable {
		return false, false
	}
	if !st.IsLeader(st.Self) {
		return false, true
	}
	return true, false
}

// downRefused applies DownNow to every member the fast path found dead, on
// every probe result and tick: at once, or under lease-majority once this
// side acquired the lease (AcquireFastPathLease).
func (n *Node) downRefused() {
	if !n.fastPathOn() {
		return
	}
	for _, u := range sortedKeys(n.fp.refused) {
		down, keep := DownNow(n.state, u)
		if !keep {
			delete(n.fp.refused, u)
		}
		if !down {
			continue
		}
		if n.cfg.Downing.Strategy == LeaseMajority {
			if !n.fp.leasing[u] {
				n.fp.leasing[u] = true
				n.noteKind(NoteFastPathLease, "crash fast path: acquiring the lease before downing %v, whose port refuses connections", u)
				n.out = append(n.out, AcquireFastPathLease{Owner: n.leaseOwner(), Dead: u})
			}
			continue
		}
		n.noteKind(NoteFastPathDown, "crash fast path: downing %v, whose port refuses connections", u)
		n.downing(u.Address())
	}
}

// onFastPathLease downs dead once the lease was acquired; without it the
// split-brain strategy decides.
func (n *Node) onFastPathLease(dead m.UniqueAddress, acquired bool) {
	delete(n.fp.leasing, dead)
	if n.phase != Initialized {
		return
	}
	if !acquired {
		delete(n.fp.refused, dead)
		n.noteKind(NoteFastPathNoLease, "crash fast path: the lease was not acquired; the split-brain strategy decides about %v", dead)
		return
	}
	if down, _ := DownNow(n.state, dead); down {
		n.noteKind(NoteFastPathDown, "crash fast path: downing %v, whose port refuses connections (lease acquired)", dead)
		n.downing(dead.Address())
	}
}

// sortedKeys returns the keys of set in address order (a deterministic
// order for effects and notes).
func sortedKeys[V any](set map[m.UniqueAddress]V) []m.UniqueAddress {
	out := make([]m.UniqueAddress, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.SortFunc(out, m.UniqueAddress.Compare)
	return out
}
