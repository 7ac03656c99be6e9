package subscription

import (
	"math"
	"testing"
	"time"
)

var testLimits = limits{
	minPublishing: 10 * time.Millisecond, maxPublishing: time.Hour,
	minSampling: 10 * time.Millisecond, maxSampling: time.Hour,
	maxQueueSize: 10000, defaultKeepAlive: 10, maxKeepAlive: 10000,
	maxLifetime: time.Hour,
}

func TestRevisePublishingInterval(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want time.Duration
	}{
		{0, 10 * time.Millisecond},
		{-5, 10 * time.Millisecond},
		{math.NaN(), 10 * time.Millisecond},
		{1, 10 * time.Millisecond},
		{100, 100 * time.Millisecond},
		{250.5, 250500 * time.Microsecond},
		{1e12, time.Hour},
		{math.Inf(1), time.Hour},
	} {
		if got := testLimits.revisePublishingInterval(tc.ms); got != tc.want {
			t.Errorf("revisePublishingInterval(%v) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}

func TestReviseCounts(t *testing.T) {
	for _, tc := range []struct {
		lifetime, keepAlive uint32
		interval            time.Duration
		wantLife, wantKeep  uint32
	}{
		{0, 0, 100 * time.Millisecond, 30, 10},                 // defaults: 3 × 10
		{10, 5, 100 * time.Millisecond, 15, 5},                 // lifetime raised to 3 × keep-alive
		{100, 5, 100 * time.Millisecond, 100, 5},               // kept
		{1 << 30, 5, 100 * time.Millisecond, 36000, 5},         // 1 h at 100 ms
		{1 << 30, 20000, 100 * time.Millisecond, 36000, 10000}, // keep-alive capped
		{1 << 30, 10000, time.Second, 30000, 10000},            // 3 × keep-alive wins over 1 h
		{5, 1, time.Hour, 3, 1},                                // 1 h interval: never below 3
	} {
		l, k := testLimits.reviseCounts(tc.lifetime, tc.keepAlive, tc.interval)
		if l != tc.wantLife || k != tc.wantKeep {
			t.Errorf("reviseCounts(%d, %d, %v) = %d, %d; want %d, %d", tc.lifetime, tc.keepAlive, tc.interval, l, k, tc.wantLife, tc.wantKeep)
		}
	}
}

func TestReviseSamplingInterval(t *testing.T) {
	pub := 500 * time.Millisecond
	for _, tc := range []struct {
		ms     float64
		polled bool
		want   time.Duration
	}{
		{-1, false, pub},
		{-42, false, pub},
		{math.NaN(), false, pub},
		{0, false, 0},
		{0, true, pub},
		{1, false, 10 * time.Millisecond},
		{100, false, 100 * time.Millisecond},
		{1e15, false, time.Hour},
	} {
		if got := testLimits.reviseSamplingInterval(tc.ms, pub, tc.polled); got != tc.want {
			t.Errorf("reviseSamplingInterval(%v, polled=%v) = %v, want %v", tc.ms, tc.polled, got, tc.want)
		}
	}
}

func TestReviseQueueSizeAndNotifications(t *testing.T) {
	for _, tc := range []struct{ in, want uint32 }{{0, 1}, {1, 1}, {50, 50}, {1 << 20, 10000}} {
		if got := testLimits.reviseQueueSize(tc.in); got != tc.want {
			t.Errorf("reviseQueueSize(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
	capped := testLimits
	capped.maxNotifications = 1000
	for _, tc := range []struct {
		l        limits
		in, want uint32
	}{
		{testLimits, 0, 0}, {testLimits, 5, 5}, {capped, 0, 1000}, {capped, 5, 5}, {capped, 5000, 1000},
	} {
		if got := tc.l.reviseMaxNotifications(tc.in); got != tc.want {
			t.Errorf("reviseMaxNotifications(%d) with cap %d = %d, want %d", tc.in, tc.l.maxNotifications, got, tc.want)
		}
	}
}

func TestAlignedSample(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		nextPublish, now, every, want time.Duration // offsets from t0
	}{
		{1000 * ms, 0, 100 * ms, 100 * ms}, // on the grid: the next point, never now
		{1000 * ms, 30 * ms, 100 * ms, 100 * ms},
		{1000 * ms, 950 * ms, 100 * ms, 1000 * ms},
		{100 * ms, 0, 100 * ms, 100 * ms},        // sampling at the publishing interval: just before each publish
		{100 * ms, 0, 300 * ms, 100 * ms},        // slower than publishing: the next publish
		{100 * ms, 200 * ms, 50 * ms, 250 * ms},  // publishing tick already passed
		{100 * ms, 150 * ms, 100 * ms, 200 * ms}, // passed, still on its grid
		{100 * ms, 130 * ms, 100 * ms, 200 * ms},
	} {
		s := &subscription{nextPublish: t0.Add(tc.nextPublish), sampleEvery: tc.every}
		if got := s.alignedSample(t0.Add(tc.now)).Sub(t0); got != tc.want {
			t.Errorf("alignedSample(publish %v, now %v, every %v) = %v, want %v", tc.nextPublish, tc.now, tc.every, got, tc.want)
		}
	}
}
