package conditions_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/conditions"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func nsid(n uint32) *ua.NodeID { return ua.NewNumericNodeID(0, n) }

// The test plant: folder press1 under Objects with the variable
// press1/Temperature, the source of the condition HighTemperature.
var (
	press1      = ua.NewStringNodeID(1, "press1")
	temperature = ua.NewStringNodeID(1, "press1/Temperature")
	highTemp    = ua.NewStringNodeID(1, "press1/HighTemperature")
	lowTemp     = ua.NewStringNodeID(1, "press1/LowTemperature")
)

func highSpec() conditions.Spec {
	return conditions.Spec{Name: "HighTemperature", NodeID: highTemp, Parent: press1, SourceNode: temperature,
		SourceName: "press1/Temperature", Severity: 700, Message: "temperature above 80 °C"}
}

func lowSpec() conditions.Spec {
	return conditions.Spec{Name: "LowTemperature", NodeID: lowTemp, Parent: press1, SourceNode: temperature,
		SourceName: "press1/Temperature", Severity: 300, Message: "temperature below 5 °C"}
}

// call is one Actions call the recorder saw.
type call struct {
	method, name, user string
	eventID            []byte
	comment            string
}

// recorder is the Actions test double: it records every call and answers
// result (Good unless set); onCall, when set, runs inside the call (an
// alarm engine raising the transition the method caused).
type recorder struct {
	mu     sync.Mutex
	calls  []call
	result ua.StatusCode
	onCall func(call)
}

func (r *recorder) record(c call) ua.StatusCode {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	res, hook := r.result, r.onCall
	r.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	return res
}

// set changes the result and the hook.
func (r *recorder) set(result ua.StatusCode, onCall func(call)) {
	r.mu.Lock()
	r.result, r.onCall = result, onCall
	r.mu.Unlock()
}

func (r *recorder) all() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) Acknowledge(name string, eventID []byte, comment ua.LocalizedText, by conditions.Caller) ua.StatusCode {
	return r.record(call{"Acknowledge", name, by.User, eventID, comment.Text})
}

func (r *recorder) Confirm(name string, eventID []byte, comment ua.LocalizedText, by conditions.Caller) ua.StatusCode {
	return r.record(call{"Confirm", name, by.User, eventID, comment.Text})
}

func (r *recorder) Enable(name string, by conditions.Caller) ua.StatusCode {
	return r.record(call{method: "Enable", name: name, user: by.User})
}

func (r *recorder) Disable(name string, by conditions.Caller) ua.StatusCode {
	return r.record(call{method: "Disable", name: name, user: by.User})
}

func (r *recorder) AddComment(name string, eventID []byte, comment ua.LocalizedText, by conditions.Caller) ua.StatusCode {
	return r.record(call{"AddComment", name, by.User, eventID, comment.Text})
}

var _ conditions.Actions = (*recorder)(nil)

// plant is a started server with the test plant and a Manager.
type plant struct {
	srv *opcua.Server
	m   *conditions.Manager
	rec *recorder
}

// startPlant starts the real server on 127.0.0.1 with a free port, builds
// the plant and defines HighTemperature.
func startPlant(t *testing.T) *plant {
	t.Helper()
	return startPlantWith(t, nil)
}

// startPlantWith is startPlant with the server's config changed by setup.
func startPlantWith(t *testing.T, setup func(*opcua.Config)) *plant {
	t.Helper()
	cfg := opcua.Config{
		ListenHost: "127.0.0.1", Port: opcua.AnyPort, PublicHostname: "127.0.0.1",
		ApplicationURI: "urn:otopcua:test:conditions",
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if setup != nil {
		setup(&cfg)
	}
	srv, err := opcua.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	as := srv.AddressSpace()
	if err := as.AddFolder(press1, "press1", "", nsid(id.ObjectsFolder)); err != nil {
		t.Fatal(err)
	}
	if _, err := as.AddVariable(temperature, "Temperature", "", press1, nsid(id.Double), 21.5, byte(ua.AccessLevelTypeCurrentRead)); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	m := conditions.NewManager(srv, rec)
	t.Cleanup(m.Close)
	if err := m.Define(highSpec()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &plant{srv: srv, m: m, rec: rec}
}

// connect opens a gopcua client session to the plant.
func (p *plant) connect(t *testing.T) *gopcua.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := gopcua.NewClient(p.srv.EndpointURL(), gopcua.SecurityMode(ua.MessageSecurityModeNone),
		gopcua.AutoReconnect(false), gopcua.RequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// field is a select clause: path below typ.
func field(typ uint32, path ...string) *ua.SimpleAttributeOperand {
	op := &ua.SimpleAttributeOperand{TypeDefinitionID: nsid(typ), AttributeID: ua.AttributeIDValue, BrowsePath: []*ua.QualifiedName{}}
	for _, p := range path {
		op.BrowsePath = append(op.BrowsePath, &ua.QualifiedName{Name: p})
	}
	return op
}

// conditionID is the select clause of the ConditionId (Part 9 §5.5.2):
// ConditionType, an empty BrowsePath, AttributeId NodeId.
func conditionID() *ua.SimpleAttributeOperand {
	return &ua.SimpleAttributeOperand{TypeDefinitionID: nsid(id.ConditionType), BrowsePath: []*ua.QualifiedName{}, AttributeID: ua.AttributeIDNodeID}
}

func ofType(typ uint32) *ua.ContentFilter {
	return &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
		FilterOperator: ua.FilterOperatorOfType,
		FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(nsid(typ))})},
	}}}
}

// eventItem is an event monitored item on notifier.
func eventItem(notifier *ua.NodeID, handle uint32, selects []*ua.SimpleAttributeOperand, where *ua.ContentFilter) *ua.MonitoredItemCreateRequest {
	if where == nil {
		where = &ua.ContentFilter{} // gopcua cannot encode a nil one
	}
	return &ua.MonitoredItemCreateRequest{
		ItemToMonitor:  &ua.ReadValueID{NodeID: notifier, AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
		MonitoringMode: ua.MonitoringModeReporting,
		RequestedParameters: &ua.MonitoringParameters{
			ClientHandle: handle, QueueSize: 100, DiscardOldest: true,
			Filter: ua.NewExtensionObject(&ua.EventFilter{SelectClauses: selects, WhereClause: where}),
		},
	}
}

// eventSub is a client subscription with event items, collecting the
// events per client handle.
type eventSub struct {
	t     *testing.T
	c     *gopcua.Client
	sub   *gopcua.Subscription
	notes chan *gopcua.PublishNotificationData
	items []uint32 // MonitoredItemIds, in the order created
	got   map[uint32][]*ua.EventFieldList
}

func subscribe(t *testing.T, c *gopcua.Client, items ...*ua.MonitoredItemCreateRequest) *eventSub {
	t.Helper()
	ctx := testCtx(t)
	notes := make(chan *gopcua.PublishNotificationData, 64)
	sub, err := c.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: 20 * time.Millisecond}, notes)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = sub.Cancel(context.Background()) })
	res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, items...)
	if err != nil {
		t.Fatalf("Monitor: %v", err)
	}
	s := &eventSub{t: t, c: c, sub: sub, notes: notes, got: map[uint32][]*ua.EventFieldList{}}
	for k, r := range res.Results {
		if r.StatusCode != ua.StatusOK {
			fr := r.FilterResult
			t.Fatalf("item %d: %v (filter result %v)", k, r.StatusCode, fr.Value)
		}
		s.items = append(s.items, r.MonitoredItemID)
	}
	return s
}

// waitFor collects events until cond holds for the events so far.
func (s *eventSub) waitFor(what string, cond func(map[uint32][]*ua.EventFieldList) bool) {
	s.t.Helper()
	ctx := testCtx(s.t)
	kick := time.NewTicker(time.Second)
	defer kick.Stop()
	for !cond(s.got) {
		select {
		case n := <-s.notes:
			if n.Error != nil {
				s.t.Fatalf("notification error: %v", n.Error)
			}
			if l, ok := n.Value.(*ua.EventNotificationList); ok {
				for _, e := range l.Events {
					s.got[e.ClientHandle] = append(s.got[e.ClientHandle], e)
				}
			}
		case <-kick.C:
			// gopcua's publish loop may stay paused after its first
			// BadNoSubscription; subscribing again resumes it.
			if _, err := s.c.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: time.Second}, make(chan *gopcua.PublishNotificationData, 1)); err != nil {
				s.t.Logf("kick: %v", err)
			}
		case <-ctx.Done():
			s.t.Fatalf("waiting for %s; got %d handles: %v", what, len(s.got), s.got)
		}
	}
}

// count is a waitFor condition: handle h has at least n events.
func count(h uint32, n int) func(map[uint32][]*ua.EventFieldList) bool {
	return func(g map[uint32][]*ua.EventFieldList) bool { return len(g[h]) >= n }
}
