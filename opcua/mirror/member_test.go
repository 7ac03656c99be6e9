package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Member tests: members on fake clocks, linked by a network the test
// controls (hub), each with its own subscription engine.

type link struct{ from, to string }

// hub carries batches between Members. A link delivers at once unless
// the test holds it; held batches wait until the test delivers, drops or
// reorders them. Every delivered batch's record kinds are logged.
type hub struct {
	mu      sync.Mutex
	members map[string]*Member
	held    map[link]bool
	queue   map[link][][]byte
	kinds   map[link][]kind
	// onSend, when set, runs after each batch a Transport handed over,
	// on the sending member's writer goroutine, with no lock held.
	onSend func(l link)
}

func newHub() *hub {
	return &hub{members: map[string]*Member{}, held: map[link]bool{}, queue: map[link][][]byte{}, kinds: map[link][]kind{}}
}

type hubTransport struct {
	h    *hub
	self string
}

var _ Transport = hubTransport{}

func (t hubTransport) Send(to string, b []byte) error {
	t.h.mu.Lock()
	l := link{t.self, to}
	if f := t.h.onSend; f != nil {
		defer f(l)
	}
	if t.h.held[l] {
		t.h.queue[l] = append(t.h.queue[l], bytes.Clone(b))
		t.h.mu.Unlock()
		return nil
	}
	t.h.mu.Unlock()
	t.h.deliverOne(l, bytes.Clone(b))
	return nil
}

func (h *hub) deliverOne(l link, b []byte) {
	h.mu.Lock()
	m := h.members[l.to]
	if _, recs, err := decodeBatch(b); err == nil {
		for _, r := range recs {
			h.kinds[l] = append(h.kinds[l], r.kind)
		}
	}
	h.mu.Unlock()
	if m != nil {
		m.Receive(l.from, b)
	}
}

// hold keeps the batches of from → to until released.
func (h *hub) hold(from, to string) {
	h.mu.Lock()
	h.held[link{from, to}] = true
	h.mu.Unlock()
}

// take removes and returns the held batches of from → to.
func (h *hub) take(from, to string) [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := link{from, to}
	q := h.queue[l]
	h.queue[l] = nil
	return q
}

func (h *hub) waiting(from, to string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue[link{from, to}])
}

// release delivers the held batches of from → to in order and lets the
// next ones through.
func (h *hub) release(from, to string) {
	h.mu.Lock()
	h.held[link{from, to}] = false
	h.mu.Unlock()
	for _, b := range h.take(from, to) {
		h.deliverOne(link{from, to}, b)
	}
}

func (h *hub) recordKinds(from, to string) []kind {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.kinds[link{from, to}])
}

// member is one Member with its engine and clocks.
type member struct {
	name   string
	m      *Member
	e      *subscription.Engine
	clock  *clockwork.FakeClock // the member's
	eclock *clockwork.FakeClock // the engine's
	src    *tagSource
}

func (h *hub) start(t *testing.T, name string, o Options) *member {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock, eclock := clockwork.NewFakeClockAt(start), clockwork.NewFakeClockAt(start)
	src := newTagSource(eclock.Now)
	log := slog.New(slog.DiscardHandler)
	e := subscription.New(src, subscription.Options{Clock: eclock, Logger: log})
	if o.Logger == nil {
		o.Logger = log
	}
	o.Self, o.Transport, o.Clock = name, hubTransport{h: h, self: name}, clock
	m := New(o)
	h.mu.Lock()
	h.members[name] = m
	h.mu.Unlock()
	m.Attach(e, nil)
	t.Cleanup(func() {
		m.Close()
		e.Close()
	})
	return &member{name: name, m: m, e: e, clock: clock, eclock: eclock, src: src}
}

// stop ends a member as its process dying would: nothing reaches it any
// more.
func (h *hub) stop(mb *member) {
	h.mu.Lock()
	delete(h.members, mb.name)
	h.mu.Unlock()
	mb.m.Close()
}

// tagSource is an address space of ten Int32 variables ns=1;i=1..10.
type tagSource struct {
	now      func() time.Time
	mu       sync.Mutex
	values   map[uint32]*ua.DataValue
	watchers map[uint32][]func(*ua.DataValue)
}

func newTagSource(now func() time.Time) *tagSource {
	s := &tagSource{now: now, values: map[uint32]*ua.DataValue{}, watchers: map[uint32][]func(*ua.DataValue){}}
	for i := uint32(1); i <= 10; i++ {
		s.values[i] = s.dv(int32(0))
	}
	return s
}

func (s *tagSource) dv(v int32) *ua.DataValue {
	dv := &ua.DataValue{Value: ua.MustVariant(v), SourceTimestamp: s.now(), ServerTimestamp: s.now()}
	dv.UpdateMask()
	return dv
}

func (s *tagSource) Read(id *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.values[id.IntID()]; v != nil && id.Namespace() == 1 && attr == ua.AttributeIDValue {
		return v
	}
	return &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadNodeIDUnknown}
}

func (s *tagSource) Watch(id *ua.NodeID, fn func(*ua.DataValue)) (func(), ua.StatusCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values[id.IntID()] == nil || id.Namespace() != 1 {
		return nil, ua.StatusBadNodeIDUnknown
	}
	s.watchers[id.IntID()] = append(s.watchers[id.IntID()], fn)
	return func() {}, ua.StatusGood
}

// session is a session served by a member, as the server layer describes
// it to the Member.
type session struct {
	id   *ua.NodeID
	ms   uaserver.MirroredSession
	sub  uint32
	item uint32
}

func (s *session) sid() subscription.SessionID { return subscription.SessionID(s.id.String()) }

var sessN = 0

// serve opens a session on mb with one subscription of one item on tag
// and tells mb's Member, as uaserver does.
func (mb *member) serve(t *testing.T, timeout time.Duration) *session {
	t.Helper()
	sessN++
	s := &session{id: ua.NewNumericNodeID(1, uint32(100+sessN))}
	token := ua.NewNumericNodeID(0, uint32(5000+sessN))
	s.ms = uaserver.MirroredSession{ID: s.id, TokenHash: uaserver.TokenHash(token), Name: fmt.Sprintf("hmi-%d", sessN),
		Timeout: timeout, Policy: "http://opcfoundation.org/UA/SecurityPolicy#None", Mode: ua.MessageSecurityModeNone, Activated: true}
	mb.m.Session(s.ms)
	creq := &ua.CreateSubscriptionRequest{RequestHeader: emptyRequestHeader(), RequestedPublishingInterval: 100,
		RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true}
	cres, err := mb.e.CreateSubscription(s.sid(), creq)
	if err != nil {
		t.Fatal(err)
	}
	mb.m.Service(s.id, creq, cres)
	s.sub = cres.SubscriptionID
	ireq := &ua.CreateMonitoredItemsRequest{RequestHeader: emptyRequestHeader(), SubscriptionID: s.sub, TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{{
			ItemToMonitor:  &ua.ReadValueID{NodeID: ua.NewNumericNodeID(1, 1), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 7, QueueSize: 10, DiscardOldest: true,
				Filter: ua.NewExtensionObject(nil)},
		}}}
	ires, err := mb.e.CreateMonitoredItems(s.sid(), ireq)
	if err != nil || ires.Results[0].StatusCode != ua.StatusGood {
		t.Fatalf("CreateMonitoredItems: %v %+v", err, ires)
	}
	mb.m.Service(s.id, ireq, ires)
	s.item = ires.Results[0].MonitoredItemID
	return s
}

// sent is a PublishResponse of s with value v, sequence number seq.
func (s *session) sent(seq uint32, v int32, pad int) *ua.PublishResponse {
	items := []*ua.MonitoredItemNotification{}
	for range 1 + pad {
		dv := &ua.DataValue{Value: ua.MustVariant(v), SourceTimestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		dv.UpdateMask()
		items = append(items, &ua.MonitoredItemNotification{ClientHandle: 7, Value: dv})
	}
	return &ua.PublishResponse{SubscriptionID: s.sub, NotificationMessage: &ua.NotificationMessage{SequenceNumber: seq,
		PublishTime:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: []*ua.DiagnosticInfo{}})}}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True(what, cond))
}

// holds reports whether mb holds a replica of s that can be taken over:
// the session offered by Lookup and its subscription in the engine.
func (mb *member) holds(s *session) bool {
	ms, ok := mb.m.Lookup(s.ms.TokenHash)
	if !ok || ms.ID.String() != s.id.String() {
		return false
	}
	for _, st := range mb.e.Export(s.sid()) {
		if st.ID == s.sub && len(st.Items) == 1 && st.Items[0].IDs[0] == s.item {
			return true
		}
	}
	return false
}

// ready waits until a and b mirror each other completely.
func ready(t *testing.T, a, b *member) {
	t.Helper()
	waitFor(t, a.name+" and "+b.name+" ready", func() bool {
		sa, sb := a.m.Stats(), b.m.Stats()
		return sa.Peers[b.name].Ready && sb.Peers[a.name].Ready && sa.Origins[b.name].Ready && sb.Origins[a.name].Ready
	})
}

// pair starts a and b, peers of each other, a serving one session that b
// holds.
func pair(t *testing.T, h *hub, o Options) (a, b *member, s *session) {
	t.Helper()
	a, b = h.start(t, "a", o), h.start(t, "b", o)
	s = a.serve(t, time.Minute)
	a.m.SetPeers([]string{"a", "b"})
	b.m.SetPeers([]string{"a", "b"})
	ready(t, a, b)
	waitFor(t, "b holds the session", func() bool { return b.holds(s) })
	return a, b, s
}

// sentAsync calls Sent in a goroutine; the channel closes when it returns.
func sentAsync(m *Member, id *ua.NodeID, r *ua.PublishResponse) chan struct{} {
	done := make(chan struct{})
	go func() {
		m.Sent(id, r)
		close(done)
	}()
	return done
}

func returned(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// awaiting waits until a Sent of mb waits on its ack timer: the writer's
// housekeeping ticker and the timer are the clock's waiters.
func awaiting(t *testing.T, mb *member) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := mb.clock.BlockUntilContext(ctx, 2); err != nil {
		t.Fatalf("no Sent waits for an acknowledgement: %v", err)
	}
}

func TestSyncWaitsForTheAcknowledgement(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{Sync: true})
	h.hold("b", "a")
	done := sentAsync(a.m, s.id, s.sent(1, 42, 0))
	// b applies the record and acknowledges it; the ack is held.
	waitFor(t, "b acknowledges", func() bool { return h.waiting("b", "a") > 0 })
	awaiting(t, a)
	if returned(done) {
		t.Fatal("Sent returned before the peer acknowledged")
	}
	h.release("b", "a")
	// The fake clock does not move: only the acknowledgement ends the wait.
	waitFor(t, "Sent returns after the ack", func() bool { return returned(done) })
	st := a.m.Stats()
	if st.Dropped["ack-timeout"] != 0 || !st.Peers["b"].Ready {
		t.Fatalf("stats %+v", st)
	}
	// The replica has the message for Republish.
	waitFor(t, "b's replica has the message", func() bool {
		r, err := b.e.Republish(s.sid(), &ua.RepublishRequest{SubscriptionID: s.sub, RetransmitSequenceNumber: 1})
		return err == nil && r.NotificationMessage.SequenceNumber == 1
	})

	// Without Sync, Sent returns at once.
	h2 := newHub()
	a2, _, s2 := pair(t, h2, Options{Sync: false})
	h2.hold("b", "a")
	done = sentAsync(a2.m, s2.id, s2.sent(1, 42, 0))
	waitFor(t, "Sent without Sync returns", func() bool { return returned(done) })
}

func TestAPeerThatDoesNotAckIsStalled(t *testing.T) {
	h := newHub()
	a, _, s := pair(t, h, Options{Sync: true, AckTimeout: 50 * time.Millisecond})
	h.hold("b", "a")
	done := sentAsync(a.m, s.id, s.sent(1, 1, 0))
	awaiting(t, a)
	a.clock.Advance(50 * time.Millisecond)
	waitFor(t, "Sent returns after AckTimeout", func() bool { return returned(done) })
	if n := a.m.Stats().Dropped["ack-timeout"]; n != 1 {
		t.Fatalf("ack-timeout counted %d, want 1", n)
	}
	// Stalled: the next messages do not wait for b, and are not counted.
	for seq := uint32(2); seq <= 4; seq++ {
		done := sentAsync(a.m, s.id, s.sent(seq, int32(seq), 0))
		waitFor(t, "Sent to a stalled peer returns at once", func() bool { return returned(done) })
	}
	if n := a.m.Stats().Dropped["ack-timeout"]; n != 1 {
		t.Fatalf("ack-timeout counted %d, want still 1", n)
	}
	// b catches up: everything acknowledged.
	h.release("b", "a")
	waitFor(t, "b caught up", func() bool { return a.m.Stats().Peers["b"].LagBytes == 0 })
	// It is waited for again.
	h.hold("b", "a")
	done = sentAsync(a.m, s.id, s.sent(5, 5, 0))
	waitFor(t, "b acknowledges", func() bool { return h.waiting("b", "a") > 0 })
	awaiting(t, a)
	if returned(done) {
		t.Fatal("Sent did not wait for a peer that caught up")
	}
	h.release("b", "a")
	waitFor(t, "Sent returns after the ack", func() bool { return returned(done) })
	if n := a.m.Stats().Dropped["ack-timeout"]; n != 1 {
		t.Fatalf("ack-timeout counted %d, want 1", n)
	}
}

func TestLagBeyondTheBoundDropsTheSessionToWarm(t *testing.T) {
	h := newHub()
	const bound = 8 << 10
	a, b := h.start(t, "a", Options{MaxLagBytes: bound}), h.start(t, "b", Options{MaxLagBytes: bound})
	s1, s2 := a.serve(t, time.Minute), a.serve(t, time.Minute)
	a.m.SetPeers([]string{"b"})
	b.m.SetPeers([]string{"a"})
	ready(t, a, b)
	waitFor(t, "b holds both sessions", func() bool { return b.holds(s1) && b.holds(s2) })

	// b stops acknowledging; s1's messages pile up.
	h.hold("b", "a")
	seq := uint32(1)
	for a.m.Stats().Dropped[DropLag] == 0 {
		a.m.Sent(s1.id, s1.sent(seq, int32(seq), 20))
		if seq++; seq > 1000 {
			t.Fatal("the lag never reached MaxLagBytes")
		}
	}
	st := a.m.Stats()
	if st.Served != 1 || st.Dropped[DropLag] != 1 {
		t.Fatalf("after the lag: served %d dropped %v, want 1 session left and one lag drop", st.Served, st.Dropped)
	}
	if lag := st.Peers["b"].LagBytes; lag > bound+256 {
		t.Fatalf("lag %d beyond the bound %d", lag, bound)
	}
	// Nothing more of s1 is mirrored.
	before := a.m.Stats().RecordsOut
	a.m.Sent(s1.id, s1.sent(seq, 0, 0))
	a.m.Acked(s1.id, []*ua.SubscriptionAcknowledgement{{SubscriptionID: s1.sub, SequenceNumber: 1}})
	if after := a.m.Stats().RecordsOut; after != before {
		t.Fatalf("records of a Warm session still sent: %d → %d", before, after)
	}
	// b catches up and forgets s1, keeps s2.
	h.release("b", "a")
	waitFor(t, "b forgets s1", func() bool {
		_, ok := b.m.Lookup(s1.ms.TokenHash)
		return !ok && len(b.e.Export(s1.sid())) == 0
	})
	if !b.holds(s2) {
		t.Fatal("b lost s2")
	}
	if o := b.m.Stats().Origins["a"]; o.Sessions != 1 || !o.Ready {
		t.Fatalf("b holds %+v of a", o)
	}
}

// epochs returns the epoch a streams to b with and the one b holds of a.
func epochs(a, b *member) (sent, held uint64) {
	a.m.mu.Lock()
	if p := a.m.peers[b.name]; p != nil {
		sent = p.epoch
	}
	a.m.mu.Unlock()
	b.m.mu.Lock()
	if o := b.m.origins[a.name]; o != nil {
		held = o.epoch
	}
	b.m.mu.Unlock()
	return sent, held
}

// resynced waits until a streams to b in a new epoch, b holds it whole
// and holds s again.
func resynced(t *testing.T, a, b *member, s *session, old uint64) {
	t.Helper()
	waitFor(t, "a new epoch held whole by b", func() bool {
		sent, held := epochs(a, b)
		return sent != old && held == sent && b.m.Stats().Origins[a.name].Ready && a.m.Stats().Peers[b.name].Ready
	})
	waitFor(t, "b holds the session again", func() bool { return b.holds(s) })
}

func TestALostBatchResyncs(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	old, _ := epochs(a, b)
	h.hold("a", "b")
	a.m.Acked(s.id, []*ua.SubscriptionAcknowledgement{{SubscriptionID: s.sub, SequenceNumber: 1}})
	waitFor(t, "a sends a batch", func() bool { return h.waiting("a", "b") == 1 })
	h.take("a", "b") // lost
	// A snapshot must not be taken while the link is held: let b ask.
	h.release("a", "b")
	a.m.Sent(s.id, s.sent(1, 1, 0))
	resynced(t, a, b, s, old)
	if o := b.m.Stats().Origins["a"]; o.Sessions != 1 {
		t.Fatalf("b holds %d sessions of a after the resync", o.Sessions)
	}
}

func TestReorderedBatchesResync(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	old, _ := epochs(a, b)
	h.hold("a", "b")
	a.m.Sent(s.id, s.sent(1, 1, 0))
	waitFor(t, "first batch", func() bool { return h.waiting("a", "b") == 1 })
	a.m.Sent(s.id, s.sent(2, 2, 0))
	waitFor(t, "second batch", func() bool { return h.waiting("a", "b") == 2 })
	q := h.take("a", "b")
	h.mu.Lock()
	h.held[link{"a", "b"}] = false
	h.mu.Unlock()
	h.deliverOne(link{"a", "b"}, q[1])
	h.deliverOne(link{"a", "b"}, q[0])
	resynced(t, a, b, s, old)
}

func TestAnInvalidBatchResyncs(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	old, _ := epochs(a, b)
	h.hold("a", "b")
	b.m.Receive("a", []byte("OM1 this is not a batch"))
	waitFor(t, "the invalid batch counted", func() bool { return b.m.Stats().Dropped["invalid-batch"] == 1 })
	// Until the new stream arrives, b does not offer a's sessions.
	if o := b.m.Stats().Origins["a"]; o.Ready {
		t.Fatalf("b still counts a's mirror complete after an invalid batch: %+v", o)
	}
	if _, ok := b.m.Lookup(s.ms.TokenHash); ok {
		t.Fatal("b offers a session of a stream it lost")
	}
	h.release("a", "b")
	resynced(t, a, b, s, old)
}

func TestAStreamWithoutAcksRestarts(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	old, _ := epochs(a, b)
	h.hold("b", "a")
	a.m.Sent(s.id, s.sent(1, 1, 0))
	waitFor(t, "b acknowledges", func() bool { return h.waiting("b", "a") > 0 })
	h.take("b", "a") // the acknowledgements are lost
	a.clock.Advance(resyncAfter + housekeeping)
	a.m.housekeep()
	if sent, _ := epochs(a, b); sent == old {
		t.Fatal("no new stream after resyncAfter without acknowledgements")
	}
	h.release("b", "a")
	resynced(t, a, b, s, old)
}

func TestARestartedPeerGetsASnapshot(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	h.stop(b)
	b2 := h.start(t, "b#2", Options{})
	a.m.SetPeers([]string{"a", "b#2"})
	b2.m.SetPeers([]string{"a", "b#2"})
	ready(t, a, b2)
	waitFor(t, "b#2 holds the session", func() bool { return b2.holds(s) })
	st := a.m.Stats()
	if _, ok := st.Peers["b"]; ok || !st.Peers["b#2"].Ready {
		t.Fatalf("a's peers %+v", st.Peers)
	}
	if o := b2.m.Stats().Origins["a"]; !o.Ready || o.Sessions != 1 {
		t.Fatalf("b#2 holds %+v of a", o)
	}
	// A session created after the snapshot follows live.
	s2 := a.serve(t, time.Minute)
	waitFor(t, "b#2 holds the new session", func() bool { return b2.holds(s2) })
}

func TestSessionsOfAnOriginThatLeftExpire(t *testing.T) {
	h := newHub()
	a, b := h.start(t, "a", Options{}), h.start(t, "b", Options{})
	short, long := a.serve(t, 10*time.Second), a.serve(t, time.Minute)
	a.m.SetPeers([]string{"b"})
	b.m.SetPeers([]string{"a"})
	ready(t, a, b)
	waitFor(t, "b holds both", func() bool { return b.holds(short) && b.holds(long) })
	h.stop(a)
	b.m.SetPeers(nil)

	b.clock.Advance(10*time.Second - time.Millisecond)
	b.m.housekeep()
	if !b.holds(short) || !b.holds(long) {
		t.Fatal("b forgot a session of a before its timeout")
	}
	b.clock.Advance(time.Millisecond)
	b.m.housekeep()
	if _, ok := b.m.Lookup(short.ms.TokenHash); ok {
		t.Fatal("b still offers a session whose timeout passed")
	}
	if st := b.e.Export(short.sid()); len(st) != 0 {
		t.Fatalf("the engine still holds %d subscriptions of the expired session", len(st))
	}
	if b.e.Stats().Subscriptions != 1 {
		t.Fatalf("engine holds %d subscriptions, want 1 (the long session's)", b.e.Stats().Subscriptions)
	}
	if !b.holds(long) || b.m.Stats().Origins["a"].Sessions != 1 {
		t.Fatalf("b lost the session with the longer timeout: %+v", b.m.Stats().Origins)
	}
	b.clock.Advance(time.Minute)
	b.m.housekeep()
	if _, ok := b.m.Stats().Origins["a"]; ok || b.e.Stats().Subscriptions != 0 {
		t.Fatalf("origin a still held: %+v, %d subscriptions", b.m.Stats().Origins, b.e.Stats().Subscriptions)
	}
}

// logBuffer collects a member's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestLookupRefusesSessionsOfANotReadyOrigin(t *testing.T) {
	h := newHub()
	logs := &logBuffer{}
	a, b := h.start(t, "a", Options{}), h.start(t, "b", Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s1, s2 := a.serve(t, time.Minute), a.serve(t, time.Minute)
	h.hold("a", "b")
	a.m.SetPeers([]string{"b"})
	b.m.SetPeers([]string{"a"})
	// The snapshot goes one session per batch: deliver the first only.
	waitFor(t, "two snapshot batches", func() bool { return h.waiting("a", "b") >= 2 })
	q := h.take("a", "b")
	h.deliverOne(link{"a", "b"}, q[0])
	first := s1
	if s1.id.String() > s2.id.String() {
		first = s2
	}
	waitFor(t, "b holds the first session", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		return b.m.byHash[first.ms.TokenHash] != nil
	})
	if _, ok := b.m.Lookup(first.ms.TokenHash); ok {
		t.Fatal("b offers a session of a peer whose snapshot is incomplete")
	}
	if n := b.m.Stats().Takeovers["not-ready"]; n != 1 {
		t.Fatalf("not-ready counted %d, want 1", n)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "falls back to Warm") || !strings.Contains(l, "origin=a") {
		t.Fatalf("no warning names the refused takeover:\n%s", l)
	}
	if _, ok := b.m.Lookup([32]byte{9}); ok {
		t.Fatal("b offers an unknown session")
	}
	if n := b.m.Stats().Takeovers["not-ready"]; n != 2 {
		t.Fatalf("not-ready counted %d for an unknown token while a peer's mirror is incomplete, want 2", n)
	}
	for _, bt := range q[1:] {
		h.deliverOne(link{"a", "b"}, bt)
	}
	h.release("a", "b")
	waitFor(t, "b holds a whole", func() bool { o := b.m.Stats().Origins["a"]; return o.Ready && o.Sessions == 2 })
	// Complete now: both offered, and an unknown token is simply unknown.
	if !b.holds(s1) || !b.holds(s2) {
		t.Fatal("b does not offer a's sessions once its mirror is complete")
	}
	if _, ok := b.m.Lookup([32]byte{9}); ok || b.m.Stats().Takeovers["not-ready"] != 2 {
		t.Fatalf("unknown token with every mirror complete: %v", b.m.Stats().Takeovers)
	}
}

func TestTakenOverTellsThePeers(t *testing.T) {
	h := newHub()
	a, b, c := h.start(t, "a", Options{}), h.start(t, "b", Options{}), h.start(t, "c", Options{})
	s := a.serve(t, time.Minute)
	all := []string{"a", "b", "c"}
	for _, mb := range []*member{a, b, c} {
		mb.m.SetPeers(all)
	}
	ready(t, a, b)
	ready(t, a, c)
	ready(t, b, c)
	waitFor(t, "b and c hold the session", func() bool { return b.holds(s) && c.holds(s) })

	// a dies; the client activates its session on b.
	h.stop(a)
	b.m.SetPeers([]string{"b", "c"})
	c.m.SetPeers([]string{"b", "c"})
	before := len(h.recordKinds("b", "c"))
	b.m.TakenOver(s.id)
	st := b.m.Stats()
	if st.Takeovers["ok"] != 1 || st.Served != 1 {
		t.Fatalf("b after the takeover: %+v", st)
	}
	if _, ok := b.m.Lookup(s.ms.TokenHash); ok {
		t.Fatal("b still offers as a replica the session it serves")
	}
	// b's engine serves the subscription now.
	if got := b.e.Export(s.sid()); len(got) != 1 || got[0].ID != s.sub {
		t.Fatalf("b's engine: %+v", got)
	}
	// c learns it from b: kTaken, then a snapshot of the session.
	waitFor(t, "c holds the session from b", func() bool {
		c.m.mu.Lock()
		rs := c.m.byHash[s.ms.TokenHash]
		from := ""
		if rs != nil {
			from = rs.origin.name
		}
		c.m.mu.Unlock()
		return from == "b" && c.holds(s)
	})
	kinds := h.recordKinds("b", "c")[before:]
	want := []kind{kTaken, kSession, kSub, kItems}
	if len(kinds) < len(want) || !slices.Equal(kinds[:len(want)], want) {
		t.Fatalf("b sent c %v, want %v first", kinds, want)
	}
	if o := c.m.Stats().Origins; o["b"].Sessions != 1 || o["a"].Sessions != 0 {
		t.Fatalf("c holds %+v", o)
	}
	// Messages b sends now reach c's replica.
	b.m.Sent(s.id, s.sent(1, 1, 0))
	waitFor(t, "c's replica has b's message", func() bool {
		_, err := c.e.Republish(s.sid(), &ua.RepublishRequest{SubscriptionID: s.sub, RetransmitSequenceNumber: 1})
		return err == nil
	})
}

// Live records that keep coming while a peer's snapshot is under way
// delay it by one batch at most: the snapshot ends however busy the
// sessions served here are.
func TestASnapshotEndsUnderLiveTraffic(t *testing.T) {
	h := newHub()
	a, b := h.start(t, "a", Options{}), h.start(t, "b", Options{})
	var sessions []*session
	for range 3 {
		sessions = append(sessions, a.serve(t, time.Minute))
	}
	busy := sessions[0]
	const busySends = 200
	var mu sync.Mutex
	sends, endAt := 0, -1
	h.mu.Lock()
	h.onSend = func(l link) {
		if l != (link{"a", "b"}) {
			return
		}
		mu.Lock()
		sends++
		n := sends
		if endAt < 0 && slices.Contains(h.recordKinds("a", "b"), kSnapshotEnd) {
			endAt = n
		}
		mu.Unlock()
		if n < busySends {
			// A client's acknowledgement arrives while the batch is on
			// its way: a live record is queued before the next batch.
			a.m.Acked(busy.id, []*ua.SubscriptionAcknowledgement{{SubscriptionID: busy.sub, SequenceNumber: uint32(n)}})
		}
	}
	h.mu.Unlock()
	a.m.SetPeers([]string{"b"})
	b.m.SetPeers([]string{"a"})
	ready(t, a, b)
	for _, s := range sessions {
		waitFor(t, "b holds every session", func() bool { return b.holds(s) })
	}
	mu.Lock()
	defer mu.Unlock()
	if endAt < 0 || endAt >= busySends {
		t.Fatalf("the snapshot ended after batch %d, once the live records stopped (%d): live traffic starves it", endAt, busySends)
	}
}

// A subscription served here whose lifetime ran out leaves the peers'
// replicas too; its session stays mirrored.
func TestAnExpiredSubscriptionLeavesThePeers(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.eclock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	a.eclock.Advance(61 * time.Second) // LifetimeCount 600 × 100 ms
	waitFor(t, "a's subscription expired", func() bool { return a.e.Stats().Subscriptions == 0 })
	waitFor(t, "b dropped its replica", func() bool { return b.e.Stats().Subscriptions == 0 })
	if _, ok := b.m.Lookup(s.ms.TokenHash); !ok {
		t.Fatal("b forgot the session of the expired subscription")
	}
}

// A member learns of a new peer later than the peer of it: the batches
// that came before are dropped, and the peer's stream must start again
// at once, not after resyncAfter.
func TestBatchesBeforeSetPeersAreSentAgain(t *testing.T) {
	h := newHub()
	a, b := h.start(t, "a", Options{}), h.start(t, "b", Options{})
	s := a.serve(t, time.Minute)
	a.m.SetPeers([]string{"a", "b"})
	waitFor(t, "b drops a's snapshot", func() bool { return b.m.Stats().Dropped["not-a-peer"] > 0 })
	b.m.SetPeers([]string{"a", "b"})
	ready(t, a, b)
	waitFor(t, "b holds the session", func() bool { return b.holds(s) })
}

// A session that ended without deleting its subscriptions leaves them
// orphaned on the peers; when their origin dies with them, a peer drops
// them once their lifetime has passed.
func TestOrphansOfAnOriginThatLeftExpire(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	a.m.SessionEnded(s.id, false)
	a.e.SessionClosed(s.sid(), false)
	waitFor(t, "b closes the replica session", func() bool {
		_, ok := b.m.Lookup(s.ms.TokenHash)
		return !ok
	})
	waitFor(t, "b keeps the orphan", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		o := b.m.origins["a"]
		return o != nil && o.orphans[s.sub] == time.Minute // 600 × 100 ms
	})
	if b.e.Stats().Subscriptions != 1 {
		t.Fatal("b dropped the orphaned replica")
	}
	h.stop(a)
	b.m.SetPeers(nil)
	b.clock.Advance(time.Minute - time.Millisecond)
	b.m.housekeep()
	if b.e.Stats().Subscriptions != 1 {
		t.Fatal("b dropped the orphan before its lifetime")
	}
	b.clock.Advance(time.Millisecond)
	b.m.housekeep()
	if n := b.e.Stats().Subscriptions; n != 0 {
		t.Fatalf("b holds %d subscriptions after the orphan's lifetime", n)
	}
	if _, ok := b.m.Stats().Origins["a"]; ok {
		t.Fatal("b still holds origin a")
	}
}

// An orphan that its origin expires, or that a client of the origin
// transfers to a new session, is no orphan any more.
func TestOrphansExpiredOrTransferredByTheOrigin(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	s2 := a.serve(t, time.Minute)
	waitFor(t, "b holds s2", func() bool { return b.holds(s2) })
	for _, x := range []*session{s, s2} {
		a.m.SessionEnded(x.id, false)
		a.e.SessionClosed(x.sid(), false)
	}
	orphans := func() []uint32 {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		var ids []uint32
		if o := b.m.origins["a"]; o != nil {
			for id := range o.orphans {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	want := []uint32{s.sub, s2.sub}
	slices.Sort(want)
	waitFor(t, "b keeps both orphans", func() bool { return slices.Equal(orphans(), want) })
	// A new session of a's client takes s's subscription over.
	s3 := &session{id: ua.NewNumericNodeID(1, 999)}
	s3.ms = uaserver.MirroredSession{ID: s3.id, TokenHash: [32]byte{3}, Timeout: time.Minute}
	a.m.Session(s3.ms)
	treq := &ua.TransferSubscriptionsRequest{RequestHeader: emptyRequestHeader(), SubscriptionIDs: []uint32{s.sub}}
	tres, err := a.e.TransferSubscriptions(s3.sid(), treq)
	if err != nil {
		t.Fatal(err)
	}
	a.m.Service(s3.id, treq, tres)
	waitFor(t, "s's subscription is no orphan", func() bool { return slices.Equal(orphans(), []uint32{s2.sub}) })
	if got := b.e.Export(s3.sid()); len(got) != 1 || got[0].ID != s.sub {
		t.Fatalf("b's replica of the new session: %+v", got)
	}
	// a expires both (s3 sends no Publish either): b drops its replicas.
	a.eclock.Advance(61 * time.Second)
	waitFor(t, "b dropped the expired replicas", func() bool { return len(orphans()) == 0 && b.e.Stats().Subscriptions == 0 })
}

// chanSender hands the engine's responses to the test.
type chanSender chan ua.Response

func (c chanSender) SendResponse(_ uint32, r ua.Response) error {
	c <- r
	return nil
}

// After a failover, a client whose session ended without deleting its
// subscriptions transfers them to a new session on the survivor: they
// are served there, not left replicas that never publish.
func TestAnOrphanTransferredOnTheSurvivorIsServed(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	a.m.SessionEnded(s.id, false)
	a.e.SessionClosed(s.sid(), false)
	waitFor(t, "b keeps the orphan", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		o := b.m.origins["a"]
		return o != nil && o.orphans[s.sub] > 0
	})
	h.stop(a)
	b.m.SetPeers(nil)

	s3 := &session{id: ua.NewNumericNodeID(1, 998)}
	s3.ms = uaserver.MirroredSession{ID: s3.id, TokenHash: [32]byte{4}, Timeout: time.Minute}
	b.m.Session(s3.ms)
	treq := &ua.TransferSubscriptionsRequest{RequestHeader: emptyRequestHeader(), SubscriptionIDs: []uint32{s.sub}}
	tres, err := b.e.TransferSubscriptions(s3.sid(), treq)
	if err != nil || tres.Results[0].StatusCode != ua.StatusGood {
		t.Fatalf("TransferSubscriptions: %v %+v", err, tres)
	}
	b.m.Service(s3.id, treq, tres)
	b.m.mu.Lock()
	left := 0
	for _, o := range b.m.origins {
		left += len(o.orphans)
	}
	b.m.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d orphans left after the transfer", left)
	}
	// The client republishes what it missed; nothing more: it caught up,
	// and the subscription, held until then, publishes.
	if _, err := b.e.Republish(s3.sid(), &ua.RepublishRequest{SubscriptionID: s.sub, RetransmitSequenceNumber: 0}); !errors.Is(err, ua.StatusBadMessageNotAvailable) {
		t.Fatalf("Republish: %v", err)
	}
	out := make(chanSender, 4)
	b.e.Publish(s3.sid(), out, 1, &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	b.src.set(1, 42)
	// The value reaches the item through its watcher, on its own
	// goroutine: a publishing cycle that runs before it answers with a
	// keep-alive, and the next one carries the value.
	deadline := time.After(5 * time.Second)
	for published := false; !published; {
		b.eclock.Advance(100 * time.Millisecond)
		select {
		case r := <-out:
			pr, ok := r.(*ua.PublishResponse)
			if !ok || pr.SubscriptionID != s.sub {
				t.Fatalf("response %T %+v", r, r)
			}
			if published = len(pr.NotificationMessage.NotificationData) > 0; !published {
				b.e.Publish(s3.sid(), out, 1, &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("the transferred subscription does not publish")
		}
	}
	// The survivor's lifetime of it runs again: housekeeping no longer
	// drops it.
	b.clock.Advance(2 * time.Minute)
	b.m.housekeep()
	if n := b.e.Stats().Subscriptions; n != 1 {
		t.Fatalf("%d subscriptions after housekeeping, want the transferred one", n)
	}
}

// set writes v to tag i and tells its watchers.
func (s *tagSource) set(i uint32, v int32) {
	s.mu.Lock()
	dv := s.dv(v)
	s.values[i] = dv
	ws := slices.Clone(s.watchers[i])
	s.mu.Unlock()
	for _, w := range ws {
		w(dv)
	}
}

// A message too large for one batch cannot be mirrored: its session goes
// back to Warm, the others stay mirrored.
func TestARecordTooLargeDropsItsSessionToWarm(t *testing.T) {
	h := newHub()
	a, b, s := pair(t, h, Options{})
	s2 := a.serve(t, time.Minute)
	waitFor(t, "b holds s2", func() bool { return b.holds(s2) })
	big := s.sent(1, 0, 0)
	dc := big.NotificationMessage.NotificationData[0].Value.(*ua.DataChangeNotification)
	dc.MonitoredItems[0].Value = &ua.DataValue{Value: ua.MustVariant(string(make([]byte, maxBatchBytes)))}
	dc.MonitoredItems[0].Value.UpdateMask()
	a.m.Sent(s.id, big)
	st := a.m.Stats()
	if st.Dropped[DropTooLarge] != 1 || st.Served != 1 {
		t.Fatalf("after a message of %d bytes: %+v", maxBatchBytes, st)
	}
	waitFor(t, "b forgets s", func() bool {
		_, ok := b.m.Lookup(s.ms.TokenHash)
		return !ok
	})
	a.m.Sent(s2.id, s2.sent(1, 1, 0))
	waitFor(t, "s2 is still mirrored", func() bool {
		_, err := b.e.Republish(s2.sid(), &ua.RepublishRequest{SubscriptionID: s2.sub, RetransmitSequenceNumber: 1})
		return err == nil
	})
}
