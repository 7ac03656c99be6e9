package servicelevel

import (
	"time"

	"github.com/otopcua/otopcua/gate"
)

// The ServiceLevel bytes otopcua publishes (Part 5 §6.3.34 bands: 0
// maintenance, 1–199 degraded, 200–255 healthy).
const (
	// Down: the member is not Up/Joining, it has no driver role, or it
	// drains for a manual failover.
	Down byte = 0
	// Critical: Config DB unreachable and data stale; also the cap of an
	// elected Primary without its licence.
	Critical byte = 100
	// Stale: data stale (or this node's OPC UA endpoint fails its peer's
	// probe) while the Config DB answers.
	Stale byte = 200
	// Follower: healthy, not the Primary; also the cap of a Primary in its
	// promotion hold.
	Follower byte = 240
	// Primary: healthy Primary.
	Primary byte = 250
	// Unset is Server.ServiceLevel before anything was published (the OPC
	// UA server's start value). Of returns it only for a test hook that
	// holds the level before setting one.
	Unset byte = 255

	// Legacy role-only mapping, used before the first DB health reply.
	LegacyPrimaryLeader byte = 240
	LegacyPrimary       byte = 200
	LegacySecondary     byte = 100
)

// FreshFor is how long a DB health result, a redundancy snapshot or an OPC
// UA probe result stays current.
const FreshFor = 30 * time.Second

// MemberStatus is the local member's cluster status as Of needs it. Only
// Up and Joining can carry a non-zero level.
type MemberStatus int

// The member statuses.
const (
	MemberNone MemberStatus = iota // not (yet) a member
	MemberJoining
	MemberWeaklyUp
	MemberUp
	MemberLeaving
	MemberExiting
	MemberDown
	MemberRemoved
)

// DeviceHealth is the device-health input (Redundancy:DeviceHealth): how
// many of its ClusterId's field devices this node reaches, beside the most
// that a peer of the same ClusterId reaches. Its zero value, DevicesFine,
// is the mode off (the reference's table): it changes no level.
type DeviceHealth struct {
	// Rated: Redundancy:DeviceHealth is level or failover, so the device
	// rule applies. False (off): the counts are ignored.
	Rated bool
	// Reached is how many of this node's devices are connected (not
	// degraded, drivers.Condition); Total is how many the deployment has.
	Reached, Total int
	// PeerReached is the most devices any peer of this ClusterId reaches,
	// by its latest fresh NodeStatus; 0 when no peer is known.
	PeerReached int
}

// DevicesFine is the zero DeviceHealth: device health not evaluated
// (Redundancy:DeviceHealth off). It changes no level.
var DevicesFine = DeviceHealth{}

// Lost is how many devices a peer reaches beyond this node (PeerReached −
// Reached, within 0..Total): the devices this node lost that its peer
// still reaches. Two nodes that lost the same devices lose nothing to each
// other.
func (d DeviceHealth) Lost() int {
	peer := min(d.PeerReached, d.Total)
	return max(0, peer-max(d.Reached, 0))
}

// DeviceLevel is the device rule's ceiling for a node that lost lost of
// total devices its peer still reaches, inside the Degraded band (Part 5
// §6.3.34: 1–199, "lost connection to some data sources"):
//
//	Primary    199 − ⌊197·lost/total⌋   (one of many lost: 198 or 199; all lost: 2)
//	Secondary  198 − ⌊196·lost/total⌋   (one of many lost: 197 or 198; all lost: 2)
//
// so the level falls in proportion to what was lost, never below 2 (0 and
// 1 stay with maintenance and the pins), and a degraded Primary never
// shows less than a Secondary that lost as many. lost ≤ 0 or total ≤ 0:
// no ceiling (Unset, 255).
func DeviceLevel(lost, total int, primary bool) byte {
	if lost <= 0 || total <= 0 {
		return Unset
	}
	lost = min(lost, total)
	if primary {
		return byte(199 - 197*lost/total)
	}
	return byte(198 - 196*lost/total)
}

// Pin fixes the level whatever the other inputs say. The zero value pins
// nothing.
type Pin struct {
	// Drain: a manual failover drains this node before it leaves: 0 until
	// the process ends. It wins over the test hook.
	Drain bool
	// Hooked: the test hook (POST /debug/service-level, test builds only)
	// owns the level and shows Hook; Unset until it names one.
	Hooked bool
	Hook   byte
}

// Inputs is everything the ServiceLevel depends on, gathered by the caller
// at one instant Now. The zero value is a non-member: level 0.
type Inputs struct {
	Now time.Time

	Status        MemberStatus
	HasDriverRole bool

	// DbHealthKnown is false until the first DB health reply arrives; until
	// then the legacy role-only mapping applies.
	DbHealthKnown bool
	// DbReachable is the last DB probe verdict (an Ask timeout counts as
	// false). DbAsOf is when that verdict was taken.
	DbReachable bool
	DbAsOf      time.Time

	// SnapshotAsOf is when this node's entry in the last redundancy
	// snapshot arrived; zero when no snapshot has named this node.
	SnapshotAsOf time.Time
	// IsDriverPrimary: the snapshot names this node Primary of its
	// ClusterId (the elected Primary).
	IsDriverPrimary bool
	// Role is the snapshot's role for this node (legacy mapping only).
	Role gate.Role
	// IsDriverRoleLeader: this node is the lowest-addressed Up driver member
	// (legacy mapping only: "primary-leader").
	IsDriverRoleLeader bool

	// OpcUaProbeOk is the effective verdict of peers probing this node's OPC
	// UA endpoint; see ProbeOk.
	OpcUaProbeOk bool

	// Licence is the elected Primary's lease-majority licence
	// (gate.LicenceOf); the zero value, gate.Licensed, caps nothing. It
	// counts only when IsDriverPrimary.
	Licence gate.Licence
	// Woken: the process woke from a pause longer than the failure
	// detector's acceptable pause and has not heard every peer of its
	// ClusterId since (package cluster/woken); it caps every node's level.
	Woken bool
	// Devices is the device-health input; DevicesFine (off) changes
	// nothing.
	Devices DeviceHealth
	// Pin is the drain and test-hook pin.
	Pin Pin
}

// Fresh reports whether something stamped asOf is still current at now.
// A zero asOf (never received) is not fresh; a future asOf is fresh.
func Fresh(asOf, now time.Time) bool {
	if asOf.IsZero() {
		return false
	}
	return now.Sub(asOf) <= FreshFor
}

// ProbeOk turns the last probe result about this node into Of's input:
// absent or older than FreshFor gives the benefit of the doubt (true); only
// a recent failure demotes.
func ProbeOk(have bool, ok bool, at, now time.Time) bool {
	if !have || !Fresh(at, now) {
		return true
	}
	return ok
}

// IsStale is the staleness rule:
// !DbReachable || now−DbAsOf > 30 s || now−SnapshotAsOf > 30 s.
func IsStale(in Inputs) bool {
	return !in.DbReachable || !Fresh(in.DbAsOf, in.Now) || !Fresh(in.SnapshotAsOf, in.Now)
}

// Of is the ServiceLevel of a node. The rows are tried in order; the first
// that matches decides, then the licence cap and the device-health slot
// may lower the result. The rows marked "reference" are the reference
// design's table, unchanged; the others are otopcua's.
//
//	row                 condition                                          level
//	drain pin           Pin.Drain (a manual failover drains this node)      0
//	test-hook pin       Pin.Hooked                                          Pin.Hook (Unset 255 until set)
//	down (reference)    Status not Up/Joining, or no driver role            0
//	legacy primary-leader  no DB health yet, Role Primary, role leader      240
//	legacy primary      no DB health yet, Role Primary                      200
//	legacy secondary    no DB health yet, Role Secondary                    100
//	legacy detached     no DB health yet, any other Role                    0
//	critical (reference)  stale and the Config DB unreachable               100
//	stale (reference)   stale while the Config DB answers                   200
//	probe failed        a peer's recent OPC UA probe of this node failed    200
//	primary (reference) healthy and IsDriverPrimary                         250
//	follower (reference)  healthy, not the Primary                          240
//
// Stale is IsStale: the DB unreachable, or its verdict or this node's
// snapshot entry older than FreshFor (30 s).
//
// Then, for the elected Primary only (IsDriverPrimary), whatever row
// decided below the pins:
//
//	licence Holding     promotion hold running                              at most 240
//	licence Unlicensed  set split, no lease                                 at most 100
//	licence Licensed    (and every other node)                              unchanged
//
// Then, for every node, whatever row decided below the pins:
//
//	woken               woke from a pause, not yet heard every peer         at most 100
//
// Last, device health (an extension of the reference, Redundancy:DeviceHealth
// level or failover; off, DevicesFine, changes nothing): a node whose peer
// reaches lost > 0 more of its ClusterId's total devices than it does is
// lowered to DeviceLevel(lost, total, IsDriverPrimary) when that is lower:
//
//	devices off         Devices.Rated false                                 unchanged
//	devices even        Rated, the peer reaches no more than this node      unchanged
//	devices lost        Rated, a peer reaches lost more of total            at most DeviceLevel (2..199)
//
// It only ever lowers a level the rows above computed, never raises it and
// never touches a pin. Both nodes losing the same devices move nobody.
func Of(in Inputs) byte {
	switch {
	case in.Pin.Drain:
		return Down
	case in.Pin.Hooked:
		return in.Pin.Hook
	}
	level := health(in)
	if in.IsDriverPrimary {
		level = capByLicence(level, in.Licence)
	}
	if in.Woken {
		level = min(level, Critical)
	}
	return withDevices(level, in.Devices, in.IsDriverPrimary)
}

// health is the rows from "down" to "follower".
func health(in Inputs) byte {
	if !in.HasDriverRole || (in.Status != MemberUp && in.Status != MemberJoining) {
		return Down
	}
	if !in.DbHealthKnown {
		return legacy(in)
	}
	if IsStale(in) {
		if !in.DbReachable {
			return Critical
		}
		return Stale
	}
	if !in.OpcUaProbeOk {
		return Stale
	}
	if in.IsDriverPrimary {
		return Primary
	}
	return Follower
}

// legacy is the role-only mapping before the first DB health reply.
func legacy(in Inputs) byte {
	switch in.Role {
	case gate.RolePrimary:
		if in.IsDriverRoleLeader {
			return LegacyPrimaryLeader
		}
		return LegacyPrimary
	case gate.RoleSecondary:
		return LegacySecondary
	default:
		return Down
	}
}

// capByLicence caps the elected Primary's level by its licence: a follower's
// 240 during its promotion hold, out of the Healthy band (100) without it.
func capByLicence(level byte, l gate.Licence) byte {
	switch l {
	case gate.Holding:
		return min(level, Follower)
	case gate.Unlicensed:
		return min(level, Critical)
	}
	return level
}

// withDevices is the device-health rule: the lower of level and
// DeviceLevel when Rated.
func withDevices(level byte, d DeviceHealth, primary bool) byte {
	if !d.Rated {
		return level
	}
	return min(level, DeviceLevel(d.Lost(), d.Total, primary))
}
