package servicelevel

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/gate"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// healthy returns the inputs of a healthy, licensed Up driver follower at
// t0.
func healthy() Inputs {
	return Inputs{
		Now: t0, Status: MemberUp, HasDriverRole: true,
		DbHealthKnown: true, DbReachable: true, DbAsOf: t0.Add(-5 * time.Second),
		SnapshotAsOf: t0.Add(-2 * time.Second), Role: gate.RoleSecondary,
		OpcUaProbeOk: true,
	}
}

func primary(in *Inputs) { in.IsDriverPrimary = true; in.Role = gate.RolePrimary }

// tableRows are the rows of Of's doc comment, in its order, each named as
// there; TestOfTable checks that every row has at least one case.
var tableRows = []string{
	"drain pin", "test-hook pin", "down", "legacy primary-leader", "legacy primary", "legacy secondary",
	"legacy detached", "critical", "stale", "probe failed", "primary", "follower",
	"licence Holding", "licence Unlicensed", "licence Licensed", "woken", "devices fine",
}

// TestOfTable has one or more cases per row of Of's table, named by the
// row; the other inputs are those of a healthy node, so that each case
// shows the row's own condition decides.
func TestOfTable(t *testing.T) {
	tests := []struct {
		row, name string
		edit      func(*Inputs)
		want      byte
	}{
		{"drain pin", "healthy Primary drains", func(in *Inputs) { primary(in); in.Pin.Drain = true }, 0},
		{"drain pin", "wins over the test hook", func(in *Inputs) { in.Pin = Pin{Drain: true, Hooked: true, Hook: 250} }, 0},
		{"drain pin", "wins over non-membership", func(in *Inputs) { in.Status = MemberLeaving; in.Pin.Drain = true }, 0},
		{"test-hook pin", "shows its level over a healthy Primary", func(in *Inputs) { primary(in); in.Pin = Pin{Hooked: true, Hook: 123} }, 123},
		{"test-hook pin", "shows its level on a non-member", func(in *Inputs) { in.Status = MemberNone; in.Pin = Pin{Hooked: true, Hook: 240} }, 240},
		{"test-hook pin", "holds Unset before it names a level", func(in *Inputs) { in.Pin = Pin{Hooked: true, Hook: Unset} }, 255},
		{"test-hook pin", "not capped by the licence", func(in *Inputs) {
			primary(in)
			in.Licence = gate.Unlicensed
			in.Pin = Pin{Hooked: true, Hook: 250}
		}, 250},
		{"down", "weakly up is not up", func(in *Inputs) { in.Status = MemberWeaklyUp }, 0},
		{"down", "leaving Primary", func(in *Inputs) { in.Status = MemberLeaving; primary(in) }, 0},
		{"down", "exiting", func(in *Inputs) { in.Status = MemberExiting }, 0},
		{"down", "down", func(in *Inputs) { in.Status = MemberDown }, 0},
		{"down", "removed", func(in *Inputs) { in.Status = MemberRemoved }, 0},
		{"down", "not a member", func(in *Inputs) { in.Status = MemberNone }, 0},
		{"down", "detached (no driver role)", func(in *Inputs) { in.HasDriverRole = false; primary(in) }, 0},
		{"down", "legacy does not apply to a non-member", func(in *Inputs) {
			in.DbHealthKnown = false
			in.Role = gate.RolePrimary
			in.IsDriverRoleLeader = true
			in.Status = MemberLeaving
		}, 0},
		{"legacy primary-leader", "Primary and role leader", func(in *Inputs) {
			in.DbHealthKnown = false
			in.Role = gate.RolePrimary
			in.IsDriverRoleLeader = true
		}, 240},
		{"legacy primary", "Primary, not role leader", func(in *Inputs) { in.DbHealthKnown = false; in.Role = gate.RolePrimary }, 200},
		{"legacy secondary", "Secondary", func(in *Inputs) { in.DbHealthKnown = false; in.Role = gate.RoleSecondary }, 100},
		{"legacy secondary", "ignores a dead DB flag", func(in *Inputs) {
			in.DbHealthKnown = false
			in.DbReachable = false
			in.Role = gate.RoleSecondary
		}, 100},
		{"legacy detached", "Detached", func(in *Inputs) { in.DbHealthKnown = false; in.Role = gate.RoleDetached }, 0},
		{"legacy detached", "role unknown", func(in *Inputs) { in.DbHealthKnown = false; in.Role = gate.RoleUnknown }, 0},
		{"critical", "db unreachable: 100 at once", func(in *Inputs) { in.DbReachable = false }, 100},
		{"critical", "db unreachable Primary", func(in *Inputs) { in.DbReachable = false; primary(in) }, 100},
		{"critical", "no snapshot entry and db down", func(in *Inputs) { in.SnapshotAsOf = time.Time{}; in.DbReachable = false }, 100},
		{"critical", "probe failed and db down", func(in *Inputs) { in.OpcUaProbeOk = false; in.DbReachable = false }, 100},
		{"stale", "db result older than 30 s, reachable", func(in *Inputs) { in.DbAsOf = t0.Add(-31 * time.Second) }, 200},
		{"stale", "snapshot older than 30 s", func(in *Inputs) { in.SnapshotAsOf = t0.Add(-31 * time.Second); primary(in) }, 200},
		{"stale", "no snapshot entry", func(in *Inputs) { in.SnapshotAsOf = time.Time{} }, 200},
		{"probe failed", "Primary whose endpoint fails its probe", func(in *Inputs) { in.OpcUaProbeOk = false; primary(in) }, 200},
		{"primary", "healthy Primary", primary, 250},
		{"primary", "joining counts as member", func(in *Inputs) { primary(in); in.Status = MemberJoining }, 250},
		{"follower", "healthy follower", func(in *Inputs) {}, 240},
		{"follower", "db result exactly 30 s old is fresh", func(in *Inputs) { in.DbAsOf = t0.Add(-30 * time.Second) }, 240},
		{"licence Holding", "healthy Primary in its promotion hold", func(in *Inputs) { primary(in); in.Licence = gate.Holding }, 240},
		{"licence Holding", "a lower level is kept", func(in *Inputs) { primary(in); in.OpcUaProbeOk = false; in.Licence = gate.Holding }, 200},
		{"licence Holding", "legacy Primary-leader kept at 240", func(in *Inputs) {
			primary(in)
			in.DbHealthKnown = false
			in.IsDriverRoleLeader = true
			in.Licence = gate.Holding
		}, 240},
		{"licence Unlicensed", "healthy Primary without its lease", func(in *Inputs) { primary(in); in.Licence = gate.Unlicensed }, 100},
		{"licence Unlicensed", "stale Primary", func(in *Inputs) { primary(in); in.SnapshotAsOf = time.Time{}; in.Licence = gate.Unlicensed }, 100},
		{"licence Unlicensed", "a down Primary stays 0", func(in *Inputs) { primary(in); in.Status = MemberLeaving; in.Licence = gate.Unlicensed }, 0},
		{"licence Unlicensed", "a follower is not capped", func(in *Inputs) { in.Licence = gate.Unlicensed }, 240},
		{"licence Licensed", "licensed Primary", func(in *Inputs) { primary(in); in.Licence = gate.Licensed }, 250},
		{"licence Licensed", "a follower in a promotion hold is not capped", func(in *Inputs) { in.Licence = gate.Holding }, 240},
		{"woken", "healthy Primary woken from a pause", func(in *Inputs) { primary(in); in.Woken = true }, 100},
		{"woken", "healthy follower woken from a pause", func(in *Inputs) { in.Woken = true }, 100},
		{"woken", "a lower level is kept", func(in *Inputs) { in.Status = MemberLeaving; in.Woken = true }, 0},
		{"woken", "legacy Primary-leader capped", func(in *Inputs) {
			primary(in)
			in.DbHealthKnown = false
			in.IsDriverRoleLeader = true
			in.Woken = true
		}, 100},
		{"woken", "not over the drain pin", func(in *Inputs) { primary(in); in.Woken = true; in.Pin.Drain = true }, 0},
		{"woken", "the test hook keeps its level", func(in *Inputs) { in.Woken = true; in.Pin = Pin{Hooked: true, Hook: 250} }, 250},
		{"devices fine", "healthy Primary", func(in *Inputs) { primary(in); in.Devices = DevicesFine }, 250},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.row] = true
		t.Run(tt.row+"/"+tt.name, func(t *testing.T) {
			in := healthy()
			tt.edit(&in)
			if got := Of(in); got != tt.want {
				t.Fatalf("Of(%+v) = %d, want %d", in, got, tt.want)
			}
		})
	}
	for _, row := range tableRows {
		if !covered[row] {
			t.Errorf("row %q of the table has no case", row)
		}
	}
	if len(covered) != len(tableRows) {
		t.Errorf("cases name %d rows, the table has %d", len(covered), len(tableRows))
	}
}

// TestOfUnknownDeviceHealthPanics: a device-health value without a rule is
// a broken invariant, not a silent pass.
func TestOfUnknownDeviceHealthPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Of accepted a DeviceHealth it has no rule for")
		}
	}()
	in := healthy()
	in.Devices = DevicesFine + 1
	Of(in)
}

// TestOfAgainstBruteForce enumerates every combination of the boolean and
// enumerated inputs and checks Of against a brute-force restatement of the
// table.
func TestOfAgainstBruteForce(t *testing.T) {
	statuses := []MemberStatus{MemberNone, MemberJoining, MemberWeaklyUp, MemberUp, MemberLeaving, MemberExiting, MemberDown, MemberRemoved}
	ages := []time.Duration{-1, 0, 10 * time.Second, 30 * time.Second, 31 * time.Second} // -1: never
	roles := []gate.Role{gate.RoleUnknown, gate.RolePrimary, gate.RoleSecondary, gate.RoleDetached}
	licences := []gate.Licence{gate.Licensed, gate.Holding, gate.Unlicensed}
	pins := []Pin{{}, {Drain: true}, {Hooked: true, Hook: 123}, {Hooked: true, Hook: Unset}, {Drain: true, Hooked: true, Hook: 250}}
	stamp := func(age time.Duration) time.Time {
		if age < 0 {
			return time.Time{}
		}
		return t0.Add(-age)
	}
	n := 0
	for _, st := range statuses {
		for bits := range 1 << 7 {
			for _, dbAge := range ages {
				for _, snapAge := range ages {
					for _, role := range roles {
						for _, l := range licences {
							for _, pin := range pins {
								in := Inputs{
									Now: t0, Status: st, Role: role, Licence: l, Pin: pin,
									HasDriverRole:      bits&1 != 0,
									DbHealthKnown:      bits&2 != 0,
									DbReachable:        bits&4 != 0,
									IsDriverPrimary:    bits&8 != 0,
									IsDriverRoleLeader: bits&16 != 0,
									OpcUaProbeOk:       bits&32 != 0,
									Woken:              bits&64 != 0,
									DbAsOf:             stamp(dbAge),
									SnapshotAsOf:       stamp(snapAge),
								}
								if got, want := Of(in), bruteForce(in); got != want {
									t.Fatalf("%+v: got %d, brute force %d", in, got, want)
								}
								n++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("checked %d combinations", n)
}

func bruteForce(in Inputs) byte {
	if in.Pin.Drain {
		return 0
	}
	if in.Pin.Hooked {
		return in.Pin.Hook
	}
	var level byte
	member := in.Status == MemberUp || in.Status == MemberJoining
	old := func(at time.Time) bool { return at.IsZero() || in.Now.Sub(at) > 30*time.Second }
	stale := !in.DbReachable || old(in.DbAsOf) || old(in.SnapshotAsOf)
	switch {
	case !member || !in.HasDriverRole:
		level = 0
	case !in.DbHealthKnown && in.Role == gate.RolePrimary && in.IsDriverRoleLeader:
		level = 240
	case !in.DbHealthKnown && in.Role == gate.RolePrimary:
		level = 200
	case !in.DbHealthKnown && in.Role == gate.RoleSecondary:
		level = 100
	case !in.DbHealthKnown:
		level = 0
	case stale && !in.DbReachable:
		level = 100
	case stale, !in.OpcUaProbeOk:
		level = 200
	case in.IsDriverPrimary:
		level = 250
	default:
		level = 240
	}
	if in.IsDriverPrimary && in.Licence == gate.Holding && level > 240 {
		level = 240
	}
	if in.IsDriverPrimary && in.Licence == gate.Unlicensed && level > 100 {
		level = 100
	}
	if in.Woken && level > 100 {
		level = 100
	}
	return level
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

func TestIsStale(t *testing.T) {
	in := healthy()
	if IsStale(in) {
		t.Fatal("healthy inputs reported stale")
	}
	in.DbReachable = false
	if !IsStale(in) {
		t.Fatal("unreachable DB must be stale")
	}
}

// TestServiceLevelIsALeaf: the function links without the actor runtime,
// gRPC, a database driver or OPC UA, so every caller (and a later
// device-health rule) can use it as it is.
func TestServiceLevelIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/otopcua/otopcua/redundancy/servicelevel" {
		t.Fatalf("go list -deps did not list the package itself: %v", deps)
	}
	for _, d := range deps {
		// The module's own path names otopcua: look below it.
		rest := strings.TrimPrefix(d, "github.com/otopcua/otopcua/")
		for _, bad := range []string{"protoactor", "grpc", "sql", "pgx", "sqlite", "mssql", "gopcua", "opcua"} {
			if strings.Contains(rest, bad) {
				t.Errorf("servicelevel depends on %s (matches %q)", d, bad)
			}
		}
	}
}
