package opcua

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

const callTimeout = 5 * time.Second

// Short names of the ServerDiagnosticsSummary children.
const (
	diagServerViews        = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount
	diagCurrentSessions    = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount
	diagCumulatedSessions  = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount
	diagSecRejectedSess    = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount
	diagRejectedSessions   = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount
	diagSessionTimeouts    = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount
	diagSessionAborts      = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount
	diagIntervals          = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount
	diagCurrentSubs        = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount
	diagCumulatedSubs      = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount
	diagSecRejectedReqs    = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount
	diagRejectedRequests   = id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount
	diagSummary            = id.Server_ServerDiagnostics_ServerDiagnosticsSummary
	diagEnabledFlag        = id.Server_ServerDiagnostics_EnabledFlag
	monitoredItemQueueSize = 10
)

// startLoopback starts a server with the real clock on 127.0.0.1 and a
// free port, with no client.
func startLoopback(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Clock = clockwork.NewRealClock()
	cfg.PublicHostname = "127.0.0.1"
	s := newTestServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

// dial opens a secure channel to s with otopcua's own client; the test's
// end closes it.
func dial(t *testing.T, s *Server) *uaclient.Channel {
	t.Helper()
	ch, err := uaclient.Dial(context.Background(), s.EndpointURL(), uaclient.Options{})
	if err != nil {
		t.Fatalf("dial %s: %v", s.EndpointURL(), err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}

// openSession opens a channel and an activated anonymous session on it.
func openSession(t *testing.T, s *Server, name string) *uaclient.Session {
	t.Helper()
	sess, err := uaclient.OpenSession(context.Background(), dial(t, s),
		uaclient.SessionParams{Name: name, Timeout: time.Minute, CallTimeout: callTimeout})
	if err != nil {
		t.Fatalf("session %s: %v", name, err)
	}
	return sess
}

func call[R ua.Response](t *testing.T, sess *uaclient.Session, req ua.Request) R {
	t.Helper()
	resp, err := sess.Call(context.Background(), req, callTimeout)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	r, ok := resp.(R)
	if !ok {
		t.Fatalf("%T answered with %T", req, resp)
	}
	return r
}

// valueOf is the Value attribute of namespace 0 node n, with every field
// set (gopcua cannot encode a nil DataEncoding).
func valueOf(n uint32) *ua.ReadValueID {
	return &ua.ReadValueID{NodeID: nsid(n), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}
}

// readValues reads the Values of namespace 0 nodes over the session and
// fails unless every one is Good.
func readValues(t *testing.T, sess *uaclient.Session, nodes ...uint32) []any {
	t.Helper()
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, valueOf(n))
	}
	resp := call[*ua.ReadResponse](t, sess, req)
	if len(resp.Results) != len(nodes) {
		t.Fatalf("Read: %d results for %d nodes", len(resp.Results), len(nodes))
	}
	out := make([]any, len(nodes))
	for k, dv := range resp.Results {
		if dv.Status != ua.StatusOK || dv.Value == nil {
			t.Fatalf("Read i=%d: %v", nodes[k], dv.Status)
		}
		out[k] = dv.Value.Value()
	}
	return out
}

// readCounts reads UInt32 nodes and fails when one is of another type.
func readCounts(t *testing.T, sess *uaclient.Session, nodes ...uint32) map[uint32]uint32 {
	t.Helper()
	out := make(map[uint32]uint32, len(nodes))
	for k, v := range readValues(t, sess, nodes...) {
		n, ok := v.(uint32)
		if !ok {
			t.Fatalf("i=%d = %#v (%T), want a UInt32", nodes[k], v, v)
		}
		out[nodes[k]] = n
	}
	return out
}

func readSummary(t *testing.T, sess *uaclient.Session) ua.ServerDiagnosticsSummaryDataType {
	t.Helper()
	v := readValues(t, sess, diagSummary)[0]
	eo, ok := v.(*ua.ExtensionObject)
	if !ok {
		t.Fatalf("ServerDiagnosticsSummary = %#v, want an ExtensionObject", v)
	}
	sum, ok := eo.Value.(*ua.ServerDiagnosticsSummaryDataType)
	if !ok {
		t.Fatalf("ServerDiagnosticsSummary holds %T, want ServerDiagnosticsSummaryDataType", eo.Value)
	}
	return *sum
}

func createSubscription(t *testing.T, sess *uaclient.Session, interval time.Duration) *ua.CreateSubscriptionResponse {
	t.Helper()
	return call[*ua.CreateSubscriptionResponse](t, sess, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: float64(interval / time.Millisecond),
		RequestedLifetimeCount:      600,
		RequestedMaxKeepAliveCount:  10,
		PublishingEnabled:           true,
	})
}

// monitor creates one Value item per node in subscription sub, client
// handle = the node's numeric id, and fails unless every one is Good.
func monitor(t *testing.T, sess *uaclient.Session, sub uint32, mode ua.MonitoringMode, nodes ...uint32) []uint32 {
	t.Helper()
	resp := call[*ua.CreateMonitoredItemsResponse](t, sess, monitorRequest(sub, mode, nodes...))
	ids := make([]uint32, len(resp.Results))
	for k, r := range resp.Results {
		if r.StatusCode != ua.StatusOK {
			t.Fatalf("monitor i=%d: %v", nodes[k], r.StatusCode)
		}
		ids[k] = r.MonitoredItemID
	}
	return ids
}

func monitorRequest(sub uint32, mode ua.MonitoringMode, nodes ...uint32) *ua.CreateMonitoredItemsRequest {
	req := &ua.CreateMonitoredItemsRequest{SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range nodes {
		req.ItemsToCreate = append(req.ItemsToCreate, &ua.MonitoredItemCreateRequest{
			ItemToMonitor:  valueOf(n),
			MonitoringMode: mode,
			RequestedParameters: &ua.MonitoringParameters{
				ClientHandle: n, SamplingInterval: -1, QueueSize: monitoredItemQueueSize, DiscardOldest: true,
				Filter: ua.NewExtensionObject(nil),
			},
		})
	}
	return req
}

// awaitCount sends Publish requests on sess until a notification of the
// item with client handle `handle` carries want, or fails after 10 s. It
// returns every value the item reported on the way.
func awaitCount(t *testing.T, sess *uaclient.Session, handle, want uint32) []uint32 {
	t.Helper()
	var seen []uint32
	var acks []*ua.SubscriptionAcknowledgement
	poll.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		resp := call[*ua.PublishResponse](t, sess, &ua.PublishRequest{SubscriptionAcknowledgements: acks})
		acks = nil
		msg := resp.NotificationMessage
		if msg == nil || len(msg.NotificationData) == 0 {
			return fmt.Errorf("i=%d never reported %d; it reported %v", handle, want, seen) // keep-alive
		}
		acks = []*ua.SubscriptionAcknowledgement{{SubscriptionID: resp.SubscriptionID, SequenceNumber: msg.SequenceNumber}}
		for _, eo := range msg.NotificationData {
			dc, ok := eo.Value.(*ua.DataChangeNotification)
			if !ok {
				continue
			}
			for _, it := range dc.MonitoredItems {
				if it.ClientHandle != handle {
					continue
				}
				n, ok := it.Value.Value.Value().(uint32)
				if !ok {
					t.Fatalf("notification of i=%d carries %#v, want a UInt32", handle, it.Value.Value.Value())
				}
				seen = append(seen, n)
			}
		}
		if len(seen) > 0 && seen[len(seen)-1] == want {
			return nil
		}
		return fmt.Errorf("i=%d never reported %d; it reported %v", handle, want, seen)
	})
	return seen
}

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		name string
		u    uaserver.Stats
		e    subscription.Stats
		want ua.ServerDiagnosticsSummaryDataType
	}{
		{"idle", uaserver.Stats{}, subscription.Stats{}, ua.ServerDiagnosticsSummaryDataType{}},
		{"loaded",
			uaserver.Stats{Connections: 9, Channels: 8, SessionsActivated: 3, SessionsUnactivated: 2, CumulatedSessions: 40,
				RejectedSessions: 4, SessionTimeouts: 6, RejectedRequests: 11, Refusals: map[string]uint64{uaserver.LimitSessions: 4}},
			subscription.Stats{Subscriptions: 7, MonitoredItems: 900, CumulatedSubscriptions: 70, PublishingIntervals: 2},
			ua.ServerDiagnosticsSummaryDataType{CurrentSessionCount: 5, CumulatedSessionCount: 40, RejectedSessionCount: 4,
				SessionTimeoutCount: 6, CurrentSubscriptionCount: 7, CumulatedSubscriptionCount: 70, PublishingIntervalCount: 2,
				RejectedRequestsCount: 11}},
		{"counters wrap at 2^32",
			uaserver.Stats{CumulatedSessions: 1<<32 + 5, RejectedRequests: 1<<33 + 1},
			subscription.Stats{CumulatedSubscriptions: 1<<32 - 1},
			ua.ServerDiagnosticsSummaryDataType{CumulatedSessionCount: 5, RejectedRequestsCount: 1, CumulatedSubscriptionCount: 1<<32 - 1}},
	} {
		if got := summarize(c.u, c.e); *got != c.want {
			t.Errorf("%s: summarize = %+v, want %+v", c.name, *got, c.want)
		}
	}
	// Every child reads its own field of the summary.
	probe := ua.ServerDiagnosticsSummaryDataType{ServerViewCount: 1, CurrentSessionCount: 2, CumulatedSessionCount: 3,
		SecurityRejectedSessionCount: 4, RejectedSessionCount: 5, SessionTimeoutCount: 6, SessionAbortCount: 7,
		CurrentSubscriptionCount: 8, CumulatedSubscriptionCount: 9, PublishingIntervalCount: 10,
		SecurityRejectedRequestsCount: 11, RejectedRequestsCount: 12}
	want := map[uint32]uint32{diagServerViews: 1, diagCurrentSessions: 2, diagCumulatedSessions: 3, diagSecRejectedSess: 4,
		diagRejectedSessions: 5, diagSessionTimeouts: 6, diagSessionAborts: 7, diagCurrentSubs: 8, diagCumulatedSubs: 9,
		diagIntervals: 10, diagSecRejectedReqs: 11, diagRejectedRequests: 12}
	if len(diagFields) != len(want) {
		t.Fatalf("%d diagnostics fields, want %d", len(diagFields), len(want))
	}
	for _, f := range diagFields {
		if got := f.value(&probe); got != want[f.id] {
			t.Errorf("i=%d reads field value %d, want %d", f.id, got, want[f.id])
		}
	}
}

// TestServerDiagnosticsSummary reads the summary and its children over
// opc.tcp while two sessions hold three subscriptions, then closes one.
func TestServerDiagnosticsSummary(t *testing.T) {
	s := startLoopback(t, Config{})
	a, b := openSession(t, s, "a"), openSession(t, s, "b")
	intervals := map[float64]bool{}
	for _, c := range []struct {
		sess     *uaclient.Session
		interval time.Duration
	}{{a, 100 * time.Millisecond}, {a, 500 * time.Millisecond}, {b, 100 * time.Millisecond}} {
		intervals[createSubscription(t, c.sess, c.interval).RevisedPublishingInterval] = true
	}
	// One request answered with a ServiceFault, and one session activation
	// refused (a user name over security None), also a ServiceFault.
	if _, err := a.Call(context.Background(), &ua.ReadRequest{}, callTimeout); !errors.Is(err, ua.StatusBadNothingToDo) {
		t.Fatalf("empty Read: %v, want BadNothingToDo", err)
	}
	_, err := a.Call(context.Background(), &ua.ActivateSessionRequest{
		ClientSignature:    &ua.SignatureData{},
		UserIdentityToken:  ua.NewExtensionObject(&ua.UserNameIdentityToken{PolicyID: "username", UserName: "u", Password: []byte("p")}),
		UserTokenSignature: &ua.SignatureData{},
	}, callTimeout)
	if err == nil {
		t.Fatal("ActivateSession with a user name over security None was accepted")
	}

	all := []uint32{diagServerViews, diagCurrentSessions, diagCumulatedSessions, diagSecRejectedSess, diagRejectedSessions,
		diagSessionTimeouts, diagSessionAborts, diagIntervals, diagCurrentSubs, diagCumulatedSubs, diagSecRejectedReqs,
		diagRejectedRequests}
	want := map[uint32]uint32{
		diagServerViews: 0, diagCurrentSessions: 2, diagCumulatedSessions: 2, diagSecRejectedSess: 0,
		diagRejectedSessions: 1, diagSessionTimeouts: 0, diagSessionAborts: 0, diagIntervals: uint32(len(intervals)),
		diagCurrentSubs: 3, diagCumulatedSubs: 3, diagSecRejectedReqs: 0, diagRejectedRequests: 2,
	}
	// Reads are live: no tick is awaited.
	got := readCounts(t, a, all...)
	for _, n := range all {
		if got[n] != want[n] {
			t.Errorf("i=%d = %d, want %d", n, got[n], want[n])
		}
	}
	wantSum := ua.ServerDiagnosticsSummaryDataType{CurrentSessionCount: 2, CumulatedSessionCount: 2, RejectedSessionCount: 1,
		PublishingIntervalCount: uint32(len(intervals)), CurrentSubscriptionCount: 3, CumulatedSubscriptionCount: 3,
		RejectedRequestsCount: 2}
	if sum := readSummary(t, a); sum != wantSum {
		t.Errorf("ServerDiagnosticsSummary = %+v, want %+v", sum, wantSum)
	}
	if v := readValues(t, a, diagEnabledFlag)[0]; v != true {
		t.Errorf("EnabledFlag = %#v, want true", v)
	}
	wr := call[*ua.WriteResponse](t, a, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
		NodeID: nsid(diagEnabledFlag), AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(false)},
	}}})
	if wr.Results[0] != ua.StatusBadNotWritable {
		t.Errorf("Write EnabledFlag false: %v, want BadNotWritable", wr.Results[0])
	}

	// Closing b (and deleting its subscription) shows at once.
	if err := b.Close(context.Background(), callTimeout); err != nil {
		t.Fatal(err)
	}
	got = readCounts(t, a, diagCurrentSessions, diagCumulatedSessions, diagCurrentSubs, diagCumulatedSubs)
	if got[diagCurrentSessions] != 1 || got[diagCumulatedSessions] != 2 || got[diagCurrentSubs] != 2 || got[diagCumulatedSubs] != 3 {
		t.Errorf("after closing b: CurrentSessionCount %d (want 1), CumulatedSessionCount %d (want 2), CurrentSubscriptionCount %d (want 2), CumulatedSubscriptionCount %d (want 3)",
			got[diagCurrentSessions], got[diagCumulatedSessions], got[diagCurrentSubs], got[diagCumulatedSubs])
	}
	if sum := readSummary(t, a); sum.CurrentSessionCount != 1 || sum.CurrentSubscriptionCount != 2 {
		t.Errorf("ServerDiagnosticsSummary after closing b = %+v", sum)
	}
}

// TestServerDiagnosticsReachSubscribers monitors CurrentSessionCount and
// the summary and expects the status tick to push the changes.
func TestServerDiagnosticsReachSubscribers(t *testing.T) {
	s := startLoopback(t, Config{})
	a, b := openSession(t, s, "a"), openSession(t, s, "b")
	sub := createSubscription(t, a, 50*time.Millisecond)
	monitor(t, a, sub.SubscriptionID, ua.MonitoringModeReporting, diagCurrentSessions)
	// The item starts with the last pushed value, which may predate the
	// sessions; the tick brings it to 2.
	awaitCount(t, a, diagCurrentSessions, 2)
	if err := b.Close(context.Background(), callTimeout); err != nil {
		t.Fatal(err)
	}
	awaitCount(t, a, diagCurrentSessions, 1)
}

// TestEngineReadsDiagnosticsWithoutStats enables a Disabled item on
// CurrentSubscriptionCount: the engine reads the value holding its own
// locks, so a Getter calling Engine.Stats there would hang the engine.
func TestEngineReadsDiagnosticsWithoutStats(t *testing.T) {
	s := startLoopback(t, Config{})
	a := openSession(t, s, "a")
	sub := createSubscription(t, a, 50*time.Millisecond)
	ids := monitor(t, a, sub.SubscriptionID, ua.MonitoringModeDisabled, diagCurrentSubs, diagSummary)
	resp := call[*ua.SetMonitoringModeResponse](t, a, &ua.SetMonitoringModeRequest{
		SubscriptionID: sub.SubscriptionID, MonitoringMode: ua.MonitoringModeReporting, MonitoredItemIDs: ids,
	})
	for k, r := range resp.Results {
		if r != ua.StatusOK {
			t.Fatalf("SetMonitoringMode item %d: %v", k, r)
		}
	}
	awaitCount(t, a, diagCurrentSubs, 1)
	// The engine still serves.
	createSubscription(t, a, 50*time.Millisecond)
	if got := readCounts(t, a, diagCurrentSubs)[diagCurrentSubs]; got != 2 {
		t.Errorf("CurrentSubscriptionCount = %d, want 2", got)
	}
}

// TestDiagnosticsPublishOnlyChanges: a tick without a change stores
// nothing, one with a change stores only the changed children and the
// summary.
func TestDiagnosticsPublishOnlyChanges(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	s := newTestServer(t, Config{Clock: clk})
	space := s.AddressSpace()
	stores := map[uint32]int{}
	watch := []uint32{diagSummary, diagCurrentSessions, diagCurrentSubs, diagCumulatedSubs, diagIntervals}
	for _, n := range watch {
		cancel, st := space.Watch(nsid(n), func(*ua.DataValue) { stores[n]++ })
		if st != ua.StatusOK {
			t.Fatal(st)
		}
		defer cancel()
	}
	s.publishDiagnostics(clk.Now())
	if len(stores) != 0 {
		t.Fatalf("a tick without a change stored %v", stores)
	}
	// A subscription is created straight on the engine (no session layer).
	if _, err := s.engine.CreateSubscription("diag-test", &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 100, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true,
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	s.publishDiagnostics(clk.Now())
	wantStores := map[uint32]int{diagSummary: 1, diagCurrentSubs: 1, diagCumulatedSubs: 1, diagIntervals: 1}
	if !maps.Equal(stores, wantStores) {
		t.Fatalf("stores after one new subscription = %v, want %v", stores, wantStores)
	}
	dv, ok := s.diag.published(nsid(diagCurrentSubs))
	if !ok || dv.Value.Value() != uint32(1) || !dv.SourceTimestamp.Equal(clk.Now()) {
		t.Errorf("published CurrentSubscriptionCount = %+v, want 1 at %v", dv, clk.Now())
	}
	if dv, _ := s.diag.published(nsid(diagCurrentSessions)); !dv.SourceTimestamp.Equal(t0) {
		t.Errorf("unchanged CurrentSessionCount restamped: %v, want %v", dv.SourceTimestamp, t0)
	}
	if _, ok := s.diag.published(ua.NewStringNodeID(0, "x")); ok {
		t.Error("a string NodeId is a diagnostics variable")
	}
}
