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
	"licence Holding", "licence Unlicensed", "licence Licensed", "woken", "devices off", "devices even", "devices lost",
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
		{"devices off", "healthy Primary", func(in *Inputs) { primary(in); in.Devices = DevicesFine }, 250},
		{"devices off", "counts ignored: Primary reaches 0 of 4, its peer 4", func(in *Inputs) {
			primary(in)
			in.Devices = DeviceHealth{Reached: 0, Total: 4, PeerReached: 4}
		}, 250},
		{"devices even", "both reach every device", func(in *Inputs) { primary(in); in.Devices = rated(4, 4, 4) }, 250},
		{"devices even", "both lost the same device: nobody moves", func(in *Inputs) { primary(in); in.Devices = rated(3, 4, 3) }, 250},
		{"devices even", "Secondary reaches more than the Primary: unchanged", func(in *Inputs) { in.Devices = rated(4, 4, 2) }, 240},
		{"devices even", "no peer known", func(in *Inputs) { primary(in); in.Devices = rated(0, 4, 0) }, 250},
		{"devices even", "no devices deployed", func(in *Inputs) { primary(in); in.Devices = rated(0, 0, 0) }, 250},
		{"devices lost", "Primary lost its only device", func(in *Inputs) { primary(in); in.Devices = rated(0, 1, 1) }, 2},
		{"devices lost", "Primary lost 1 of 4", func(in *Inputs) { primary(in); in.Devices = rated(3, 4, 4) }, 150},
		{"devices lost", "Primary lost 2 of 4", func(in *Inputs) { primary(in); in.Devices = rated(2, 4, 4) }, 101},
		{"devices lost", "Primary lost 1 of 200", func(in *Inputs) { primary(in); in.Devices = rated(199, 200, 200) }, 199},
		{"devices lost", "Secondary lost its only device", func(in *Inputs) { in.Devices = rated(0, 1, 1) }, 2},
		{"devices lost", "Secondary lost 1 of 4", func(in *Inputs) { in.Devices = rated(3, 4, 4) }, 149},
		{"devices lost", "counts only what the peer reaches beyond it", func(in *Inputs) { primary(in); in.Devices = rated(1, 4, 3) }, 101},
		{"devices lost", "a lower level is kept", func(in *Inputs) { primary(in); in.Licence = gate.Unlicensed; in.Devices = rated(3, 4, 4) }, 100},
		{"devices lost", "a pin wins", func(in *Inputs) { primary(in); in.Pin = Pin{Hooked: true, Hook: 250}; in.Devices = rated(0, 1, 1) }, 250},
		{"devices lost", "a down node stays 0", func(in *Inputs) { in.Status = MemberLeaving; in.Devices = rated(0, 1, 1) }, 0},
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

func rated(reached, total, peer int) DeviceHealth {
	return DeviceHealth{Rated: true, Reached: reached, Total: total, PeerReached: peer}
}

// TestDeviceLevel is the formula's table: proportional to what was lost,
// inside the Degraded band (2..199), a Primary never below a Secondary
// that lost as many.
func TestDeviceLevel(t *testing.T) {
	tests := []struct {
		lost, total int
		primary     bool
		want        byte
	}{
		{0, 4, true, Unset}, {0, 4, false, Unset}, {-1, 4, true, Unset}, {1, 0, true, Unset},
		{1, 1, true, 2}, {1, 1, false, 2},
		{1, 2, true, 101}, {1, 2, false, 100},
		{1, 4, true, 150}, {3, 4, true, 52}, {4, 4, true, 2},
		{1, 4, false, 149}, {3, 4, false, 51}, {4, 4, false, 2},
		{1, 1000, true, 199}, {1, 1000, false, 198},
		{9, 4, true, 2}, // more than total: all lost
	}
	for _, tt := range tests {
		if got := DeviceLevel(tt.lost, tt.total, tt.primary); got != tt.want {
			t.Errorf("DeviceLevel(%d, %d, primary=%v) = %d, want %d", tt.lost, tt.total, tt.primary, got, tt.want)
		}
	}
	for total := 1; total <= 300; total++ {
		prevP, prevS := byte(200), byte(200)
		for lost := 1; lost <= total; lost++ {
			p, s := DeviceLevel(lost, total, true), DeviceLevel(lost, total, false)
			if p < 2 || p > 199 || s < 2 || s > 198 {
				t.Fatalf("lost %d of %d: Primary %d, Secondary %d: outside the Degraded band", lost, total, p, s)
			}
			if p < s {
				t.Fatalf("lost %d of %d: Primary %d below Secondary %d", lost, total, p, s)
			}
			if p > prevP || s > prevS {
				t.Fatalf("lost %d of %d: the level rose with the loss (%d,%d after %d,%d)", lost, total, p, s, prevP, prevS)
			}
			prevP, prevS = p, s
		}
	}
}

// TestOfDevicesOnlyLowers: for every combination of counts, the device
// rule never raises the level the reference's rows give, leaves it alone
// when the peer reaches no more, and drops it below 200 when it does.
func TestOfDevicesOnlyLowers(t *testing.T) {
	for _, isPrimary := range []bool{false, true} {
		for total := 0; total <= 5; total++ {
			for reached := 0; reached <= total; reached++ {
				for peer := 0; peer <= total; peer++ {
					in := healthy()
					if isPrimary {
						primary(&in)
					}
					base := Of(in)
					in.Devices = rated(reached, total, peer)
					got := Of(in)
					switch {
					case got > base:
						t.Fatalf("%+v raised %d to %d", in.Devices, base, got)
					case peer <= reached && got != base:
						t.Fatalf("%+v: the peer reaches no more, yet %d became %d", in.Devices, base, got)
					case peer > reached && (got >= 200 || got < 2):
						t.Fatalf("%+v: lost devices, yet %d", in.Devices, got)
					}
				}
			}
		}
	}
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
