// Package gate decides whether this node may act as its ClusterId's Primary
// on the data plane: inbound OPC UA writes to field devices, alarm acks, the
// alerts emit and the historian drain. A warm standby never touches a shared
// field device.
//
// The policy is a pure function of the last redundancy snapshot's role for
// this node and the number of Up driver members; callers gather both.
package gate

// Reason says why a request was denied. The strings are the ones operators
// see in audit events; Label is the metric attribute.
type Reason int

const (
	// Allowed: the request is serviced.
	Allowed Reason = iota
	// DeniedSecondary: a snapshot names this node Secondary.
	DeniedSecondary
	// DeniedDetached: this node has no driver role.
	DeniedDetached
	// DeniedRoleUnknown: no snapshot has named this node yet while a driver
	// peer exists (the boot window).
	DeniedRoleUnknown
	// DeniedFenced: the elected Primary has no licence (RoleFencedPrimary).
	DeniedFenced
)

// String is the reason as written into an AuditWriteUpdateEvent.
func (r Reason) String() string {
	switch r {
	case DeniedSecondary, DeniedDetached:
		return "not primary"
	case DeniedRoleUnknown:
		return "not primary (role unknown)"
	case DeniedFenced:
		return "not primary (no lease or promotion hold)"
	default:
		return "primary"
	}
}

// Label is the `reason` attribute of otopcua.redundancy.primary_gate_denied.
func (r Reason) Label() string {
	switch r {
	case DeniedSecondary:
		return "secondary"
	case DeniedDetached:
		return "detached"
	case DeniedRoleUnknown:
		return "role-unknown"
	case DeniedFenced:
		return "fenced"
	default:
		return ""
	}
}

// ShouldServiceAsPrimary is the Primary gate:
//
//	Primary               any driver count → service
//	Secondary / Detached  any driver count → deny
//	FencedPrimary         any driver count → deny (no licence: see Licence)
//	Unknown               ≤ 1 driver member → service (single node, boot on a lone driver)
//	Unknown               ≥ 2 driver members → deny (a Primary peer exists)
//
// driverMemberCount is the number of Up members carrying the driver role in
// this node's ClusterId, read live from membership (0 when not clustered).
func ShouldServiceAsPrimary(role Role, driverMemberCount int) (bool, Reason) {
	switch role {
	case RolePrimary:
		return true, Allowed
	case RoleSecondary:
		return false, DeniedSecondary
	case RoleDetached:
		return false, DeniedDetached
	case RoleFencedPrimary:
		return false, DeniedFenced
	}
	if driverMemberCount <= 1 {
		return true, Allowed
	}
	return false, DeniedRoleUnknown
}
