package node

import (
	"slices"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// maxTicksBeforeShuttingDownMyself: a downed node waits at most this many
// leader ticks for the other downed nodes to see the verdict.
const maxTicksBeforeShuttingDownMyself = 4

// leaderActions is Akka's LeaderActions: on the leader, act on convergence
// (or move Joining to WeaklyUp when convergence is stuck); on every node,
// clean up exit confirmations and shut down when downed.
func (n *Node) leaderActions() {
	if n.state.IsLeader(n.cfg.Self) {
		if n.state.Convergence(n.exitingConfirmed) {
			n.leaderActionCounter = 0
			n.leaderActionsOnConvergence()
		} else {
			n.leaderActionCounter++
			if n.cfg.WeaklyUpAfter > 0 && int64(n.leaderActionCounter)*n.cfg.LeaderActionsInterval >= n.cfg.WeaklyUpAfter {
				n.moveJoiningToWeaklyUp()
			}
		}
	}
	n.exitingConfirmed = slices.DeleteFunc(n.exitingConfirmed, func(u m.UniqueAddress) bool { return !n.state.Gossip.HasMember(u) })
	n.shutdownSelfWhenDown()
}

// upJoinersOnConvergence is the leader moving Joining (and WeaklyUp)
// members to Up as soon as its view converges, instead of at its next
// leader-actions tick: called when a gossip or a Join changed the view.
// It is the same step as the tick's (LeaderActionsOnConvergence, so the
// removals and exits that are due go with it), taken sooner; the tick's
// counters (WeaklyUp, shutting down when downed) do not move.
func (n *Node) upJoinersOnConvergence() {
	if n.phase != Initialized || !n.hasJoiners() || !n.state.IsLeader(n.cfg.Self) {
		return
	}
	if n.state.Convergence(n.exitingConfirmed) {
		n.leaderActionsOnConvergence()
	}
}

func (n *Node) hasJoiners() bool {
	for _, mb := range n.state.Gossip.Members {
		if mb.Status == m.Joining || mb.Status == m.WeaklyUp {
			return true
		}
	}
	return false
}

func (n *Node) leaderActionsOnConvergence() {
	g, changed := m.LeaderActionsOnConvergence(n.state.Gossip, n.exitingConfirmed)
	if !changed {
		return
	}
	if !n.exitingTasksInProgress && g.StatusOf(n.cfg.Self) == m.Exiting {
		// the leader moves itself to Exiting: run the leaving tasks first
		n.startExiting()
	}
	n.updateLatestGossip(g)
	n.exitingConfirmed = slices.DeleteFunc(n.exitingConfirmed, func(u m.UniqueAddress) bool { return !g.HasMember(u) })
}

func (n *Node) moveJoiningToWeaklyUp() {
	g := n.state.Gossip
	r := g.ReachabilityExcludingDownedObservers()
	changed := false
	for _, mb := range g.Members {
		if mb.Status == m.Joining && r.IsReachable(mb.Address) {
			g = g.UpdateMember(mb.WithStatus(m.WeaklyUp))
			changed = true
		}
	}
	if changed {
		n.updateLatestGossip(g)
	}
}

// shutdownSelfWhenDown stops a downed node once every downed member has seen
// the verdict or is unreachable, or after a few ticks.
func (n *Node) shutdownSelfWhenDown() {
	if n.phase != Initialized || n.selfStatus() != m.Down {
		return
	}
	g := n.state.Gossip
	unreachable := g.Reachability.AllUnreachableOrTerminated()
	spread := true
	for _, mb := range g.Members {
		if mb.Status == m.Down && !slices.Contains(unreachable, mb.Address) && !g.SeenBy(mb.Address) {
			spread = false
		}
	}
	if n.selfDownCounter >= maxTicksBeforeShuttingDownMyself || spread {
		n.note("this node has been marked Down; shutting down")
		n.sendGossipRandom(5)
		n.shutdown(ReasonDowned)
		return
	}
	n.selfDownCounter++
}

// startExiting begins the leaving tasks once this node is Exiting.
func (n *Node) startExiting() {
	if n.exitingTasksInProgress {
		return
	}
	n.exitingTasksInProgress = true
	n.out = append(n.out, StartExiting{})
}

// exitingCompleted: the leaving tasks are done. Tell the others (best
// effort), confirm the exit to the two likely leaders, and stop.
func (n *Node) exitingCompleted() {
	if n.phase != Initialized {
		return
	}
	n.exitingTasksInProgress = false
	if n.state.Gossip.HasMember(n.cfg.Self) {
		n.state.Gossip = n.state.Gossip.WithSeen(n.cfg.Self)
		n.sendGossipRandom(5)
		var others []m.Member
		for _, mb := range n.state.Gossip.Members {
			if mb.Address != n.cfg.Self {
				others = append(others, mb)
			}
		}
		if l, ok := n.state.LeaderOf(others); ok {
			n.send(ExitingConfirmed{Header: n.hdr(l), Node: n.cfg.Self})
			rest := slices.DeleteFunc(slices.Clone(others), func(mb m.Member) bool { return mb.Address == l })
			if l2, ok := n.state.LeaderOf(rest); ok {
				n.send(ExitingConfirmed{Header: n.hdr(l2), Node: n.cfg.Self})
			}
		}
	}
	n.shutdown(ReasonLeft)
}
