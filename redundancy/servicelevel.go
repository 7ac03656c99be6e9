package redundancy

import "github.com/otopcua/otopcua/gate"

import "time"

// The ServiceLevel bytes otopcua publishes (Part 5 §6.3.34 bands: 0 maintenance,
// 1–199 degraded, 200–255 healthy).
const (
	// LevelDown: the member is not Up/Joining, or it has no driver role.
	LevelDown byte = 0
	// LevelCritical: Config DB unreachable and data stale.
	LevelCritical byte = 100
	// LevelStale: data stale (or this node's OPC UA endpoint fails its peer's
	// probe) while the Config DB answers.
	LevelStale byte = 200
	// LevelFollower: healthy, not the Primary.
	LevelFollower byte = 240
	// LevelPrimary: healthy Primary.
	LevelPrimary byte = 250
	// LevelUnset is the value before anything was computed. It is never
	// the result of ComputeServiceLevel.
	LevelUnset byte = 255

	// Legacy role-only mapping, used before the first DB health reply.
	LevelLegacyPrimaryLeader byte = 240
	LevelLegacyPrimary       byte = 200
	LevelLegacySecondary     byte = 100
)

// FreshFor is how long a DB health result, a redundancy snapshot or an OPC UA
// probe result stays current.
const FreshFor = 30 * time.Second

// MemberStatus is the local member's cluster status as the calculator needs
// it. Only Up and Joining can carry a non-zero level.
type MemberStatus int

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

	// SnapshotAsOf is the asOf of this node's entry in the last redundancy
	// snapshot; zero when no snapshot has named this node.
	SnapshotAsOf time.Time
	// IsDriverPrimary: the snapshot names this node Primary of its ClusterId.
	IsDriverPrimary bool
	// Role is the snapshot's role for this node (legacy mapping only).
	Role Role
	// IsDriverRoleLeader: this node is the lowest-addressed Up driver member
	// (legacy mapping only: "primary-leader").
	IsDriverRoleLeader bool

	// OpcUaProbeOk is the effective verdict of peers probing this node's OPC
	// UA endpoint; see ProbeOk.
	OpcUaProbeOk bool
}

// Fresh reports whether something stamped asOf is still current at now.
// A zero asOf (never received) is not fresh; a future asOf is fresh.
func Fresh(asOf, now time.Time) bool {
	if asOf.IsZero() {
		return false
	}
	return now.Sub(asOf) <= FreshFor
}

// ProbeOk turns the last probe result about this node into the calculator's
// input: absent or older than FreshFor gives the benefit of the doubt (true);
// only a recent failure demotes.
func ProbeOk(have bool, ok bool, at, now time.Time) bool {
	if !have || !Fresh(at, now) {
		return true
	}
	return ok
}

// Stale is the calculator's staleness rule:
// !DbReachable || now−DbAsOf > 30 s || now−SnapshotAsOf > 30 s.
func Stale(in Inputs) bool {
	return !in.DbReachable || !Fresh(in.DbAsOf, in.Now) || !Fresh(in.SnapshotAsOf, in.Now)
}

// ComputeServiceLevel is the pure ServiceLevel calculator (truth table in
// docs/redundancy.md):
//
//	0   not Up/Joining, or no driver role
//	100 Config DB unreachable and stale
//	200 stale while the DB answers, or this node's endpoint fails its probe
//	240 healthy follower
//	250 healthy Primary
//
// Before the first DB health reply the legacy mapping applies:
// primary-leader 240, primary 200, secondary 100, detached 0.
func ComputeServiceLevel(in Inputs) byte {
	if !in.HasDriverRole || (in.Status != MemberUp && in.Status != MemberJoining) {
		return LevelDown
	}
	if !in.DbHealthKnown {
		return legacyLevel(in)
	}
	if Stale(in) {
		if !in.DbReachable {
			return LevelCritical
		}
		return LevelStale
	}
	if !in.OpcUaProbeOk {
		return LevelStale
	}
	if in.IsDriverPrimary {
		return LevelPrimary
	}
	return LevelFollower
}

func legacyLevel(in Inputs) byte {
	switch in.Role {
	case RolePrimary:
		if in.IsDriverRoleLeader {
			return LevelLegacyPrimaryLeader
		}
		return LevelLegacyPrimary
	case RoleSecondary:
		return LevelLegacySecondary
	default:
		return LevelDown
	}
}

// WithLicence caps the level of an elected Primary by its lease-majority
// licence (gate.LicenceOf): during its promotion hold it shows a
// follower's 240, without its licence (its set split and no lease) it
// drops out of the Healthy band to 100. A licensed node, and every level
// at or below the cap, is unchanged.
func WithLicence(level byte, l gate.Licence) byte {
	switch l {
	case gate.Holding:
		return min(level, LevelFollower)
	case gate.Unlicensed:
		return min(level, LevelCritical)
	}
	return level
}
