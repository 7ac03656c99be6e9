package membership

import (
	"fmt"
	"slices"
)

// Gossip is the replicated cluster state: members, who has seen this
// version, the reachability table, and the vector clock version (Akka's
// Gossip + GossipOverview). Gossip is a value: every method returns a new
// Gossip and never modifies the receiver or the slices it shares.
type Gossip struct {
	// Members sorted by unique address; never contains Removed.
	Members []Member
	// Seen is the set of members that have seen this version, sorted.
	Seen         []UniqueAddress
	Reachability Reachability
	Version      VectorClock
}

// NewGossip returns a gossip holding members (copied and sorted).
func NewGossip(members ...Member) Gossip {
	ms := slices.Clone(members)
	slices.SortFunc(ms, CompareByAddress)
	return Gossip{Members: ms}
}

// IsEmpty reports whether the gossip has no members.
func (g Gossip) IsEmpty() bool { return len(g.Members) == 0 }

// Member returns the member with the unique address.
func (g Gossip) Member(u UniqueAddress) (Member, bool) {
	i, ok := slices.BinarySearchFunc(g.Members, u, func(m Member, u UniqueAddress) int { return m.Address.Compare(u) })
	if !ok {
		return Member{}, false
	}
	return g.Members[i], true
}

// HasMember reports whether u is a member.
func (g Gossip) HasMember(u UniqueAddress) bool {
	_, ok := g.Member(u)
	return ok
}

// MemberAt returns the member (any incarnation) at a host:port.
func (g Gossip) MemberAt(a Address) (Member, bool) {
	for _, m := range g.Members {
		if m.Address.Address() == a {
			return m, true
		}
	}
	return Member{}, false
}

// StatusOf returns u's status, Removed when u is not a member.
func (g Gossip) StatusOf(u UniqueAddress) Status {
	if m, ok := g.Member(u); ok {
		return m.Status
	}
	return Removed
}

// WithMembers returns g with the member list replaced (copied and sorted).
func (g Gossip) WithMembers(ms []Member) Gossip {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, CompareByAddress)
	g.Members = ms
	return g
}

// WithReachability returns g with the reachability table replaced.
func (g Gossip) WithReachability(r Reachability) Gossip {
	g.Reachability = r
	return g
}

// AddMember adds m unless a member with its unique address exists.
func (g Gossip) AddMember(m Member) Gossip {
	if g.HasMember(m.Address) {
		return g
	}
	return g.WithMembers(append(slices.Clone(g.Members), m))
}

// UpdateMember replaces the member with m's unique address.
func (g Gossip) UpdateMember(m Member) Gossip {
	ms := slices.Clone(g.Members)
	for i := range ms {
		if ms[i].Address == m.Address {
			ms[i] = m
		}
	}
	g.Members = ms
	return g
}

// SeenBy reports whether u has seen this version.
func (g Gossip) SeenBy(u UniqueAddress) bool {
	_, ok := slices.BinarySearchFunc(g.Seen, u, UniqueAddress.Compare)
	return ok
}

// WithSeen marks u as having seen this version.
func (g Gossip) WithSeen(u UniqueAddress) Gossip {
	if g.SeenBy(u) {
		return g
	}
	g.Seen = sortedUnique(append(slices.Clone(g.Seen), u))
	return g
}

// OnlySeen resets the seen set to u alone.
func (g Gossip) OnlySeen(u UniqueAddress) Gossip {
	g.Seen = []UniqueAddress{u}
	return g
}

// ClearSeen empties the seen set.
func (g Gossip) ClearSeen() Gossip {
	g.Seen = nil
	return g
}

// MergeSeen unions o's seen set into g's.
func (g Gossip) MergeSeen(o Gossip) Gossip {
	g.Seen = sortedUnique(append(slices.Clone(g.Seen), o.Seen...))
	return g
}

// Increment advances the version for node (see VClockNode).
func (g Gossip) Increment(node string) Gossip {
	g.Version = g.Version.Increment(node)
	return g
}

// Prune drops node's vector clock entry.
func (g Gossip) Prune(node string) Gossip {
	g.Version = g.Version.Prune(node)
	return g
}

// MarkAsDown moves m to Down and drops it from the seen set.
func (g Gossip) MarkAsDown(m Member) Gossip {
	g = g.UpdateMember(m.WithStatus(Down))
	seen := slices.DeleteFunc(slices.Clone(g.Seen), func(u UniqueAddress) bool { return u == m.Address })
	g.Seen = seen
	return g
}

// Merge combines two concurrent gossips as Akka does: clocks merged, members
// by HighestPriorityOf (a member present on one side only is dropped when it
// is Down or Exiting there, because the other side removed it), reachability
// merged over the resulting members, and an empty seen set.
func (g Gossip) Merge(o Gossip) Gossip {
	members := PickHighestPriority(g.Members, o.Members)
	addrs := make([]UniqueAddress, len(members))
	for i, m := range members {
		addrs[i] = m.Address
	}
	return Gossip{
		Members:      members,
		Reachability: g.Reachability.Merge(addrs, o.Reachability),
		Version:      g.Version.Merge(o.Version),
	}
}

// YoungestUpNumber is the highest up-number among members that have one
// (0 when none has).
func (g Gossip) YoungestUpNumber() int {
	n := 0
	for _, m := range g.Members {
		if m.UpNumber != NotUp && m.UpNumber > n {
			n = m.UpNumber
		}
	}
	return n
}

// IsSingleton reports whether the cluster has exactly one member.
func (g Gossip) IsSingleton() bool { return len(g.Members) == 1 }

// IsReachable reports whether from holds to Reachable and to is a member.
func (g Gossip) IsReachable(from, to UniqueAddress) bool {
	return g.HasMember(to) && g.Reachability.IsReachableFrom(from, to)
}

// ReachabilityExcludingDownedObservers drops the observations made by Down
// members.
func (g Gossip) ReachabilityExcludingDownedObservers() Reachability {
	var downed []UniqueAddress
	for _, m := range g.Members {
		if m.Status == Down {
			downed = append(downed, m.Address)
		}
	}
	return g.Reachability.RemoveObservers(downed)
}

// AllRoles is every role carried by a member, sorted.
func (g Gossip) AllRoles() []string {
	var rs []string
	for _, m := range g.Members {
		rs = append(rs, m.Roles...)
	}
	slices.Sort(rs)
	return slices.Compact(rs)
}

// CheckInvariants returns an error describing the first broken gossip
// invariant: members sorted and unique, none Removed or of invalid status,
// seen and reachability observers are members.
func (g Gossip) CheckInvariants() error {
	for i, m := range g.Members {
		if m.Status < Joining || m.Status >= Removed {
			return fmt.Errorf("member %v has status %v", m.Address, m.Status)
		}
		if i > 0 && g.Members[i-1].Address.Compare(m.Address) >= 0 {
			return fmt.Errorf("members not sorted/unique at %v", m.Address)
		}
	}
	for _, u := range g.Seen {
		if !g.HasMember(u) {
			return fmt.Errorf("seen by non-member %v", u)
		}
	}
	for _, u := range g.Reachability.AllObservers() {
		if !g.HasMember(u) {
			return fmt.Errorf("reachability observer %v is not a member", u)
		}
	}
	return nil
}
