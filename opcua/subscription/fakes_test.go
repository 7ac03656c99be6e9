package subscription

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/events"
)

// fakeSource is an address space of Variables in namespace 1 with numeric
// ids. Like a real address space it calls watchers while holding its own
// (read) lock, so an engine that called Watch's cancel with one of the
// locks the callback takes would deadlock here.
type fakeSource struct {
	// Optional hooks: beforeNotify runs with the read lock held, just before
	// the watchers of a node are called; onCancel runs when a cancel function
	// is called, before it takes the lock.
	beforeNotify func(node int)
	onCancel     func()
	beforeWatch  func() // runs before Watch takes the lock

	mu     sync.RWMutex
	nodes  map[uint32]*fakeNode
	now    func() time.Time
	reads  atomic.Int64
	nextID int
}

type fakeNode struct {
	value    atomic.Pointer[ua.DataValue]
	name     string
	watchers map[int]func(*ua.DataValue)
}

func newFakeSource(now func() time.Time, n int) *fakeSource {
	src := &fakeSource{nodes: make(map[uint32]*fakeNode), now: now}
	for i := 1; i <= n; i++ {
		n := &fakeNode{name: fmt.Sprintf("node%d", i), watchers: make(map[int]func(*ua.DataValue))}
		n.value.Store(src.dataValue(int32(0)))
		src.nodes[uint32(i)] = n
	}
	return src
}

func nodeID(i int) *ua.NodeID { return ua.NewNumericNodeID(1, uint32(i)) }

func (f *fakeSource) dataValue(v any) *ua.DataValue {
	now := f.now()
	dv := &ua.DataValue{Value: ua.MustVariant(v), SourceTimestamp: now, ServerTimestamp: now}
	dv.UpdateMask()
	return dv
}

func (f *fakeSource) node(id *ua.NodeID) *fakeNode {
	if id == nil || id.Namespace() != 1 {
		return nil
	}
	return f.nodes[id.IntID()]
}

func (f *fakeSource) Read(id *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
	f.reads.Add(1)
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := f.node(id)
	switch {
	case n == nil:
		return &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadNodeIDUnknown}
	case attr == ua.AttributeIDValue:
		return n.value.Load()
	case attr == ua.AttributeIDDisplayName:
		dv := &ua.DataValue{Value: ua.MustVariant(n.name)}
		dv.UpdateMask()
		return dv
	}
	return &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadAttributeIDInvalid}
}

func (f *fakeSource) Watch(id *ua.NodeID, fn func(*ua.DataValue)) (func(), ua.StatusCode) {
	if f.beforeWatch != nil {
		f.beforeWatch()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(id)
	if n == nil {
		return nil, ua.StatusBadNodeIDUnknown
	}
	f.nextID++
	key := f.nextID
	n.watchers[key] = fn
	return func() {
		if f.onCancel != nil {
			f.onCancel()
		}
		f.mu.Lock()
		delete(n.watchers, key)
		f.mu.Unlock()
	}, ua.StatusGood
}

// set writes a new value to node i and notifies its watchers.
func (f *fakeSource) set(i int, v any) *ua.DataValue {
	return f.setDV(i, f.dataValue(v))
}

func (f *fakeSource) setDV(i int, dv *ua.DataValue) *ua.DataValue {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := f.nodes[uint32(i)]
	n.value.Store(dv)
	if f.beforeNotify != nil {
		f.beforeNotify(i)
	}
	for _, fn := range n.watchers {
		fn(dv)
	}
	return dv
}

func (f *fakeSource) rename(i int, name string) {
	f.mu.Lock()
	f.nodes[uint32(i)].name = name
	f.mu.Unlock()
}

func (f *fakeSource) watchers() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := 0
	for _, node := range f.nodes {
		n += len(node.watchers)
	}
	return n
}

var _ Source = (*fakeSource)(nil)

// fakeSender records every response. With block set, SendResponse waits
// until block is closed: a client that stopped reading.
type fakeSender struct {
	mu    sync.Mutex
	got   []sent
	block chan struct{}
}

type sent struct {
	reqID uint32
	resp  ua.Response
}

func (s *fakeSender) SendResponse(reqID uint32, resp ua.Response) error {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	s.got = append(s.got, sent{reqID, resp})
	s.mu.Unlock()
	return nil
}

func (s *fakeSender) all() []sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sent(nil), s.got...)
}

func (s *fakeSender) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

var _ Sender = (*fakeSender)(nil)

// env is an engine on a fake clock and a fake source of 100 nodes.
type env struct {
	t     *testing.T
	e     *Engine
	clock *clockwork.FakeClock
	src   *fakeSource
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	src := newFakeSource(clock.Now, 100)
	opts.Clock = clock
	opts.Logger = slog.New(slog.DiscardHandler)
	e := New(src, opts)
	t.Cleanup(func() { closeWithin(t, e, 10*time.Second) })
	return &env{t: t, e: e, clock: clock, src: src}
}

// advance moves the fake clock, runs a scheduling pass and waits until every
// response it produced was handed to its Sender.
func (v *env) advance(d time.Duration) {
	v.t.Helper()
	v.clock.Advance(d)
	v.settle()
}

// settle runs a scheduling pass and waits for the outboxes to drain.
func (v *env) settle() {
	v.t.Helper()
	v.e.sync()
	poll.CheckFor(v.t, 10*time.Second, time.Millisecond, poll.True("responses sent", func() bool { return v.e.queued.Load() == 0 }))
}

func hdr(handle uint32) *ua.RequestHeader { return &ua.RequestHeader{RequestHandle: handle} }

type subParams struct {
	interval  float64 // ms
	keepAlive uint32
	lifetime  uint32
	maxNotif  uint32
	disabled  bool
}

func (v *env) createSub(sess SessionID, p subParams) *ua.CreateSubscriptionResponse {
	v.t.Helper()
	if p.interval == 0 {
		p.interval = 100
	}
	resp, err := v.e.CreateSubscription(sess, &ua.CreateSubscriptionRequest{
		RequestHeader:               hdr(1),
		RequestedPublishingInterval: p.interval,
		RequestedMaxKeepAliveCount:  p.keepAlive,
		RequestedLifetimeCount:      p.lifetime,
		MaxNotificationsPerPublish:  p.maxNotif,
		PublishingEnabled:           !p.disabled,
	})
	if err != nil {
		v.t.Fatalf("CreateSubscription: %v", err)
	}
	return resp
}

type itemSpec struct {
	node          int
	attr          ua.AttributeID
	mode          ua.MonitoringMode
	sampling      float64
	queue         uint32
	discardOldest bool
	filter        *ua.ExtensionObject
	handle        uint32
}

func (p itemSpec) request() *ua.MonitoredItemCreateRequest {
	if p.attr == 0 {
		p.attr = ua.AttributeIDValue
	}
	if p.mode == 0 {
		p.mode = ua.MonitoringModeReporting
	}
	if p.handle == 0 {
		p.handle = uint32(1000 + p.node)
	}
	return &ua.MonitoredItemCreateRequest{
		ItemToMonitor:  &ua.ReadValueID{NodeID: nodeID(p.node), AttributeID: p.attr},
		MonitoringMode: p.mode,
		RequestedParameters: &ua.MonitoringParameters{
			ClientHandle:     p.handle,
			SamplingInterval: p.sampling,
			QueueSize:        p.queue,
			DiscardOldest:    p.discardOldest,
			Filter:           p.filter,
		},
	}
}

func (v *env) createItems(sess SessionID, sub uint32, ttr ua.TimestampsToReturn, items ...itemSpec) []*ua.MonitoredItemCreateResult {
	v.t.Helper()
	req := &ua.CreateMonitoredItemsRequest{RequestHeader: hdr(2), SubscriptionID: sub, TimestampsToReturn: ttr}
	for _, p := range items {
		req.ItemsToCreate = append(req.ItemsToCreate, p.request())
	}
	resp, err := v.e.CreateMonitoredItems(sess, req)
	if err != nil {
		v.t.Fatalf("CreateMonitoredItems: %v", err)
	}
	return resp.Results
}

func (v *env) publish(sess SessionID, out Sender, reqID uint32, acks ...*ua.SubscriptionAcknowledgement) {
	v.e.Publish(sess, out, reqID, &ua.PublishRequest{RequestHeader: hdr(reqID), SubscriptionAcknowledgements: acks})
}

// notifications returns the data-change notifications of a response.
func notifications(t *testing.T, r ua.Response) []*ua.MonitoredItemNotification {
	t.Helper()
	pr, ok := r.(*ua.PublishResponse)
	if !ok {
		t.Fatalf("response is %T, want *ua.PublishResponse", r)
	}
	var out []*ua.MonitoredItemNotification
	for _, eo := range pr.NotificationMessage.NotificationData {
		if dcn, ok := eo.Value.(*ua.DataChangeNotification); ok {
			out = append(out, dcn.MonitoredItems...)
		}
	}
	return out
}

// values returns the int32 payloads of the notifications.
func values(t *testing.T, ns []*ua.MonitoredItemNotification) []int32 {
	t.Helper()
	out := make([]int32, len(ns))
	for i, n := range ns {
		v, ok := n.Value.Value.Value().(int32)
		if !ok {
			t.Fatalf("notification %d value %T", i, n.Value.Value.Value())
		}
		out[i] = v
	}
	return out
}

func statusChange(t *testing.T, r ua.Response) (uint32, ua.StatusCode) {
	t.Helper()
	pr, ok := r.(*ua.PublishResponse)
	if !ok {
		t.Fatalf("response is %T, want *ua.PublishResponse", r)
	}
	for _, eo := range pr.NotificationMessage.NotificationData {
		if sc, ok := eo.Value.(*ua.StatusChangeNotification); ok {
			return pr.SubscriptionID, sc.Status
		}
	}
	t.Fatalf("no StatusChangeNotification in %+v", pr.NotificationMessage)
	return 0, 0
}

func faultStatus(t *testing.T, r ua.Response) ua.StatusCode {
	t.Helper()
	f, ok := r.(*ua.ServiceFault)
	if !ok {
		t.Fatalf("response is %T, want *ua.ServiceFault", r)
	}
	return f.ResponseHeader.ServiceResult
}

// closeWithin closes e, reporting (instead of hanging) when Close does not
// return: after a deadlock the test must still end.
func closeWithin(t *testing.T, e *Engine, d time.Duration) {
	done := make(chan struct{})
	go func() { e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("Engine.Close did not return within %v", d)
	}
}

// fakeEvents is the event side of an address space (EventSource): a small
// event type hierarchy and two notifiers, the Server object (i=2253) and
// notifierNode, with objectNode an object that is no notifier. Like the
// address space it checks types and browse paths against the hierarchy,
// and, like fakeSource, it calls watchers while holding its own read lock.
type fakeEvents struct {
	now func() time.Time

	mu       sync.RWMutex
	watchers map[uint32]map[int]func(*events.Event) // by notifier (ns=1 or Server)
	nextID   int
}

// Event types of fakeEvents: the standard ones it knows and two of its
// own, pressEventType a subtype of deviceEventType.
var (
	deviceEventType = ua.NewNumericNodeID(1, 9000)
	pressEventType  = ua.NewNumericNodeID(1, 9001)
	notifierNode    = ua.NewNumericNodeID(1, 500)
	objectNode      = ua.NewNumericNodeID(1, 501)
	serverNode      = ua.NewNumericNodeID(0, id.Server)
)

type fakeType struct {
	super  *ua.NodeID
	fields []string
}

var fakeTypes = map[string]fakeType{
	events.BaseEventType.String():               {nil, []string{"EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime", "LocalTime", "Message", "Severity"}},
	events.AuditEventType.String():              {events.BaseEventType, []string{"ActionTimeStamp", "Status", "ServerId", "ClientAuditEntryId", "ClientUserId"}},
	events.AuditUpdateEventType.String():        {events.AuditEventType, nil},
	events.AuditWriteUpdateEventType.String():   {events.AuditUpdateEventType, []string{"AttributeId", "IndexRange", "OldValue", "NewValue"}},
	events.EventQueueOverflowEventType.String(): {events.BaseEventType, nil},
	deviceEventType.String():                    {events.BaseEventType, []string{"Device"}},
	pressEventType.String():                     {deviceEventType, []string{"Force"}},
}

func newFakeEvents(now func() time.Time) *fakeEvents {
	return &fakeEvents{now: now, watchers: make(map[uint32]map[int]func(*events.Event))}
}

func notifierKey(id *ua.NodeID) (uint32, bool) {
	switch {
	case events.SameNode(id, serverNode):
		return 0, true
	case events.SameNode(id, notifierNode):
		return 1, true
	}
	return 0, false
}

func (f *fakeEvents) WatchEvents(id *ua.NodeID, fn func(*events.Event)) (func(), ua.StatusCode) {
	key, ok := notifierKey(id)
	switch {
	case ok:
	case events.SameNode(id, objectNode):
		return nil, ua.StatusBadNotSupported
	case id != nil && id.Namespace() == 1 && id.IntID() >= 1 && id.IntID() <= 100:
		return nil, ua.StatusBadAttributeIDInvalid // a Variable of fakeSource
	default:
		return nil, ua.StatusBadNodeIDUnknown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	n := f.nextID
	if f.watchers[key] == nil {
		f.watchers[key] = make(map[int]func(*events.Event))
	}
	f.watchers[key][n] = fn
	return func() {
		f.mu.Lock()
		delete(f.watchers[key], n)
		f.mu.Unlock()
	}, ua.StatusGood
}

// chain returns typ and its supertypes, nearest first.
func (f *fakeEvents) chain(typ *ua.NodeID) []*ua.NodeID {
	var out []*ua.NodeID
	for t := typ; t != nil; t = fakeTypes[t.String()].super {
		if _, ok := fakeTypes[t.String()]; !ok {
			return nil
		}
		out = append(out, t)
	}
	return out
}

func (f *fakeEvents) CheckEventType(typ *ua.NodeID) ua.StatusCode {
	switch {
	case typ == nil:
		return ua.StatusBadNodeIDUnknown
	case f.chain(typ) != nil:
		return ua.StatusGood
	case typ.Namespace() == 1 && typ.IntID() <= 100:
		return ua.StatusBadTypeDefinitionInvalid // a Variable, not a type
	}
	return ua.StatusBadNodeIDUnknown
}

// CheckEventField accepts a one-element path declared by typ, a
// supertype or a subtype.
func (f *fakeEvents) CheckEventField(typ *ua.NodeID, path []*ua.QualifiedName) ua.StatusCode {
	if st := f.CheckEventType(typ); st != ua.StatusGood {
		return st
	}
	if len(path) != 1 || path[0] == nil || path[0].NamespaceIndex != 0 {
		return ua.StatusBadBrowseNameInvalid
	}
	for name, ft := range fakeTypes {
		related := false
		for _, t := range f.chain(typ) {
			related = related || t.String() == name
		}
		for _, t := range f.chain(ua.MustParseNodeID(name)) {
			related = related || events.SameNode(t, typ)
		}
		if related && slices.Contains(ft.fields, path[0].Name) {
			return ua.StatusGood
		}
	}
	return ua.StatusBadBrowseNameInvalid
}

// raise prepares ev and reports it on notifier (and on the Server, which
// sees every event), holding the read lock while the watchers run.
func (f *fakeEvents) raise(notifier *ua.NodeID, ev events.Event) *events.Event {
	p := ev.Prepare(f.now(), f.chain(ev.EventType))
	key, _ := notifierKey(notifier)
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, fn := range f.watchers[key] {
		fn(p)
	}
	if key != 0 {
		for _, fn := range f.watchers[0] {
			fn(p)
		}
	}
	return p
}

func (f *fakeEvents) count() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := 0
	for _, m := range f.watchers {
		n += len(m)
	}
	return n
}

var _ EventSource = (*fakeEvents)(nil)

// newEventEnv is newEnv with a fakeEvents as the engine's EventSource.
func newEventEnv(t *testing.T, opts Options) (*env, *fakeEvents) {
	t.Helper()
	evs := newFakeEvents(nil)
	opts.Events = evs
	v := newEnv(t, opts)
	evs.now = v.clock.Now // read by raise only, on the test's goroutine
	return v, evs
}

// Event item helpers.

// sao is a select clause: field name of events of type typ.
func sao(typ *ua.NodeID, name string) *ua.SimpleAttributeOperand {
	return &ua.SimpleAttributeOperand{TypeDefinitionID: typ, BrowsePath: []*ua.QualifiedName{{Name: name}}, AttributeID: ua.AttributeIDValue}
}

func eventFilterEO(selects []*ua.SimpleAttributeOperand, where ...*ua.ContentFilterElement) *ua.ExtensionObject {
	f := &ua.EventFilter{SelectClauses: selects}
	if len(where) > 0 {
		f.WhereClause = &ua.ContentFilter{Elements: where}
	}
	return ua.NewExtensionObject(f)
}

func ofType(typ *ua.NodeID) *ua.ContentFilterElement {
	return &ua.ContentFilterElement{FilterOperator: ua.FilterOperatorOfType,
		FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(typ)})}}
}

type eventSpec struct {
	notifier      *ua.NodeID // default notifierNode
	handle        uint32     // default 7000
	queue         uint32
	discardOldest bool
	mode          ua.MonitoringMode
	filter        *ua.ExtensionObject
}

func (p eventSpec) request() *ua.MonitoredItemCreateRequest {
	if p.notifier == nil {
		p.notifier = notifierNode
	}
	if p.handle == 0 {
		p.handle = 7000
	}
	if p.mode == 0 {
		p.mode = ua.MonitoringModeReporting
	}
	return &ua.MonitoredItemCreateRequest{
		ItemToMonitor:  &ua.ReadValueID{NodeID: p.notifier, AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
		MonitoringMode: p.mode,
		RequestedParameters: &ua.MonitoringParameters{
			ClientHandle: p.handle, QueueSize: p.queue, DiscardOldest: p.discardOldest, Filter: p.filter,
		},
	}
}

func (v *env) createEventItems(sess SessionID, sub uint32, specs ...eventSpec) []*ua.MonitoredItemCreateResult {
	v.t.Helper()
	req := &ua.CreateMonitoredItemsRequest{RequestHeader: hdr(3), SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, p := range specs {
		req.ItemsToCreate = append(req.ItemsToCreate, p.request())
	}
	resp, err := v.e.CreateMonitoredItems(sess, req)
	if err != nil {
		v.t.Fatalf("CreateMonitoredItems: %v", err)
	}
	return resp.Results
}

// eventLists returns the EventFieldLists of a response, in order.
func eventLists(t *testing.T, r ua.Response) []*ua.EventFieldList {
	t.Helper()
	pr, ok := r.(*ua.PublishResponse)
	if !ok {
		t.Fatalf("response is %T, want *ua.PublishResponse", r)
	}
	var out []*ua.EventFieldList
	for _, eo := range pr.NotificationMessage.NotificationData {
		if l, ok := eo.Value.(*ua.EventNotificationList); ok {
			out = append(out, l.Events...)
		}
	}
	return out
}
