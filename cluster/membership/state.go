package membership

import "slices"

// State is one node's view: the latest gossip and the node's own unique
// address (Akka's MembershipState). All methods are pure.
type State struct {
	Gossip Gossip
	Self   UniqueAddress
}

// SelfMember returns this node's member entry, if it is a member.
func (s State) SelfMember() (Member, bool) { return s.Gossip.Member(s.Self) }

// Leader is the leader among all members (see LeaderOf).
func (s State) Leader() (UniqueAddress, bool) { return s.LeaderOf(s.Gossip.Members) }

// IsLeader reports whether u is the leader of this view.
func (s State) IsLeader(u UniqueAddress) bool {
	l, ok := s.Leader()
	return ok && l == u
}

// RoleLeader is the leader among the members carrying role.
func (s State) RoleLeader(role string) (UniqueAddress, bool) {
	var ms []Member
	for _, m := range s.Gossip.Members {
		if m.HasRole(role) {
			ms = append(ms, m)
		}
	}
	return s.LeaderOf(ms)
}

// LeaderOf picks a leader among ms as Akka does: of the members that are not
// Down and are reachable (by every observer; this node always counts itself
// reachable), the first by address that is Up or Leaving; when none is, the
// first by leader-status order WeaklyUp < Joining < Exiting < Down, then by
// address.
func (s State) LeaderOf(ms []Member) (UniqueAddress, bool) {
	r := s.Gossip.Reachability
	var cand []Member
	for _, m := range ms {
		if r.IsAllReachable() {
			if m.Status != Down {
				cand = append(cand, m)
			}
		} else if (m.Status != Down && r.IsReachable(m.Address)) || m.Address == s.Self {
			cand = append(cand, m)
		}
	}
	if len(cand) == 0 {
		return UniqueAddress{}, false
	}
	slices.SortFunc(cand, CompareByAddress)
	for _, m := range cand {
		if m.Status == Up || m.Status == Leaving {
			return m.Address, true
		}
	}
	return slices.MinFunc(cand, compareLeaderStatus).Address, true
}

func leaderRank(s Status) int {
	switch s {
	case Down:
		return 4
	case Exiting:
		return 3
	case Joining:
		return 2
	case WeaklyUp:
		return 1
	}
	return 0
}

func compareLeaderStatus(a, b Member) int {
	if a.Status != b.Status {
		if ra, rb := leaderRank(a.Status), leaderRank(b.Status); ra != rb {
			return ra - rb
		}
	}
	return CompareByAddress(a, b)
}

// Convergence reports whether the leader may act: every Up or Leaving member
// has seen this version (or is confirmed exiting), and every member some
// non-Down observer holds unreachable is Down or Exiting (or is this node, or
// is confirmed exiting).
func (s State) Convergence(exitingConfirmed []UniqueAddress) bool {
	confirmed := set(exitingConfirmed)
	for _, m := range s.Gossip.Members {
		if (m.Status == Up || m.Status == Leaving) && !s.Gossip.SeenBy(m.Address) && !confirmed[m.Address] {
			return false
		}
	}
	for _, u := range s.Gossip.ReachabilityExcludingDownedObservers().AllUnreachableOrTerminated() {
		if u == s.Self || confirmed[u] {
			continue
		}
		m, ok := s.Gossip.Member(u)
		if !ok {
			continue // not a member: cannot hold the leader back
		}
		if m.Status != Down && m.Status != Exiting {
			return false
		}
	}
	return true
}

// IsReachableExcludingDownedObservers reports whether u is a member that no
// non-Down observer holds unreachable.
func (s State) IsReachableExcludingDownedObservers(u UniqueAddress) bool {
	return s.Gossip.HasMember(u) && s.Gossip.ReachabilityExcludingDownedObservers().IsReachable(u)
}

// ValidNodeForGossip reports whether gossip may be sent to u: not self, and
// this node holds u reachable.
func (s State) ValidNodeForGossip(u UniqueAddress) bool {
	return u != s.Self && s.Gossip.Reachability.IsReachableFrom(s.Self, u)
}

// Oldest is the oldest member of this view carrying role (see Oldest).
func (s State) Oldest(role string) (Member, bool) { return Oldest(s.Gossip.Members, role) }

// Oldest returns, among members with status Up, Leaving or Exiting that carry
// role ("" = any), the one with the lowest up-number, ties broken by the
// lower address. Reachability does not matter: an unreachable oldest stays
// oldest until it is downed.
func Oldest(members []Member, role string) (Member, bool) {
	var best Member
	found := false
	for _, m := range members {
		if (m.Status != Up && m.Status != Leaving && m.Status != Exiting) || !m.HasRole(role) {
			continue
		}
		if !found || m.IsOlderThan(best) {
			best, found = m, true
		}
	}
	return best, found
}

// OldestInCluster is Oldest restricted to members of one ClusterID.
func OldestInCluster(members []Member, clusterID, role string) (Member, bool) {
	var ms []Member
	for _, m := range members {
		if m.ClusterID == clusterID {
			ms = append(ms, m)
		}
	}
	return Oldest(ms, role)
}

// LeaderActionsOnConvergence performs the leader's duties on a converged
// gossip (Akka's ClusterCoreDaemon.LeaderActionsOnConvergence):
//
//  1. Joining/WeaklyUp → Up, up-numbers assigned in address order starting
//     at one more than the youngest member's;
//  2. Leaving → Exiting;
//  3. unreachable Down/Exiting members, and Exiting members that confirmed
//     their exit, are removed (from members, seen, reachability and the
//     vector clock).
//
// It returns the new gossip (version not yet incremented) and whether
// anything changed.
func LeaderActionsOnConvergence(g Gossip, exitingConfirmed []UniqueAddress) (Gossip, bool) {
	var removed []UniqueAddress
	for _, u := range g.Reachability.AllUnreachableOrTerminated() {
		if st := g.StatusOf(u); st == Down || st == Exiting {
			removed = append(removed, u)
		}
	}
	for _, u := range exitingConfirmed {
		if g.StatusOf(u) == Exiting {
			removed = append(removed, u)
		}
	}
	removed = sortedUnique(removed)

	var changed []Member
	up := 0
	for _, m := range g.Members {
		switch m.Status {
		case Joining, WeaklyUp:
			if up == 0 {
				up = g.YoungestUpNumber() + 1
			} else {
				up++
			}
			changed = append(changed, m.WithUp(up))
		case Leaving:
			changed = append(changed, m.WithStatus(Exiting))
		}
	}
	if len(removed) == 0 && len(changed) == 0 {
		return g, false
	}
	gone := set(removed)
	members := slices.DeleteFunc(pickNextTransition(changed, g.Members), func(m Member) bool { return gone[m.Address] })
	seen := slices.DeleteFunc(slices.Clone(g.Seen), func(u UniqueAddress) bool { return gone[u] })
	version := g.Version
	for _, u := range removed {
		version = version.Prune(VClockNode(u))
	}
	return Gossip{
		Members:      members,
		Seen:         seen,
		Reachability: g.Reachability.Remove(removed),
		Version:      version,
	}, true
}
