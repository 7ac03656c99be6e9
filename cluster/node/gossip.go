package node

import (
	m "github.com/otopcua/otopcua/cluster/membership"
)

// receiveGossip is Akka's ReceiveGossip.
func (n *Node) receiveGossip(from m.UniqueAddress, remote m.Gossip) {
	local := n.state.Gossip
	switch {
	case remote.IsEmpty():
		return
	case !local.HasMember(from):
		return // from unknown
	case !local.IsReachable(n.cfg.Self, from):
		return // from unreachable
	case !remote.HasMember(n.cfg.Self):
		return // does not contain me
	}
	var winning m.Gossip
	talkback := false
	cmp := remote.Version.Compare(local.Version)
	switch cmp {
	case m.Same:
		talkback = !n.exitingTasksInProgress && !remote.SeenBy(n.cfg.Self)
		winning = remote.MergeSeen(local)
	case m.Before:
		winning = local
		talkback = true
	case m.After:
		winning = remote
		talkback = !n.exitingTasksInProgress && !remote.SeenBy(n.cfg.Self)
	default:
		winning = prunedForRemovals(remote, local).Merge(prunedForRemovals(local, remote))
		talkback = true
	}
	if !n.exitingTasksInProgress {
		winning = winning.WithSeen(n.cfg.Self)
	}
	wasDown := local.StatusOf(n.cfg.Self) == m.Down
	n.install(winning)

	switch st := n.selfStatus(); {
	case st == m.Exiting:
		n.startExiting()
	case st == m.Down && !wasDown:
		n.shutdownSelfWhenDown()
	case !n.state.Gossip.HasMember(n.cfg.Self):
		n.shutdown(ReasonRemoved)
		return
	}
	n.upJoinersOnConvergence()
	if talkback && n.phase == Initialized {
		n.gossipTo(from)
	}
	news := cmp == m.After || cmp == m.Concurrent || (cmp == m.Same && len(n.state.Gossip.Seen) > len(local.Seen))
	if news && n.phase == Initialized {
		n.passOn(from)
	}
}

// passOn sends a view that just changed here — a newer version, or the same
// one seen by more members — to one more member that has not seen it, at
// once rather than at the next gossip tick: news travels at the network's
// speed (a millisecond on a LAN) instead of one hop per
// SpreadGossipInterval. It adds one message per received gossip that
// taught this node something, none once every member has seen the view.
func (n *Node) passOn(from m.UniqueAddress) {
	g := n.state.Gossip
	var unseen []m.UniqueAddress
	for _, mb := range g.Members {
		if mb.Address != from && !g.SeenBy(mb.Address) && n.state.ValidNodeForGossip(mb.Address) {
			unseen = append(unseen, mb.Address)
		}
	}
	if len(unseen) > 0 {
		n.gossipTo(unseen[n.rng.IntN(len(unseen))])
	}
}

// prunedForRemovals drops the clock entries of g's Down/Exiting members that
// the other gossip no longer has: the leader removed them there and pruned
// their entries.
func prunedForRemovals(g, other m.Gossip) m.Gossip {
	for _, mb := range g.Members {
		if (mb.Status == m.Down || mb.Status == m.Exiting) && !other.HasMember(mb.Address) {
			g = g.Prune(m.VClockNode(mb.Address))
		}
	}
	return g
}

func (n *Node) receiveGossipStatus(from m.UniqueAddress, version m.VectorClock) {
	g := n.state.Gossip
	if !g.HasMember(from) || !g.IsReachable(n.cfg.Self, from) {
		return
	}
	switch version.Compare(g.Version) {
	case m.Same:
	case m.After:
		n.gossipStatusTo(from) // remote is newer: it will send its gossip
	default:
		n.gossipTo(from)
	}
}

// SpreadFor bounds the fast gossip rounds: a view that changed longer ago
// than this is gossiped every GossipInterval again even if a member has
// not acknowledged it — a Joining member that died is never monitored, and
// would otherwise be sent a gossip every SpreadGossipInterval for ever.
// 30 rounds of the default 100 ms: a change reaches 200 members in fewer
// (see FormationRounds).
const SpreadFor Instant = 3000

// spreading reports whether a member this node may gossip to has not seen
// its view, changed less than SpreadFor ago: a change is still spreading,
// so gossip runs every SpreadGossipInterval instead of every
// GossipInterval.
func (n *Node) spreading() bool {
	g := n.state.Gossip
	if g.IsSingleton() || g.IsEmpty() || n.now-n.viewChanged >= SpreadFor {
		return false
	}
	for _, mb := range g.Members {
		if !g.SeenBy(mb.Address) && n.state.ValidNodeForGossip(mb.Address) {
			return true
		}
	}
	return false
}

// tickGossip sends one gossip round when it is due: every
// SpreadGossipInterval while spreading, else every GossipInterval.
func (n *Node) tickGossip() {
	every := n.cfg.GossipInterval
	if n.spreading() {
		every = n.cfg.SpreadGossipInterval
	}
	if n.now < n.lastGossip+Instant(every) {
		return
	}
	n.lastGossip = n.now
	n.sendGossip()
}

// sendGossip sends one gossip round: to a member that has not seen this
// version if there is one, else a status to a member that has. The target
// is drawn by the node's own generator (seeded with its uid, so a scenario
// replays exactly): nodes that spread the same news pick different
// members, and a change reaches all N members in O(log N) rounds, as in
// Akka's random choice.
func (n *Node) sendGossip() {
	g := n.state.Gossip
	if g.IsSingleton() || g.IsEmpty() {
		return
	}
	var unseen, valid []m.UniqueAddress
	for _, mb := range g.Members {
		if !n.state.ValidNodeForGossip(mb.Address) {
			continue
		}
		valid = append(valid, mb.Address)
		if !g.SeenBy(mb.Address) {
			unseen = append(unseen, mb.Address)
		}
	}
	if len(unseen) > 0 {
		n.gossipTo(unseen[n.rng.IntN(len(unseen))])
		return
	}
	if len(valid) == 0 {
		return
	}
	peer := valid[n.rng.IntN(len(valid))]
	if g.SeenBy(peer) {
		n.gossipStatusTo(peer)
	} else {
		n.gossipTo(peer)
	}
}

// sendGossipRandom gossips to up to k valid members.
func (n *Node) sendGossipRandom(k int) {
	g := n.state.Gossip
	if g.IsSingleton() {
		return
	}
	for _, mb := range g.Members {
		if k == 0 {
			return
		}
		if n.state.ValidNodeForGossip(mb.Address) {
			n.gossipTo(mb.Address)
			k--
		}
	}
}

func (n *Node) gossipTo(to m.UniqueAddress) {
	if n.state.ValidNodeForGossip(to) {
		n.send(GossipEnvelope{Header: n.hdr(to), Gossip: n.state.Gossip})
	}
}

func (n *Node) gossipStatusTo(to m.UniqueAddress) {
	if n.state.ValidNodeForGossip(to) {
		n.send(GossipStatus{Header: n.hdr(to), Version: n.state.Gossip.Version})
	}
}
