package membership

import (
	"fmt"
	"slices"
)

// EventKind names a cluster domain event.
type EventKind uint8

// Cluster domain events, as Akka's ClusterEvent, plus the node-local
// SelfDowned and SelfRemoved.
const (
	MemberJoined EventKind = iota + 1
	MemberWeaklyUp
	MemberUp
	MemberLeft // the member is Leaving
	MemberExited
	MemberDowned
	MemberRemoved
	UnreachableMember
	ReachableMember
	LeaderChanged
	RoleLeaderChanged
	// SelfDowned: this node's own member was marked Down.
	SelfDowned
	// SelfRemoved: this node left the cluster (removed, or shut down after
	// being downed or exiting).
	SelfRemoved
)

var eventNames = map[EventKind]string{
	MemberJoined: "MemberJoined", MemberWeaklyUp: "MemberWeaklyUp", MemberUp: "MemberUp",
	MemberLeft: "MemberLeft", MemberExited: "MemberExited", MemberDowned: "MemberDowned",
	MemberRemoved: "MemberRemoved", UnreachableMember: "UnreachableMember",
	ReachableMember: "ReachableMember", LeaderChanged: "LeaderChanged",
	RoleLeaderChanged: "RoleLeaderChanged", SelfDowned: "SelfDowned", SelfRemoved: "SelfRemoved",
}

func (k EventKind) String() string {
	if s, ok := eventNames[k]; ok {
		return s
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is one published cluster event.
type Event struct {
	Kind EventKind
	// Member for member and reachability events.
	Member Member
	// PreviousStatus for MemberRemoved.
	PreviousStatus Status
	// Leader for LeaderChanged / RoleLeaderChanged; HasLeader false when
	// there is none.
	Leader    UniqueAddress
	HasLeader bool
	// Role for RoleLeaderChanged.
	Role string
}

func (e Event) String() string {
	switch e.Kind {
	case LeaderChanged, RoleLeaderChanged:
		l := "none"
		if e.HasLeader {
			l = e.Leader.String()
		}
		if e.Kind == RoleLeaderChanged {
			return fmt.Sprintf("%v %s=%s", e.Kind, e.Role, l)
		}
		return fmt.Sprintf("%v %s", e.Kind, l)
	case MemberRemoved:
		return fmt.Sprintf("%v %v (was %v)", e.Kind, e.Member.Address, e.PreviousStatus)
	case MemberUp:
		return fmt.Sprintf("%v %v up=%d", e.Kind, e.Member.Address, e.Member.UpNumber)
	default:
		return fmt.Sprintf("%v %v", e.Kind, e.Member.Address)
	}
}

// Diff returns the events that take a subscriber from old to new, in Akka's
// publishing order: unreachable, reachable, member events (added/changed
// members by their new status, then removals), leader, role leaders, and
// SelfDowned when this node was just downed.
func Diff(old, new State) []Event {
	var evs []Event
	oldUnreach := set(old.Gossip.Reachability.AllUnreachableOrTerminated())
	for _, u := range new.Gossip.Reachability.AllUnreachableOrTerminated() {
		if !oldUnreach[u] && u != new.Self {
			if m, ok := new.Gossip.Member(u); ok {
				evs = append(evs, Event{Kind: UnreachableMember, Member: m})
			}
		}
	}
	for _, u := range old.Gossip.Reachability.AllUnreachable() {
		if u == new.Self || !new.Gossip.Reachability.IsReachable(u) {
			continue
		}
		if m, ok := new.Gossip.Member(u); ok {
			evs = append(evs, Event{Kind: ReachableMember, Member: m})
		}
	}
	evs = append(evs, diffMembers(old.Gossip, new.Gossip)...)
	oldL, oldOK := old.Leader()
	newL, newOK := new.Leader()
	if oldL != newL || oldOK != newOK {
		evs = append(evs, Event{Kind: LeaderChanged, Leader: newL, HasLeader: newOK})
	}
	roles := slices.Compact(slices.Sorted(slices.Values(append(old.Gossip.AllRoles(), new.Gossip.AllRoles()...))))
	for _, role := range roles {
		o, ook := old.RoleLeader(role)
		n, nok := new.RoleLeader(role)
		if o != n || ook != nok {
			evs = append(evs, Event{Kind: RoleLeaderChanged, Role: role, Leader: n, HasLeader: nok})
		}
	}
	if old.Gossip.StatusOf(new.Self) != Down {
		if m, ok := new.Gossip.Member(new.Self); ok && m.Status == Down {
			evs = append(evs, Event{Kind: SelfDowned, Member: m})
		}
	}
	return evs
}

func diffMembers(old, new Gossip) []Event {
	var evs []Event
	for _, m := range new.Members {
		o, had := old.Member(m.Address)
		if had && o.Status == m.Status && o.UpNumber == m.UpNumber {
			continue
		}
		if k, ok := memberEventKind(m.Status); ok {
			evs = append(evs, Event{Kind: k, Member: m})
		}
	}
	for _, o := range old.Members {
		if !new.HasMember(o.Address) {
			r := o
			r.Status = Removed
			evs = append(evs, Event{Kind: MemberRemoved, Member: r, PreviousStatus: o.Status})
		}
	}
	return evs
}

func memberEventKind(s Status) (EventKind, bool) {
	switch s {
	case Joining:
		return MemberJoined, true
	case WeaklyUp:
		return MemberWeaklyUp, true
	case Up:
		return MemberUp, true
	case Leaving:
		return MemberLeft, true
	case Exiting:
		return MemberExited, true
	case Down:
		return MemberDowned, true
	}
	return 0, false
}
