package redundancy

import (
	"sync/atomic"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/gate"
)

// RoleView is what data-plane code asks before it acts as Primary, through
// a gate.Guard: it is the node's gate.Source. Input gathers this node's
// role from the last redundancy snapshot, the live number of Up driver
// members of its ClusterId, whether it is a member yet, whether it is alone
// by configuration, the Primary's licence and the snapshot's epoch:
//
//	g := gate.NewGuard(view, metrics, logger)
//	if d := g.Check(gate.SiteWrite); d.Allow { … stamped with d.Epoch … }
//
// The epoch is a fencing token only where a receiver compares it: the
// Config DB refuses an alarm-history drain stamped with an epoch older
// than the newest it stored for the ClusterId (configdb.DrainAlarmHistory);
// a Primary refuses a forwarded request stamped with a newer epoch than
// its own (forward.EpochOK); a field device compares nothing, so a write
// or an acknowledge executed on a node is fenced by the gate's inputs
// alone — the role, the licence and the woken-process fence (SetWoken),
// which keeps a process resumed after a freeze from acting on a snapshot
// taken before it.
//
// It is safe for concurrent use; Input never blocks on I/O.
type RoleView struct {
	members   Membership
	clusterID string
	role      atomic.Int32  // a Role
	epoch     atomic.Uint64 // epoch of the snapshot that set role
	alone     atomic.Bool
	licence   atomic.Pointer[func() gate.Licence]
	woken     atomic.Pointer[func() bool]
	primary   atomic.Pointer[PrimaryRef] // nil: the last snapshot named none
}

var _ gate.Source = (*RoleView)(nil)

// NewRoleView returns a view with role RoleUnknown. members may be nil (a
// node without cluster membership: never a member, driver count 0, alone).
func NewRoleView(members Membership, clusterID string) *RoleView {
	v := &RoleView{members: members, clusterID: clusterID}
	v.alone.Store(members == nil)
	return v
}

// SetAlone records that this node is alone by configuration (a single-node
// set: no OpcUa:PeerApplicationUris and no Cluster:SeedNodes but its own
// address), so that it services before it has formed its cluster. Call it
// before the view is handed to the gate.
func (v *RoleView) SetAlone(alone bool) { v.alone.Store(alone || v.members == nil) }

// SetLicence installs the Primary's licence under lease-majority
// (gate.LicenceOf); without it the Primary is always Licensed. licence is
// called only while the snapshot names this node Primary; it must be safe
// for concurrent use and quick.
func (v *RoleView) SetLicence(licence func() gate.Licence) { v.licence.Store(&licence) }

// SetWoken installs the woken-process fence (package cluster/woken):
// woken reports whether the process woke from a pause longer than the
// failure detector's acceptable pause and has not heard every peer of its
// ClusterId since. Without it the node is never woken. It must be safe for
// concurrent use and quick.
func (v *RoleView) SetWoken(woken func() bool) { v.woken.Store(&woken) }

// SetRole records the role named by the last snapshot (RoleUnknown when it
// did not name this node) and that snapshot's redundancy epoch of this
// node's ClusterId. The OpcUaPublishActor calls it on every snapshot.
func (v *RoleView) SetRole(r Role, epoch uint64) {
	v.epoch.Store(epoch)
	v.role.Store(int32(r))
}

// PrimaryRef names the Primary of a ClusterId as a snapshot names it: its
// incarnation (NodeID, UID), what it advertised, and the ClusterId's epoch.
type PrimaryRef struct {
	NodeID         string
	UID            uint64
	ApplicationURI string
	Epoch          uint64
}

// PrimaryIn names the Primary of clusterID in s, if s names one.
func PrimaryIn(s Snapshot, clusterID string) (PrimaryRef, bool) {
	for _, e := range s.Entries {
		if e.ClusterID == clusterID && e.IsDriverPrimary {
			return PrimaryRef{NodeID: e.NodeID, UID: e.UID, ApplicationURI: e.ApplicationURI, Epoch: s.Epochs[clusterID].Epoch}, true
		}
	}
	return PrimaryRef{}, false
}

// SetPrimaryFrom records the Primary of this node's ClusterId that s names
// (none when it names none). The OpcUaPublishActor calls it on every
// snapshot; a forwarded request goes there (package forward).
func (v *RoleView) SetPrimaryFrom(s Snapshot) {
	if p, ok := PrimaryIn(s, v.clusterID); ok {
		v.primary.Store(&p)
		return
	}
	v.primary.Store(nil)
}

// Primary is the Primary of this node's ClusterId as the last snapshot
// named it.
func (v *RoleView) Primary() (PrimaryRef, bool) {
	if p := v.primary.Load(); p != nil {
		return *p, true
	}
	return PrimaryRef{}, false
}

// Epoch is the redundancy epoch of the snapshot that set the role (0
// before any snapshot).
func (v *RoleView) Epoch() uint64 { return v.epoch.Load() }

// Role is the role from the last snapshot.
func (v *RoleView) Role() Role { return Role(v.role.Load()) }

// driverMembers is the number of Up members with role driver in this
// node's ClusterId, counting this node too while it is a driver member
// that is not Up yet (Joining, WeaklyUp): a node joining a running pair
// sees one Up driver, its peer, and must not take that for the
// single-node posture. 0 before this node is a member.
func (v *RoleView) driverMembers(st membership.State) int {
	n := CountDriverMembers(st.Gossip.Members, v.clusterID)
	if self, ok := st.SelfMember(); ok && (self.Status == membership.Joining || self.Status == membership.WeaklyUp) &&
		self.ClusterID == v.clusterID && self.HasRole(RoleDriver) {
		n++
	}
	return n
}

// Input is the gate's input now, from one membership snapshot (Site is
// left to the Guard). A node on its way out of the cluster is reported
// Secondary, whatever the last snapshot said.
func (v *RoleView) Input() gate.Input {
	in := gate.Input{Role: v.Role(), Epoch: v.Epoch(), Alone: v.alone.Load(), Licence: gate.Licensed}
	if v.members != nil {
		st := v.members.Snapshot()
		in.Drivers, in.Member = v.driverMembers(st), isMember(st)
		if leaving(st) {
			in.Role = RoleSecondary
		}
	}
	if f := v.licence.Load(); in.Role == RolePrimary && f != nil {
		in.Licence = (*f)()
	}
	if f := v.woken.Load(); f != nil {
		in.Woken = (*f)()
	}
	return in
}

// isMember reports whether this node is a member of the cluster st shows:
// Joining, WeaklyUp or Up.
func isMember(st membership.State) bool {
	self, ok := st.SelfMember()
	if !ok {
		return false
	}
	switch self.Status {
	case membership.Joining, membership.WeaklyUp, membership.Up:
		return true
	}
	return false
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
