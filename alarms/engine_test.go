package alarms

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/gate"
)

const hot = "press1.Temperature > 80"

// takeover is how long a promoted Secondary takes to act as Primary for the
// alarms: the role check that sees the gate allow it, the takeover settle,
// and the role check after it.
const takeover = DefaultRoleCheckInterval + DefaultTakeoverSettle + DefaultRoleCheckInterval

// pair starts a Primary p and a Secondary s of one ClusterId, both
// applying doc, with Temperature 20 on both.
func pair(t *testing.T, tune func(*Options), alarms ...string) (p, s *node, b *bus, clock *clockwork.FakeClock) {
	t.Helper()
	if len(alarms) == 0 {
		alarms = []string{"High", hot}
	}
	b, clock = &bus{}, clockwork.NewFakeClock()
	p = startNode(t, "p", b, clock, newRoles(gate.RolePrimary, 2), tune)
	s = startNode(t, "s", b, clock, newRoles(gate.RoleSecondary, 2), tune)
	doc := pressDoc(t, alarms...)
	for _, n := range []*node{p, s} {
		for _, k := range []string{"press1/Temperature", "press1/Setpoint", "press1/Zero"} {
			n.vals.set(k, 20.0, ua.StatusOK)
		}
		n.vals.set("press1/Run", false, ua.StatusOK)
		if err := n.e.Apply(doc); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, p, s)
	return p, s, b, clock
}

// setBoth gives both nodes the same reading.
func setBoth(t *testing.T, key string, v any, nodes ...*node) {
	t.Helper()
	for _, n := range nodes {
		n.vals.set(key, v, ua.StatusOK)
	}
	settle(t, nodes...)
}

// observe subscribes a third node ("observer") to the alerts topic and
// returns what it received so far, as kinds renders it.
func observe(t *testing.T, b *bus) func() []string {
	t.Helper()
	var mu sync.Mutex
	var seen []Transition
	b.port("observer").Subscribe(TopicAlerts, func(_ membership.UniqueAddress, msg proto.Message) {
		tr, err := DecodeTransition(msg)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		seen = append(seen, tr)
		mu.Unlock()
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return kinds(seen)
	}
}

func kinds(ts []Transition) []string {
	var out []string
	for _, t := range ts {
		out = append(out, string(t.Kind)+"@"+strings.Split(t.Publisher, ":")[0])
	}
	return out
}

func TestPrimaryPublishesSecondaryDoesNot(t *testing.T) {
	p, s, _, _ := pair(t, nil)
	for _, n := range []*node{p, s} {
		st, ok := n.e.State("High")
		if !ok || st.Active || st.Quality != QualityGood || st.Change != ChangeInitial {
			t.Fatalf("%s: start state %+v", n.name, st)
		}
	}
	// The Secondary reads first: it holds its detections until the
	// Primary's transitions pair them.
	setBoth(t, "press1/Temperature", 90.0, s, p)
	setBoth(t, "press1/Temperature", 20.0, s, p)
	want := []string{"active@p", "inactive@p"}
	for _, n := range []*node{p, s} {
		if got := kinds(n.transitions()); !slices.Equal(got, want) {
			t.Fatalf("%s received %v, want %v", n.name, got, want)
		}
	}
	if n := s.denied.get("alarm-emit/secondary"); n != 2 {
		t.Fatalf("secondary's emit denials %d, want 2", n)
	}
	if n := p.denied.get("alarm-emit/secondary") + p.denied.get("alarm-emit/role-unknown"); n != 0 {
		t.Fatalf("primary denied %d", n)
	}
	tr := p.transitions()[0]
	if tr.ClusterID != "site-a" || tr.Alarm != "High" || tr.Source != "press1/Temperature" || tr.Severity != 700 ||
		tr.Message != "hot" || tr.Value != "press1.Temperature=90" || !tr.Active || tr.Acked || !tr.Enabled ||
		tr.Publisher != "p:4053" || !strings.HasSuffix(tr.TransitionID, "/High/1") {
		t.Fatalf("transition %+v", tr)
	}
	// Both hold the alarm unacknowledged after it went back: retained.
	for _, n := range []*node{p, s} {
		al := n.e.Alerts()
		if len(al) != 1 || al[0].Active || al[0].Acked || al[0].Alarm != "High" || al[0].ActiveTime.IsZero() {
			t.Fatalf("%s alerts %+v", n.name, al)
		}
	}
}

func TestAcknowledgeOnlyThroughThePrimary(t *testing.T) {
	p, s, _, _ := pair(t, nil)
	setBoth(t, "press1/Temperature", 90.0, p, s)
	if st := s.e.Acknowledge("High", nil, "seen", "alice"); st != ua.StatusBadInvalidState {
		t.Fatalf("ack through the secondary: %v", st)
	}
	if s.denied.get("ack/secondary") != 1 {
		t.Fatal("the refused ack was not counted")
	}
	if st := p.e.Acknowledge("High", []byte("not an event id"), "seen", "alice"); st != ua.StatusBadEventIDUnknown {
		t.Fatalf("ack of an unknown event: %v", st)
	}
	if st := p.e.Acknowledge("Nope", nil, "", ""); st != ua.StatusBadNodeIDUnknown {
		t.Fatalf("ack of an unknown alarm: %v", st)
	}
	pst, _ := p.e.State("High")
	if st := p.e.Acknowledge("High", pst.LastEventID, "seen", "alice"); st != ua.StatusOK {
		t.Fatalf("ack through the primary: %v", st)
	}
	settle(t, p, s)
	for _, n := range []*node{p, s} {
		st, _ := n.e.State("High")
		if !st.Acked || st.Confirmed || st.Comment != "seen" || st.User != "alice" || !st.Retain {
			t.Fatalf("%s after ack: %+v", n.name, st.Condition)
		}
	}
	if st := p.e.Acknowledge("High", nil, "", "bob"); st != ua.StatusBadConditionBranchAlreadyAcked {
		t.Fatalf("second ack: %v", st)
	}
	setBoth(t, "press1/Temperature", 20.0, p, s)
	if st := p.e.Confirm("High", nil, "fixed", "bob"); st != ua.StatusOK {
		t.Fatalf("confirm: %v", st)
	}
	settle(t, p, s)
	for _, n := range []*node{p, s} {
		if al := n.e.Alerts(); len(al) != 0 {
			t.Fatalf("%s still lists %+v", n.name, al)
		}
		if st, _ := n.e.State("High"); st.Retain || !st.Confirmed || st.Comment != "fixed" {
			t.Fatalf("%s after confirm %+v", n.name, st.Condition)
		}
	}
	want := []string{"active@p", "acked@p", "inactive@p", "confirmed@p"}
	if got := kinds(s.transitions()); !slices.Equal(got, want) {
		t.Fatalf("secondary received %v, want %v", got, want)
	}
}

func TestMethodsRefusedWhileTheRoleIsUnknown(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	n := startNode(t, "n", b, clock, newRoles(gate.RoleUnknown, 2), nil)
	n.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	if err := n.e.Apply(pressDoc(t, "High", hot)); err != nil {
		t.Fatal(err)
	}
	settle(t, n)
	for i := 0; i < 2; i++ {
		if st := n.e.Acknowledge("High", nil, "", "alice"); st != ua.StatusBadInvalidState {
			t.Fatalf("ack: %v", st)
		}
	}
	// Both refusals are counted; the gate logs the site's verdict once
	// (a client repeating a refused call does not flood the log).
	if n.denied.get("ack/role-unknown") != 2 || n.log.count(`"site":"ack","role":"Unknown","drivers":2,"member":true`) != 1 {
		t.Fatalf("denials %v, log count %d", n.denied.n, n.log.count(`"site":"ack"`))
	}
}

// TestMethodsRefusedBeforeThisNodeIsAMember: a node restarted into a
// running pair that has not joined yet refuses the methods (not-member),
// as every other site of the gate does.
func TestMethodsRefusedBeforeThisNodeIsAMember(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	n := startNode(t, "n", b, clock, newRoles(gate.RoleUnknown, 0), nil)
	n.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	if err := n.e.Apply(pressDoc(t, "High", hot)); err != nil {
		t.Fatal(err)
	}
	settle(t, n)
	if st := n.e.Acknowledge("High", nil, "", "alice"); st != ua.StatusBadInvalidState {
		t.Fatalf("ack before membership: %v", st)
	}
	if n.denied.get("ack/not-member") != 1 || len(n.transitions()) != 0 {
		t.Fatalf("denials %v, transitions %v", n.denied.n, kinds(n.transitions()))
	}
}

// TestFirstEvaluation: a node's first evaluation sets the state without a
// transition — unless it is the only driver member.
func TestFirstEvaluation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		role    gate.Role
		drivers int
		want    []string
	}{
		{"pair", gate.RolePrimary, 2, nil},
		{"alone", gate.RoleUnknown, 1, []string{"active@n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clock := &bus{}, clockwork.NewFakeClock()
			n := startNode(t, "n", b, clock, newRoles(tc.role, tc.drivers), nil)
			n.vals.set("press1/Temperature", 90.0, ua.StatusOK)
			if err := n.e.Apply(pressDoc(t, "High", hot)); err != nil {
				t.Fatal(err)
			}
			settle(t, n)
			if got := kinds(n.transitions()); !slices.Equal(got, tc.want) {
				t.Fatalf("published %v, want %v", got, tc.want)
			}
			if st, _ := n.e.State("High"); !st.Active || st.Acked || !st.Retain {
				t.Fatalf("state %+v", st.Condition)
			}
		})
	}
}

// TestFirstEvaluationWaitsForMembership: a node that applies its
// deployment before it is a cluster member (a restart into a running
// pair with the Config DB down boots from its cache first) neither
// publishes nor settles an alarm it finds active; once the cluster tells,
// alone it publishes the activation, in a pair it takes it as known.
func TestFirstEvaluationWaitsForMembership(t *testing.T) {
	for _, tc := range []struct {
		name    string
		role    gate.Role
		drivers int
		want    []string
	}{
		{"then alone", gate.RoleUnknown, 1, []string{"active@n"}},
		{"then in a pair", gate.RoleSecondary, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clock := &bus{}, clockwork.NewFakeClock()
			roles := newRoles(gate.RoleUnknown, 0)
			n := startNode(t, "n", b, clock, roles, nil)
			n.vals.set("press1/Temperature", 90.0, ua.StatusOK)
			if err := n.e.Apply(pressDoc(t, "High", hot)); err != nil {
				t.Fatal(err)
			}
			settle(t, n)
			tick(t, clock, DefaultRoleCheckInterval, n)
			if got := kinds(n.transitions()); len(got) != 0 {
				t.Fatalf("published %v before this node was a member", got)
			}
			if st, _ := n.e.State("High"); st.Active || st.Quality != QualityBad {
				t.Fatalf("state before membership %+v, want not evaluated yet", st.Condition)
			}
			roles.set(tc.role, tc.drivers)
			tick(t, clock, DefaultRoleCheckInterval, n)
			settle(t, n)
			if got := kinds(n.transitions()); !slices.Equal(got, tc.want) {
				t.Fatalf("published %v, want %v", got, tc.want)
			}
			if st, _ := n.e.State("High"); !st.Active || st.Quality != QualityGood {
				t.Fatalf("state after membership %+v", st.Condition)
			}
		})
	}
}

// TestFailoverPublishesExactlyTheMissing: the Primary's last alert is lost
// in flight and it dies; the Secondary, promoted, publishes exactly that
// one. A third node (an observer) sees every toggle once.
func TestFailoverPublishesExactlyTheMissing(t *testing.T) {
	p, s, b, clock := pair(t, nil)
	seen := observe(t, b)
	// Five toggles; both nodes see them all, the Secondary after the
	// Primary. The fifth alert of the Primary never leaves it.
	temps := []float64{90, 20, 90, 20, 90}
	for i, v := range temps {
		if i == len(temps)-1 {
			b.setDrop(func(from, to, topic string, _ proto.Message) bool { return from == "p" && topic == TopicAlerts })
		}
		p.vals.set("press1/Temperature", v, ua.StatusOK)
		settle(t, p, s)
		s.vals.set("press1/Temperature", v, ua.StatusOK)
		settle(t, p, s)
	}
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, takeover, s)
	want := []string{"active@p", "inactive@p", "active@p", "inactive@p", "active@s"}
	if got := seen(); !slices.Equal(got, want) {
		t.Fatalf("the cluster saw %v, want %v", got, want)
	}
	if got := kinds(s.transitions()); !slices.Equal(got, want) {
		t.Fatalf("the survivor's history saw %v, want %v", got, want)
	}
	// From now on the survivor publishes its own changes directly.
	s.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	settle(t, s)
	if got := seen(); len(got) != 6 || got[5] != "inactive@s" {
		t.Fatalf("after the failover: %v", got)
	}
	if !strings.HasSuffix(s.transitions()[5].TransitionID, "/High/2") {
		t.Fatalf("the survivor's second transition id %q", s.transitions()[5].TransitionID)
	}
}

// TestFailoverWithTheOldPrimarysAlertsLate: the Primary published its last
// three toggles, which the Secondary also detected, but its alerts reach
// the Secondary only after the Secondary became Primary (they were still
// in its pipeline when the old Primary died). The late alerts consume the
// promoted node's pending detections during the takeover settle: the
// cluster's history holds each toggle once.
func TestFailoverWithTheOldPrimarysAlertsLate(t *testing.T) {
	p, s, b, clock := pair(t, nil)
	seen := observe(t, b)
	temps := []float64{90, 20, 90, 20, 90}
	for i, v := range temps {
		if i == 2 {
			b.setHold(func(from, to, topic string, _ proto.Message) bool { return from == "p" && to == "s" })
		}
		setBoth(t, "press1/Temperature", v, s, p) // the Secondary first: it holds each one pending
	}
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, DefaultRoleCheckInterval, s) // the gate allows it: the takeover settles
	if got, want := kinds(s.transitions()), []string{"active@p", "inactive@p"}; !slices.Equal(got, want) {
		t.Fatalf("the survivor's history during the takeover settle: %v, want %v (nothing of its own)", got, want)
	}
	b.release() // the old Primary's last three alerts arrive now
	settle(t, s)
	tick(t, clock, takeover, s)
	want := []string{"active@p", "inactive@p", "active@p", "inactive@p", "active@p"}
	if got := seen(); !slices.Equal(got, want) {
		t.Fatalf("the cluster saw %v, want %v (each toggle once)", got, want)
	}
	// Acting as Primary now: its own changes go out at once.
	s.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	settle(t, s)
	if got := seen(); len(got) != 6 || got[5] != "inactive@s" {
		t.Fatalf("after the takeover: %v", got)
	}
}

// TestTakeoverWithoutAnotherPublisherIsAtOnce: a node that heard no other
// node's alarms (the first Primary of a cluster) acts at once.
func TestTakeoverWithoutAnotherPublisherIsAtOnce(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	s := startNode(t, "s", b, clock, newRoles(gate.RoleSecondary, 2), nil)
	seen := observe(t, b)
	s.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	if err := s.e.Apply(pressDoc(t, "High", hot)); err != nil {
		t.Fatal(err)
	}
	settle(t, s)
	s.vals.set("press1/Temperature", 90.0, ua.StatusOK) // held pending: it is not Primary
	settle(t, s)
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, DefaultRoleCheckInterval, s)
	if got, want := seen(), []string{"active@s"}; !slices.Equal(got, want) {
		t.Fatalf("the cluster saw %v, want %v at the first role check", got, want)
	}
}

// TestFailoverWithALaggingSecondary: the Secondary had seen only three of
// five toggles when the Primary died with its last alert lost; promoted,
// it stays silent for the fourth (the Primary published it) and publishes
// the fifth.
func TestFailoverWithALaggingSecondary(t *testing.T) {
	p, s, b, clock := pair(t, nil)
	temps := []float64{90, 20, 90, 20, 90}
	for i, v := range temps {
		if i == len(temps)-1 {
			b.setDrop(func(from, to, topic string, _ proto.Message) bool { return from == "p" })
		}
		p.vals.set("press1/Temperature", v, ua.StatusOK)
		settle(t, p, s)
		if i < 3 {
			s.vals.set("press1/Temperature", v, ua.StatusOK)
			settle(t, p, s)
		}
	}
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, takeover, s)
	if got := kinds(s.transitions()); !slices.Equal(got, []string{"active@p", "inactive@p", "active@p", "inactive@p"}) {
		t.Fatalf("before the survivor caught up: %v", got)
	}
	s.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	settle(t, s)
	s.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	settle(t, s)
	want := []string{"active@p", "inactive@p", "active@p", "inactive@p", "active@s"}
	if got := kinds(s.transitions()); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}

func TestRuntimeErrorAndBadInputMakeQualityBad(t *testing.T) {
	p, s, _, _ := pair(t, nil, "Mod", "press1.Setpoint % press1.Zero == 1", "High", hot)
	setBoth(t, "press1/Zero", 0, p, s)
	for i := 0; i < 3; i++ {
		setBoth(t, "press1/Setpoint", 5+i, p, s)
	}
	for _, n := range []*node{p, s} {
		st, _ := n.e.State("Mod")
		if st.Quality != QualityBad {
			t.Fatalf("%s: quality %v after a modulo by zero", n.name, st.Quality)
		}
		if c := n.log.count(`"alarm":"Mod","reason":"evaluation failed: runtime error: integer divide by zero`); c != 1 {
			t.Fatalf("%s logged the failure %d times, want once", n.name, c)
		}
	}
	setBoth(t, "press1/Zero", 2, p, s)
	if st, _ := p.e.State("Mod"); st.Quality != QualityGood || !st.Active {
		t.Fatalf("after Zero=2 (7 %% 2 == 1): %+v", st.Condition)
	}
	// A Bad input: the alarm keeps its state, Quality Bad, logged once.
	setBoth(t, "press1/Temperature", 90.0, p, s)
	for i := 0; i < 3; i++ {
		for _, n := range []*node{p, s} {
			n.vals.set("press1/Temperature", nil, ua.StatusBadCommunicationError)
		}
		settle(t, p, s)
	}
	for _, n := range []*node{p, s} {
		st, _ := n.e.State("High")
		if st.Quality != QualityBad || !st.Active {
			t.Fatalf("%s with a Bad input: %+v", n.name, st.Condition)
		}
		if c := n.log.count(`"alarm":"High","reason":"tag press1.Temperature is BadCommunicationError (0x80050000)"`); c != 1 {
			t.Fatalf("%s logged the Bad input %d times", n.name, c)
		}
	}
	if got := kinds(p.transitions()); !slices.Equal(got, []string{"active@p", "active@p"}) {
		t.Fatalf("transitions %v (Mod active, High active; quality changes publish none)", got)
	}
}

// TestRestartedNodeLearnsFromTheSnapshot: a node that starts while an
// alarm is active and acknowledged takes the acknowledgement from the
// Primary's next alarm-state snapshot.
func TestRestartedNodeLearnsFromTheSnapshot(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	p := startNode(t, "p", b, clock, newRoles(gate.RolePrimary, 2), nil)
	doc := pressDoc(t, "High", hot)
	p.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	if err := p.e.Apply(doc); err != nil {
		t.Fatal(err)
	}
	settle(t, p)
	p.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	settle(t, p)
	if st := p.e.Acknowledge("High", nil, "on it", "alice"); st != ua.StatusOK {
		t.Fatal(st)
	}
	s := startNode(t, "s", b, clock, newRoles(gate.RoleSecondary, 2), nil)
	s.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	if err := s.e.Apply(doc); err != nil {
		t.Fatal(err)
	}
	settle(t, p, s)
	if st, _ := s.e.State("High"); !st.Active || st.Acked {
		t.Fatalf("restarted node before the snapshot: %+v", st.Condition)
	}
	tick(t, clock, DefaultSnapshotInterval, p, s)
	st, _ := s.e.State("High")
	if !st.Active || !st.Acked || st.Comment != "on it" || st.User != "alice" || st.Change != ChangeLearned {
		t.Fatalf("restarted node after the snapshot: %+v %s", st.Condition, st.Change)
	}
	if len(s.transitions()) != 0 {
		t.Fatalf("the restarted node received %v", kinds(s.transitions()))
	}
}

func TestEnableDisableReachBothNodes(t *testing.T) {
	p, s, _, _ := pair(t, nil)
	setBoth(t, "press1/Temperature", 90.0, p, s)
	if st := s.e.Disable("High", nil, "", "op"); st != ua.StatusBadInvalidState {
		t.Fatalf("disable through the secondary: %v", st)
	}
	if st := p.e.Disable("High", nil, "", "op"); st != ua.StatusOK {
		t.Fatal(st)
	}
	settle(t, p, s)
	for _, n := range []*node{p, s} {
		if st, _ := n.e.State("High"); st.Enabled || st.Retain || len(n.e.Alerts()) != 0 {
			t.Fatalf("%s disabled: %+v", n.name, st.Condition)
		}
	}
	if st := p.e.Disable("High", nil, "", "op"); st != ua.StatusBadConditionAlreadyDisabled {
		t.Fatal(st)
	}
	if st := p.e.Acknowledge("High", nil, "", "op"); st != ua.StatusBadConditionDisabled {
		t.Fatal(st)
	}
	// Disabled alarms are not evaluated.
	setBoth(t, "press1/Temperature", 20.0, p, s)
	setBoth(t, "press1/Temperature", 95.0, p, s)
	if st := p.e.Enable("High", nil, "", "op"); st != ua.StatusOK {
		t.Fatal(st)
	}
	settle(t, p, s)
	want := []string{"active@p", "disabled@p", "enabled@p", "active@p"}
	for _, n := range []*node{p, s} {
		if got := kinds(n.transitions()); !slices.Equal(got, want) {
			t.Fatalf("%s received %v, want %v", n.name, got, want)
		}
		if st, _ := n.e.State("High"); !st.Enabled || !st.Active || st.Acked {
			t.Fatalf("%s re-enabled: %+v", n.name, st.Condition)
		}
	}
	if st := p.e.Enable("High", nil, "", "op"); st != ua.StatusBadConditionAlreadyEnabled {
		t.Fatal(st)
	}
	// The secondary holds nothing pending: a failover now publishes nothing.
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	settle(t, s)
	if st := s.e.AddComment("High", nil, "after", "bob"); st != ua.StatusOK {
		t.Fatal(st)
	}
	settle(t, s)
	if got := kinds(s.transitions()); !slices.Equal(got, append(want, "comment@s")) {
		t.Fatalf("after the failover: %v", got)
	}
}

func TestApplyChanges(t *testing.T) {
	p, s, _, _ := pair(t, nil, "High", hot, "Run", "press1.Run")
	setBoth(t, "press1/Temperature", 90.0, p, s)
	// Severity and message change: the state stays.
	doc := pressDoc(t, "High", hot, "Run", "press1.Run")
	doc.Alarms[0].Severity, doc.Alarms[0].Message = 900, "very hot"
	doc.Alarms = doc.Alarms[:1] // Run goes
	if err := p.e.Apply(doc); err != nil {
		t.Fatal(err)
	}
	settle(t, p)
	st, _ := p.e.State("High")
	if !st.Active || st.Severity != 900 || st.Message != "very hot" || st.Change != ChangeDefinition {
		t.Fatalf("after a new severity: %+v", st)
	}
	if _, ok := p.e.State("Run"); ok || p.vals.watching("press1/Run") != 0 {
		t.Fatal("the removed alarm or its watch is still there")
	}
	// A new condition starts the alarm afresh.
	doc.Alarms[0].Condition = "press1.Temperature > 95"
	if err := p.e.Apply(doc); err != nil {
		t.Fatal(err)
	}
	settle(t, p)
	if st, _ := p.e.State("High"); st.Active || st.Change != ChangeInitial {
		t.Fatalf("after a new condition: %+v %s", st.Condition, st.Change)
	}
	calls := p.sink.log()
	for _, c := range []string{"define High", "define Run", "update High defined", "update High initial", "update High active", "update High definition", "remove Run"} {
		if !slices.Contains(calls, c) {
			t.Fatalf("sink calls %v lack %q", calls, c)
		}
	}
	if p.vals.watching("press1/Temperature") != 1 {
		t.Fatalf("Temperature watched %d times", p.vals.watching("press1/Temperature"))
	}
	other := pressDoc(t)
	other.ClusterId = "site-b"
	if err := p.e.Apply(other); err == nil {
		t.Fatal("applied another ClusterId's document")
	}
}

// TestTransitionsOfOtherClusters are neither applied nor historized.
func TestTransitionsOfOtherClusters(t *testing.T) {
	p, s, b, _ := pair(t, nil)
	other := b.port("site-b-node")
	tr := Transition{ClusterID: "site-b", Alarm: "High", TransitionID: "x/High/1", Kind: KindActive, Time: time.Now(), Active: true, Publisher: "b:1"}
	if err := other.Publish(TopicAlerts, tr.Encode()); err != nil {
		t.Fatal(err)
	}
	settle(t, p, s)
	if len(s.transitions()) != 0 || len(p.transitions()) != 0 {
		t.Fatal("a transition of another ClusterId was taken")
	}
}

// TestLostMessageWhileAliveIsNotRepublished: one alert of a live Primary
// does not reach the Secondary; the Primary's next one tells the Secondary
// it was published, and a later failover publishes nothing again.
func TestLostMessageWhileAliveIsNotRepublished(t *testing.T) {
	p, s, b, clock := pair(t, nil)
	seen := observe(t, b)
	for i, v := range []float64{90, 20, 90} {
		if i == 1 {
			b.setDrop(func(from, to, topic string, _ proto.Message) bool { return to == "s" && topic == TopicAlerts })
		} else {
			b.setDrop(nil)
		}
		setBoth(t, "press1/Temperature", v, s, p) // the Secondary first: it holds each one pending
	}
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, takeover, s)
	if got, want := seen(), []string{"active@p", "inactive@p", "active@p"}; !slices.Equal(got, want) {
		t.Fatalf("the cluster saw %v, want %v", got, want)
	}
}

// TestPulseOnlyTheSecondarySawIsSettled: the Secondary sees a pulse the
// Primary's polls missed; the Primary's snapshot, with the same state,
// settles it, and a later failover does not publish it.
func TestPulseOnlyTheSecondarySawIsSettled(t *testing.T) {
	p, s, b, clock := pair(t, nil)
	seen := observe(t, b)
	s.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	settle(t, s)
	s.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	settle(t, s)
	// Two snapshots: the pending pulse is older than the TTL (10 s) at the
	// second.
	tick(t, clock, 2*DefaultSnapshotInterval+time.Second, p, s)
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, takeover, s)
	if got := seen(); len(got) != 0 {
		t.Fatalf("published %v", got)
	}
}

// TestTransitionIDsNeverRepeat: a redefined alarm goes on counting.
func TestTransitionIDsNeverRepeat(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	n := startNode(t, "n", b, clock, newRoles(gate.RolePrimary, 1), nil)
	n.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	for _, cond := range []string{hot, "press1.Temperature > 85", hot} {
		if err := n.e.Apply(pressDoc(t, "High", cond)); err != nil {
			t.Fatal(err)
		}
		settle(t, n)
		n.vals.set("press1/Temperature", 90.0, ua.StatusOK)
		settle(t, n)
		n.vals.set("press1/Temperature", 20.0, ua.StatusOK)
		settle(t, n)
	}
	ids := map[string]bool{}
	for _, tr := range n.transitions() {
		if ids[tr.TransitionID] {
			t.Fatalf("TransitionID %s twice", tr.TransitionID)
		}
		ids[tr.TransitionID] = true
	}
	if len(ids) != 6 {
		t.Fatalf("%d transitions, want 6", len(ids))
	}
}

// TestSnapshotLeavesOutUnevaluatedAlarms: a Primary that has not read an
// alarm's tags yet does not tell the others it is acknowledged.
func TestSnapshotLeavesOutUnevaluatedAlarms(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	p := startNode(t, "p", b, clock, newRoles(gate.RolePrimary, 2), nil)
	var snaps []StateSnapshot
	b.port("observer").Subscribe(TopicAlarmState, func(_ membership.UniqueAddress, msg proto.Message) {
		s, err := DecodeSnapshot(msg)
		if err != nil {
			t.Error(err)
		}
		snaps = append(snaps, s)
	})
	if err := p.e.Apply(pressDoc(t, "High", hot, "Run", "press1.Run")); err != nil {
		t.Fatal(err)
	}
	p.vals.set("press1/Temperature", 90.0, ua.StatusOK) // Run is never read
	settle(t, p)
	tick(t, clock, DefaultSnapshotInterval, p)
	if p.log.count("alarm quality Bad") != 0 {
		t.Fatal("waiting for a first reading was logged")
	}
	last := snaps[len(snaps)-1]
	if len(last.Alarms) != 1 || last.Alarms[0].Alarm != "High" || !last.Alarms[0].Active || last.Alarms[0].Acked {
		t.Fatalf("snapshot %+v", last)
	}
}

// TestFirstEvaluationTakesInARacingTransition: the Secondary's first
// evaluation already sees a change whose transition from the Primary
// arrives afterwards; that transition is not a credit against the
// Secondary's next change.
func TestFirstEvaluationTakesInARacingTransition(t *testing.T) {
	b, clock := &bus{}, clockwork.NewFakeClock()
	p := startNode(t, "p", b, clock, newRoles(gate.RolePrimary, 2), nil)
	s := startNode(t, "s", b, clock, newRoles(gate.RoleSecondary, 2), nil)
	doc := pressDoc(t, "High", hot)
	p.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	if err := p.e.Apply(doc); err != nil {
		t.Fatal(err)
	}
	s.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	if err := s.e.Apply(doc); err != nil { // first evaluation: active, silently
		t.Fatal(err)
	}
	settle(t, p, s)
	p.vals.set("press1/Temperature", 90.0, ua.StatusOK) // the Primary's "active" comes after
	settle(t, p, s)
	setBoth(t, "press1/Temperature", 20.0, p, s)
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, takeover, s)
	s.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	settle(t, s)
	want := []string{"active@p", "inactive@p", "active@s"}
	if got := kinds(s.transitions()); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}

// TestCheckEventOnTheSecondary: a Secondary checks a client's EventId
// against its own events, without the gate and without acting (a
// condition method it forwards to the Primary is checked there first).
func TestCheckEventOnTheSecondary(t *testing.T) {
	p, s, _, _ := pair(t, nil)
	setBoth(t, "press1/Temperature", 90.0, p, s)
	sst, _ := s.e.State("High")
	for _, tc := range []struct {
		name, alarm string
		id          []byte
		want        ua.StatusCode
	}{
		{"its own last event", "High", sst.LastEventID, ua.StatusOK},
		{"no event id", "High", nil, ua.StatusOK},
		{"an unknown event id", "High", []byte("not an event id"), ua.StatusBadEventIDUnknown},
		{"an unknown alarm", "Nope", nil, ua.StatusBadNodeIDUnknown},
	} {
		if st := s.e.CheckEvent(tc.alarm, tc.id); st != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, st, tc.want)
		}
	}
	if s.denied.get("ack/secondary") != 0 {
		t.Fatal("CheckEvent asked the gate")
	}
	if st, _ := s.e.State("High"); st.Acked {
		t.Fatal("CheckEvent acknowledged")
	}
}
