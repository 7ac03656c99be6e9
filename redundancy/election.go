package redundancy

import (
	"cmp"
	"slices"
)

// RoleDriver is the cluster role of nodes that serve OPC UA and drive field
// devices; only they can be Primary or Secondary.
const RoleDriver = "driver"

// MemberView is what the election needs of one cluster member.
type MemberView struct {
	// NodeID is the canonical "host:port" of the member's cluster address.
	NodeID string
	// Host and Port order members with equal up-numbers (address order).
	Host string
	Port int
	// Up is true when the member's status is Up. Joining, Leaving, Exiting,
	// Down and Removed members cannot be Primary.
	Up bool
	// UpNumber orders members by age: lower is older.
	UpNumber int
	// Roles are the member's cluster roles.
	Roles []string
	// ClusterID is the member's application ClusterId (Node:ClusterId).
	ClusterID string
}

// HasRole reports whether m carries role.
func (m MemberView) HasRole(role string) bool { return slices.Contains(m.Roles, role) }

// Election is the outcome for one application ClusterId.
type Election struct {
	// Primary is the NodeID of the Primary, "" when no Up driver member
	// exists in the ClusterId.
	Primary string
	// Roles holds the role of every member of the ClusterId.
	Roles map[string]Role
}

// Elect elects one Primary per application ClusterId: the oldest Up member
// with role driver (lowest up-number, ties broken by address). Driver
// members that are not Primary are Secondary; members without the driver
// role are Detached. The result is a pure function of the members' ages,
// roles and ClusterIds, independent of their order.
func Elect(members []MemberView) map[string]Election {
	out := make(map[string]Election)
	for _, m := range members {
		e, ok := out[m.ClusterID]
		if !ok {
			e = Election{Roles: make(map[string]Role)}
		}
		e.Roles[m.NodeID] = RoleDetached
		if m.HasRole(RoleDriver) {
			e.Roles[m.NodeID] = RoleSecondary
		}
		out[m.ClusterID] = e
	}
	for cid, e := range out {
		if p, ok := oldestDriver(members, cid); ok {
			e.Primary = p.NodeID
			e.Roles[p.NodeID] = RolePrimary
			out[cid] = e
		}
	}
	return out
}

// oldestDriver returns the oldest Up driver member of clusterID.
func oldestDriver(members []MemberView, clusterID string) (MemberView, bool) {
	var best MemberView
	found := false
	for _, m := range members {
		if m.ClusterID != clusterID || !m.Up || !m.HasRole(RoleDriver) {
			continue
		}
		if !found || older(m, best) {
			best, found = m, true
		}
	}
	return best, found
}

// older reports whether a is older than b: lower up-number, then lower
// address (host, then port).
func older(a, b MemberView) bool {
	if c := cmp.Compare(a.UpNumber, b.UpNumber); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.Host, b.Host); c != 0 {
		return c < 0
	}
	return a.Port < b.Port
}
