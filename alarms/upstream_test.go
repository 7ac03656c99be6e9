package alarms

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/gate"
)

// upMethods records the methods the engine sends upstream.
type upMethods struct {
	mu    sync.Mutex
	calls []string
	st    ua.StatusCode
}

func (u *upMethods) AckCondition(device, id string, confirm bool, comment string) ua.StatusCode {
	u.mu.Lock()
	defer u.mu.Unlock()
	m := "ack"
	if confirm {
		m = "confirm"
	}
	u.calls = append(u.calls, m+" "+device+" "+id+" "+comment)
	return u.st
}

func (u *upMethods) got() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.calls...)
}

// upDoc is pressDoc's document with an opcua device "up" mirroring its
// upstream's conditions (alarms) or not.
func upDoc(t *testing.T, alarms bool) *deployment.Document {
	t.Helper()
	doc := pressDoc(t, "High", hot)
	dev := deployment.Device{Name: "up", Driver: deployment.DriverOPCUA, Endpoint: "opc.tcp://127.0.0.1:4840",
		Tags: []deployment.Tag{{Name: "Level", NodeId: "ns=1;s=Level", Type: deployment.TypeFloat64}}}
	if alarms {
		dev.Alarms = &deployment.UpstreamAlarms{}
	}
	doc.Devices = append(doc.Devices, dev)
	return doc
}

const tankHigh = "ns=1;s=TankHigh"

func cond(active, acked bool) drivers.UpstreamCondition {
	return drivers.UpstreamCondition{ID: tankHigh, Name: "TankHigh", Tag: "Level", SourceName: "Level",
		Active: active, Acked: acked, Confirmed: true, Enabled: true, Retain: active || !acked,
		Severity: 800, Message: "tank high", Time: time.Unix(1700000000, 0), EventID: []byte{byte(len(tankHigh))}}
}

func upEvent(c drivers.UpstreamCondition) drivers.ConditionUpdate {
	return drivers.ConditionUpdate{Device: "up", Conditions: []drivers.UpstreamCondition{c}}
}

func refresh(cs ...drivers.UpstreamCondition) drivers.ConditionUpdate {
	return drivers.ConditionUpdate{Device: "up", Refresh: true, Conditions: cs}
}

// upPair is pair with the opcua device applied and the upstream methods
// recorded.
func upPair(t *testing.T) (p, s *node, up *upMethods, clock *clockwork.FakeClock) {
	up = &upMethods{st: ua.StatusOK}
	p, s, _, clock = pair(t, func(o *Options) { o.Upstream = up })
	for _, n := range []*node{p, s} {
		if err := n.e.Apply(upDoc(t, true)); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, p, s)
	return p, s, up, clock
}

func both(t *testing.T, u drivers.ConditionUpdate, nodes ...*node) {
	t.Helper()
	for _, n := range nodes {
		n.e.Upstream(u)
		settle(t, nodes...)
	}
}

func TestUpstreamConditionTransitionsOnce(t *testing.T) {
	p, s, up, _ := upPair(t)
	name := UpstreamName("up", tankHigh)
	if name != "up/ns=1;s=TankHigh" {
		t.Fatalf("name %q", name)
	}
	both(t, refresh(), s, p) // the upstream retains nothing
	both(t, upEvent(cond(true, false)), s, p)
	both(t, upEvent(cond(true, true)), p, s)
	both(t, upEvent(cond(false, true)), s, p)
	want := []string{"active@p", "acked@p", "inactive@p"}
	for _, n := range []*node{p, s} {
		if got := kinds(n.transitions()); !slices.Equal(got, want) {
			t.Fatalf("%s received %v, want %v", n.name, got, want)
		}
		st, ok := n.e.State(name)
		if !ok || st.Active || !st.Acked || st.Retain || st.Severity != 800 || st.Message != "tank high" {
			t.Fatalf("%s state %+v", n.name, st)
		}
	}
	tr := p.transitions()[0]
	if tr.Alarm != name || tr.Source != "up/Level" || !tr.Active || tr.Acked {
		t.Fatalf("transition %+v", tr)
	}
	if got := up.got(); len(got) != 0 {
		t.Fatalf("upstream methods %v", got)
	}
}

func TestUpstreamAcknowledgeGoesUpstreamFromThePrimary(t *testing.T) {
	p, s, up, _ := upPair(t)
	name := UpstreamName("up", tankHigh)
	both(t, upEvent(cond(true, false)), p, s)
	if st := s.e.Acknowledge(name, nil, "seen", "alice"); st != ua.StatusBadInvalidState {
		t.Fatalf("ack on the secondary: %v", st)
	}
	pst, _ := p.e.State(name)
	if st := p.e.Acknowledge(name, pst.LastEventID, "seen", "alice"); st != ua.StatusOK {
		t.Fatalf("ack on the primary: %v", st)
	}
	if st := p.e.Confirm(name, nil, "done", "alice"); st != ua.StatusOK {
		t.Fatalf("confirm on the primary: %v", st)
	}
	if st := p.e.Disable(name, nil, "", "alice"); st != ua.StatusBadNotSupported {
		t.Fatalf("disable: %v", st)
	}
	if got, want := up.got(), []string{"ack up " + tankHigh + " seen", "confirm up " + tankHigh + " done"}; !slices.Equal(got, want) {
		t.Fatalf("upstream methods %v, want %v", got, want)
	}
	// Our state waits for the upstream's event.
	if st, _ := p.e.State(name); st.Acked {
		t.Fatal("acknowledged before the upstream said so")
	}
	up.st = ua.StatusBadConditionBranchAlreadyAcked
	if st := p.e.Acknowledge(name, nil, "", "bob"); st != ua.StatusBadConditionBranchAlreadyAcked {
		t.Fatalf("the upstream's refusal is not returned: %v", st)
	}
}

func TestUpstreamRefresh(t *testing.T) {
	p, s, _, _ := upPair(t)
	name := UpstreamName("up", tankHigh)
	// The first refresh after start: the state without a transition.
	both(t, refresh(cond(true, false)), p, s)
	for _, n := range []*node{p, s} {
		st, ok := n.e.State(name)
		if !ok || !st.Active || st.Acked || st.Change != ChangeInitial {
			t.Fatalf("%s after the first refresh: %+v", n.name, st)
		}
	}
	// The same state again (an upstream restart): nothing.
	both(t, refresh(cond(true, false)), p, s)
	if got := kinds(p.transitions()); len(got) != 0 {
		t.Fatalf("transitions %v after refreshes", got)
	}
	// A refresh that no longer lists it: inactive and acknowledged.
	both(t, refresh(), s, p)
	if got, want := kinds(s.transitions()), []string{"inactive@p"}; !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	if st, _ := s.e.State(name); st.Active || !st.Acked || st.Retain {
		t.Fatalf("after the refresh %+v", st.Condition)
	}
	// A deployment without "alarms" removes it.
	for _, n := range []*node{p, s} {
		if err := n.e.Apply(upDoc(t, false)); err != nil {
			t.Fatal(err)
		}
		if _, ok := n.e.State(name); ok {
			t.Fatalf("%s still holds the upstream alarm", n.name)
		}
	}
}

func TestUpstreamUpdateBeforeApplyIsHeld(t *testing.T) {
	p, _, _, _ := pair(t, nil)
	p.e.Upstream(upEvent(cond(true, false)))
	settle(t, p)
	name := UpstreamName("up", tankHigh)
	if _, ok := p.e.State(name); ok {
		t.Fatal("an update of a device not applied was taken")
	}
	if err := p.e.Apply(upDoc(t, true)); err != nil {
		t.Fatal(err)
	}
	if st, ok := p.e.State(name); !ok || !st.Active {
		t.Fatalf("the held update was not taken: %+v", st)
	}
}

func TestUpstreamNameOfALongConditionID(t *testing.T) {
	long := "ns=1;s=" + string(make([]byte, 200))
	n := UpstreamName("dev", long)
	if len(n) > maxUpstreamName || n != UpstreamName("dev", long) || n[:4] != "dev/" {
		t.Fatalf("name %q", n)
	}
}

// TestUpstreamPrimaryFirst: the Primary's session reports the condition
// before the Secondary's: the Secondary defines it from the transition, and
// its own later report is paired with it (no pending detection a failover
// would publish again).
func TestUpstreamPrimaryFirst(t *testing.T) {
	p, s, _, clock := upPair(t)
	name := UpstreamName("up", tankHigh)
	both(t, upEvent(cond(true, false)), p)
	settle(t, p, s)
	if _, ok := s.e.State(name); !ok {
		t.Fatal("the secondary did not define the condition from the Primary's transition")
	}
	both(t, upEvent(cond(true, false)), s)
	settle(t, p, s)
	if st, _ := s.e.State(name); !st.Active {
		t.Fatalf("secondary %+v", st.Condition)
	}
	// The Secondary takes over: it has nothing pending to publish.
	p.stop()
	s.roles.set(gate.RolePrimary, 1)
	tick(t, clock, takeover, s)
	ps := kinds(s.transitions())
	if want := []string{"active@p"}; !slices.Equal(ps, want) {
		t.Fatalf("received %v, want %v (nothing republished)", ps, want)
	}
}
