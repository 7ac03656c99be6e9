package subscription

import (
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/poll"
	ualimits "github.com/otopcua/otopcua/opcua/limits"
)

// TestServerWideItemLimitHoldsAcrossConcurrentCalls: calls in flight at
// once reserve their room, so together they never exceed
// MaxMonitoredItems, and each refused item is counted.
func TestServerWideItemLimitHoldsAcrossConcurrentCalls(t *testing.T) {
	const limit, calls, per = 1000, 8, 200
	v := newEnv(t, Options{Limits: ualimits.Limits{MaxMonitoredItems: limit, MaxSubscriptionsPerSession: calls}})
	var subs []uint32
	for range calls {
		subs = append(subs, v.createSub(sessA, subParams{}).SubscriptionID)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[ua.StatusCode]int{}
	for _, sub := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &ua.CreateMonitoredItemsRequest{RequestHeader: hdr(3), SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth}
			for i := range per {
				req.ItemsToCreate = append(req.ItemsToCreate, itemSpec{node: 1 + i%100}.request())
			}
			resp, err := v.e.CreateMonitoredItems(sessA, req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range resp.Results {
				got[r.StatusCode]++
			}
		}()
	}
	wg.Wait()
	if got[ua.StatusGood] != limit || got[ua.StatusBadTooManyMonitoredItems] != calls*per-limit {
		t.Fatalf("results %v, want %d Good and %d BadTooManyMonitoredItems", got, limit, calls*per-limit)
	}
	st := v.e.Stats()
	if st.MonitoredItems != limit || st.Refusals[LimitMonitoredItems] != calls*per-limit {
		t.Fatalf("Stats: %d items, %d refusals", st.MonitoredItems, st.Refusals[LimitMonitoredItems])
	}
	if n := v.src.watchers(); n != limit {
		t.Fatalf("%d Source registrations, want %d", n, limit)
	}
}

// TestServerWideSubscriptionLimit counts orphaned subscriptions too.
func TestServerWideSubscriptionLimit(t *testing.T) {
	v := newEnv(t, Options{Limits: ualimits.Limits{MaxSubscriptions: 3}})
	for _, sess := range []SessionID{sessA, sessA, sessB} {
		v.createSub(sess, subParams{})
	}
	v.e.SessionClosed(sessA, false) // orphaned, still held
	for _, sess := range []SessionID{sessA, sessB, "ns=1;i=99"} {
		if _, err := v.e.CreateSubscription(sess, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100}); err != ua.StatusBadTooManySubscriptions {
			t.Fatalf("%s: %v, want BadTooManySubscriptions", sess, err)
		}
	}
	st := v.e.Stats()
	if st.Subscriptions != 3 || st.CumulatedSubscriptions != 3 || st.Refusals[LimitSubscriptions] != 3 {
		t.Fatalf("Stats %+v", st)
	}
}

// TestLargeDeletionsAreRetiredAndCloseWaits: deleting a subscription of
// many items returns before its registrations are all cancelled (they go
// in the background), items stop queuing at once, and Close returns only
// when every registration is gone.
func TestLargeDeletionsAreRetiredAndCloseWaits(t *testing.T) {
	v := newEnv(t, Options{})
	const n = 5 * retireSlice
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	specs := make([]itemSpec, n)
	for i := range specs {
		specs[i] = itemSpec{node: 1 + i%100}
	}
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, specs...)
	if got := v.src.watchers(); got != n {
		t.Fatalf("%d registrations, want %d", got, n)
	}
	// A second subscription with as many items stays until Close.
	other := v.createSub(sessB, subParams{}).SubscriptionID
	v.createItems(sessB, other, ua.TimestampsToReturnBoth, specs...)

	if _, err := v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{RequestHeader: hdr(4), SubscriptionIDs: []uint32{sub}}); err != nil {
		t.Fatal(err)
	}
	if st := v.e.Stats(); st.MonitoredItems != n || st.Subscriptions != 1 {
		t.Fatalf("after the delete: %d items in %d subscriptions", st.MonitoredItems, st.Subscriptions)
	}
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("the deleted subscription's registrations to be retired", func() bool { return v.src.watchers() == n }))
	v.e.Close()
	if got := v.src.watchers(); got != 0 {
		t.Fatalf("%d registrations after Close", got)
	}
}

// TestDeleteMonitoredItemsCountsDown keeps Stats right through deletes.
func TestDeleteMonitoredItemsCountsDown(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2}, itemSpec{node: 3})
	if _, err := v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{res[0].MonitoredItemID, 4242}}); err != nil {
		t.Fatal(err)
	}
	if n := v.e.Stats().MonitoredItems; n != 2 {
		t.Fatalf("%d items, want 2", n)
	}
	v.e.SessionClosed(sessA, true)
	if st := v.e.Stats(); st.MonitoredItems != 0 || st.Subscriptions != 0 {
		t.Fatalf("after closing: %+v", st)
	}
}
