package gate

// Role is a node's redundancy role inside its application ClusterId, as the
// last redundancy snapshot names it. It lives here, in the leaf policy
// package, so that the gate depends on nothing but the standard library;
// package redundancy uses the same type (redundancy.Role).
type Role int

const (
	// RoleUnknown: no snapshot has named this node yet (boot window, or the
	// snapshot omitted it).
	RoleUnknown Role = iota
	// RolePrimary: the oldest Up member with role driver in its ClusterId.
	RolePrimary
	// RoleSecondary: a driver member that is not the Primary.
	RoleSecondary
	// RoleDetached: a member without the driver role.
	RoleDetached
	// RoleFencedPrimary: the elected Primary without its licence under
	// lease-majority (Licence): its set is split and it does not hold the
	// shared lease, or it waits out its promotion hold. It must not act.
	RoleFencedPrimary
)

func (r Role) String() string {
	switch r {
	case RolePrimary:
		return "Primary"
	case RoleSecondary:
		return "Secondary"
	case RoleDetached:
		return "Detached"
	case RoleFencedPrimary:
		return "FencedPrimary"
	default:
		return "Unknown"
	}
}
