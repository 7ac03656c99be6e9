package node

import (
	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/phi"
	"slices"
)

// hbState is the heartbeat sender side: one phi detector per monitored
// member (keyed by incarnation), when the first heartbeat went out, and the
// peers the crash fast path marked unreachable (until they answer again).
type hbState struct {
	fd        map[m.UniqueAddress]*phi.Detector
	firstSent map[m.UniqueAddress]Instant
	forced    map[m.UniqueAddress]bool
	probing   map[m.UniqueAddress]bool
	refused   map[m.UniqueAddress]bool // the fast path found no process at its port
	leasing   map[m.UniqueAddress]bool // an AcquireFastPathLease for it is out
	seq       uint64
}

func newHBState() hbState {
	return hbState{
		fd:        map[m.UniqueAddress]*phi.Detector{},
		firstSent: map[m.UniqueAddress]Instant{},
		forced:    map[m.UniqueAddress]bool{},
		probing:   map[m.UniqueAddress]bool{},
		refused:   map[m.UniqueAddress]bool{},
		leasing:   map[m.UniqueAddress]bool{},
	}
}

// sync forgets the peers that are no longer members.
func (h *hbState) sync(n *Node) {
	for u := range h.fd {
		if !n.state.Gossip.HasMember(u) {
			h.forget(u)
		}
	}
	for u := range h.forced {
		if !n.state.Gossip.HasMember(u) {
			h.forget(u)
		}
	}
}

func (h *hbState) forget(u m.UniqueAddress) {
	delete(h.fd, u)
	delete(h.firstSent, u)
	delete(h.forced, u)
	delete(h.probing, u)
}

// targets are the members heartbeated: everyone but self and Joining
// members (Akka starts heartbeating a member when it is Up or WeaklyUp).
func (n *Node) heartbeatTargets() []m.UniqueAddress {
	var out []m.UniqueAddress
	for _, mb := range n.state.Gossip.Members {
		if mb.Address != n.cfg.Self && mb.Status != m.Joining {
			out = append(out, mb.Address)
		}
	}
	return out
}

func (n *Node) tickHeartbeat() {
	h := &n.hb
	// a peer that never answered starts being monitored after
	// expected-response-after, so that its silence is detected
	for u, sent := range h.firstSent {
		if fd := h.fd[u]; fd != nil && !fd.IsMonitoring() && n.now >= sent+Instant(n.cfg.ExpectedResponseAfter) {
			fd.Heartbeat(int64(sent) + n.cfg.ExpectedResponseAfter)
		}
	}
	if n.now < n.nextHeartbeat {
		return
	}
	n.nextHeartbeat = n.now + Instant(n.cfg.HeartbeatInterval)
	h.seq++
	for _, u := range n.heartbeatTargets() {
		if h.fd[u] == nil {
			h.fd[u] = phi.New(n.cfg.FailureDetector)
			h.firstSent[u] = n.now
		}
		n.send(Heartbeat{Header: n.hdr(u), Seq: h.seq})
	}
}

func (n *Node) onHeartbeatRsp(from m.UniqueAddress) {
	if fd := n.hb.fd[from]; fd != nil {
		fd.Heartbeat(int64(n.now))
		delete(n.hb.forced, from)
	}
}

func (n *Node) available(u m.UniqueAddress) bool {
	if n.hb.forced[u] {
		return false
	}
	fd := n.hb.fd[u]
	return fd == nil || fd.IsAvailable(int64(n.now))
}

// reapUnreachable is Akka's ReapUnreachableMembers: record this node's
// failure detector verdicts in the reachability table.
func (n *Node) reapUnreachable() {
	g := n.state.Gossip
	if g.IsSingleton() {
		return
	}
	r := g.Reachability
	self := n.cfg.Self
	changed := false
	for _, mb := range g.Members {
		if mb.Address == self || r.StatusFrom(self, mb.Address) != m.Reachable || n.available(mb.Address) {
			continue
		}
		r, changed = r.Unreachable(self, mb.Address), true
	}
	for _, u := range g.Reachability.AllUnreachableFrom(self) {
		if n.available(u) {
			r, changed = r.Reachable(self, u), true
		}
	}
	if changed {
		n.updateLatestGossip(g.WithReachability(r))
	}
}

// onConnectionLost starts the crash fast path for a reachable member.
func (n *Node) onConnectionLost(peer m.UniqueAddress) {
	if !n.cfg.CrashFastPath || n.phase != Initialized || n.hb.probing[peer] {
		return
	}
	if !n.state.Gossip.HasMember(peer) || !n.state.Gossip.Reachability.IsReachableFrom(n.cfg.Self, peer) {
		return
	}
	n.hb.probing[peer] = true
	n.out = append(n.out, ProbePeer{Peer: peer})
}

func (n *Node) onPeerProbeResult(peer m.UniqueAddress, results []fastpath.ProbeResult) {
	delete(n.hb.probing, peer)
	if n.phase != Initialized || !n.state.Gossip.HasMember(peer) {
		return
	}
	v := fastpath.Decide(fastpath.Input{ConnectionBroken: true, Probes: results})
	n.note("crash fast path for %v: probes %v: %v", peer, results, v)
	if v != fastpath.MarkUnreachableNow {
		delete(n.hb.refused, peer)
		return
	}
	n.hb.refused[peer] = true
	if n.state.Gossip.Reachability.IsReachableFrom(n.cfg.Self, peer) {
		n.hb.forced[peer] = true
		g := n.state.Gossip
		n.updateLatestGossip(g.WithReachability(g.Reachability.Unreachable(n.cfg.Self, peer)))
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
	if !n.cfg.CrashFastPath || n.phase != Initialized {
		return
	}
	for _, u := range sortedKeys(n.hb.refused) {
		down, keep := DownNow(n.state, u)
		if !keep {
			delete(n.hb.refused, u)
		}
		if !down {
			continue
		}
		if n.cfg.Downing.Strategy == LeaseMajority {
			if !n.hb.leasing[u] {
				n.hb.leasing[u] = true
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
	delete(n.hb.leasing, dead)
	if n.phase != Initialized {
		return
	}
	if !acquired {
		delete(n.hb.refused, dead)
		n.noteKind(NoteFastPathNoLease, "crash fast path: the lease was not acquired; the split-brain strategy decides about %v", dead)
		return
	}
	if down, _ := DownNow(n.state, dead); down {
		n.noteKind(NoteFastPathDown, "crash fast path: downing %v, whose port refuses connections (lease acquired)", dead)
		n.downing(dead.Address())
	}
}

// sortedKeys returns the members of set in address order (a deterministic
// order for effects and notes).
func sortedKeys(set map[m.UniqueAddress]bool) []m.UniqueAddress {
	out := make([]m.UniqueAddress, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.SortFunc(out, m.UniqueAddress.Compare)
	return out
}
