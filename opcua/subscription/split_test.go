package subscription

import (
	"log/slog"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
)

// bigEnv is an engine with default options on a fake clock over n nodes,
// with one subscription (100 ms) of n exception-based items of queue size 1.
func bigEnv(t *testing.T, n int, opts Options) (*env, uint32) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	src := newFakeSource(clock.Now, n)
	opts.Clock = clock
	opts.Logger = slog.New(slog.DiscardHandler)
	e := New(src, opts)
	t.Cleanup(func() { closeWithin(t, e, 10*time.Second) })
	v := &env{t: t, e: e, clock: clock, src: src}
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 10, lifetime: 300}).SubscriptionID
	specs := make([]itemSpec, n)
	for i := range specs {
		specs[i] = itemSpec{node: i + 1, queue: 1}
	}
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, specs...)
	return v, sub
}

// TestLargeCycleSplitsIntoMessages: with the default cap, a cycle of 50,000
// notifications goes out as five messages of 10,000 on five of the queued
// Publish requests, in sequence-number order, without waiting for another
// publishing interval, and every item is reported exactly once.
func TestLargeCycleSplitsIntoMessages(t *testing.T) {
	const n = 50000
	v, _ := bigEnv(t, n, Options{})
	snd := &fakeSender{}
	for i := uint32(1); i <= 10; i++ {
		v.publish(sessA, snd, i)
	}
	v.advance(100 * time.Millisecond)
	// The messages after the first are chained by the engine goroutine.
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("five responses", func() bool { return snd.len() >= 5 }))
	v.settle()
	got := snd.all()
	if len(got) != 5 {
		t.Fatalf("%d responses after one cycle, want 5", len(got))
	}
	seen := make(map[uint32]bool, n)
	for k, g := range got {
		pr := g.resp.(*ua.PublishResponse)
		if g.reqID != uint32(k+1) || pr.NotificationMessage.SequenceNumber != uint32(k+1) {
			t.Fatalf("response %d: request %d, sequence number %d", k, g.reqID, pr.NotificationMessage.SequenceNumber)
		}
		ns := notifications(t, pr)
		if len(ns) != DefaultMaxNotificationsPerPublish || pr.MoreNotifications != (k < 4) {
			t.Fatalf("response %d: %d notifications, more=%v", k, len(ns), pr.MoreNotifications)
		}
		for _, x := range ns {
			if seen[x.ClientHandle] {
				t.Fatalf("client handle %d reported twice", x.ClientHandle)
			}
			seen[x.ClientHandle] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d items reported, want %d", len(seen), n)
	}
}

// TestAckOneRoundTripLaterIsKnown is the worst case of a client with 10
// Publish requests in flight at 50,000 items: the server uses all ten
// requests (two cycles, ten messages) before the first acknowledgement
// arrives. Every message must still be held. With a single 50,000-item
// message per cycle and the former 100,000-notification bound, only the
// newest two were.
func TestAckOneRoundTripLaterIsKnown(t *testing.T) {
	const n = 50000
	v, sub := bigEnv(t, n, Options{})
	snd := &fakeSender{}
	for i := uint32(1); i <= 10; i++ {
		v.publish(sessA, snd, i)
	}
	v.advance(100 * time.Millisecond)
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("five responses", func() bool { return snd.len() >= 5 }))
	for i := 1; i <= n; i++ {
		v.src.set(i, int32(7))
	}
	v.advance(100 * time.Millisecond)
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("ten responses", func() bool { return snd.len() >= 10 }))
	v.settle()
	got := snd.all()
	if len(got) != 10 {
		t.Fatalf("%d responses after two cycles, want 10", len(got))
	}
	last := got[9].resp.(*ua.PublishResponse)
	if want := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !equalSlices(last.AvailableSequenceNumbers, want) {
		t.Fatalf("available %v, want %v", last.AvailableSequenceNumbers, want)
	}
	for seq := uint32(1); seq <= 10; seq++ {
		v.publish(sessA, snd, 10+seq, &ua.SubscriptionAcknowledgement{SubscriptionID: sub, SequenceNumber: seq})
	}
	for i := 1; i <= 3; i++ {
		v.src.set(i, int32(8))
	}
	v.advance(100 * time.Millisecond)
	got = snd.all()
	if len(got) != 11 {
		t.Fatalf("%d responses, want 11", len(got))
	}
	pr := got[10].resp.(*ua.PublishResponse)
	if !equalSlices(pr.Results, []ua.StatusCode{ua.StatusGood}) || !equalSlices(pr.AvailableSequenceNumbers, []uint32{11}) {
		t.Fatalf("ack results %v, available %v; want [Good], [11]", pr.Results, pr.AvailableSequenceNumbers)
	}
}

// TestRetransmissionNotificationBound: the queue holds the newest messages
// whose notifications fit MaxRetransmitNotifications, and always the newest
// message even when it alone exceeds the bound.
func TestRetransmissionNotificationBound(t *testing.T) {
	v := newEnv(t, Options{MaxRetransmitNotifications: 25, MaxNotificationsPerPublish: 10})
	sub := v.createSub(sessA, subParams{interval: 100}).SubscriptionID
	var items []itemSpec
	for i := 1; i <= 40; i++ {
		items = append(items, itemSpec{node: i})
	}
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, items...)
	snd := &fakeSender{}
	for i := uint32(1); i <= 4; i++ {
		v.publish(sessA, snd, i)
	}
	v.advance(100 * time.Millisecond)
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("four responses", func() bool { return snd.len() >= 4 }))
	v.settle()
	got := snd.all()
	if len(got) != 4 {
		t.Fatalf("%d responses, want 4 messages of 10", len(got))
	}
	if pr := got[3].resp.(*ua.PublishResponse); !equalSlices(pr.AvailableSequenceNumbers, []uint32{3, 4}) {
		t.Fatalf("available %v, want the newest 20 notifications [3 4]", pr.AvailableSequenceNumbers)
	}

	one := newEnv(t, Options{MaxRetransmitNotifications: 5})
	sub = one.createSub(sessA, subParams{interval: 100}).SubscriptionID
	one.createItems(sessA, sub, ua.TimestampsToReturnBoth, items[:8]...)
	one.publish(sessA, snd, 9)
	one.advance(100 * time.Millisecond)
	if pr := snd.all()[4].resp.(*ua.PublishResponse); !equalSlices(pr.AvailableSequenceNumbers, []uint32{1}) {
		t.Fatalf("available %v, want the newest message [1] although it exceeds the bound", pr.AvailableSequenceNumbers)
	}
}
