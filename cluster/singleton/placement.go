package singleton

import (
	"slices"

	"github.com/otopcua/otopcua/cluster/membership"
)

// Placement is the member that should run the singleton of role in view
// st: the oldest member carrying role (membership.Oldest: lowest
// up-number, then address) among those that are Up or Leaving. An Exiting
// member is handing its singletons over (Akka's OldestChangedBuffer drops
// a member at MemberExited), a Down one is being removed, a Joining or
// WeaklyUp one has no age yet. Reachability does not matter: an
// unreachable oldest keeps the singleton until it is downed, so a node
// that is merely unreachable never loses it to another.
func Placement(st membership.State, role string) (membership.Member, bool) {
	return placementExcept(st, role, membership.UniqueAddress{})
}

// placementExcept is Placement with one member left out (this node, once
// it is leaving: it must not run the singleton again).
func placementExcept(st membership.State, role string, except membership.UniqueAddress) (membership.Member, bool) {
	var ms []membership.Member
	for _, m := range st.Gossip.Members {
		if (m.Status == membership.Up || m.Status == membership.Leaving) && m.Address != except {
			ms = append(ms, m)
		}
	}
	return membership.Oldest(ms, role)
}

// formerHolders returns the members that may still run the singleton
// for a node that has just become the placement: every member with role
// that is older than self and Exiting or Down (its hand-over or removal is
// under way), oldest first.
func formerHolders(st membership.State, role string) []membership.UniqueAddress {
	self, ok := st.SelfMember()
	if !ok {
		return nil
	}
	var ms []membership.Member
	for _, m := range st.Gossip.Members {
		if (m.Status == membership.Exiting || m.Status == membership.Down) && m.HasRole(role) && m.IsOlderThan(self) {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, membership.CompareByAge)
	out := make([]membership.UniqueAddress, len(ms))
	for i, m := range ms {
		out[i] = m.Address
	}
	return out
}

// Previous is what a new oldest knows of the member that ran the
// singleton before it (the previous oldest).
type Previous uint8

// Verdicts of JudgePrevious.
const (
	// PreviousMayRun: the previous oldest is a live member (Exiting, or
	// not yet downed): wait for its HandOverDone or its removal, however
	// long it takes.
	PreviousMayRun Previous = iota
	// PreviousGoneAfterTimeout: it is Down but still reachable — it stops
	// its instance as soon as it sees its own Down and answers with
	// HandOverDone; wait for that, or for the hand-over timeout.
	PreviousGoneAfterTimeout
	// PreviousGone: it was removed, or it is Down and unreachable (a
	// crashed process): start at once.
	PreviousGone
)

func (p Previous) String() string {
	return [...]string{"may run", "gone after timeout", "gone"}[p]
}

// JudgePrevious judges the previous oldest prev in view st.
func JudgePrevious(st membership.State, prev membership.UniqueAddress) Previous {
	m, ok := st.Gossip.Member(prev)
	switch {
	case !ok:
		return PreviousGone
	case m.Status != membership.Down:
		return PreviousMayRun
	case !st.Gossip.Reachability.IsReachable(prev):
		return PreviousGone
	default:
		return PreviousGoneAfterTimeout
	}
}
