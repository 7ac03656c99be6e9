package redundancy

import "github.com/otopcua/otopcua/gate"

// Role is a node's redundancy role inside its application ClusterId, as the
// last redundancy snapshot names it. It is the gate's type, so that the
// pure gate package stays a leaf.
type Role = gate.Role

// The roles (see gate.Role).
const (
	RoleUnknown   = gate.RoleUnknown
	RolePrimary   = gate.RolePrimary
	RoleSecondary = gate.RoleSecondary
	RoleDetached  = gate.RoleDetached
)
