package gate

// Site is where the Primary gate is asked. Its String is the `site`
// attribute of otopcua.redundancy.primary_gate_denied.
type Site int

const (
	// SiteWrite: an OPC UA write of a tag, to its field device.
	SiteWrite Site = iota
	// SiteAck: an alarm condition method (Acknowledge, Confirm, Enable,
	// Disable, AddComment).
	SiteAck
	// SiteAlarmEmit: an alarm transition published on the alerts topic
	// (a detection, the pending ones on promotion, a repair).
	SiteAlarmEmit
	// SiteHistorianDrain: the historian's drain into the Config DB.
	SiteHistorianDrain

	// numSites: new sites (forwarded requests, the floating address) go
	// above this line.
	numSites
)

// Sites lists every site.
func Sites() []Site {
	out := make([]Site, 0, numSites)
	for s := range numSites {
		out = append(out, s)
	}
	return out
}

func (s Site) String() string {
	switch s {
	case SiteWrite:
		return "write"
	case SiteAck:
		return "ack"
	case SiteAlarmEmit:
		return "alarm-emit"
	case SiteHistorianDrain:
		return "historian-drain"
	}
	return "unknown-site"
}

// Reason says why a request was denied. String is what operators see in
// audit events and logs; Label is the metric attribute.
type Reason int

const (
	// Allowed: the request is serviced.
	Allowed Reason = iota
	// DeniedSecondary: a snapshot names this node Secondary (or it is
	// leaving the cluster).
	DeniedSecondary
	// DeniedDetached: this node has no driver role.
	DeniedDetached
	// DeniedRoleUnknown: no snapshot has named this node yet while a driver
	// peer is a member (the boot window).
	DeniedRoleUnknown
	// DeniedFenced: the elected Primary has no licence (Holding or
	// Unlicensed, see LicenceOf).
	DeniedFenced
	// DeniedNotMember: this node is not a cluster member yet and is not
	// alone by configuration: a driver peer may be the Primary.
	DeniedNotMember
	// DeniedWoken: the process woke from a pause longer than the failure
	// detector's acceptable pause and has not heard every peer of its
	// ClusterId since (package cluster/woken), whatever its role says.
	DeniedWoken
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
	case DeniedNotMember:
		return "not primary (not a cluster member yet)"
	case DeniedWoken:
		return "not primary (woken from a pause, not yet heard every peer)"
	default:
		return "primary"
	}
}

// Label is the `reason` attribute of otopcua.redundancy.primary_gate_denied
// ("" for Allowed).
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
	case DeniedNotMember:
		return "not-member"
	case DeniedWoken:
		return "woken"
	default:
		return ""
	}
}

// Input is everything a decision needs.
type Input struct {
	// Site is where the gate is asked.
	Site Site
	// Role is this node's role from the last redundancy snapshot
	// (RoleUnknown before one named it; Secondary while it leaves).
	Role Role
	// Drivers is the number of Up driver members of this node's
	// ClusterId, this node counted while it is Joining or WeaklyUp; 0
	// before it is a member.
	Drivers int
	// Member: this node is a member of the cluster (Joining, WeaklyUp or
	// Up in the membership it sees).
	Member bool
	// Alone: this node is alone by configuration — a single-node set, no
	// OpcUa:PeerApplicationUris and no Cluster:SeedNodes but its own
	// address, or no cluster at all — so no driver peer can exist.
	Alone bool
	// Licence is the Primary's licence (LicenceOf); only the Primary's
	// rows read it.
	Licence Licence
	// Woken: the process woke from a pause longer than the failure
	// detector's acceptable pause and has not heard every peer of its
	// ClusterId since (never true for a node alone by configuration).
	Woken bool
	// Epoch is the redundancy epoch of the snapshot that set Role.
	Epoch uint64
}

// Decision is the gate's verdict.
type Decision struct {
	Allow  bool
	Reason Reason
	// Epoch fences what is serviced: Input.Epoch when allowed, 0 when
	// denied.
	Epoch uint64
}

// Decide is the Primary gate. Its table is the package doc's; the table
// test reads it from there.
func Decide(in Input) Decision {
	if r := reasonOf(in); r != Allowed {
		return Decision{Reason: r}
	}
	return Decision{Allow: true, Reason: Allowed, Epoch: in.Epoch}
}

func reasonOf(in Input) Reason {
	if in.Woken {
		return DeniedWoken
	}
	switch in.Role {
	case RolePrimary:
		if in.Licence != Licensed {
			return DeniedFenced
		}
		return Allowed
	case RoleFencedPrimary:
		return DeniedFenced
	case RoleSecondary:
		return DeniedSecondary
	case RoleDetached:
		return DeniedDetached
	}
	switch {
	case !in.Member && !in.Alone:
		return DeniedNotMember
	case in.Member && in.Drivers >= 2:
		return DeniedRoleUnknown
	}
	return Allowed
}
