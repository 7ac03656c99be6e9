package redundancy

import (
	"testing"
	"time"

	m "github.com/otopcua/otopcua/cluster/membership"
	sl "github.com/otopcua/otopcua/redundancy/servicelevel"
)

// TestObservedInputs: how a driver node turns what it gathered into the
// calculator's inputs, and the level that results.
func TestObservedInputs(t *testing.T) {
	now := tEpoch.Add(time.Hour)
	self := m.UniqueAddress{Host: "10.0.0.2", Port: 4053, UID: 7}
	peer := member("10.0.0.1", 4053, 1, m.Up, 2, "pair", "admin", "driver")
	state := func(st m.Status, roles ...string) m.State {
		me := m.NewMember(self, roles, "pair")
		me.Status = st
		me.UpNumber = 1
		return m.State{Self: self, Gossip: m.NewGossip(me, peer)}
	}
	up := state(m.Up, "admin", "driver")
	db := DbStatus{Reachable: true, AsOf: now.Add(-3 * time.Second)}
	primary := Entry{NodeID: self.NodeID(), UID: 7, Role: RolePrimary, IsDriverPrimary: true}
	secondary := Entry{NodeID: self.NodeID(), UID: 7, Role: RoleSecondary}
	recent := now.Add(-2 * time.Second)
	healthy := func() Observed {
		return Observed{Self: self, Members: up, Db: db, DbKnown: true, Entry: primary, EntryAt: recent, Probes: map[string]ProbeSeen{}}
	}
	tests := []struct {
		name   string
		obs    func() Observed
		level  byte
		detail func(in sl.Inputs) bool
	}{
		{"healthy Primary", healthy, 250, func(in sl.Inputs) bool { return in.Status == sl.MemberUp && in.IsDriverPrimary }},
		{"healthy Secondary", func() Observed { o := healthy(); o.Entry = secondary; return o }, 240, nil},
		{"not a member yet: configured roles, level 0", func() Observed {
			o := healthy()
			o.Members = m.State{Self: self}
			o.ConfiguredRoles = []string{"driver"}
			return o
		}, 0, func(in sl.Inputs) bool { return in.Status == sl.MemberNone && in.HasDriverRole }},
		{"member without driver role", func() Observed { o := healthy(); o.Members = state(m.Up, "admin"); return o }, 0,
			func(in sl.Inputs) bool { return !in.HasDriverRole }},
		{"Leaving", func() Observed { o := healthy(); o.Members = state(m.Leaving, "driver"); return o }, 0, nil},
		{"a previous incarnation's membership entry is not this node", func() Observed {
			o := healthy()
			o.Self.UID = 8
			o.Members.Self = o.Self
			return o
		}, 0, func(in sl.Inputs) bool { return in.Status == sl.MemberNone }},
		{"DB probe absent: legacy mapping (Primary, not role leader)", func() Observed { o := healthy(); o.DbKnown = false; return o }, 200,
			func(in sl.Inputs) bool { return !in.DbHealthKnown && !in.DbReachable && !in.IsDriverRoleLeader }},
		{"DB unreachable: 100", func() Observed { o := healthy(); o.Db.Reachable = false; return o }, 100, nil},
		{"DB verdict older than 30 s: stale, 200", func() Observed { o := healthy(); o.Db.AsOf = now.Add(-31 * time.Second); return o }, 200, nil},
		{"no snapshot ever named this node: stale, 200", func() Observed { o := healthy(); o.EntryAt = time.Time{}; return o }, 200,
			func(in sl.Inputs) bool { return !in.IsDriverPrimary }},
		{"snapshot older than 30 s: stale, 200", func() Observed { o := healthy(); o.EntryAt = now.Add(-31 * time.Second); return o }, 200, nil},
		{"recent failed probe: 200", func() Observed {
			o := healthy()
			o.Probes["10.0.0.1:4053"] = ProbeSeen{Ok: false, At: now.Add(-time.Second)}
			return o
		}, 200, func(in sl.Inputs) bool { return !in.OpcUaProbeOk }},
		{"failed probe older than 30 s: benefit of the doubt", func() Observed {
			o := healthy()
			o.Probes["10.0.0.1:4053"] = ProbeSeen{Ok: false, At: now.Add(-31 * time.Second)}
			return o
		}, 250, nil},
		{"one prober fails, another succeeds: the failure demotes", func() Observed {
			o := healthy()
			o.Probes["10.0.0.1:4053"] = ProbeSeen{Ok: true, At: now}
			o.Probes["10.0.0.3:4053"] = ProbeSeen{Ok: false, At: now}
			return o
		}, 200, nil},
		{"recent successful probe", func() Observed {
			o := healthy()
			o.Probes["10.0.0.1:4053"] = ProbeSeen{Ok: true, At: now}
			return o
		}, 250, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.obs().Inputs(now)
			if got := sl.Of(in); got != tt.level {
				t.Fatalf("level %d, want %d (inputs %+v)", got, tt.level, in)
			}
			if tt.detail != nil && !tt.detail(in) {
				t.Fatalf("inputs %+v", in)
			}
		})
	}
}

func TestIsDriverRoleLeaderAndDriverCount(t *testing.T) {
	ms := []m.Member{
		member("b", 1, 1, m.Up, 1, "x", "driver"),
		member("a", 1, 2, m.Up, 2, "x", "driver"),
		member("e", 1, 3, m.Joining, 0, "y", "driver"),
		member("c", 1, 4, m.Up, 3, "x", "admin"),
		member("d", 1, 5, m.Leaving, 4, "x", "driver"),
		member("0", 1, 6, m.Up, 5, "other", "driver"),
	}
	if isDriverRoleLeader(ms, ms[0]) || !isDriverRoleLeader(ms, ms[1]) {
		t.Fatal("the role leader is the lowest-addressed Up driver of the ClusterId")
	}
	if isDriverRoleLeader(ms, ms[3]) {
		t.Fatal("a member without driver is never role leader")
	}
	if got := CountDriverMembers(ms, "x"); got != 2 {
		t.Fatalf("driver members of x = %d, want 2 (Up with driver only)", got)
	}
	if got := CountDriverMembers(ms, "none"); got != 0 {
		t.Fatalf("driver members of an empty ClusterId = %d", got)
	}
}
