package subscription

import (
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

const sessA, sessB SessionID = "ns=1;i=100", "ns=1;i=200"

func TestPublishDeliversInitialValuesThenChanges(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2})
	for i, r := range res {
		if r.StatusCode != ua.StatusGood || r.MonitoredItemID == 0 {
			t.Fatalf("item %d: %v id %d", i, r.StatusCode, r.MonitoredItemID)
		}
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.publish(sessA, snd, 2)
	v.settle()
	if n := snd.len(); n != 0 {
		t.Fatalf("%d responses before the first publishing interval", n)
	}
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 || got[0].reqID != 1 {
		t.Fatalf("after one interval: %d responses %+v, want request 1 answered", len(got), got)
	}
	pr := got[0].resp.(*ua.PublishResponse)
	ns := notifications(t, pr)
	if len(ns) != 2 || ns[0].ClientHandle+ns[1].ClientHandle != 1001+1002 {
		t.Fatalf("initial notifications %+v", ns)
	}
	if pr.SubscriptionID != sub || pr.NotificationMessage.SequenceNumber != 1 || pr.ResponseHeader.RequestHandle != 1 {
		t.Fatalf("response sub %d seq %d handle %d", pr.SubscriptionID, pr.NotificationMessage.SequenceNumber, pr.ResponseHeader.RequestHandle)
	}
	if !equalSlices(pr.AvailableSequenceNumbers, []uint32{1}) {
		t.Fatalf("available %v, want [1]", pr.AvailableSequenceNumbers)
	}

	v.src.set(2, int32(42))
	v.advance(100 * time.Millisecond)
	got = snd.all()
	if len(got) != 2 {
		t.Fatalf("%d responses, want 2", len(got))
	}
	pr = got[1].resp.(*ua.PublishResponse)
	ns = notifications(t, pr)
	if len(ns) != 1 || ns[0].ClientHandle != 1002 || values(t, ns)[0] != 42 {
		t.Fatalf("change notifications %+v", ns)
	}
	if pr.NotificationMessage.SequenceNumber != 2 || !equalSlices(pr.AvailableSequenceNumbers, []uint32{1, 2}) {
		t.Fatalf("seq %d available %v", pr.NotificationMessage.SequenceNumber, pr.AvailableSequenceNumbers)
	}
}

func TestTimestampsToReturnPerItem(t *testing.T) {
	for _, tc := range []struct {
		ttr              ua.TimestampsToReturn
		wantSrc, wantSrv bool
	}{
		{ua.TimestampsToReturnSource, true, false},
		{ua.TimestampsToReturnServer, false, true},
		{ua.TimestampsToReturnBoth, true, true},
		{ua.TimestampsToReturnNeither, false, false},
	} {
		v := newEnv(t, Options{})
		sub := v.createSub(sessA, subParams{}).SubscriptionID
		v.createItems(sessA, sub, tc.ttr, itemSpec{node: 1})
		snd := &fakeSender{}
		v.publish(sessA, snd, 1)
		v.advance(100 * time.Millisecond)
		ns := notifications(t, snd.all()[0].resp)
		dv := ns[0].Value
		if dv.Has(ua.DataValueSourceTimestamp) != tc.wantSrc || dv.SourceTimestamp.IsZero() == tc.wantSrc ||
			dv.Has(ua.DataValueServerTimestamp) != tc.wantSrv || dv.ServerTimestamp.IsZero() == tc.wantSrv {
			t.Errorf("ttr %v: mask %#x src %v srv %v", tc.ttr, dv.EncodingMask, dv.SourceTimestamp, dv.ServerTimestamp)
		}
	}
}

func TestQueueOverflowThroughEngine(t *testing.T) {
	for _, tc := range []struct {
		discardOldest bool
		want          []int32
		overflowAt    int
	}{
		{true, []int32{3, 4, 5}, 0},
		{false, []int32{0, 1, 5}, 2},
	} {
		v := newEnv(t, Options{})
		sub := v.createSub(sessA, subParams{}).SubscriptionID
		v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1, queue: 3, discardOldest: tc.discardOldest})
		for i := int32(1); i <= 5; i++ {
			v.src.set(1, i)
		}
		snd := &fakeSender{}
		v.publish(sessA, snd, 1)
		v.advance(100 * time.Millisecond)
		ns := notifications(t, snd.all()[0].resp)
		if got := values(t, ns); !equalSlices(got, tc.want) {
			t.Fatalf("discardOldest=%v: values %v, want %v", tc.discardOldest, got, tc.want)
		}
		for i, n := range ns {
			flagged := n.Value.Status&overflowBits == overflowBits
			if flagged != (i == tc.overflowAt) {
				t.Errorf("discardOldest=%v: notification %d overflow=%v status %#x", tc.discardOldest, i, flagged, uint32(n.Value.Status))
			}
		}
	}
}

func TestSamplingIntervalCoalescesChanges(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 1000}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnBoth,
		itemSpec{node: 1, sampling: 100, queue: 100},
		itemSpec{node: 2, sampling: 0, queue: 100})
	if res[0].RevisedSamplingInterval != 100 || res[1].RevisedSamplingInterval != 0 {
		t.Fatalf("revised sampling %v, %v", res[0].RevisedSamplingInterval, res[1].RevisedSamplingInterval)
	}
	// Ten sampling intervals, each with five changes.
	val := int32(0)
	for range 10 {
		for range 5 {
			val++
			v.src.set(1, val)
			v.src.set(2, val)
		}
		v.advance(100 * time.Millisecond)
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.settle()
	ns := notifications(t, snd.all()[0].resp)
	var sampled, exception []int32
	for i, n := range ns {
		switch n.ClientHandle {
		case 1001:
			sampled = append(sampled, values(t, ns[i:i+1])...)
		case 1002:
			exception = append(exception, values(t, ns[i:i+1])...)
		}
	}
	wantSampled := []int32{0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50}
	if !equalSlices(sampled, wantSampled) {
		t.Errorf("sampled item got %v, want the latest value of each interval %v", sampled, wantSampled)
	}
	if len(exception) != 51 || exception[50] != 50 {
		t.Errorf("exception-based item got %d values (last %v), want every change (51)", len(exception), exception[len(exception)-1:])
	}
}

func TestKeepAlive(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 3, lifetime: 100}).SubscriptionID
	snd := &fakeSender{}
	for i := uint32(1); i <= 5; i++ {
		v.publish(sessA, snd, i)
	}
	v.advance(100 * time.Millisecond)
	if snd.len() != 1 {
		t.Fatalf("first cycle sent %d responses, want the first keep-alive", snd.len())
	}
	// Two empty cycles: nothing; the third: a keep-alive.
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	if snd.len() != 1 {
		t.Fatalf("keep-alive sent early: %d responses", snd.len())
	}
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 2 {
		t.Fatalf("%d responses after keep-alive count cycles, want 2", len(got))
	}
	for _, g := range got {
		pr := g.resp.(*ua.PublishResponse)
		if pr.SubscriptionID != sub || len(pr.NotificationMessage.NotificationData) != 0 || pr.NotificationMessage.SequenceNumber != 1 {
			t.Fatalf("keep-alive %+v: want empty message carrying the next sequence number 1", pr.NotificationMessage)
		}
	}
	// A data message after keep-alives uses the sequence number they announced.
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	v.advance(100 * time.Millisecond)
	pr := snd.all()[2].resp.(*ua.PublishResponse)
	if pr.NotificationMessage.SequenceNumber != 1 || len(notifications(t, pr)) != 1 {
		t.Fatalf("data message seq %d", pr.NotificationMessage.SequenceNumber)
	}
}

func TestLateSubscriptionAnswersNextPublishAtOnce(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, lifetime: 1000}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	v.advance(100 * time.Millisecond) // data ready, no request: late
	snd := &fakeSender{}
	v.publish(sessA, snd, 7)
	v.settle() // no clock advance
	got := snd.all()
	if len(got) != 1 || len(notifications(t, got[0].resp)) != 1 {
		t.Fatalf("late subscription did not answer the new request at once: %+v", got)
	}
}

func TestLifetimeExpiry(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 1, lifetime: 3}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	if v.src.watchers() != 1 {
		t.Fatal("item not watching")
	}
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	if _, err := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: true}); err != nil {
		t.Fatalf("subscription gone before its lifetime: %v", err)
	}
	// The call above was client activity: three more silent intervals.
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	_, err := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: true})
	resp, _ := v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}})
	if err != nil || resp.Results[0] != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("after lifetime: delete result %v, want BadSubscriptionIdInvalid", resp.Results[0])
	}
	if v.src.watchers() != 0 {
		t.Fatal("expired subscription still watches the source")
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.publish(sessA, snd, 2)
	v.settle()
	got := snd.all()
	if len(got) != 2 {
		t.Fatalf("%d responses, want 2", len(got))
	}
	if id, st := statusChange(t, got[0].resp); id != sub || st != ua.StatusBadTimeout {
		t.Fatalf("first publish after expiry: sub %d status %v, want BadTimeout", id, st)
	}
	if st := faultStatus(t, got[1].resp); st != ua.StatusBadNoSubscription {
		t.Fatalf("second publish: %v, want BadNoSubscription", st)
	}
}

func TestPublishKeepsSubscriptionAlive(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 1, lifetime: 3}).SubscriptionID
	snd := &fakeSender{}
	for i := range uint32(20) {
		v.publish(sessA, snd, i+1)
		v.advance(100 * time.Millisecond)
	}
	if snd.len() != 20 {
		t.Fatalf("%d keep-alives for 20 requests, want 20", snd.len())
	}
	if _, err := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}}); err != nil {
		t.Fatal(err)
	}
}

func TestMaxNotificationsPerPublish(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, maxNotif: 4}).SubscriptionID
	var items []itemSpec
	for i := 1; i <= 10; i++ {
		items = append(items, itemSpec{node: i})
	}
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, items...)
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 {
		t.Fatalf("%d responses, want 1", len(got))
	}
	check := func(r ua.Response, n int, more bool) {
		t.Helper()
		pr := r.(*ua.PublishResponse)
		if len(notifications(t, pr)) != n || pr.MoreNotifications != more {
			t.Fatalf("got %d notifications more=%v, want %d more=%v", len(notifications(t, pr)), pr.MoreNotifications, n, more)
		}
	}
	check(got[0].resp, 4, true)
	// The next requests are answered at once, without a publishing interval.
	v.publish(sessA, snd, 2)
	v.settle()
	v.publish(sessA, snd, 3)
	v.settle()
	got = snd.all()
	if len(got) != 3 {
		t.Fatalf("%d responses, want 3 without advancing the clock", len(got))
	}
	check(got[1].resp, 4, true)
	check(got[2].resp, 2, false)
	seen := map[uint32]bool{}
	for _, g := range got {
		for _, n := range notifications(t, g.resp) {
			if seen[n.ClientHandle] {
				t.Fatalf("client handle %d reported twice", n.ClientHandle)
			}
			seen[n.ClientHandle] = true
		}
	}
	if len(seen) != 10 {
		t.Fatalf("%d items reported, want 10", len(seen))
	}
	// More requests queued up front: MoreNotifications chains without waiting.
	for i := 1; i <= 10; i++ {
		v.src.set(i, int32(i))
	}
	for i := uint32(4); i <= 6; i++ {
		v.publish(sessA, snd, i)
	}
	v.advance(100 * time.Millisecond)
	if n := snd.len(); n != 6 {
		t.Fatalf("%d responses, want 6 (three messages in one interval)", n)
	}
}

func TestAcknowledgementsAndRepublish(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100}).SubscriptionID
	other := v.createSub(sessB, subParams{interval: 100}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	v.src.set(1, int32(5))
	v.publish(sessA, snd, 2)
	v.advance(100 * time.Millisecond)
	if snd.len() != 2 {
		t.Fatalf("%d responses, want 2", snd.len())
	}

	rp, err := v.e.Republish(sessA, &ua.RepublishRequest{RequestHeader: hdr(9), SubscriptionID: sub, RetransmitSequenceNumber: 1})
	if err != nil || rp.NotificationMessage.SequenceNumber != 1 || rp.ResponseHeader.RequestHandle != 9 {
		t.Fatalf("Republish(1) = %+v, %v", rp, err)
	}
	if _, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: 77}); err != ua.StatusBadMessageNotAvailable {
		t.Fatalf("Republish(77): %v, want BadMessageNotAvailable", err)
	}
	if _, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: other, RetransmitSequenceNumber: 1}); err != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("Republish on another session's subscription: %v", err)
	}

	v.src.set(1, int32(6))
	v.publish(sessA, snd, 3,
		&ua.SubscriptionAcknowledgement{SubscriptionID: sub, SequenceNumber: 1},
		&ua.SubscriptionAcknowledgement{SubscriptionID: sub, SequenceNumber: 1},
		&ua.SubscriptionAcknowledgement{SubscriptionID: sub, SequenceNumber: 99},
		&ua.SubscriptionAcknowledgement{SubscriptionID: other, SequenceNumber: 1},
		&ua.SubscriptionAcknowledgement{SubscriptionID: 12345, SequenceNumber: 1},
	)
	v.advance(100 * time.Millisecond)
	pr := snd.all()[2].resp.(*ua.PublishResponse)
	want := []ua.StatusCode{ua.StatusGood, ua.StatusBadSequenceNumberUnknown, ua.StatusBadSequenceNumberUnknown,
		ua.StatusBadSubscriptionIDInvalid, ua.StatusBadSubscriptionIDInvalid}
	if !equalSlices(pr.Results, want) {
		t.Fatalf("ack results %v, want %v", pr.Results, want)
	}
	if !equalSlices(pr.AvailableSequenceNumbers, []uint32{2, 3}) {
		t.Fatalf("available %v, want [2 3]", pr.AvailableSequenceNumbers)
	}
	if _, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: 1}); err != ua.StatusBadMessageNotAvailable {
		t.Fatalf("Republish of an acknowledged message: %v", err)
	}
}

func TestRetransmissionQueueBounded(t *testing.T) {
	v := newEnv(t, Options{MaxRetransmitMessages: 3})
	sub := v.createSub(sessA, subParams{interval: 100}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	snd := &fakeSender{}
	for i := range int32(6) {
		v.src.set(1, i+1)
		v.publish(sessA, snd, uint32(i+1))
		v.advance(100 * time.Millisecond)
	}
	pr := snd.all()[5].resp.(*ua.PublishResponse)
	if !equalSlices(pr.AvailableSequenceNumbers, []uint32{4, 5, 6}) {
		t.Fatalf("available %v, want the newest three [4 5 6]", pr.AvailableSequenceNumbers)
	}
}

func TestTooManyPublishRequests(t *testing.T) {
	v := newEnv(t, Options{MaxPublishRequestsPerSession: 5})
	v.createSub(sessA, subParams{interval: 100, keepAlive: 100, lifetime: 1000})
	snd := &fakeSender{}
	for i := uint32(1); i <= 7; i++ {
		v.publish(sessA, snd, i)
	}
	v.settle()
	got := snd.all()
	if len(got) != 2 || got[0].reqID != 1 || got[1].reqID != 2 {
		t.Fatalf("responses %+v, want the two oldest requests answered", got)
	}
	for _, g := range got {
		if st := faultStatus(t, g.resp); st != ua.StatusBadTooManyPublishRequests {
			t.Fatalf("status %v, want BadTooManyPublishRequests", st)
		}
	}
}

func TestPublishWithoutSubscription(t *testing.T) {
	v := newEnv(t, Options{})
	snd := &fakeSender{}
	v.publish(sessA, snd, 3)
	v.settle()
	got := snd.all()
	if len(got) != 1 || faultStatus(t, got[0].resp) != ua.StatusBadNoSubscription || got[0].reqID != 3 {
		t.Fatalf("responses %+v, want BadNoSubscription for request 3", got)
	}
}

func TestDeletingLastSubscriptionAnswersQueuedPublishes(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.publish(sessA, snd, 2)
	if _, err := v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}); err != nil {
		t.Fatal(err)
	}
	v.settle()
	got := snd.all()
	if len(got) != 2 || faultStatus(t, got[0].resp) != ua.StatusBadNoSubscription {
		t.Fatalf("responses %+v, want both requests answered BadNoSubscription", got)
	}
}

func TestPublishingDisabledSendsOnlyKeepAlives(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 2, disabled: true}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.publish(sessA, snd, 2)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 || len(notifications(t, got[0].resp)) != 0 {
		t.Fatalf("disabled subscription: %+v, want one keep-alive", got)
	}
	if _, err := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: true}); err != nil {
		t.Fatal(err)
	}
	v.advance(100 * time.Millisecond)
	got = snd.all()
	if len(got) != 2 || len(notifications(t, got[1].resp)) != 1 {
		t.Fatalf("after enabling: %+v, want the queued value", got)
	}
}

func TestTransferSubscriptions(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, lifetime: 1000}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2})
	a := &fakeSender{}
	v.publish(sessA, a, 1)
	v.advance(100 * time.Millisecond) // initial values to A, seq 1
	v.publish(sessA, a, 2)
	v.settle()

	resp, err := v.e.TransferSubscriptions(sessB, &ua.TransferSubscriptionsRequest{
		RequestHeader: hdr(5), SubscriptionIDs: []uint32{sub, 4242}, SendInitialValues: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].StatusCode != ua.StatusGood || !equalSlices(resp.Results[0].AvailableSequenceNumbers, []uint32{1}) {
		t.Fatalf("transfer result %+v", resp.Results[0])
	}
	if resp.Results[1].StatusCode != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("unknown id result %v", resp.Results[1].StatusCode)
	}
	v.settle()
	got := a.all()
	if len(got) != 2 {
		t.Fatalf("old session got %d responses, want its queued request answered", len(got))
	}
	if id, st := statusChange(t, got[1].resp); id != sub || st != ua.StatusGoodSubscriptionTransferred {
		t.Fatalf("old session: sub %d status %v, want GoodSubscriptionTransferred", id, st)
	}
	if _, err := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}}); err != nil {
		t.Fatal(err)
	} else if r, _ := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}}); r.Results[0] != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("old session still controls the subscription: %v", r.Results[0])
	}

	b := &fakeSender{}
	v.publish(sessB, b, 10)
	v.advance(100 * time.Millisecond)
	gotB := b.all()
	if len(gotB) != 1 {
		t.Fatalf("new session got %d responses", len(gotB))
	}
	pr := gotB[0].resp.(*ua.PublishResponse)
	if pr.SubscriptionID != sub || len(notifications(t, pr)) != 2 || pr.NotificationMessage.SequenceNumber != 2 {
		t.Fatalf("new session: sub %d, %d notifications, seq %d; want initial values again with seq 2",
			pr.SubscriptionID, len(notifications(t, pr)), pr.NotificationMessage.SequenceNumber)
	}
}

func TestTransferWithoutInitialValues(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 1}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	a := &fakeSender{}
	v.publish(sessA, a, 1)
	v.advance(100 * time.Millisecond)
	if _, err := v.e.TransferSubscriptions(sessB, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}); err != nil {
		t.Fatal(err)
	}
	b := &fakeSender{}
	v.publish(sessB, b, 1)
	v.advance(100 * time.Millisecond)
	if got := b.all(); len(got) != 1 || len(notifications(t, got[0].resp)) != 0 {
		t.Fatalf("without SendInitialValues the new owner got %+v, want a keep-alive", got)
	}
}

func TestSessionClosedOrphansOrDeletes(t *testing.T) {
	v := newEnv(t, Options{})
	keep := v.createSub(sessA, subParams{interval: 100, lifetime: 1000}).SubscriptionID
	v.createItems(sessA, keep, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	a := &fakeSender{}
	v.publish(sessA, a, 1)
	v.e.SessionClosed(sessA, false)
	v.advance(100 * time.Millisecond)
	if a.len() != 0 {
		t.Fatal("a closed session's request was answered")
	}
	if v.src.watchers() != 1 {
		t.Fatal("orphaned subscription stopped watching")
	}
	resp, err := v.e.TransferSubscriptions(sessB, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{keep}})
	if err != nil || resp.Results[0].StatusCode != ua.StatusGood {
		t.Fatalf("claiming an orphan: %v %v", err, resp.Results[0].StatusCode)
	}
	b := &fakeSender{}
	v.publish(sessB, b, 1)
	v.advance(100 * time.Millisecond)
	if got := b.all(); len(got) != 1 || len(notifications(t, got[0].resp)) != 1 {
		t.Fatalf("claimed orphan did not publish its queued value: %+v", got)
	}

	v.e.SessionClosed(sessB, true)
	if v.src.watchers() != 0 {
		t.Fatal("deleted subscription still watches the source")
	}
	resp, _ = v.e.TransferSubscriptions(sessA, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{keep}})
	if resp.Results[0].StatusCode != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("transfer of a deleted subscription: %v", resp.Results[0].StatusCode)
	}
}

func TestOrphanExpires(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 1, lifetime: 5}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	v.e.SessionClosed(sessA, false)
	for range 5 {
		v.advance(100 * time.Millisecond)
	}
	if v.src.watchers() != 0 {
		t.Fatal("orphan outlived its lifetime")
	}
	resp, _ := v.e.TransferSubscriptions(sessB, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}})
	if resp.Results[0].StatusCode != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("transfer of an expired orphan: %v", resp.Results[0].StatusCode)
	}
}

func TestPriorityOrdersLateSubscriptions(t *testing.T) {
	v := newEnv(t, Options{})
	low := v.createSub(sessA, subParams{interval: 100}).SubscriptionID
	resp, err := v.e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, PublishingEnabled: true, Priority: 200})
	if err != nil {
		t.Fatal(err)
	}
	high := resp.SubscriptionID
	v.createItems(sessA, low, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	v.createItems(sessA, high, ua.TimestampsToReturnBoth, itemSpec{node: 2})
	v.advance(100 * time.Millisecond) // both late
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.settle()
	got := snd.all()
	if len(got) != 1 || got[0].resp.(*ua.PublishResponse).SubscriptionID != high {
		t.Fatalf("one request for two late subscriptions went to %+v, want the high-priority one", got)
	}
}

// TestNoExpiryDuringCreateMonitoredItems: a CreateMonitoredItems call that
// takes longer than the lifetime (a huge one on a loaded machine) is
// client activity; the subscription does not expire under it, and its
// lifetime counts from the end of the call.
func TestNoExpiryDuringCreateMonitoredItems(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 1, lifetime: 3}).SubscriptionID
	entered, release := make(chan struct{}), make(chan struct{})
	v.src.beforeWatch = func() {
		close(entered)
		<-release
	}
	type result struct {
		resp *ua.CreateMonitoredItemsResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub,
			TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: []*ua.MonitoredItemCreateRequest{itemSpec{node: 1}.request()}})
		done <- result{resp, err}
	}()
	<-entered
	for range 5 {
		v.advance(100 * time.Millisecond)
	}
	close(release)
	if r := <-done; r.err != nil || r.resp.Results[0].StatusCode != ua.StatusGood {
		t.Fatalf("a call longer than the lifetime: %v %+v", r.err, r.resp)
	}
	v.src.beforeWatch = nil
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	if _, err := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: true}); err != nil {
		t.Fatalf("subscription gone two intervals after the call: %v", err)
	}
}

// TestPublishArrivingAsLateSubscriptionFindsNoRequest: a Publish request
// queued while the engine goroutine is between finding the session's
// request queue empty and marking the subscription late must be answered
// at once, not at the next publishing tick. The engine used to mark the
// subscription late only after the look, so Publish saw it not late and
// did not schedule it: the request waited a whole publishing interval.
func TestPublishArrivingAsLateSubscriptionFindsNoRequest(t *testing.T) {
	v := newEnv(t, Options{})
	reached, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	v.e.hookNoRequest = func() {
		once.Do(func() {
			close(reached)
			<-resume
		})
	}
	sub := v.createSub(sessA, subParams{interval: 1000}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})

	// The first publishing tick has the initial value to send and no
	// request: hold the engine goroutine right after it looked.
	v.clock.Advance(time.Second)
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the publishing tick did not look for a Publish request")
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	close(resume)

	// Same instant: no publishing tick is due.
	v.settle()
	got := snd.all()
	if len(got) != 1 {
		t.Fatalf("%d responses without advancing the clock, want the queued request answered at once", len(got))
	}
	if ns := notifications(t, got[0].resp); len(ns) != 1 || ns[0].ClientHandle != 1001 {
		t.Fatalf("notifications %+v, want the initial value of item 1001", ns)
	}
}
