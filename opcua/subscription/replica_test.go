package subscription

import (
	"errors"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/opcua/events"
)

// Mirroring tests: a replica of a subscription another member serves
// (replica.go).

const replicaWindow = 50 * time.Millisecond

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// dvAt is a value as a member saw it at at.
func dvAt(v any, at time.Time) *ua.DataValue {
	dv := &ua.DataValue{Value: ua.MustVariant(v), SourceTimestamp: at, ServerTimestamp: at}
	dv.UpdateMask()
	return dv
}

// withStatus returns a copy of dv with status st.
func withStatus(dv *ua.DataValue, st ua.StatusCode) *ua.DataValue {
	c := *dv
	c.Status = st
	c.UpdateMask()
	return &c
}

func TestSameValue(t *testing.T) {
	const w = 100 * time.Millisecond
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		a, b  *ua.DataValue
		same  bool
		dist  time.Duration
		wantD bool // check dist
	}{
		{name: "equal, same time", a: dvAt(int32(5), t0), b: dvAt(int32(5), t0), same: true, dist: 0, wantD: true},
		{name: "equal, b later within window", a: dvAt(int32(5), t0), b: dvAt(int32(5), t0.Add(30*time.Millisecond)), same: true, dist: 30 * time.Millisecond, wantD: true},
		{name: "equal, b earlier within window", a: dvAt(int32(5), t0), b: dvAt(int32(5), t0.Add(-30*time.Millisecond)), same: true, dist: 30 * time.Millisecond, wantD: true},
		{name: "window edge: exactly window apart", a: dvAt(int32(5), t0), b: dvAt(int32(5), t0.Add(w)), same: true, dist: w, wantD: true},
		{name: "window edge: one nanosecond beyond", a: dvAt(int32(5), t0), b: dvAt(int32(5), t0.Add(w+1)), same: false},
		{name: "window edge: one nanosecond beyond, before", a: dvAt(int32(5), t0.Add(w+1)), b: dvAt(int32(5), t0), same: false},
		{name: "different values", a: dvAt(int32(5), t0), b: dvAt(int32(6), t0), same: false},
		{name: "same number, other type", a: dvAt(int32(5), t0), b: dvAt(int64(5), t0), same: false},
		{name: "float NaN equals NaN", a: dvAt(nan, t0), b: dvAt(nan, t0.Add(time.Millisecond)), same: true},
		{name: "float32 NaN equals NaN", a: dvAt(float32(nan), t0), b: dvAt(float32(nan), t0), same: true},
		{name: "NaN is not a number", a: dvAt(nan, t0), b: dvAt(1.5, t0), same: false},
		{name: "floats equal", a: dvAt(1.5, t0), b: dvAt(1.5, t0), same: true},
		{name: "strings", a: dvAt("on", t0), b: dvAt("off", t0), same: false},
		{name: "status differs", a: dvAt(int32(5), t0), b: withStatus(dvAt(int32(5), t0), ua.StatusUncertain), same: false},
		{name: "same bad status", a: withStatus(dvAt(int32(5), t0), ua.StatusBadCommunicationError), b: withStatus(dvAt(int32(5), t0), ua.StatusBadCommunicationError), same: true},
		{name: "overflow bits ignored", a: withOverflow(dvAt(int32(5), t0)), b: dvAt(int32(5), t0), same: true},
		{name: "overflow bits ignored on a status", a: withStatus(dvAt(int32(5), t0), ua.StatusUncertain|overflowBits), b: withStatus(dvAt(int32(5), t0), ua.StatusUncertain), same: true},
		{name: "other info bits count", a: withStatus(dvAt(int32(5), t0), 0x0400|0x0100), b: dvAt(int32(5), t0), same: false},
		{name: "both without a value", a: withStatus(&ua.DataValue{SourceTimestamp: t0}, ua.StatusBadNoData), b: withStatus(&ua.DataValue{SourceTimestamp: t0}, ua.StatusBadNoData), same: true},
		{name: "one without a value", a: withStatus(&ua.DataValue{SourceTimestamp: t0}, ua.StatusBadNoData), b: withStatus(dvAt(int32(0), t0), ua.StatusBadNoData), same: false},
		{name: "arrays", a: dvAt([]int32{1, 2}, t0), b: dvAt([]int32{1, 2}, t0), same: true},
		{name: "arrays differ", a: dvAt([]int32{1, 2}, t0), b: dvAt([]int32{1, 3}, t0), same: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := sameValue(tc.a, tc.b, w)
			if ok != tc.same {
				t.Fatalf("sameValue = %v, want %v", ok, tc.same)
			}
			if tc.wantD && d != tc.dist {
				t.Fatalf("distance %v, want %v", d, tc.dist)
			}
			if d2, ok2 := sameValue(tc.b, tc.a, w); ok2 != ok || d2 != d {
				t.Fatalf("not symmetric: (%v, %v) and (%v, %v)", d, ok, d2, ok2)
			}
		})
	}
}

// bareItem is a data item of a replica with window w and a queue of size
// 100, outside any engine: enough for the matching functions.
func bareItem(w time.Duration) *item {
	return &item{sub: &subscription{window: w, replica: true}, mode: ua.MonitoringModeReporting,
		queueSize: 100, discardOldest: true, filter: defaultFilter}
}

// queued returns the int32 values in the item's queue, oldest first.
func queued(it *item) []int32 {
	out := make([]int32, 0, it.queue.len())
	for i := 0; i < it.queue.len(); i++ {
		out = append(out, it.queue.at(i).Value.Value().(int32))
	}
	return out
}

func cursorValues(it *item) []int32 {
	out := make([]int32, 0, len(it.cursors))
	for _, c := range it.cursors {
		out = append(out, c.Value.Value().(int32))
	}
	return out
}

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestTrimAndCursors(t *testing.T) {
	const w = 50 * time.Millisecond
	// Each step either samples a value here (sample) or applies a value
	// the serving member reported (report); the item's queue and cursors
	// are checked after every step.
	type step struct {
		sample, report *ua.DataValue
		queued         []int32 // wanted queue after the step
		cursors        []int32 // wanted cursors after the step
		accepted       bool    // a sample was queued (queueLocked did not refuse it as reported)
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "a reported value already sampled leaves with everything older", steps: []step{
			{sample: dvAt(int32(1), ms(0)), queued: []int32{1}, accepted: true},
			{sample: dvAt(int32(2), ms(100)), queued: []int32{1, 2}, accepted: true},
			{sample: dvAt(int32(3), ms(200)), queued: []int32{1, 2, 3}, accepted: true},
			{report: dvAt(int32(2), ms(103)), queued: []int32{3}},
			{report: dvAt(int32(3), ms(190)), queued: []int32{}},
		}},
		{name: "reported before sampled: a cursor; the sample is not queued, older ones dropped", steps: []step{
			{sample: dvAt(int32(1), ms(0)), queued: []int32{1}, accepted: true},
			{sample: dvAt(int32(2), ms(100)), queued: []int32{1, 2}, accepted: true},
			// The serving member coalesced 1 and 2 and reported 3 first.
			{report: dvAt(int32(3), ms(205)), queued: []int32{1, 2}, cursors: []int32{3}},
			{sample: dvAt(int32(3), ms(200)), queued: []int32{}, cursors: []int32{}},
			{sample: dvAt(int32(4), ms(300)), queued: []int32{4}, accepted: true},
		}},
		{name: "two cursors, matched in turn", steps: []step{
			{report: dvAt(int32(1), ms(2)), cursors: []int32{1}},
			{report: dvAt(int32(2), ms(102)), cursors: []int32{1, 2}},
			{sample: dvAt(int32(1), ms(0)), queued: []int32{}, cursors: []int32{2}},
			{sample: dvAt(int32(2), ms(100)), queued: []int32{}, cursors: []int32{}},
			{sample: dvAt(int32(3), ms(200)), queued: []int32{3}, accepted: true},
		}},
		{name: "a sample matching a later cursor forgets the earlier ones", steps: []step{
			{report: dvAt(int32(1), ms(2)), cursors: []int32{1}},
			{report: dvAt(int32(2), ms(40)), cursors: []int32{1, 2}},
			// This member never saw 1 (its poll missed it).
			{sample: dvAt(int32(2), ms(38)), queued: []int32{}, cursors: []int32{}},
		}},
		{name: "a cursor is forgotten once a newer sample is beyond the window", steps: []step{
			{report: dvAt(int32(7), ms(0)), cursors: []int32{7}},
			// Within the window of the cursor: kept.
			{sample: dvAt(int32(8), ms(50)), queued: []int32{8}, cursors: []int32{7}, accepted: true},
			// Beyond it: a value 7 sampled now is another device value.
			{sample: dvAt(int32(9), ms(51)), queued: []int32{8, 9}, cursors: []int32{}, accepted: true},
			{sample: dvAt(int32(7), ms(52)), queued: []int32{8, 9, 7}, cursors: []int32{}, accepted: true},
		}},
		{name: "a cursor outside the window of the sample does not match it", steps: []step{
			{report: dvAt(int32(7), ms(0)), cursors: []int32{7}},
			{sample: dvAt(int32(7), ms(51)), queued: []int32{7}, cursors: []int32{}, accepted: true},
		}},
		{name: "the closest of equal values is the one reported", steps: []step{
			{sample: dvAt(int32(1), ms(0)), queued: []int32{1}, accepted: true},
			{sample: dvAt(int32(0), ms(10)), queued: []int32{1, 0}, accepted: true},
			{sample: dvAt(int32(1), ms(20)), queued: []int32{1, 0, 1}, accepted: true},
			{sample: dvAt(int32(0), ms(30)), queued: []int32{1, 0, 1, 0}, accepted: true},
			{report: dvAt(int32(1), ms(22)), queued: []int32{0}},
		}},
		{name: "an overflow-flagged value matches its unflagged report", steps: []step{
			{sample: withOverflow(dvAt(int32(1), ms(0))), queued: []int32{1}, accepted: true},
			{sample: dvAt(int32(2), ms(100)), queued: []int32{1, 2}, accepted: true},
			{report: dvAt(int32(1), ms(1)), queued: []int32{2}},
		}},
		{name: "a report that differs in status is not the sample", steps: []step{
			{sample: dvAt(int32(1), ms(0)), queued: []int32{1}, accepted: true},
			{report: withStatus(dvAt(int32(1), ms(0)), ua.StatusUncertain), queued: []int32{1}, cursors: []int32{1}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := bareItem(w)
			for i, s := range tc.steps {
				it.mu.Lock()
				accepted := false
				if s.sample != nil {
					it.queueLocked(s.sample)
					accepted = it.queue.len() > 0 && it.queue.at(it.queue.len()-1) == s.sample
				}
				if s.report != nil {
					it.trimLocked(s.report, w)
				}
				q, c := queued(it), cursorValues(it)
				it.mu.Unlock()
				if s.sample != nil && accepted != s.accepted {
					t.Fatalf("step %d: sample accepted %v, want %v", i, accepted, s.accepted)
				}
				if s.queued != nil && !slices.Equal(q, s.queued) {
					t.Fatalf("step %d: queue %v, want %v", i, q, s.queued)
				}
				if s.cursors != nil && !slices.Equal(c, s.cursors) {
					t.Fatalf("step %d: cursors %v, want %v", i, c, s.cursors)
				}
			}
		})
	}
}

func TestCursorsAreBounded(t *testing.T) {
	it := bareItem(time.Hour)
	it.mu.Lock()
	defer it.mu.Unlock()
	for v := range int32(maxCursors + 4) {
		it.trimLocked(dvAt(v, ms(int(v))), time.Hour)
	}
	got := cursorValues(it)
	want := make([]int32, 0, maxCursors)
	for v := int32(4); v < maxCursors+4; v++ {
		want = append(want, v)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cursors %v, want the newest %d: %v", got, maxCursors, want)
	}
	// The oldest ones were forgotten: their sample is queued.
	it.queueLocked(dvAt(int32(0), ms(0)))
	if q := queued(it); !slices.Equal(q, []int32{0}) {
		t.Fatalf("queue %v, want [0]: 0 was forgotten", q)
	}
	// 4 was still a cursor: not queued, and 0 before it leaves.
	it.queueLocked(dvAt(int32(4), ms(4)))
	if q, c := queued(it), cursorValues(it); len(q) != 0 || len(c) != maxCursors-1 || c[0] != 5 {
		t.Fatalf("queue %v cursors %v, want an empty queue and cursors 5..", q, c)
	}
}

// replicaEnv helpers.

func (v *env) replica(sess SessionID, id uint32, p subParams, nextSeq uint32) {
	v.t.Helper()
	if err := v.e.ReplicaSubscription(sess, id, subRequest(p), nextSeq, replicaWindow); err != nil {
		v.t.Fatalf("ReplicaSubscription %d: %v", id, err)
	}
}

func subRequest(p subParams) *ua.CreateSubscriptionRequest {
	if p.interval == 0 {
		p.interval = 100
	}
	return &ua.CreateSubscriptionRequest{
		RequestHeader:               hdr(1),
		RequestedPublishingInterval: p.interval,
		RequestedMaxKeepAliveCount:  p.keepAlive,
		RequestedLifetimeCount:      p.lifetime,
		MaxNotificationsPerPublish:  p.maxNotif,
		PublishingEnabled:           !p.disabled,
	}
}

func (v *env) replicaItems(sess SessionID, sub uint32, minQueue int, ids []uint32, specs ...itemSpec) []*ua.MonitoredItemCreateResult {
	v.t.Helper()
	req := &ua.CreateMonitoredItemsRequest{RequestHeader: hdr(2), SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, p := range specs {
		req.ItemsToCreate = append(req.ItemsToCreate, p.request())
	}
	resp, err := v.e.ReplicaItems(sess, req, ids, minQueue)
	if err != nil {
		v.t.Fatalf("ReplicaItems: %v", err)
	}
	for i, r := range resp.Results {
		if r.StatusCode != ua.StatusGood || r.MonitoredItemID != ids[i] {
			v.t.Fatalf("replica item %d: %v id %d, want id %d", i, r.StatusCode, r.MonitoredItemID, ids[i])
		}
	}
	return resp.Results
}

// sub returns the engine's subscription id (nil when there is none).
func (v *env) sub(id uint32) *subscription {
	v.e.mu.Lock()
	defer v.e.mu.Unlock()
	return v.e.subs[id]
}

// reported is a NotificationMessage of the serving member carrying dvs
// for the item with client handle h.
func reported(seq, h uint32, dvs ...*ua.DataValue) *ua.NotificationMessage {
	ns := make([]*ua.MonitoredItemNotification, len(dvs))
	for i, dv := range dvs {
		ns[i] = &ua.MonitoredItemNotification{ClientHandle: h, Value: dv}
	}
	return &ua.NotificationMessage{SequenceNumber: seq, PublishTime: t0,
		NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: ns})}}
}

// there is dv as the serving member saw it: its own poll, 3 ms later.
func there(dv *ua.DataValue) *ua.DataValue {
	return dvAt(dv.Value.Value(), dv.SourceTimestamp.Add(3*time.Millisecond))
}

func TestReplicaIDInUseIsAConflict(t *testing.T) {
	v := newEnv(t, Options{})
	served := v.createSub(sessA, subParams{}).SubscriptionID
	err := v.e.ReplicaSubscription(sessB, served, subRequest(subParams{}), 1, replicaWindow)
	if !errors.Is(err, ErrReplicaConflict) {
		t.Fatalf("replica with the id of a served subscription: %v, want ErrReplicaConflict", err)
	}
	v.replica(sessB, served+1, subParams{}, 1)
	if err := v.e.ReplicaSubscription(sessA, served+1, subRequest(subParams{}), 1, replicaWindow); !errors.Is(err, ErrReplicaConflict) {
		t.Fatalf("another session's replica with one id: %v, want ErrReplicaConflict", err)
	}
	if err := v.e.ReplicaSubscription(sessB, 0, subRequest(subParams{}), 1, replicaWindow); err != ua.StatusBadInvalidArgument {
		t.Fatalf("replica id 0: %v", err)
	}
	// The served subscription is untouched.
	if s := v.sub(served); s == nil || s.replica {
		t.Fatalf("served subscription after the conflict: %+v", s)
	}
}

func TestReplicaNeitherPublishesNorExpires(t *testing.T) {
	v := newEnv(t, Options{})
	var expired atomic.Int32
	v.e.OnExpire(func(uint32) { expired.Add(1) })
	v.replica(sessA, 4242, subParams{interval: 100, keepAlive: 1, lifetime: 3}, 1)
	v.replicaItems(sessA, 4242, 0, []uint32{77}, itemSpec{node: 1, queue: 10})
	for i := range 5 {
		v.advance(10 * time.Millisecond)
		v.src.set(1, int32(i+1))
	}
	// Far past its lifetime (3 × 100 ms) and MaxLifetime, with no Publish.
	v.advance(2 * time.Hour)
	v.advance(2 * time.Hour)
	s := v.sub(4242)
	if s == nil {
		t.Fatal("the replica expired")
	}
	if expired.Load() != 0 {
		t.Fatalf("OnExpire called %d times for a replica", expired.Load())
	}
	// A Publish request of the session's client (it does not exist here:
	// a request reaching the replica's session) is never answered by it.
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(time.Second)
	v.advance(time.Hour)
	if n := snd.len(); n != 0 {
		t.Fatalf("the replica answered %d Publish requests: %+v", n, snd.all())
	}
	s.mu.Lock()
	seq := s.seq
	s.mu.Unlock()
	if seq != 1 {
		t.Fatalf("the replica used sequence numbers: next %d", seq)
	}
	it := s.items[77]
	it.mu.Lock()
	q := queued(it)
	it.mu.Unlock()
	if !slices.Equal(q, []int32{1, 2, 3, 4, 5}) {
		t.Fatalf("the replica's item queued %v, want what it sampled: [1 2 3 4 5]", q)
	}
}

func TestReportedAndAcked(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 300, subParams{}, 5)
	v.replicaItems(sessA, 300, 0, []uint32{9}, itemSpec{node: 1, handle: 11})
	if v.e.Reported(sessB, 300, reported(5, 11)) {
		t.Fatal("Reported for another session's subscription")
	}
	if v.e.Reported(sessA, 301, reported(5, 11)) {
		t.Fatal("Reported for an unknown subscription")
	}
	if v.e.Reported(sessA, 300, &ua.NotificationMessage{}) {
		t.Fatal("Reported with sequence number 0")
	}
	for seq := uint32(5); seq <= 7; seq++ {
		if !v.e.Reported(sessA, 300, reported(seq, 11, dvAt(int32(seq), v.clock.Now()))) {
			t.Fatalf("Reported %d refused", seq)
		}
	}
	s := v.sub(300)
	s.mu.Lock()
	next := s.seq
	s.mu.Unlock()
	if next != 8 {
		t.Fatalf("next sequence number %d after 7 was reported, want 8", next)
	}
	if got := s.available(); !slices.Equal(got, []uint32{5, 6, 7}) {
		t.Fatalf("available %v, want [5 6 7]", got)
	}
	for seq := uint32(5); seq <= 7; seq++ {
		r, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: 300, RetransmitSequenceNumber: seq})
		if err != nil || r.NotificationMessage.SequenceNumber != seq {
			t.Fatalf("Republish %d: %v %+v", seq, err, r)
		}
	}
	v.e.Acked(sessA, []*ua.SubscriptionAcknowledgement{{SubscriptionID: 300, SequenceNumber: 5}, nil, {SubscriptionID: 300, SequenceNumber: 7}})
	v.e.Acked(sessB, []*ua.SubscriptionAcknowledgement{{SubscriptionID: 300, SequenceNumber: 6}}) // not its session
	if got := s.available(); !slices.Equal(got, []uint32{6}) {
		t.Fatalf("available %v after acks of 5 and 7, want [6]", got)
	}
	if _, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: 300, RetransmitSequenceNumber: 5}); err != ua.StatusBadMessageNotAvailable {
		t.Fatalf("Republish of an acknowledged message: %v", err)
	}
}

func TestReportedWrapsSequenceNumber(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 300, subParams{}, math.MaxUint32)
	v.e.Reported(sessA, 300, reported(math.MaxUint32, 11))
	if s := v.sub(300); s.seq != 1 {
		t.Fatalf("next sequence number after %d: %d, want 1 (0 is never used)", uint32(math.MaxUint32), s.seq)
	}
}

func TestPromoteSendsWhatWasNotReported(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{interval: 100}, 7)
	v.replicaItems(sessA, 500, 0, []uint32{900}, itemSpec{node: 1, queue: 10, handle: 11})
	var here []*ua.DataValue
	for k := 1; k <= 5; k++ {
		v.advance(10 * time.Millisecond)
		here = append(here, v.src.set(1, int32(k)))
	}
	// The serving member sent 1..3 with message 7, and 4, 5 and 6 with
	// message 8; 6 is not sampled here yet.
	v.e.Reported(sessA, 500, reported(7, 11, there(here[0]), there(here[1]), there(here[2])))
	six := dvAt(int32(6), v.clock.Now().Add(10*time.Millisecond+2*time.Millisecond))
	v.e.Reported(sessA, 500, reported(8, 11, there(here[3]), there(here[4]), six))
	v.advance(10 * time.Millisecond)
	v.src.set(1, int32(6))
	v.advance(10 * time.Millisecond)
	v.src.set(1, int32(7))
	v.advance(10 * time.Millisecond)
	v.src.set(1, int32(8))

	if n := v.e.Promote(sessA); n != 1 {
		t.Fatalf("Promote: %d subscriptions, want 1", n)
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 {
		t.Fatalf("%d responses, want 1", len(got))
	}
	pr := got[0].resp.(*ua.PublishResponse)
	if vals := values(t, notifications(t, pr)); !slices.Equal(vals, []int32{7, 8}) {
		t.Fatalf("first message after the takeover carries %v, want [7 8]", vals)
	}
	if pr.NotificationMessage.SequenceNumber != 9 {
		t.Fatalf("sequence number %d, want 9", pr.NotificationMessage.SequenceNumber)
	}
	if !slices.Equal(pr.AvailableSequenceNumbers, []uint32{7, 8, 9}) {
		t.Fatalf("available %v, want [7 8 9]", pr.AvailableSequenceNumbers)
	}
	// Republish answers from the copied queue.
	r, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: 500, RetransmitSequenceNumber: 8})
	if err != nil || len(values(t, notifications(t, &ua.PublishResponse{NotificationMessage: r.NotificationMessage}))) != 3 {
		t.Fatalf("Republish 8: %v %+v", err, r)
	}
	// It is an ordinary subscription now: it publishes the next change and
	// its lifetime runs.
	v.src.set(1, int32(9))
	v.publish(sessA, snd, 2, &ua.SubscriptionAcknowledgement{SubscriptionID: 500, SequenceNumber: 9})
	v.advance(100 * time.Millisecond)
	got = snd.all()
	if len(got) != 2 {
		t.Fatalf("%d responses, want 2", len(got))
	}
	if vals := values(t, notifications(t, got[1].resp)); !slices.Equal(vals, []int32{9}) {
		t.Fatalf("next message %v, want [9]", vals)
	}
}

func TestPromoteWithNothingOwedSendsAKeepAlive(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{interval: 100, keepAlive: 1}, 1)
	v.replicaItems(sessA, 500, 0, []uint32{900}, itemSpec{node: 1, queue: 10, handle: 11})
	v.advance(10 * time.Millisecond)
	dv := v.src.set(1, int32(1))
	v.e.Reported(sessA, 500, reported(1, 11, there(dv)))
	v.e.Promote(sessA)
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 {
		t.Fatalf("%d responses, want 1 keep-alive", len(got))
	}
	pr := got[0].resp.(*ua.PublishResponse)
	if len(pr.NotificationMessage.NotificationData) != 0 || pr.NotificationMessage.SequenceNumber != 2 {
		t.Fatalf("want a keep-alive with the next sequence number 2, got %+v", pr.NotificationMessage)
	}
}

func TestMinQueueHoldsTheGapThenFallsBack(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{interval: 100}, 1)
	v.replicaItems(sessA, 500, 10, []uint32{900}, itemSpec{node: 1, queue: 1, handle: 11})
	for k := 1; k <= 5; k++ {
		v.advance(10 * time.Millisecond)
		v.src.set(1, int32(k))
	}
	v.e.Promote(sessA)
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	if vals := values(t, notifications(t, snd.all()[0].resp)); !slices.Equal(vals, []int32{1, 2, 3, 4, 5}) {
		t.Fatalf("the gap: %v, want all five values although the client's queue holds 1", vals)
	}
	it := v.sub(500).items[900]
	it.mu.Lock()
	mq := it.minQueue
	it.mu.Unlock()
	if mq != 0 {
		t.Fatalf("minQueue %d after the gap was sent, want 0", mq)
	}
	for k := 6; k <= 8; k++ {
		v.advance(10 * time.Millisecond)
		v.src.set(1, int32(k))
	}
	v.publish(sessA, snd, 2)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 2 {
		t.Fatalf("%d responses", len(got))
	}
	if vals := values(t, notifications(t, got[1].resp)); !slices.Equal(vals, []int32{8}) {
		t.Fatalf("after the gap: %v, want the client's queue of 1: [8]", vals)
	}
}

func TestMinQueueHoldsAcrossAPartialDrain(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{interval: 100, maxNotif: 2}, 1)
	v.replicaItems(sessA, 500, 10, []uint32{900}, itemSpec{node: 1, queue: 1, handle: 11})
	for k := 1; k <= 5; k++ {
		v.advance(10 * time.Millisecond)
		v.src.set(1, int32(k))
	}
	v.e.Promote(sessA)
	snd := &fakeSender{}
	for r := uint32(1); r <= 3; r++ {
		v.publish(sessA, snd, r)
	}
	v.advance(100 * time.Millisecond)
	var all []int32
	for _, s := range snd.all() {
		all = append(all, values(t, notifications(t, s.resp))...)
	}
	if !slices.Equal(all, []int32{1, 2, 3, 4, 5}) {
		t.Fatalf("the gap over messages of 2: %v, want [1 2 3 4 5]", all)
	}
}

func TestReplicaItemsSkipAnIDThatExists(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{}, 1)
	v.replicaItems(sessA, 500, 0, []uint32{900, 901}, itemSpec{node: 1, handle: 11}, itemSpec{node: 2, handle: 12})
	before := v.src.watchers()
	// The snapshot and the live record both describe 901, then 902 is new.
	v.replicaItems(sessA, 500, 0, []uint32{901, 902}, itemSpec{node: 2, handle: 12}, itemSpec{node: 3, handle: 13})
	s := v.sub(500)
	s.mu.Lock()
	ids := make([]uint32, 0, len(s.items))
	for id := range s.items {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.Sort(ids)
	if !slices.Equal(ids, []uint32{900, 901, 902}) {
		t.Fatalf("items %v, want [900 901 902]", ids)
	}
	if got := v.src.watchers(); got != before+1 {
		t.Fatalf("%d Source registrations, want %d: the duplicate's was cancelled", got, before+1)
	}
	if st := v.e.Stats(); st.MonitoredItems != 3 {
		t.Fatalf("engine counts %d items, want 3", st.MonitoredItems)
	}
}

func TestReplicaItemsQueueNoInitialValue(t *testing.T) {
	v := newEnv(t, Options{})
	v.src.set(1, int32(41))
	v.replica(sessA, 500, subParams{interval: 100, keepAlive: 1}, 1)
	v.replicaItems(sessA, 500, 0, []uint32{900}, itemSpec{node: 1, handle: 11})
	it := v.sub(500).items[900]
	it.mu.Lock()
	n := it.queue.len()
	it.mu.Unlock()
	if n != 0 {
		t.Fatalf("a replica item queued %d values at creation, want none", n)
	}
	// The current value is not a change: the filter knows it.
	v.src.set(1, int32(41))
	v.e.Promote(sessA)
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 || len(notifications(t, got[0].resp)) != 0 {
		t.Fatalf("want a keep-alive, got %+v", got)
	}
	// An ordinary subscription's item does queue it.
	sub := v.createSub(sessB, subParams{}).SubscriptionID
	v.createItems(sessB, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	snd2 := &fakeSender{}
	v.publish(sessB, snd2, 1)
	v.advance(100 * time.Millisecond)
	if vals := values(t, notifications(t, snd2.all()[0].resp)); !slices.Equal(vals, []int32{41}) {
		t.Fatalf("ordinary item's initial value %v", vals)
	}
}

// normalized sorts an Export for comparison and drops what differs between
// two engines by design (nothing, so far, but the order).
func normalized(st []SubState) []SubState {
	out := slices.Clone(st)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	for k := range out {
		s := &out[k]
		groups := slices.Clone(s.Items)
		sort.Slice(groups, func(i, j int) bool { return groups[i].TTR < groups[j].TTR })
		for g := range groups {
			idx := make([]int, len(groups[g].IDs))
			for i := range idx {
				idx[i] = i
			}
			sort.Slice(idx, func(a, b int) bool { return groups[g].IDs[idx[a]] < groups[g].IDs[idx[b]] })
			ids := make([]uint32, len(idx))
			items := make([]*ua.MonitoredItemCreateRequest, len(idx))
			for i, j := range idx {
				ids[i], items[i] = groups[g].IDs[j], groups[g].Items[j]
			}
			groups[g] = ItemGroup{TTR: groups[g].TTR, IDs: ids, Items: items}
		}
		s.Items = groups
		links := make(map[uint32][]uint32, len(s.Links))
		for k, l := range s.Links {
			l = slices.Clone(l)
			slices.Sort(l)
			links[k] = l
		}
		s.Links = links
		if len(s.Retrans) == 0 {
			s.Retrans = nil
		}
	}
	return out
}

func TestExportMakesAnEqualReplica(t *testing.T) {
	a, _ := newEventEnv(t, Options{})
	b, _ := newEventEnv(t, Options{})
	resp, err := a.e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{
		RequestHeader: hdr(1), RequestedPublishingInterval: 250, RequestedLifetimeCount: 120,
		RequestedMaxKeepAliveCount: 12, MaxNotificationsPerPublish: 50, PublishingEnabled: false, Priority: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := resp.SubscriptionID
	deadband := dcf(ua.DataChangeTriggerStatusValueTimestamp, ua.DeadbandTypeAbsolute, 0.5)
	statusOnly := dcf(ua.DataChangeTriggerStatus, ua.DeadbandTypeNone, 0)
	both := a.createItems(sessA, sub, ua.TimestampsToReturnBoth,
		itemSpec{node: 1, sampling: 200, queue: 5, filter: deadband},
		itemSpec{node: 2, mode: ua.MonitoringModeSampling, sampling: 0, queue: 3, discardOldest: true},
		itemSpec{node: 3, attr: ua.AttributeIDDisplayName, sampling: 500},
	)
	src := a.createItems(sessA, sub, ua.TimestampsToReturnSource,
		itemSpec{node: 4, filter: statusOnly, queue: 2})
	if _, err := a.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub,
		MonitoringMode: ua.MonitoringModeDisabled, MonitoredItemIDs: []uint32{src[0].MonitoredItemID}}); err != nil {
		t.Fatal(err)
	}
	selects := []*ua.SimpleAttributeOperand{sao(events.BaseEventType, "Severity"), sao(nil, "Message")}
	evFilter := eventFilterEO(selects, ofType(deviceEventType))
	ev := a.createEventItems(sessA, sub, eventSpec{handle: 70, queue: 20, filter: evFilter})
	for _, r := range append(append(both, src...), ev...) {
		if r.StatusCode != ua.StatusGood {
			t.Fatalf("create: %v", r.StatusCode)
		}
	}
	if _, err := a.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: sub,
		TriggeringItemID: both[0].MonitoredItemID, LinksToAdd: []uint32{both[1].MonitoredItemID, src[0].MonitoredItemID}}); err != nil {
		t.Fatal(err)
	}
	// A message sent and kept for Republish.
	snd := &fakeSender{}
	a.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: true})
	a.publish(sessA, snd, 1)
	a.advance(250 * time.Millisecond)
	if snd.len() != 1 {
		t.Fatalf("%d responses", snd.len())
	}
	a.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: false})

	exp := a.e.Export(sessA)
	if len(exp) != 1 {
		t.Fatalf("Export: %d subscriptions", len(exp))
	}
	st := exp[0]
	// What the export says, against what the client asked for.
	p := st.Params
	if st.ID != sub || p.RequestedPublishingInterval != 250 || p.RequestedLifetimeCount != 120 ||
		p.RequestedMaxKeepAliveCount != 12 || p.MaxNotificationsPerPublish != 50 || p.PublishingEnabled || p.Priority != 7 {
		t.Fatalf("exported parameters %+v", p)
	}
	if st.NextSeq != 2 || len(st.Retrans) != 1 || st.Retrans[0].SequenceNumber != 1 {
		t.Fatalf("exported next seq %d, retransmission queue %d", st.NextSeq, len(st.Retrans))
	}
	byID := map[uint32]*ua.MonitoredItemCreateRequest{}
	ttrOf := map[uint32]ua.TimestampsToReturn{}
	for _, g := range st.Items {
		for i, id := range g.IDs {
			byID[id], ttrOf[id] = g.Items[i], g.TTR
		}
	}
	i1 := byID[both[0].MonitoredItemID]
	if f, ok := i1.RequestedParameters.Filter.Value.(*ua.DataChangeFilter); !ok || f.Trigger != ua.DataChangeTriggerStatusValueTimestamp ||
		f.DeadbandType != uint32(ua.DeadbandTypeAbsolute) || f.DeadbandValue != 0.5 {
		t.Fatalf("item 1 filter %+v", i1.RequestedParameters.Filter.Value)
	}
	if i1.RequestedParameters.SamplingInterval != 200 || i1.RequestedParameters.QueueSize != 5 || i1.RequestedParameters.DiscardOldest ||
		i1.MonitoringMode != ua.MonitoringModeReporting || i1.RequestedParameters.ClientHandle != 1001 || ttrOf[both[0].MonitoredItemID] != ua.TimestampsToReturnBoth {
		t.Fatalf("item 1 %+v %+v", i1, i1.RequestedParameters)
	}
	if i2 := byID[both[1].MonitoredItemID]; i2.MonitoringMode != ua.MonitoringModeSampling || !i2.RequestedParameters.DiscardOldest ||
		i2.RequestedParameters.Filter.Value != nil {
		t.Fatalf("item 2 %+v %+v", i2, i2.RequestedParameters)
	}
	if i3 := byID[both[2].MonitoredItemID]; i3.ItemToMonitor.AttributeID != ua.AttributeIDDisplayName || i3.RequestedParameters.SamplingInterval != 500 {
		t.Fatalf("item 3 %+v", i3.ItemToMonitor)
	}
	if i4 := byID[src[0].MonitoredItemID]; i4.MonitoringMode != ua.MonitoringModeDisabled || ttrOf[src[0].MonitoredItemID] != ua.TimestampsToReturnSource {
		t.Fatalf("item 4 %+v", i4)
	} else if f, ok := i4.RequestedParameters.Filter.Value.(*ua.DataChangeFilter); !ok || f.Trigger != ua.DataChangeTriggerStatus {
		t.Fatalf("item 4 filter %+v", i4.RequestedParameters.Filter.Value)
	}
	ie := byID[ev[0].MonitoredItemID]
	if f, ok := ie.RequestedParameters.Filter.Value.(*ua.EventFilter); !ok || !reflect.DeepEqual(f, evFilter.Value) ||
		ie.ItemToMonitor.AttributeID != ua.AttributeIDEventNotifier || ie.RequestedParameters.QueueSize != 20 {
		t.Fatalf("event item %+v filter %+v", ie, ie.RequestedParameters.Filter.Value)
	}
	links := slices.Clone(st.Links[both[0].MonitoredItemID])
	slices.Sort(links)
	want := []uint32{both[1].MonitoredItemID, src[0].MonitoredItemID}
	slices.Sort(want)
	if !slices.Equal(links, want) || len(st.Links) != 1 {
		t.Fatalf("links %v, want %d → %v", st.Links, both[0].MonitoredItemID, want)
	}

	// A replica built from the export exports the same.
	if err := b.e.ReplicaSubscription(sessA, st.ID, st.Params, st.NextSeq, replicaWindow); err != nil {
		t.Fatal(err)
	}
	for _, g := range st.Items {
		req := &ua.CreateMonitoredItemsRequest{SubscriptionID: st.ID, TimestampsToReturn: g.TTR, ItemsToCreate: g.Items}
		resp, err := b.e.ReplicaItems(sessA, req, g.IDs, 100)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range resp.Results {
			if r.StatusCode != ua.StatusGood || r.MonitoredItemID != g.IDs[i] {
				t.Fatalf("replica item %d: %v id %d", g.IDs[i], r.StatusCode, r.MonitoredItemID)
			}
		}
	}
	for trig, l := range st.Links {
		if _, err := b.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: st.ID, TriggeringItemID: trig, LinksToAdd: l}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range st.Retrans {
		b.e.Reported(sessA, st.ID, m)
	}
	got, wantExp := normalized(b.e.Export(sessA)), normalized(exp)
	if !reflect.DeepEqual(got, wantExp) {
		t.Fatalf("replica exports\n%#v\nwant\n%#v", got, wantExp)
	}
	if s := b.sub(st.ID); !s.replica || s.window != replicaWindow {
		t.Fatalf("replica flag %v window %v", s.replica, s.window)
	}
}

func TestOnExpireAndDropReplica(t *testing.T) {
	v := newEnv(t, Options{})
	expired := make(chan uint32, 4)
	v.e.OnExpire(func(id uint32) {
		// No engine lock is held: the engine can be called.
		_ = v.e.Export(sessB)
		expired <- id
	})
	served := v.createSub(sessA, subParams{interval: 100, keepAlive: 1, lifetime: 3}).SubscriptionID
	v.replica(sessB, 7000, subParams{interval: 100, keepAlive: 1, lifetime: 3}, 1)
	v.advance(200 * time.Millisecond)
	select {
	case id := <-expired:
		t.Fatalf("OnExpire(%d) before the lifetime ran out", id)
	default:
	}
	v.advance(200 * time.Millisecond)
	select {
	case id := <-expired:
		if id != served {
			t.Fatalf("OnExpire(%d), want %d", id, served)
		}
	default:
		t.Fatal("OnExpire not called after the lifetime of a served subscription")
	}
	if len(expired) != 0 {
		t.Fatalf("OnExpire called again: %d", <-expired)
	}

	other := v.createSub(sessA, subParams{}).SubscriptionID
	v.e.DropReplica(other)
	if v.sub(other) == nil {
		t.Fatal("DropReplica deleted a served subscription")
	}
	v.e.DropReplica(7000)
	if v.sub(7000) != nil {
		t.Fatal("DropReplica left the replica")
	}
	v.e.DropReplica(7001) // unknown: nothing
	// A promoted replica is served here: DropReplica leaves it alone.
	v.replica(sessB, 7002, subParams{}, 1)
	v.e.Promote(sessB)
	v.e.DropReplica(7002)
	if v.sub(7002) == nil {
		t.Fatal("DropReplica deleted a promoted replica")
	}
}

// TestPromoteDeliversEachValueOnce: whatever the skew between the two
// members' timestamps (within the window), whichever values the serving
// member skipped (its queue coalesced them) and wherever its messages
// fall, ahead of this member's samples or behind them, Promote delivers
// exactly the values sampled here after the last one reported, each
// once, in order.
func TestPromoteDeliversEachValueOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(rt, "values")
		step := time.Duration(rapid.IntRange(1, 200).Draw(rt, "stepMs")) * time.Millisecond
		half := int(replicaWindow / 2 / time.Microsecond)
		v := newBareEnv(t)
		defer closeWithin(t, v.e, 10*time.Second)
		v.replica(sessA, 500, subParams{interval: 100}, 1)
		v.replicaItems(sessA, 500, n+1, []uint32{900}, itemSpec{node: 1, queue: 1, handle: 11})
		base := v.clock.Now()
		local := make([]*ua.DataValue, n+1)
		var remote []int // the values the serving member reports, in order
		remoteDV := make([]*ua.DataValue, n+1)
		for k := 1; k <= n; k++ {
			at := base.Add(time.Duration(k) * step)
			skewHere := time.Duration(rapid.IntRange(-half, half).Draw(rt, "skewHere")) * time.Microsecond
			skewThere := time.Duration(rapid.IntRange(-half, half).Draw(rt, "skewThere")) * time.Microsecond
			local[k] = dvAt(int32(k), at.Add(skewHere))
			remoteDV[k] = dvAt(int32(k), at.Add(skewThere))
			if rapid.IntRange(0, 3).Draw(rt, "skippedThere") > 0 {
				remote = append(remote, k)
			}
		}
		sampled, sent, seq := 0, 0, uint32(1) // sent: reported entries of remote
		// ahead is the number of reported values not sampled here.
		ahead := func(upTo int) int {
			c := 0
			for _, k := range remote[:upTo] {
				if k > sampled {
					c++
				}
			}
			return c
		}
		for sampled < n {
			if rapid.Bool().Draw(rt, "sample") {
				sampled++
				v.src.setDV(1, local[sampled])
				continue
			}
			limit := sent
			for limit < len(remote) && ahead(limit+1) <= maxCursors {
				limit++
			}
			upTo := rapid.IntRange(sent, limit).Draw(rt, "report")
			if upTo == sent {
				continue
			}
			var dvs []*ua.DataValue
			for _, k := range remote[sent:upTo] {
				dvs = append(dvs, remoteDV[k])
			}
			v.e.Reported(sessA, 500, reported(seq, 11, dvs...))
			seq++
			sent = upTo
		}
		last := 0
		if sent > 0 {
			last = remote[sent-1]
		}
		v.e.Promote(sessA)
		snd := &fakeSender{}
		v.publish(sessA, snd, 1)
		v.advance(100 * time.Millisecond)
		var got []int32
		for _, s := range snd.all() {
			got = append(got, values(t, notifications(t, s.resp))...)
		}
		var want []int32
		for k := last + 1; k <= n; k++ {
			want = append(want, int32(k))
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("delivered %v, want %v (last reported %d of %d)", got, want, last, n)
		}
		if all := snd.all(); len(all) > 0 {
			if got := all[0].resp.(*ua.PublishResponse).NotificationMessage.SequenceNumber; got != seq {
				rt.Fatalf("first message after the takeover has sequence number %d, want %d", got, seq)
			}
		}
	})
}

// newBareEnv is newEnv without the cleanup, for one iteration of a
// property test: the caller closes the engine.
func newBareEnv(t *testing.T) *env {
	clock := clockwork.NewFakeClockAt(t0)
	src := newFakeSource(clock.Now, 10)
	e := New(src, Options{Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	return &env{t: t, e: e, clock: clock, src: src}
}

// A snapshot taken while a message is on its way to the client carries
// it, and so does the live record that follows: the replica applies it
// once.
func TestReportedTwiceAppliesOnce(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{interval: 100}, 1)
	v.replicaItems(sessA, 500, 0, []uint32{900}, itemSpec{node: 1, queue: 10, handle: 11})
	var here []*ua.DataValue
	for _, k := range []int32{1, 0, 1} {
		v.advance(10 * time.Millisecond)
		here = append(here, v.src.set(1, k))
	}
	first := reported(1, 11, there(here[0]))
	v.e.Reported(sessA, 500, first)
	v.e.Reported(sessA, 500, reported(2, 11, there(here[1]), there(here[2])))
	v.e.Reported(sessA, 500, first) // again
	s := v.sub(500)
	if got := s.available(); !slices.Equal(got, []uint32{1, 2}) {
		t.Fatalf("available %v, want [1 2]", got)
	}
	if s.seq != 3 {
		t.Fatalf("next sequence number %d after a repeated report, want 3", s.seq)
	}
	// The value toggles back to 1 within the window: a new device value,
	// not the one message 1 carried.
	v.advance(10 * time.Millisecond)
	v.src.set(1, int32(0))
	v.advance(10 * time.Millisecond)
	v.src.set(1, int32(1))
	v.e.Promote(sessA)
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	if vals := values(t, notifications(t, snd.all()[0].resp)); !slices.Equal(vals, []int32{0, 1}) {
		t.Fatalf("after the takeover %v, want [0 1]", vals)
	}
}

// The snapshot of a session and its live records may both create one
// subscription: the second is the same replica, not a conflict.
func TestReplicaSubscriptionTwiceIsNoConflict(t *testing.T) {
	v := newEnv(t, Options{})
	v.replica(sessA, 500, subParams{interval: 100}, 1)
	v.replicaItems(sessA, 500, 0, []uint32{900}, itemSpec{node: 1, handle: 11})
	v.e.Reported(sessA, 500, reported(4, 11))
	if err := v.e.ReplicaSubscription(sessA, 500, subRequest(subParams{interval: 100}), 5, replicaWindow); err != nil {
		t.Fatalf("the same replica again: %v", err)
	}
	s := v.sub(500)
	if len(s.items) != 1 || s.seq != 5 {
		t.Fatalf("replica after the repeat: %d items, next seq %d; want 1 item, 5", len(s.items), s.seq)
	}
	// Another session's replica with that id, or a served one, still conflicts.
	if err := v.e.ReplicaSubscription(sessB, 500, subRequest(subParams{}), 1, replicaWindow); !errors.Is(err, ErrReplicaConflict) {
		t.Fatalf("another session's replica with id 500: %v", err)
	}
	v.e.Promote(sessA)
	if err := v.e.ReplicaSubscription(sessA, 500, subRequest(subParams{}), 1, replicaWindow); !errors.Is(err, ErrReplicaConflict) {
		t.Fatalf("a replica over a promoted subscription: %v", err)
	}
}

// TestServerStateIsTheReplicasOwn: an item on a variable of namespace 0
// (the Server object: ServiceLevel …) reports each member's own state. A
// value the serving member reported there says nothing of this member's:
// it empties the queue and leaves no cursor, so an equal value here later
// is queued; at the takeover the client gets this member's current value.
func TestServerStateIsTheReplicasOwn(t *testing.T) {
	it := bareItem(time.Second)
	it.node = ua.NewNumericNodeID(0, 2267)
	it.queue.push(dvAt(int32(240), ms(0)), 100, true)
	it.trimLocked(dvAt(int32(250), ms(10)), time.Second)
	if q, c := queued(it), cursorValues(it); len(q) != 0 || len(c) != 0 {
		t.Fatalf("after the serving member's report: queue %v cursors %v, want both empty", q, c)
	}
	// This member becomes Primary within the window: its own 250 is news.
	it.queueLocked(dvAt(int32(250), ms(200)))
	if q := queued(it); !slices.Equal(q, []int32{250}) {
		t.Fatalf("this member's own 250 within the window: queue %v, want [250]", q)
	}

	s := &subscription{items: map[uint32]*item{1: it}, replica: true}
	it.sub = s
	it.queue.clear()
	it.inReport = false
	it.last = dvAt(int32(250), ms(200))
	s.tellServerState()
	if q := queued(it); !slices.Equal(q, []int32{250}) {
		t.Fatalf("after the takeover the queue holds %v, want this member's current [250]", q)
	}
	if !s.hasReport() {
		t.Fatal("the server-local item is not on the report list")
	}

	// A tag of the application's namespace keeps the matching.
	tag := bareItem(time.Second)
	tag.node = ua.NewNumericNodeID(1, 7)
	tag.trimLocked(dvAt(int32(250), ms(10)), time.Second)
	if c := cursorValues(tag); !slices.Equal(c, []int32{250}) {
		t.Fatalf("a tag's unsampled report: cursors %v, want [250]", c)
	}
}
