package subscription

import (
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
)

// benchItems builds an engine with one subscription of n Value items,
// exception based (sampling 0) or sampled at samplingMS, with both
// timestamps returned.
func benchItems(b *testing.B, clock clockwork.Clock, n int, intervalMS, samplingMS float64) (*Engine, *fakeSource, uint32) {
	return benchItemsTTR(b, clock, n, intervalMS, samplingMS, ua.TimestampsToReturnBoth)
}

func benchItemsTTR(b *testing.B, clock clockwork.Clock, n int, intervalMS, samplingMS float64, ttr ua.TimestampsToReturn) (*Engine, *fakeSource, uint32) {
	b.Helper()
	src := newFakeSource(clock.Now, n)
	e := New(src, Options{Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	cs, err := e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: intervalMS, RequestedMaxKeepAliveCount: 10, RequestedLifetimeCount: 1000, PublishingEnabled: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	req := &ua.CreateMonitoredItemsRequest{SubscriptionID: cs.SubscriptionID, TimestampsToReturn: ttr}
	for i := 1; i <= n; i++ {
		req.ItemsToCreate = append(req.ItemsToCreate, itemSpec{node: i, sampling: samplingMS, queue: 1}.request())
	}
	if _, err := e.CreateMonitoredItems(sessA, req); err != nil {
		b.Fatal(err)
	}
	return e, src, cs.SubscriptionID
}

// BenchmarkChangeCallback measures the producer side alone: the Watch
// callback of one of 50,000 items, called directly with a ready DataValue.
// It must not allocate.
func BenchmarkChangeCallback(b *testing.B) {
	for _, sampling := range []float64{0, 100} {
		name := "exception"
		if sampling > 0 {
			name = "sampled"
		}
		b.Run(name, func(b *testing.B) {
			clock := clockwork.NewFakeClock()
			e, _, sub := benchItems(b, clock, 50000, 100, sampling)
			defer e.Close()
			e.mu.Lock()
			var items []*item
			for _, it := range e.subs[sub].items {
				items = append(items, it)
			}
			e.mu.Unlock()
			dvs := make([]*ua.DataValue, 64)
			for i := range dvs {
				dvs[i] = &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(int32(i))}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				items[i%len(items)].onChange(dvs[i%len(dvs)])
			}
		})
	}
}

// ageRecorder is a client keeping a fixed number of Publish requests in
// flight that records every notification's age (arrival − SourceTimestamp).
type ageRecorder struct {
	e      *Engine
	notifs atomic.Int64
	last   atomic.Int64 // unix nanoseconds of the latest notification
	stop   atomic.Bool
	next   atomic.Uint32
	mu     sync.Mutex
	ages   []time.Duration
}

func (r *ageRecorder) SendResponse(_ uint32, resp ua.Response) error {
	now := time.Now()
	var acks []*ua.SubscriptionAcknowledgement
	if pr, ok := resp.(*ua.PublishResponse); ok && pr.NotificationMessage != nil {
		for _, eo := range pr.NotificationMessage.NotificationData {
			dcn, ok := eo.Value.(*ua.DataChangeNotification)
			if !ok {
				continue
			}
			r.mu.Lock()
			for _, n := range dcn.MonitoredItems {
				r.ages = append(r.ages, now.Sub(n.Value.SourceTimestamp))
			}
			r.mu.Unlock()
			r.notifs.Add(int64(len(dcn.MonitoredItems)))
			r.last.Store(now.UnixNano())
			acks = []*ua.SubscriptionAcknowledgement{{SubscriptionID: pr.SubscriptionID, SequenceNumber: pr.NotificationMessage.SequenceNumber}}
		}
	}
	if !r.stop.Load() {
		r.e.Publish(sessA, r, r.next.Add(1), &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}, SubscriptionAcknowledgements: acks})
	}
	return nil
}

func (r *ageRecorder) percentile(p float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ages) == 0 {
		return 0
	}
	slices.Sort(r.ages)
	return r.ages[min(int(float64(len(r.ages))*p), len(r.ages)-1)]
}

// BenchmarkChangeToNotification is the target load: 50,000 items updated
// every 100 ms (500,000 changes/s) through Source callbacks into one
// subscription publishing every 100 ms, with 10 Publish requests in flight.
// One iteration is one 100 ms round of 50,000 changes; run it with
// -benchtime=30x or so. "paced" keeps the rate at 500k/s and reports the
// notification rate and value age; "flat-out" writes as fast as it can to
// show the headroom.
func BenchmarkChangeToNotification(b *testing.B) {
	for _, tc := range []struct {
		name     string
		sampling float64
		paced    bool
	}{
		{"paced/exception", 0, true},
		{"paced/sampled100ms", 100, true},
		{"flat-out/exception", 0, false},
	} {
		b.Run(tc.name, func(b *testing.B) { benchChangeToNotification(b, tc.sampling, tc.paced) })
	}
}

func benchChangeToNotification(b *testing.B, sampling float64, paced bool) {
	const n = 50000
	const round = 100 * time.Millisecond
	e, src, _ := benchItems(b, clockwork.NewRealClock(), n, 100, sampling)
	defer e.Close()
	rec := &ageRecorder{e: e}
	defer rec.stop.Store(true)

	b.ResetTimer()
	start := time.Now()
	for i := 1; i <= 10; i++ {
		e.Publish(sessA, rec, rec.next.Add(1), &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	}
	rec.notifs.Store(0)
	rec.mu.Lock()
	rec.ages = rec.ages[:0]
	rec.mu.Unlock()
	for r := range b.N {
		roundStart := time.Now()
		for i := 1; i <= n; i++ {
			// The DataValue is the Source's allocation, as in a real
			// address space; the engine adds none.
			dv := &ua.DataValue{Value: ua.MustVariant(int32(r)), SourceTimestamp: time.Now()}
			dv.ServerTimestamp = dv.SourceTimestamp
			dv.UpdateMask()
			src.setDV(i, dv)
		}
		if paced {
			if d := round - time.Since(roundStart); d > 0 {
				time.Sleep(d) // pacing the producer, not synchronisation
			}
		}
	}
	writing := time.Since(start)
	// Let the last round drain: two publishing intervals.
	deadline := time.Now().Add(2 * round)
	want := int64(n) * int64(b.N)
	for rec.notifs.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	elapsed := time.Unix(0, rec.last.Load()).Sub(start)
	got := rec.notifs.Load()
	b.ReportMetric(float64(n*b.N)/writing.Seconds(), "changes/s")
	b.ReportMetric(float64(got)/elapsed.Seconds(), "notifs/s")
	b.ReportMetric(float64(got)/float64(n*b.N), "delivered/change")
	b.ReportMetric(float64(rec.percentile(0.50))/float64(time.Millisecond), "p50-age-ms")
	b.ReportMetric(float64(rec.percentile(0.99))/float64(time.Millisecond), "p99-age-ms")
	b.ReportMetric(0, "ns/op")
}

// discardClient answers every response with a new Publish request and
// counts the notifications, so that the engine always has requests.
type discardClient struct {
	e      *Engine
	next   atomic.Uint32
	notifs atomic.Int64
}

func (c *discardClient) SendResponse(_ uint32, resp ua.Response) error {
	if pr, ok := resp.(*ua.PublishResponse); ok && pr.NotificationMessage != nil {
		c.notifs.Add(int64(notifCount(pr.NotificationMessage)))
	}
	c.e.Publish(sessA, c, c.next.Add(1), &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
	return nil
}

// BenchmarkPublishCycle measures the engine's own work per notification at
// a publishing tick of 50,000 changed items (sampling tick, report list,
// NotificationMessages of the default size, hand-over to the sending
// goroutine), without the producers' side: the changes are made with the
// timer stopped. One iteration is one cycle. "source-only" returns only the
// source timestamp, so every value is copied without its server timestamp.
func BenchmarkPublishCycle(b *testing.B) {
	for _, tc := range []struct {
		name     string
		sampling float64
		ttr      ua.TimestampsToReturn
	}{
		{"exception", 0, ua.TimestampsToReturnBoth},
		{"sampled100ms", 100, ua.TimestampsToReturnBoth},
		{"exception/source-only", 0, ua.TimestampsToReturnSource},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const n = 50000
			clock := clockwork.NewFakeClock()
			e, src, _ := benchItemsTTR(b, clock, n, 100, tc.sampling, tc.ttr)
			defer e.Close()
			c := &discardClient{e: e}
			for range 10 {
				e.Publish(sessA, c, c.next.Add(1), &ua.PublishRequest{RequestHeader: &ua.RequestHeader{}})
			}
			sets := [2][]*ua.DataValue{}
			for k := range sets {
				sets[k] = make([]*ua.DataValue, n+1)
				for i := 1; i <= n; i++ {
					dv := &ua.DataValue{Value: ua.MustVariant(int32(k + 1)), SourceTimestamp: clock.Now()}
					dv.ServerTimestamp = dv.SourceTimestamp
					dv.UpdateMask()
					sets[k][i] = dv
				}
			}
			cycle := func(r int) {
				want := c.notifs.Load() + n
				clock.Advance(100 * time.Millisecond)
				e.sync()
				deadline := time.Now().Add(10 * time.Second)
				for c.notifs.Load() < want {
					if time.Now().After(deadline) {
						b.Fatalf("cycle %d: %d of %d notifications", r, c.notifs.Load(), want)
					}
					runtime.Gosched()
				}
			}
			cycle(0) // the initial values
			b.ReportAllocs()
			b.ResetTimer()
			for r := range b.N {
				b.StopTimer()
				for i := 1; i <= n; i++ {
					src.setDV(i, sets[r%2][i])
				}
				b.StartTimer()
				cycle(r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/notification")
		})
	}
}
