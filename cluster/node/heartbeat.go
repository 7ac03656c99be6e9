package node

import (
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/phi"
)

// hbState is the heartbeat sender side: one phi detector per monitored
// member (keyed by incarnation) and when the first heartbeat went out.
type hbState struct {
	fd        map[m.UniqueAddress]*phi.Detector
	firstSent map[m.UniqueAddress]Instant
	seq       uint64
}

func newHBState() hbState {
	return hbState{
		fd:        map[m.UniqueAddress]*phi.Detector{},
		firstSent: map[m.UniqueAddress]Instant{},
	}
}

// sync forgets the peers that are no longer members.
func (h *hbState) sync(n *Node) {
	for u := range h.fd {
		if !n.state.Gossip.HasMember(u) {
			h.forget(u)
		}
	}
}

func (h *hbState) forget(u m.UniqueAddress) {
	delete(h.fd, u)
	delete(h.firstSent, u)
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
		delete(n.fp.forced, from)
	}
}

func (n *Node) available(u m.UniqueAddress) bool {
	if n.fp.forced[u] {
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
	var suspected []m.UniqueAddress
	for _, mb := range g.Members {
		if mb.Address == self || r.StatusFrom(self, mb.Address) != m.Reachable || n.available(mb.Address) {
			continue
		}
		r, changed = r.Unreachable(self, mb.Address), true
		suspected = append(suspected, mb.Address)
	}
	for _, u := range g.Reachability.AllUnreachableFrom(self) {
		if n.available(u) {
			r, changed = r.Reachable(self, u), true
		}
	}
	if changed {
		n.updateLatestGossip(g.WithReachability(r))
	}
	for _, u := range suspected {
		n.onDetectorSuspects(u)
	}
}
