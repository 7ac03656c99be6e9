package redundancy

import (
	"sync/atomic"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/gate"
)

// RoleView is what data-plane code asks before it acts as Primary: this
// node's role from the last redundancy snapshot and the live number of Up
// driver members of its ClusterId. Pass both to gate.ShouldServiceAsPrimary:
//
//	role, drivers := view.State()
//	ok, reason := gate.ShouldServiceAsPrimary(role, drivers)
//
// It is safe for concurrent use; State never blocks on I/O.
type RoleView struct {
	members   Membership
	clusterID string
	role      atomic.Int32  // a Role
	epoch     atomic.Uint64 // epoch of the snapshot that set role
	fence     atomic.Pointer[func() bool]
}

// SetFence installs the licence check of lease-majority: State reports
// RoleFencedPrimary for the Primary while licensed returns false (see
// gate.LicenceOf). It must be safe for concurrent use and quick.
func (v *RoleView) SetFence(licensed func() bool) { v.fence.Store(&licensed) }

// NewRoleView returns a view with role RoleUnknown. members may be nil (a
// node without cluster membership: driver count 0, the single-node posture).
func NewRoleView(members Membership, clusterID string) *RoleView {
	return &RoleView{members: members, clusterID: clusterID}
}

// SetRole records the role named by the last snapshot (RoleUnknown when it
// did not name this node) and that snapshot's redundancy epoch of this
// node's ClusterId. The OpcUaPublishActor calls it on every snapshot.
func (v *RoleView) SetRole(r Role, epoch uint64) {
	v.epoch.Store(epoch)
	v.role.Store(int32(r))
}

// Epoch is the redundancy epoch of the snapshot that set the role: the
// fencing token a serviced write is logged with (0 before any snapshot).
func (v *RoleView) Epoch() uint64 { return v.epoch.Load() }

// Role is the role from the last snapshot.
func (v *RoleView) Role() Role { return Role(v.role.Load()) }

// DriverMemberCount is the number of Up members with role driver in this
// node's ClusterId, read live from membership, counting this node too
// while it is a driver member that is not Up yet (Joining, WeaklyUp): a
// node joining a running pair sees one Up driver, its peer, and must not
// take that for the single-node posture. 0 before this node is a member.
func (v *RoleView) DriverMemberCount() int {
	if v.members == nil {
		return 0
	}
	return v.driverMembers(v.members.Snapshot())
}

func (v *RoleView) driverMembers(st membership.State) int {
	n := CountDriverMembers(st.Gossip.Members, v.clusterID)
	if self, ok := st.SelfMember(); ok && (self.Status == membership.Joining || self.Status == membership.WeaklyUp) &&
		self.ClusterID == v.clusterID && self.HasRole(RoleDriver) {
		n++
	}
	return n
}

// State returns Role and DriverMemberCount together, from one membership
// snapshot.
func (v *RoleView) State() (Role, int) {
	if v.members == nil {
		return v.fenced(v.Role()), 0
	}
	st := v.members.Snapshot()
	if leaving(st) {
		return RoleSecondary, v.driverMembers(st)
	}
	return v.fenced(v.Role()), v.driverMembers(st)
}

// fenced applies the licence check to the Primary (SetFence).
func (v *RoleView) fenced(r Role) Role {
	if f := v.fence.Load(); r == RolePrimary && f != nil && !(*f)() {
		return gate.RoleFencedPrimary
	}
	return r
}

// leaving reports whether this node is on its way out of the cluster st
// shows — Leaving, Exiting, Down, or no longer among the members — so that
// it never acts as Primary between its downing (or leave) and its exit,
// whatever the last snapshot said: the single-node posture of an unknown
// role is for a node that has not joined yet, not for one that was
// removed.
func leaving(st membership.State) bool {
	if st.Gossip.IsEmpty() {
		return false // not joined yet
	}
	self, ok := st.SelfMember()
	if !ok {
		return true
	}
	switch self.Status {
	case membership.Leaving, membership.Exiting, membership.Down, membership.Removed:
		return true
	}
	return false
}
