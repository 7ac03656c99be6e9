package redundancy

import (
	"fmt"
	"github.com/otopcua/otopcua/gate"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// healthy returns the inputs of a healthy Up driver follower at t0.
func healthy() Inputs {
	return Inputs{
		Now: t0, Status: MemberUp, HasDriverRole: true,
		DbHealthKnown: true, DbReachable: true, DbAsOf: t0.Add(-5 * time.Second),
		SnapshotAsOf: t0.Add(-2 * time.Second), Role: RoleSecondary,
		OpcUaProbeOk: true,
	}
}

func TestComputeServiceLevelTruthTable(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Inputs)
		want byte
	}{
		{"healthy follower", func(in *Inputs) {}, 240},
		{"healthy primary", func(in *Inputs) { in.IsDriverPrimary = true; in.Role = RolePrimary }, 250},
		{"joining counts as member", func(in *Inputs) { in.Status = MemberJoining }, 240},
		{"weakly up is not up", func(in *Inputs) { in.Status = MemberWeaklyUp }, 0},
		{"leaving", func(in *Inputs) { in.Status = MemberLeaving; in.IsDriverPrimary = true }, 0},
		{"exiting", func(in *Inputs) { in.Status = MemberExiting }, 0},
		{"down", func(in *Inputs) { in.Status = MemberDown }, 0},
		{"removed", func(in *Inputs) { in.Status = MemberRemoved }, 0},
		{"not a member", func(in *Inputs) { in.Status = MemberNone }, 0},
		{"detached (no driver role)", func(in *Inputs) { in.HasDriverRole = false; in.IsDriverPrimary = true }, 0},
		{"db unreachable → 100 at once", func(in *Inputs) { in.DbReachable = false }, 100},
		{"db unreachable primary → 100", func(in *Inputs) { in.DbReachable = false; in.IsDriverPrimary = true }, 100},
		{"db result older than 30 s, reachable → 200", func(in *Inputs) { in.DbAsOf = t0.Add(-31 * time.Second) }, 200},
		{"db result exactly 30 s old is fresh", func(in *Inputs) { in.DbAsOf = t0.Add(-30 * time.Second) }, 240},
		{"snapshot older than 30 s → 200", func(in *Inputs) { in.SnapshotAsOf = t0.Add(-31 * time.Second); in.IsDriverPrimary = true }, 200},
		{"no snapshot entry → 200", func(in *Inputs) { in.SnapshotAsOf = time.Time{} }, 200},
		{"stale snapshot and db down → 100", func(in *Inputs) { in.SnapshotAsOf = time.Time{}; in.DbReachable = false }, 100},
		{"probe failed → 200", func(in *Inputs) { in.OpcUaProbeOk = false; in.IsDriverPrimary = true }, 200},
		{"probe failed and db down → 100", func(in *Inputs) { in.OpcUaProbeOk = false; in.DbReachable = false }, 100},
		// Legacy fallback before the first DB health reply.
		{"legacy primary-leader", func(in *Inputs) {
			in.DbHealthKnown = false
			in.Role = RolePrimary
			in.IsDriverRoleLeader = true
		}, 240},
		{"legacy primary", func(in *Inputs) { in.DbHealthKnown = false; in.Role = RolePrimary }, 200},
		{"legacy secondary", func(in *Inputs) { in.DbHealthKnown = false; in.Role = RoleSecondary }, 100},
		{"legacy detached", func(in *Inputs) { in.DbHealthKnown = false; in.Role = RoleDetached }, 0},
		{"legacy role unknown", func(in *Inputs) { in.DbHealthKnown = false; in.Role = RoleUnknown }, 0},
		{"legacy does not apply to a non-member", func(in *Inputs) {
			in.DbHealthKnown = false
			in.Role = RolePrimary
			in.IsDriverRoleLeader = true
			in.Status = MemberLeaving
		}, 0},
		{"legacy ignores a dead DB flag", func(in *Inputs) {
			in.DbHealthKnown = false
			in.DbReachable = false
			in.Role = RoleSecondary
		}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := healthy()
			tt.edit(&in)
			if got := ComputeServiceLevel(in); got != tt.want {
				t.Fatalf("ComputeServiceLevel(%+v) = %d, want %d", in, got, tt.want)
			}
		})
	}
}

// TestComputeServiceLevelInvariants enumerates every combination of the
// boolean and enumerated inputs and checks the rules the truth table
// implies, against a brute-force restatement.
func TestComputeServiceLevelInvariants(t *testing.T) {
	statuses := []MemberStatus{MemberNone, MemberJoining, MemberWeaklyUp, MemberUp, MemberLeaving, MemberExiting, MemberDown, MemberRemoved}
	ages := []time.Duration{-1, 0, 10 * time.Second, 30 * time.Second, 31 * time.Second} // -1: never
	roles := []Role{RoleUnknown, RolePrimary, RoleSecondary, RoleDetached}
	stamp := func(age time.Duration) time.Time {
		if age < 0 {
			return time.Time{}
		}
		return t0.Add(-age)
	}
	n := 0
	for _, st := range statuses {
		for bits := 0; bits < 1<<6; bits++ {
			for _, dbAge := range ages {
				for _, snapAge := range ages {
					for _, role := range roles {
						in := Inputs{
							Now: t0, Status: st, Role: role,
							HasDriverRole:      bits&1 != 0,
							DbHealthKnown:      bits&2 != 0,
							DbReachable:        bits&4 != 0,
							IsDriverPrimary:    bits&8 != 0,
							IsDriverRoleLeader: bits&16 != 0,
							OpcUaProbeOk:       bits&32 != 0,
							DbAsOf:             stamp(dbAge),
							SnapshotAsOf:       stamp(snapAge),
						}
						got := ComputeServiceLevel(in)
						if want := bruteForce(in); got != want {
							t.Fatalf("%+v: got %d, brute force %d", in, got, want)
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("checked %d combinations", n)
}

func bruteForce(in Inputs) byte {
	member := in.Status == MemberUp || in.Status == MemberJoining
	if !member || !in.HasDriverRole {
		return 0
	}
	if !in.DbHealthKnown {
		switch {
		case in.Role == RolePrimary && in.IsDriverRoleLeader:
			return 240
		case in.Role == RolePrimary:
			return 200
		case in.Role == RoleSecondary:
			return 100
		}
		return 0
	}
	old := func(at time.Time) bool { return at.IsZero() || in.Now.Sub(at) > 30*time.Second }
	stale := !in.DbReachable || old(in.DbAsOf) || old(in.SnapshotAsOf)
	switch {
	case stale && !in.DbReachable:
		return 100
	case stale, !in.OpcUaProbeOk:
		return 200
	case in.IsDriverPrimary:
		return 250
	}
	return 240
}

func TestFreshAndProbeOk(t *testing.T) {
	tests := []struct {
		have, ok bool
		age      time.Duration
		want     bool
	}{
		{have: false, ok: false, want: true},                       // absent → benefit of the doubt
		{have: true, ok: false, age: 5 * time.Second, want: false}, // recent failure demotes
		{have: true, ok: true, age: 5 * time.Second, want: true},
		{have: true, ok: false, age: 30 * time.Second, want: false},
		{have: true, ok: false, age: 31 * time.Second, want: true},  // stale failure ignored
		{have: true, ok: false, age: -2 * time.Second, want: false}, // clock skew: future result counts
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%v/%v", tt.have, tt.ok, tt.age), func(t *testing.T) {
			if got := ProbeOk(tt.have, tt.ok, t0.Add(-tt.age), t0); got != tt.want {
				t.Fatalf("ProbeOk = %v, want %v", got, tt.want)
			}
		})
	}
	if Fresh(time.Time{}, t0) {
		t.Fatal("a zero timestamp must not be fresh")
	}
}

func TestStale(t *testing.T) {
	in := healthy()
	if Stale(in) {
		t.Fatal("healthy inputs reported stale")
	}
	in.DbReachable = false
	if !Stale(in) {
		t.Fatal("unreachable DB must be stale")
	}
}

func TestWithLicence(t *testing.T) {
	for _, tc := range []struct {
		level byte
		l     gate.Licence
		want  byte
	}{
		{LevelPrimary, gate.Licensed, LevelPrimary},
		{LevelPrimary, gate.Holding, LevelFollower},
		{LevelPrimary, gate.Unlicensed, LevelCritical},
		{LevelStale, gate.Holding, LevelStale},
		{LevelStale, gate.Unlicensed, LevelCritical},
		{LevelDown, gate.Unlicensed, LevelDown},
	} {
		if got := WithLicence(tc.level, tc.l); got != tc.want {
			t.Errorf("WithLicence(%d, %v) = %d, want %d", tc.level, tc.l, got, tc.want)
		}
	}
}
