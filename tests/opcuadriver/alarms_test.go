package opcuadriver_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// upstreamAlarm is the alarm's name on our side: "<device>/<upstream
// ConditionId>" (alarms.UpstreamName), also its condition's NodeId.
const upstreamAlarm = "up/ns=2;s=TankHigh"

// TestUpstreamAlarmsOnAPair: a pair (OpcUa:WriteMode forward) mirrors an
// upstream whose AlarmConditionType condition the test raises and clears.
// Our condition follows it on both nodes (events on our Server object,
// ConditionRefresh); an Acknowledge through the Primary, and one through
// the Secondary (forwarded), each land upstream exactly once and come back
// as the acknowledged state; alarm_history holds each transition once; a
// restart of the upstream (its ConditionRefresh lists the same state)
// adds no row, and an acknowledgement after it reaches the new process
// with its new EventId.
func TestUpstreamAlarmsOnAPair(t *testing.T) {
	start := time.Now()
	opts := map[string]any{"vars": 1, "periodMs": 500, "alarm": map[string]any{}}
	up := nodescript.StartUpstream(t, opts)
	t.Logf("%v: upstream started", time.Since(start).Round(time.Millisecond))
	a, b, cfgA := startPair(t, "forward")
	procs.Deploy(t, cfgA, doc(alarmDevice(up.URL)))
	a.WaitDeployed(1)
	b.WaitDeployed(1)
	ca, cb := connect(t, a.Endpoint()), connect(t, b.Endpoint())
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if la, lb := ca.level(), cb.level(); la != 250 || lb != 240 {
			return fmt.Errorf("ServiceLevel a=%d b=%d, want 250 and 240", la, lb)
		}
		return nil
	})
	ns := ca.namespace()
	cond := ua.NewStringNodeID(ns, upstreamAlarm)
	for name, c := range map[string]*session{"a": ca, "b": cb} {
		procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
			if st := c.read(ua.NewStringNodeID(ns, "up/Level"))[0].Status; st != ua.StatusOK {
				return fmt.Errorf("node %s: Level %v", name, st)
			}
			return nil
		})
	}
	t.Logf("%v: pair deployed", time.Since(start).Round(time.Millisecond))
	ea, eb := ca.events(), cb.events()

	// Active upstream → active here, on both nodes.
	up.Send("alarm on")
	t.Cleanup(func() {
		if t.Failed() {
			al, _ := a.Get("/alerts")
			t.Logf("a's /alerts: %s; upstream said %v", al, up.Lines(""))
		}
	})
	last := map[string]condEvent{}
	for name, e := range map[string]*eventMonitor{"a": ea, "b": eb} {
		last[name] = e.waitFor(t, cond, func(ev condEvent) bool { return ev.active && !ev.acked })
	}
	if ev := refreshed(t, a.Endpoint(), cond); !ev.active || ev.acked || ev.source != ua.NewStringNodeID(ns, "up/Level").String() {
		t.Fatalf("a's ConditionRefresh: %+v, want active, unacknowledged, source up/Level", ev)
	}

	t.Logf("%v: active on both", time.Since(start).Round(time.Millisecond))
	// Acknowledge through the Primary: once upstream, acknowledged here.
	if st := ca.acknowledge(cond, last["a"].eventID, "via a"); st != ua.StatusOK {
		t.Fatalf("Acknowledge through the Primary: %v", st)
	}
	waitAcks(t, up, "via a", 1)
	for _, e := range []*eventMonitor{ea, eb} {
		e.waitFor(t, cond, func(ev condEvent) bool { return ev.active && ev.acked })
	}

	// Inactive, active again; Acknowledge through the Secondary: forwarded,
	// once upstream.
	up.Send("alarm off")
	for _, e := range []*eventMonitor{ea, eb} {
		e.waitFor(t, cond, func(ev condEvent) bool { return !ev.active })
	}
	up.Send("alarm on")
	for name, e := range map[string]*eventMonitor{"a": ea, "b": eb} {
		last[name] = e.waitFor(t, cond, func(ev condEvent) bool { return ev.active && !ev.acked })
	}
	if st := cb.acknowledge(cond, last["b"].eventID, "via b"); st != ua.StatusOK {
		t.Fatalf("Acknowledge through the Secondary (forward): %v", st)
	}
	waitAcks(t, up, "via b", 1)
	waitAcks(t, up, "via a", 1)
	for _, e := range []*eventMonitor{ea, eb} {
		e.waitFor(t, cond, func(ev condEvent) bool { return ev.active && ev.acked })
	}

	t.Logf("%v: acks done", time.Since(start).Round(time.Millisecond))
	// Active and unacknowledged once more; every transition in
	// alarm_history once.
	up.Send("alarm off")
	up.Send("alarm on")
	last["a"] = ea.waitFor(t, cond, func(ev condEvent) bool { return ev.active && !ev.acked })
	want := []string{"active", "acked", "inactive", "active", "acked", "inactive", "active"}
	checkHistory(t, cfgA, want)

	t.Logf("%v: history checked", time.Since(start).Round(time.Millisecond))
	// The upstream restarts with the alarm active: its ConditionRefresh
	// says what we hold; no row. The next ack carries its new EventId.
	opts["alarm"] = map[string]any{"active": true}
	up.Kill()
	up.Restart()
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		if c := strings.Count(a.Log(), "upstream connected"); c < 2 {
			return fmt.Errorf("a connected to the upstream %d times, want 2", c)
		}
		return nil
	})
	t.Logf("%v: upstream restarted", time.Since(start).Round(time.Millisecond))
	var ev condEvent
	procs.CheckFor(t, 10*time.Second, 200*time.Millisecond, func() error {
		ev = refreshed(t, a.Endpoint(), cond)
		if !ev.active || ev.acked {
			return fmt.Errorf("a's condition after the upstream restart: %+v", ev)
		}
		if st := ca.acknowledge(cond, ev.eventID, "after restart"); st != ua.StatusOK {
			return fmt.Errorf("Acknowledge after the upstream restart: %v", st)
		}
		return nil
	})
	waitAcks(t, up, "after restart", 1)
	checkHistory(t, cfgA, append(want, "acked"))
	t.Logf("upstream alarms on a pair: %v", time.Since(start).Round(time.Millisecond))
}

// alarmDevice is an opcua device mirroring the upstream's Level and its
// conditions.
func alarmDevice(url string) string {
	return fmt.Sprintf(`{"name": "up", "driver": "opcua", "endpoint": %q, "publishingInterval": "100ms", "timeout": "1s", "alarms": true, "tags": [
		{"name": "Level", "nodeId": "ns=2;s=Level", "type": "float64"}]}`, url)
}

// waitAcks waits until the upstream printed exactly n acknowledgements
// with comment (each of one EventId), and that it stays n.
func waitAcks(t *testing.T, up *nodescript.Upstream, comment string, n int) {
	t.Helper()
	count := func() (int, map[string]int) {
		per := map[string]int{}
		c := 0
		for _, l := range up.Lines("ack ") {
			f := strings.SplitN(l, " ", 3)
			if len(f) == 3 && f[2] == comment {
				c++
				per[f[1]]++
			}
		}
		return c, per
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if c, _ := count(); c < n {
			return fmt.Errorf("upstream acknowledgements %q: %d, want %d", comment, c, n)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if c, per := count(); c != n {
		t.Fatalf("upstream acknowledgements %q: %d (per EventId %v), want %d", comment, c, per, n)
	}
}

// checkHistory waits until alarm_history holds the upstream alarm's
// transitions of kinds want, in order, each TransitionID once, and that no
// more come for a second.
func checkHistory(t *testing.T, cfg map[string]any, want []string) {
	t.Helper()
	conn := cfg["ConfigDb"].(map[string]any)["ConnectionString"].(string)
	read := func() ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		db, err := configdb.Open(ctx, "sqlite", conn)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		rows, err := db.AlarmHistory(ctx, clusterID, time.Time{}, time.Now().Add(time.Hour), 1000, false)
		if err != nil {
			return nil, err
		}
		var kinds []string
		seen := map[string]bool{}
		for _, r := range rows {
			if r.Alarm != upstreamAlarm {
				continue
			}
			if seen[r.TransitionID] {
				return nil, fmt.Errorf("transition %s twice", r.TransitionID)
			}
			seen[r.TransitionID] = true
			kinds = append(kinds, r.Kind)
		}
		return kinds, nil
	}
	same := func(got []string) error {
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("alarm_history %v, want %v", got, want)
		}
		return nil
	}
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		got, err := read()
		if err != nil {
			return err
		}
		return same(got)
	})
	time.Sleep(time.Second)
	got, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if err := same(got); err != nil {
		t.Fatal(err)
	}
}

// condEvent is one condition event our client received.
type condEvent struct {
	condition, source, eventType string
	eventID                      []byte
	active, acked                bool
}

// Select clauses of eventMonitor's item.
const (
	selEventID = iota
	selCondition
	selSource
	selActive
	selAcked
	selEventType
)

func conditionFilter() *ua.EventFilter {
	op := func(typ uint32, attr ua.AttributeID, path ...string) *ua.SimpleAttributeOperand {
		bp := []*ua.QualifiedName{}
		for _, p := range path {
			bp = append(bp, &ua.QualifiedName{Name: p})
		}
		return &ua.SimpleAttributeOperand{TypeDefinitionID: ua.NewNumericNodeID(0, typ), BrowsePath: bp, AttributeID: attr}
	}
	v := ua.AttributeIDValue
	return &ua.EventFilter{SelectClauses: []*ua.SimpleAttributeOperand{
		op(id.BaseEventType, v, "EventId"),
		op(id.ConditionType, ua.AttributeIDNodeID),
		op(id.BaseEventType, v, "SourceNode"),
		op(id.AlarmConditionType, v, "ActiveState", "Id"),
		op(id.AcknowledgeableConditionType, v, "AckedState", "Id"),
		op(id.BaseEventType, v, "EventType"),
	}, WhereClause: &ua.ContentFilter{}}
}

func eventOf(f []*ua.Variant) condEvent {
	var ev condEvent
	if len(f) < 6 {
		return ev
	}
	if n, ok := f[selCondition].Value().(*ua.NodeID); ok && n != nil {
		ev.condition = n.String()
	}
	if n, ok := f[selSource].Value().(*ua.NodeID); ok && n != nil {
		ev.source = n.String()
	}
	if n, ok := f[selEventType].Value().(*ua.NodeID); ok && n != nil {
		ev.eventType = n.String()
	}
	ev.eventID, _ = f[selEventID].Value().([]byte)
	ev.active, _ = f[selActive].Value().(bool)
	ev.acked, _ = f[selAcked].Value().(bool)
	return ev
}

// eventMonitor is a subscription on our node's Server object with one
// event item (conditionFilter); a goroutine publishes and collects the
// events.
type eventMonitor struct {
	c    *session
	id   uint32
	mu   sync.Mutex
	evs  []condEvent // not yet taken by waitFor
	seen []condEvent // every event
	err  error
}

func (c *session) events() *eventMonitor {
	c.t.Helper()
	cs, err := c.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true})
	if err != nil {
		c.t.Fatal(err)
	}
	m := &eventMonitor{c: c, id: cs.(*ua.CreateSubscriptionResponse).SubscriptionID}
	mr, err := c.call(&ua.CreateMonitoredItemsRequest{SubscriptionID: m.id, TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{{
			ItemToMonitor:  &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, id.Server), AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 1, QueueSize: 1000, DiscardOldest: true,
				Filter: ua.NewExtensionObject(conditionFilter())},
		}}})
	if err != nil {
		c.t.Fatal(err)
	}
	if r := mr.(*ua.CreateMonitoredItemsResponse).Results[0]; r.StatusCode != ua.StatusOK {
		c.t.Fatalf("event item refused: %v", r.StatusCode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.t.Cleanup(func() { cancel(); <-done })
	go m.publishLoop(ctx, done)
	// A barrier: the item is live once a ConditionRefresh of the
	// subscription has ended on it.
	if st := c.callMethod(ua.NewNumericNodeID(0, id.ConditionType), ua.NewNumericNodeID(0, id.ConditionType_ConditionRefresh), ua.MustVariant(m.id)); st != ua.StatusOK {
		c.t.Fatalf("ConditionRefresh: %v", st)
	}
	refreshEnd := ua.NewNumericNodeID(0, id.RefreshEndEventType).String()
	m.waitFor(c.t.(*testing.T), nil, func(ev condEvent) bool { return ev.eventType == refreshEnd })
	return m
}

func (m *eventMonitor) publishLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	var acks []*ua.SubscriptionAcknowledgement
	for ctx.Err() == nil {
		resp, err := m.c.ch.Call(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks}, m.c.s.Auth(), 10*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				m.mu.Lock()
				m.err = err
				m.mu.Unlock()
			}
			return
		}
		pr := resp.(*ua.PublishResponse)
		acks = nil
		if pr.NotificationMessage == nil {
			continue
		}
		if len(pr.NotificationMessage.NotificationData) > 0 {
			acks = []*ua.SubscriptionAcknowledgement{{SubscriptionID: pr.SubscriptionID, SequenceNumber: pr.NotificationMessage.SequenceNumber}}
		}
		m.mu.Lock()
		for _, eo := range pr.NotificationMessage.NotificationData {
			if el, ok := eo.Value.(*ua.EventNotificationList); ok {
				for _, e := range el.Events {
					m.evs = append(m.evs, eventOf(e.EventFields))
					m.seen = append(m.seen, eventOf(e.EventFields))
				}
			}
		}
		m.mu.Unlock()
	}
}

// waitFor waits for an event of condition cond that ok accepts and
// returns it; the events before it are dropped.
func (m *eventMonitor) waitFor(t *testing.T, cond *ua.NodeID, ok func(condEvent) bool) condEvent {
	t.Helper()
	var found condEvent
	procs.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.err != nil {
			return fmt.Errorf("Publish: %v", m.err)
		}
		for i, ev := range m.evs {
			if (cond == nil || ev.condition == cond.String()) && ok(ev) {
				found = ev
				m.evs = m.evs[i+1:]
				return nil
			}
		}
		return fmt.Errorf("no matching event of %s among %d", cond, len(m.evs))
	})
	return found
}

// refreshed is the state of cond in a ConditionRefresh on a subscription
// of a new session on endpoint (events() refreshes it; a session of its
// own, since Publish answers for any subscription of its session); zero
// when it is not listed.
func refreshed(t *testing.T, endpoint string, cond *ua.NodeID) condEvent {
	t.Helper()
	m := connect(t, endpoint).events()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out condEvent
	for _, ev := range m.seen {
		if ev.condition == cond.String() {
			out = ev
		}
	}
	return out
}

// acknowledge calls Acknowledge on our condition.
func (c *session) acknowledge(cond *ua.NodeID, eventID []byte, comment string) ua.StatusCode {
	c.t.Helper()
	c.t.Logf("Acknowledge %s EventId %s %q", cond, hex.EncodeToString(eventID), comment)
	return c.callMethod(cond, ua.NewNumericNodeID(0, id.AcknowledgeableConditionType_Acknowledge),
		ua.MustVariant(eventID), ua.MustVariant(&ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: comment}))
}

func (c *session) callMethod(obj, method *ua.NodeID, args ...*ua.Variant) ua.StatusCode {
	c.t.Helper()
	resp, err := c.call(&ua.CallRequest{MethodsToCall: []*ua.CallMethodRequest{{ObjectID: obj, MethodID: method, InputArguments: args}}})
	if err != nil {
		c.t.Fatalf("Call: %v", err)
	}
	return resp.(*ua.CallResponse).Results[0].StatusCode
}

var _ = filepath.Join
