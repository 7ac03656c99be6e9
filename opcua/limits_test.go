package opcua

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// startLimited starts a real server on 127.0.0.1 with cfg and returns it.
func startLimited(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Clock = clockwork.NewRealClock()
	cfg.ListenHost, cfg.PublicHostname, cfg.Port = "127.0.0.1", "127.0.0.1", AnyPort
	s := newTestServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

// uaSession is one client of otopcua's lean transport with an activated
// session.
type uaSession struct {
	t  *testing.T
	ch *uaclient.Channel
	s  *uaclient.Session
}

func openLeanSession(t *testing.T, url string) *uaSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, url, uaclient.Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	s, err := uaclient.NewSession(ctx, ch, t.Name(), time.Minute, 10*time.Second)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	return &uaSession{t: t, ch: ch, s: s}
}

// call sends req and returns the response or the Bad service result.
func (u *uaSession) call(req ua.Request) (ua.Response, error) {
	return u.ch.Call(context.Background(), req, u.s.Auth(), 30*time.Second)
}

func (u *uaSession) mustCall(req ua.Request) ua.Response {
	u.t.Helper()
	resp, err := u.call(req)
	if err != nil {
		u.t.Fatalf("%T: %v", req, err)
	}
	return resp
}

func (u *uaSession) subscribe(intervalMS float64, lifetime, keepAlive uint32) uint32 {
	u.t.Helper()
	r := u.mustCall(&ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: intervalMS, RequestedLifetimeCount: lifetime,
		RequestedMaxKeepAliveCount: keepAlive, PublishingEnabled: true,
	}).(*ua.CreateSubscriptionResponse)
	return r.SubscriptionID
}

// addItems creates n items on node in sub and returns their statuses.
func (u *uaSession) addItems(sub uint32, node *ua.NodeID, n int) []ua.StatusCode {
	u.t.Helper()
	codes, err := u.tryAddItems(sub, node, n)
	if err != nil {
		u.t.Fatalf("CreateMonitoredItems: %v", err)
	}
	return codes
}

// tryAddItems is addItems that returns a Bad service result.
func (u *uaSession) tryAddItems(sub uint32, node *ua.NodeID, n int) ([]ua.StatusCode, error) {
	req := &ua.CreateMonitoredItemsRequest{SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth}
	for i := range n {
		req.ItemsToCreate = append(req.ItemsToCreate, &ua.MonitoredItemCreateRequest{
			ItemToMonitor:       &ua.ReadValueID{NodeID: node, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(i), SamplingInterval: 0, QueueSize: 1, DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
		})
	}
	resp, err := u.call(req)
	if err != nil {
		return nil, err
	}
	r := resp.(*ua.CreateMonitoredItemsResponse)
	out := make([]ua.StatusCode, len(r.Results))
	for i, res := range r.Results {
		out[i] = res.StatusCode
	}
	return out, nil
}

func countCodes(codes []ua.StatusCode) map[ua.StatusCode]int {
	m := map[ua.StatusCode]int{}
	for _, c := range codes {
		m[c]++
	}
	return m
}

// TestClientCannotExceedSubscriptionAndItemLimits: one session accepted
// 5,000 subscriptions and any number of monitored items.
func TestClientCannotExceedSubscriptionAndItemLimits(t *testing.T) {
	s := startLimited(t, Config{Limits: limits.Limits{
		MaxMonitoredItemsPerCall: 10,
		MaxSubscriptions:         3, MaxSubscriptionsPerSession: 2,
		MaxMonitoredItems: 8, MaxMonitoredItemsPerSubscription: 5,
	}})
	a, b := openLeanSession(t, s.EndpointURL()), openLeanSession(t, s.EndpointURL())
	subA := a.subscribe(100, 100, 10)
	a.subscribe(100, 100, 10)
	if _, err := a.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100}); !errors.Is(err, ua.StatusBadTooManySubscriptions) {
		t.Fatalf("3rd subscription of a session: %v, want BadTooManySubscriptions", err)
	}
	subB := b.subscribe(100, 100, 10)
	if _, err := b.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100}); !errors.Is(err, ua.StatusBadTooManySubscriptions) {
		t.Fatalf("4th subscription of the server: %v, want BadTooManySubscriptions", err)
	}

	level := nsid(id.Server_ServiceLevel)
	if got := countCodes(a.addItems(subA, level, 7)); got[ua.StatusOK] != 5 || got[ua.StatusBadTooManyMonitoredItems] != 2 {
		t.Fatalf("7 items in a subscription of 5: %v", got)
	}
	if got := countCodes(b.addItems(subB, level, 5)); got[ua.StatusOK] != 3 || got[ua.StatusBadTooManyMonitoredItems] != 2 {
		t.Fatalf("5 items with 3 left on the server: %v", got)
	}
	if _, err := b.tryAddItems(subB, level, 11); !errors.Is(err, ua.StatusBadTooManyOperations) {
		t.Fatalf("11 items in one call: %v, want BadTooManyOperations", err)
	}
	// Deleting frees room for others.
	a.mustCall(&ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{subA}})
	if got := countCodes(b.addItems(subB, level, 2)); got[ua.StatusOK] != 2 {
		t.Fatalf("after a delete: %v", got)
	}
	st := s.engine.Stats()
	if st.Subscriptions != 2 || st.MonitoredItems != 5 {
		t.Fatalf("engine holds %d subscriptions and %d items, want 2 and 5", st.Subscriptions, st.MonitoredItems)
	}
	for limit, want := range map[string]uint64{
		subscription.LimitSubscriptionsPerSession: 1, subscription.LimitSubscriptions: 1,
		subscription.LimitMonitoredItemsPerSubscription: 2, subscription.LimitMonitoredItems: 2,
	} {
		if got := st.Refusals[limit]; got != want {
			t.Errorf("refusals[%s] = %d, want %d", limit, got, want)
		}
	}
}

// TestLimitsAreShownInServerCapabilities: a client can read every limit
// it is held to.
func TestLimitsAreShownInServerCapabilities(t *testing.T) {
	s := startLimited(t, Config{Limits: limits.Limits{
		MaxSessions: 42, MaxMonitoredItemsPerCall: 777, MaxNodesPerRead: 555,
		MaxSubscriptions: 11, MaxSubscriptionsPerSession: 7, MaxMonitoredItems: 9999, MaxMonitoredItemsPerSubscription: 888,
	}})
	c := openLeanSession(t, s.EndpointURL())
	want := map[uint32]any{
		id.Server_ServerCapabilities_MaxSessions:                              uint32(42),
		id.Server_ServerCapabilities_MaxSubscriptions:                         uint32(11),
		id.Server_ServerCapabilities_MaxSubscriptionsPerSession:               uint32(7),
		id.Server_ServerCapabilities_MaxMonitoredItems:                        uint32(9999),
		id.Server_ServerCapabilities_MaxMonitoredItemsPerSubscription:         uint32(888),
		id.Server_ServerCapabilities_OperationLimits_MaxMonitoredItemsPerCall: uint32(777),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerRead:          uint32(555),
		id.Server_ServerCapabilities_MaxMonitoredItemsQueueSize:               uint32(10000),
		id.Server_ServerCapabilities_MinSupportedSampleRate:                   float64(10),
	}
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnNeither}
	var order []uint32
	for n := range want {
		order = append(order, n)
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: nsid(n), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
	}
	r := c.mustCall(req).(*ua.ReadResponse)
	for k, dv := range r.Results {
		if dv.Status != ua.StatusOK || dv.Value == nil || dv.Value.Value() != want[order[k]] {
			t.Errorf("i=%d: %v %v, want %v", order[k], dv.Status, dv.Value, want[order[k]])
		}
	}
}

// TestExpiringHugeSubscriptionDoesNotStallOthers: when an orphaned
// subscription of 100,000 items expired, the engine spent 28.6 s removing
// its watchers and every other client's subscription received nothing
// meanwhile. A well-behaved session publishing every 200 ms must keep
// receiving a Publish response (data or keep-alive) every interval while
// the big one is created, orphaned, and expires.
func TestExpiringHugeSubscriptionDoesNotStallOthers(t *testing.T) {
	const (
		items    = 100000
		interval = 200 * time.Millisecond
		maxGap   = interval + 500*time.Millisecond
	)
	s := startLimited(t, Config{})
	ns := s.AddressSpace().AddNamespace("urn:otopcua:test:limits")
	v, err := s.AddressSpace().AddVariable(ua.NewStringNodeID(ns, "hot"), "hot", "hot",
		nsid(id.ObjectsFolder), nsid(id.Double), 0.0, byte(ua.AccessLevelTypeCurrentRead))
	if err != nil {
		t.Fatal(err)
	}

	// The well-behaved client: keep-alive count 1, so an answer is due
	// every publishing interval; three Publish requests in flight.
	good := openLeanSession(t, s.EndpointURL())
	goodSub := good.subscribe(float64(interval/time.Millisecond), 100, 1)
	good.addItems(goodSub, nsid(id.Server_ServiceLevel), 1)
	var (
		mu       sync.Mutex
		arrivals []time.Time
		pubErr   error
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r, err := good.ch.Request(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{}}, good.s.Auth(), 10*time.Second)
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil && pubErr == nil {
						pubErr = err
					}
				} else {
					arrivals = append(arrivals, r.At)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()

	// A producer changes the hot variable every 50 ms: every change goes to
	// the big subscription's items too.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for x := 0.0; ; x++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = v.Set(x, ua.StatusOK, time.Time{})
			}
		}
	}()

	// The careless client: 100,000 items on one variable, then it goes
	// away without deleting them. Its subscription lives 3 s without
	// Publish requests (lifetime 30 × 100 ms) once its items exist: it is
	// created with a lifetime of 5 min, so that creating the items (slow
	// under the race detector on a busy machine) never outlasts it, and
	// ModifySubscription sets 3 s when they are all there.
	start := time.Now()
	bad := openLeanSession(t, s.EndpointURL())
	badSub := bad.subscribe(100, 3000, 10)
	for done := 0; done < items; done += limits.Defaults().MaxMonitoredItemsPerCall {
		if got := countCodes(bad.addItems(badSub, v.NodeID(), limits.Defaults().MaxMonitoredItemsPerCall)); got[ua.StatusOK] != limits.Defaults().MaxMonitoredItemsPerCall {
			t.Fatalf("creating items: %v", got)
		}
	}
	if r := bad.mustCall(&ua.ModifySubscriptionRequest{
		SubscriptionID: badSub, RequestedPublishingInterval: 100, RequestedLifetimeCount: 30, RequestedMaxKeepAliveCount: 10,
	}).(*ua.ModifySubscriptionResponse); r.RevisedLifetimeCount != 30 {
		t.Fatalf("ModifySubscription revised the lifetime to %d, want 30", r.RevisedLifetimeCount)
	}
	created := time.Since(start)
	if n := v.Watchers(); n != items {
		t.Fatalf("%d watchers on the hot variable, want %d", n, items)
	}
	_ = bad.ch.Close()

	// Wait for the expiry and for its items to be retired, then one more
	// second of publishing.
	poll.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		if w, n := v.Watchers(), s.engine.Stats().MonitoredItems; w != 0 || n != 1 {
			return fmt.Errorf("the orphaned subscription did not expire: %d watchers, %d items", w, n)
		}
		return nil
	})
	expiredAt := time.Now()
	expired := expiredAt.Sub(start)
	// One more second of publishing: wait for a Publish response read a
	// second after the expiry (a stall on the way shows as a gap below).
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if pubErr != nil {
			return nil // reported below
		}
		for _, a := range arrivals {
			if !a.Before(expiredAt.Add(time.Second)) {
				return nil
			}
		}
		return fmt.Errorf("no Publish response %v after the expiry", time.Second)
	})
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if pubErr != nil {
		t.Fatalf("the well-behaved client's Publish failed: %v", pubErr)
	}
	gaps := gapsBetween(arrivals, start)
	worst := time.Duration(0)
	for _, g := range gaps {
		worst = max(worst, g)
	}
	t.Logf("100,000 items created in %s, expired and retired %s after start; %d Publish responses, worst gap %s",
		created.Round(time.Millisecond), expired.Round(time.Millisecond), len(gaps), worst.Round(time.Millisecond))
	if len(gaps) < int(expired/interval)/2 {
		t.Fatalf("only %d Publish responses in %s", len(gaps), expired)
	}
	if worst > maxGap {
		t.Fatalf("worst gap between Publish responses %s, want ≤ %s", worst, maxGap)
	}
}

// gapsBetween returns the gaps between consecutive arrival times after
// from (the arrivals of several goroutines, sorted here).
func gapsBetween(arrivals []time.Time, from time.Time) []time.Duration {
	var ts []time.Time
	for _, a := range arrivals {
		if !a.Before(from) {
			ts = append(ts, a)
		}
	}
	slices.SortFunc(ts, time.Time.Compare)
	var gaps []time.Duration
	prev := from
	for _, a := range ts {
		gaps = append(gaps, a.Sub(prev))
		prev = a
	}
	return gaps
}
