package membership

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// NotUp is the up-number of a member that has never been Up (Joining,
// WeaklyUp, or downed before it came Up). It sorts after every real
// up-number, so such members are the youngest by age.
const NotUp = math.MaxInt32

// Member is one cluster member as carried in gossip.
//
// A Member is a value: its Roles slice is shared between copies and must
// never be modified in place.
type Member struct {
	Address UniqueAddress
	Status  Status
	// Roles is sorted and free of duplicates (see NewMember).
	Roles []string
	// ClusterID is the application cluster (redundancy group) this member
	// serves; several ClusterIDs may share one membership cluster.
	ClusterID string
	// UpNumber is assigned by the leader when the member first moves to Up
	// (one more than the youngest member at that time); NotUp before that.
	// Lower means older.
	UpNumber int
}

// NewMember returns a Joining member with NotUp up-number. Roles are copied,
// sorted and de-duplicated.
func NewMember(addr UniqueAddress, roles []string, clusterID string) Member {
	rs := slices.Clone(roles)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	return Member{Address: addr, Status: Joining, Roles: rs, ClusterID: clusterID, UpNumber: NotUp}
}

// HasRole reports whether the member carries role. The empty role matches
// every member.
func (m Member) HasRole(role string) bool {
	if role == "" {
		return true
	}
	_, found := slices.BinarySearch(m.Roles, role)
	return found
}

// WithStatus returns a copy of m with a new status. Moving to the same status
// returns m. It panics on a transition CanTransition forbids: callers only
// make transitions the protocol allows.
func (m Member) WithStatus(s Status) Member {
	if s == m.Status {
		return m
	}
	if !CanTransition(m.Status, s) {
		panic(fmt.Sprintf("membership: invariant violated: invalid member status transition %v -> %v for %v", m.Status, s, m.Address))
	}
	m.Status = s
	return m
}

// WithUp returns a copy of m moved to Up with the given up-number.
func (m Member) WithUp(upNumber int) Member {
	m = m.WithStatus(Up)
	m.UpNumber = upNumber
	return m
}

// IsOlderThan reports whether m is older than o: lower up-number, ties broken
// by the lower address (Akka's Member.IsOlderThan).
func (m Member) IsOlderThan(o Member) bool {
	if m.UpNumber == o.UpNumber {
		return m.Address.Address().Compare(o.Address.Address()) < 0
	}
	return m.UpNumber < o.UpNumber
}

// CompareByAddress is Akka's default member ordering (unique address).
func CompareByAddress(a, b Member) int { return a.Address.Compare(b.Address) }

// CompareByAge is Akka's age ordering: oldest first; equal members compare 0.
func CompareByAge(a, b Member) int {
	switch {
	case a.Address == b.Address:
		return 0
	case a.IsOlderThan(b):
		return -1
	default:
		return 1
	}
}

// String renders `host:port#uid Status up=N roles=[..] cluster=X` compactly.
func (m Member) String() string {
	var b strings.Builder
	b.WriteString(m.Address.String())
	b.WriteByte(' ')
	b.WriteString(m.Status.String())
	if m.UpNumber != NotUp {
		b.WriteString("(" + strconv.Itoa(m.UpNumber) + ")")
	}
	if len(m.Roles) > 0 {
		b.WriteString(" [" + strings.Join(m.Roles, ",") + "]")
	}
	if m.ClusterID != "" {
		b.WriteString(" cluster=" + m.ClusterID)
	}
	return b.String()
}

// HighestPriorityOf picks, for two versions of the same member, the one a
// gossip merge keeps: Removed > Down > Exiting > Leaving > Up > WeaklyUp >
// Joining; with equal status the older one (Akka's Member.HighestPriorityOf).
func HighestPriorityOf(m1, m2 Member) Member {
	if m1.Status == m2.Status {
		if m2.IsOlderThan(m1) {
			return m2
		}
		return m1
	}
	return priority(m1, m2)
}

func priority(m1, m2 Member) Member {
	for _, s := range []Status{Removed, Down, Exiting, Leaving} {
		if m1.Status == s {
			return m1
		}
		if m2.Status == s {
			return m2
		}
	}
	for _, s := range []Status{Joining, WeaklyUp} {
		if m1.Status == s {
			return m2
		}
		if m2.Status == s {
			return m1
		}
	}
	return m1
}

// PickHighestPriority merges two member lists by unique address: a member in
// both keeps HighestPriorityOf; a member in only one is kept unless its
// status is Down or Exiting (the other side has already removed it). The
// result is sorted by address.
func PickHighestPriority(a, b []Member) []Member {
	byAddr := map[UniqueAddress][]Member{}
	for _, m := range a {
		byAddr[m.Address] = append(byAddr[m.Address], m)
	}
	for _, m := range b {
		byAddr[m.Address] = append(byAddr[m.Address], m)
	}
	out := make([]Member, 0, len(byAddr))
	for _, ms := range byAddr {
		switch {
		case len(ms) == 2:
			out = append(out, HighestPriorityOf(ms[0], ms[1]))
		case ms[0].Status != Down && ms[0].Status != Exiting:
			out = append(out, ms[0])
		}
	}
	slices.SortFunc(out, CompareByAddress)
	return out
}

// pickNextTransition replaces members of base with their changed versions
// where the change is an allowed transition (Akka's PickNextTransition).
func pickNextTransition(changed, base []Member) []Member {
	out := slices.Clone(base)
	for _, c := range changed {
		for i, m := range out {
			if m.Address != c.Address {
				continue
			}
			if m.Status == c.Status || CanTransition(m.Status, c.Status) {
				out[i] = c
			}
		}
	}
	return out
}
