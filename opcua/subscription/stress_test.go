package subscription

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
)

// republishingSender is a client that sends a new Publish request for every
// response it receives, keeping a fixed number in flight.
type republishingSender struct {
	e        *Engine
	sess     SessionID
	mu       sync.Mutex
	data     int // responses with notifications
	total    int
	next     atomic.Uint32
	stopping atomic.Bool
}

func (s *republishingSender) SendResponse(_ uint32, resp ua.Response) error {
	s.mu.Lock()
	s.total++
	if pr, ok := resp.(*ua.PublishResponse); ok && len(pr.NotificationMessage.NotificationData) > 0 {
		s.data++
	}
	s.mu.Unlock()
	if !s.stopping.Load() {
		s.e.Publish(s.sess, s, s.next.Add(1), &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	}
	return nil
}

func (s *republishingSender) dataResponses() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data
}

// TestVanishedClientBlocksNothing pins the gopcua deadlock: a client stops
// reading while 10,000 monitored values change continuously. The producers
// must keep writing, another session must keep publishing, a third must be
// able to create a subscription, and closing the vanished session must not
// hang.
func TestVanishedClientBlocksNothing(t *testing.T) {
	const nodes = 10000
	src := newFakeSource(time.Now, nodes)
	e := New(src, Options{Logger: slog.New(slog.DiscardHandler)})
	// Cleanup runs only after a pass: after a deadlock it would hang too.
	var cleanups []func()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
	cleanups = append(cleanups, func() { closeWithin(t, e, 10*time.Second) })

	// Session A: every value, ten Publish requests, a Sender that never returns
	// until the end of the test.
	blocked := &fakeSender{block: make(chan struct{})}
	cleanups = append(cleanups, func() { close(blocked.block) })
	subA := mustCreateSub(t, e, sessA, 20)
	var all []*ua.MonitoredItemCreateRequest
	for i := 1; i <= nodes; i++ {
		all = append(all, itemSpec{node: i, queue: 5}.request())
	}
	if _, err := e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: subA, ItemsToCreate: all}); err != nil {
		t.Fatal(err)
	}
	for i := uint32(1); i <= 10; i++ {
		e.Publish(sessA, blocked, i, &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	}

	// Session B: a healthy client on some of the same nodes.
	healthy := &republishingSender{e: e, sess: sessB}
	cleanups = append(cleanups, func() { healthy.stopping.Store(true) })
	subB := mustCreateSub(t, e, sessB, 20)
	if _, err := e.CreateMonitoredItems(sessB, &ua.CreateMonitoredItemsRequest{SubscriptionID: subB, ItemsToCreate: all[:10]}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.Publish(sessB, healthy, healthy.next.Add(1), &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	}

	// Two producers write every node over and over.
	var rounds atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := int32(0); ; r++ {
				for i := 1 + p; i <= nodes; i += 2 {
					src.set(i, r)
				}
				rounds.Add(1)
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	cleanups = append(cleanups, func() { close(stop); wg.Wait() })

	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("session A's sender to block", func() bool { return e.queued.Load() > 1 }))
	start := rounds.Load()
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("producers to write 20 more rounds", func() bool { return rounds.Load() >= start+20 }))
	got := healthy.dataResponses()
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("session B to receive 20 more data messages", func() bool { return healthy.dataResponses() >= got+20 }))

	created := make(chan error, 1)
	go func() {
		_, err := e.CreateSubscription("ns=1;i=300", &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 20})
		created <- err
	}()
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CreateSubscription of a third session hangs")
	}

	closed := make(chan struct{})
	go func() {
		e.SessionClosed(sessA, true)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("closing the vanished session hangs")
	}
	start = rounds.Load()
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("producers to keep writing after the close", func() bool { return rounds.Load() >= start+5 }))
	// Session A's 10,000 registrations are retired in the background.
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("session A's Source registrations to be cancelled, leaving session B's 10", func() bool { return src.watchers() == 10 }))
}

func mustCreateSub(t *testing.T, e *Engine, sess SessionID, intervalMS float64) uint32 {
	t.Helper()
	r, err := e.CreateSubscription(sess, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: intervalMS, RequestedMaxKeepAliveCount: 5, RequestedLifetimeCount: 10000, PublishingEnabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.SubscriptionID
}

// countingSender counts the responses per request id.
type countingSender struct {
	mu  sync.Mutex
	ids map[uint32]int
}

func (s *countingSender) SendResponse(reqID uint32, _ ua.Response) error {
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[uint32]int{}
	}
	s.ids[reqID]++
	s.mu.Unlock()
	return nil
}

func (s *countingSender) answered(n uint32) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := uint32(1); id <= n; id++ {
		switch s.ids[id] {
		case 0:
			return false, nil
		case 1:
		default:
			return false, fmt.Errorf("request %d answered %d times", id, s.ids[id])
		}
	}
	return len(s.ids) == int(n), nil
}

// TestConcurrentChurn runs producers, Publish traffic, creates, modifies,
// deletes, transfers and session closes from several goroutines at once
// (run it with -race). Every Publish request of a session that was not
// closed must be answered exactly once.
func TestConcurrentChurn(t *testing.T) {
	const nodes = 200
	clock := clockwork.NewRealClock()
	src := newFakeSource(clock.Now, nodes)
	e := New(src, Options{Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close()

	stop := make(chan struct{})
	var producers sync.WaitGroup
	for p := range 2 {
		producers.Add(1)
		go func() {
			defer producers.Done()
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for v := int32(0); ; v++ {
				src.set(1+r.IntN(nodes), v)
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	defer func() { close(stop); producers.Wait() }()

	var shared sync.Map // subscription ids any worker may try to transfer
	var workers sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 3 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := churn(e, w, &shared); err != nil {
				errs <- err
			}
		}()
	}
	workers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Still healthy afterwards.
	snd := &fakeSender{}
	sub := mustCreateSub(t, e, "final", 10)
	e.Publish("final", snd, 1, &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("a publish after the churn", func() bool { return snd.len() == 1 }))
	if pr, ok := snd.all()[0].resp.(*ua.PublishResponse); !ok || pr.SubscriptionID != sub {
		t.Fatalf("final response %+v", snd.all()[0].resp)
	}
}

func churn(e *Engine, w int, shared *sync.Map) error {
	r := rand.New(rand.NewPCG(uint64(w), 2))
	for inc := range 8 {
		sess := SessionID(fmt.Sprintf("w%d-%d", w, inc))
		snd := &countingSender{}
		var reqs uint32
		var mine []uint32
		publish := func() {
			reqs++
			e.Publish(sess, snd, reqs, &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
		}
		for range 6 {
			cs, err := e.CreateSubscription(sess, &ua.CreateSubscriptionRequest{
				RequestedPublishingInterval: 10, RequestedMaxKeepAliveCount: 2, RequestedLifetimeCount: 50,
				MaxNotificationsPerPublish: uint32(r.IntN(4)), PublishingEnabled: true,
			})
			if err != nil {
				return err
			}
			mine = append(mine, cs.SubscriptionID)
			shared.Store(cs.SubscriptionID, true)
			var items []*ua.MonitoredItemCreateRequest
			for range 8 {
				sp := itemSpec{node: 1 + r.IntN(nodeCount(e)), queue: uint32(r.IntN(4)), discardOldest: r.IntN(2) == 0,
					sampling: []float64{-1, 0, 10, 30}[r.IntN(4)]}
				items = append(items, sp.request())
			}
			cm, err := e.CreateMonitoredItems(sess, &ua.CreateMonitoredItemsRequest{SubscriptionID: cs.SubscriptionID, ItemsToCreate: items})
			switch {
			case err == ua.StatusBadSubscriptionIDInvalid: // another worker took it over
			case err != nil:
				return err
			default:
				ids := make([]uint32, len(cm.Results))
				for i, res := range cm.Results {
					ids[i] = res.MonitoredItemID
				}
				churnItems(e, r, sess, cs.SubscriptionID, ids)
			}
			publish()
			publish()
			// Try to steal a subscription of another worker.
			shared.Range(func(k, _ any) bool {
				if r.IntN(8) != 0 {
					return true
				}
				tr, err := e.TransferSubscriptions(sess, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{k.(uint32)}, SendInitialValues: true})
				if err == nil && tr.Results[0].StatusCode == ua.StatusGood {
					mine = append(mine, k.(uint32))
				}
				return false
			})
			publish()
		}
		if inc%3 == 2 {
			e.SessionClosed(sess, r.IntN(2) == 0)
			continue
		}
		if _, err := e.DeleteSubscriptions(sess, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: mine}); err != nil {
			return err
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			ok, err := snd.answered(reqs)
			if err != nil {
				return fmt.Errorf("session %s: %w", sess, err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("session %s: %d Publish requests not all answered", sess, reqs)
			}
			time.Sleep(time.Millisecond) // polling with a deadline
		}
		e.SessionClosed(sess, true)
	}
	return nil
}

func nodeCount(e *Engine) int { return len(e.src.(*fakeSource).nodes) }

// churnItems modifies, re-moded, links and deletes some items.
func churnItems(e *Engine, r *rand.Rand, sess SessionID, sub uint32, ids []uint32) {
	_, _ = e.ModifyMonitoredItems(sess, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub, ItemsToModify: []*ua.MonitoredItemModifyRequest{
		{MonitoredItemID: ids[0], RequestedParameters: &ua.MonitoringParameters{SamplingInterval: float64(r.IntN(3) * 10), QueueSize: uint32(r.IntN(5))}},
	}})
	_, _ = e.SetMonitoringMode(sess, &ua.SetMonitoringModeRequest{SubscriptionID: sub, MonitoringMode: ua.MonitoringMode(r.IntN(3)), MonitoredItemIDs: ids[1:3]})
	_, _ = e.SetTriggering(sess, &ua.SetTriggeringRequest{SubscriptionID: sub, TriggeringItemID: ids[3], LinksToAdd: ids[4:6]})
	_, _ = e.DeleteMonitoredItems(sess, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: ids[3:5]})
	_, _ = e.ModifySubscription(sess, &ua.ModifySubscriptionRequest{SubscriptionID: sub, RequestedPublishingInterval: 10, RequestedMaxKeepAliveCount: 2, MaxNotificationsPerPublish: uint32(r.IntN(3))})
	_, _ = e.Republish(sess, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: 1})
}

// TestSourceMayNotifyUnderItsOwnLock pins the lock-ordering rule towards the
// Source: a Source may call the change callback while holding its own lock,
// and its cancel function takes that lock, so the engine must never call
// cancel while holding a lock the callback needs.
func TestSourceMayNotifyUnderItsOwnLock(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	id := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})[0].MonitoredItemID

	inNotify, release := make(chan struct{}), make(chan struct{})
	cancelling := make(chan struct{})
	v.src.beforeNotify = func(int) { close(inNotify); <-release }
	v.src.onCancel = func() { close(cancelling) }

	written := make(chan struct{})
	go func() { v.src.set(1, int32(5)); close(written) }()
	<-inNotify // the writer holds the Source lock and is about to call back

	deleted := make(chan error, 1)
	go func() {
		_, err := v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{id}})
		deleted <- err
	}()
	<-cancelling // the engine calls cancel, which now waits for the Source lock
	close(release)
	for _, ch := range []chan struct{}{written} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("the Source writer is stuck in the change callback: cancel was called under an engine lock")
		}
	}
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DeleteMonitoredItems is stuck")
	}
	v.src.beforeNotify, v.src.onCancel = nil, nil
}
