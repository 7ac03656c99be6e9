package redundancy

import (
	"slices"
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
)

// Observed is everything a driver node has gathered for its ServiceLevel,
// as last received. Times are on this node's clock: a snapshot entry and a
// probe result count from when they arrived here, not from the sender's
// timestamp, so a sender whose clock is ahead cannot keep stale news fresh.
type Observed struct {
	// Self is this process; its NodeID keys its snapshot entry.
	Self membership.UniqueAddress
	// ConfiguredRoles apply before this node is a member.
	ConfiguredRoles []string
	// Members is the current membership view.
	Members membership.State

	// Db is the last DB probe verdict; DbKnown false before the first.
	Db      DbStatus
	DbKnown bool

	// Entry is this node's entry in the last snapshot that named this
	// incarnation; EntryAt is when that snapshot arrived (zero: never).
	Entry   Entry
	EntryAt time.Time

	// Probes are the latest probe results about this node, one per prober.
	Probes map[string]ProbeSeen
}

// ProbeSeen is a peer's latest probe of this node's OPC UA endpoint.
type ProbeSeen struct {
	Ok bool
	// At is when the result arrived here.
	At time.Time
}

// Inputs gathers servicelevel.Of's health and role inputs at now (the
// caller adds the licence and the pin):
//
//   - Status: this node's member status in Members (MemberNone when it is
//     not, or no longer, a member);
//   - HasDriverRole: the member's roles, or ConfiguredRoles before joining;
//   - DbHealthKnown/DbReachable/DbAsOf: the DB probe;
//   - SnapshotAsOf, IsDriverPrimary, Role: this node's snapshot entry;
//   - IsDriverRoleLeader: this node is the lowest-addressed Up driver member
//     of its ClusterId (legacy mapping only);
//   - OpcUaProbeOk: false only when some prober's latest result is a
//     failure that arrived within FreshFor; no result, or only old ones,
//     give the benefit of the doubt.
func (o Observed) Inputs(now time.Time) servicelevel.Inputs {
	in := servicelevel.Inputs{
		Now: now, DbHealthKnown: o.DbKnown, DbReachable: o.DbKnown && o.Db.Reachable, DbAsOf: o.Db.AsOf,
		SnapshotAsOf: o.EntryAt, OpcUaProbeOk: true,
		HasDriverRole: slices.Contains(o.ConfiguredRoles, RoleDriver),
	}
	if self, ok := o.Members.SelfMember(); ok && self.Address == o.Self {
		in.Status = memberStatus(self.Status)
		in.HasDriverRole = self.HasRole(RoleDriver)
		in.IsDriverRoleLeader = isDriverRoleLeader(o.Members.Gossip.Members, self)
	}
	if !o.EntryAt.IsZero() {
		in.IsDriverPrimary = o.Entry.IsDriverPrimary
		in.Role = o.Entry.Role
	}
	for _, p := range o.Probes {
		if !servicelevel.ProbeOk(true, p.Ok, p.At, now) {
			in.OpcUaProbeOk = false
		}
	}
	return in
}

func memberStatus(s membership.Status) servicelevel.MemberStatus {
	switch s {
	case membership.Joining:
		return servicelevel.MemberJoining
	case membership.WeaklyUp:
		return servicelevel.MemberWeaklyUp
	case membership.Up:
		return servicelevel.MemberUp
	case membership.Leaving:
		return servicelevel.MemberLeaving
	case membership.Exiting:
		return servicelevel.MemberExiting
	case membership.Down:
		return servicelevel.MemberDown
	case membership.Removed:
		return servicelevel.MemberRemoved
	default:
		return servicelevel.MemberNone
	}
}

// isDriverRoleLeader: self is the lowest-addressed Up driver member of its
// ClusterId.
func isDriverRoleLeader(members []membership.Member, self membership.Member) bool {
	if self.Status != membership.Up || !self.HasRole(RoleDriver) {
		return false
	}
	for _, m := range members {
		if m.Address != self.Address && m.ClusterID == self.ClusterID && m.Status == membership.Up &&
			m.HasRole(RoleDriver) && m.Address.Address().Compare(self.Address.Address()) < 0 {
			return false
		}
	}
	return true
}

// CountDriverMembers is the number of Up members with role driver in
// clusterID: the gate's driverMemberCount.
func CountDriverMembers(members []membership.Member, clusterID string) int {
	n := 0
	for _, m := range members {
		if m.ClusterID == clusterID && m.Status == membership.Up && m.HasRole(RoleDriver) {
			n++
		}
	}
	return n
}
