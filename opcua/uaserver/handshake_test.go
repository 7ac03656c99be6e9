package uaserver

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"testing"
	"time"
)

var h0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func dg(i int) digest { return digestOf('t', fmt.Append(nil, i)) }

// TestReplayCache: a digest is refused within the window and accepted
// after it; a full cache forgets the oldest; a forgotten digest is new.
func TestReplayCache(t *testing.T) {
	type step struct {
		op   string // "claim" or "forget"
		d    int
		at   time.Duration
		want bool // claim's answer
	}
	for _, tc := range []struct {
		name     string
		capacity int
		steps    []step
	}{
		{"first claim is new", 4, []step{{"claim", 1, 0, true}}},
		{"a repeat within the window is refused", 4, []step{
			{"claim", 1, 0, true}, {"claim", 1, time.Second, false}, {"claim", 1, 10*time.Minute - time.Nanosecond, false},
		}},
		{"a repeat after the window is new again", 4, []step{
			{"claim", 1, 0, true}, {"claim", 1, 10 * time.Minute, true}, {"claim", 1, 11 * time.Minute, false},
		}},
		{"others are independent", 4, []step{{"claim", 1, 0, true}, {"claim", 2, 0, true}, {"claim", 1, 0, false}}},
		{"a full cache forgets the oldest", 2, []step{
			{"claim", 1, 0, true}, {"claim", 2, 1, true}, {"claim", 3, 2, true},
			{"claim", 2, 3, false}, {"claim", 3, 4, false}, {"claim", 1, 5, true},
		}},
		{"a forgotten digest is new", 4, []step{{"claim", 1, 0, true}, {"forget", 1, 0, false}, {"claim", 1, 1, true}}},
		{"a stale slot does not evict a renewed digest", 2, []step{
			{"claim", 1, 0, true}, {"forget", 1, 0, false}, {"claim", 1, 1, true}, {"claim", 2, 2, true},
			// the ring now holds 1 (stale), 1, 2 in two slots: 1 (stale) was overwritten by 2
			{"claim", 1, 3, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newReplayCache(10*time.Minute, tc.capacity)
			for i, s := range tc.steps {
				switch s.op {
				case "forget":
					c.forget(dg(s.d))
				case "claim":
					if got := c.claim(dg(s.d), h0.Add(s.at)); got != s.want {
						t.Fatalf("step %d: claim(%d) at %s = %v, want %v", i, s.d, s.at, got, s.want)
					}
				}
				if c.len() > tc.capacity {
					t.Fatalf("step %d: %d digests remembered, capacity %d", i, c.len(), tc.capacity)
				}
			}
		})
	}
}

// TestReplayCacheMemory: 100,000 distinct secured OpenSecureChannel
// requests fill both caches to their capacity and no further; the next
// one pushes out the oldest. Their heap is reported and bounded.
func TestReplayCacheMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := newHandshakeGuard(10*time.Minute, 20, 10)
	nonce := make([]byte, 32)
	for i := range maxReplayEntries + 1 {
		_, _ = rand.Read(nonce)
		if !g.claimRequest(dg(i), h0) || !g.claimNonce(nonce, h0) {
			t.Fatalf("request %d refused as a replay", i)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("replay caches after %d distinct requests: %d + %d entries, %.1f MB of heap",
		maxReplayEntries+1, g.requests.len(), g.nonces.len(), float64(heap)/(1<<20))
	if g.requests.len() != maxReplayEntries || g.nonces.len() != maxReplayEntries {
		t.Fatalf("caches hold %d and %d, want %d each", g.requests.len(), g.nonces.len(), maxReplayEntries)
	}
	if heap > 24<<20 {
		t.Fatalf("the caches take %d bytes, want under 24 MB", heap)
	}
	if !g.claimRequest(dg(0), h0) {
		t.Fatal("the oldest request is still remembered past the capacity")
	}
	if g.claimRequest(dg(maxReplayEntries), h0) {
		t.Fatal("the newest request was forgotten")
	}
	runtime.KeepAlive(g)
}

// TestRateLimiter: a bucket of rate tokens a second, burst rate; addresses
// are independent; beyond maxAddrs newcomers share one bucket; refilled
// buckets make room.
func TestRateLimiter(t *testing.T) {
	type step struct {
		addr string
		at   time.Duration
		n    int // requests at that instant
		want int // how many allowed
	}
	for _, tc := range []struct {
		name     string
		rate     int
		maxAddrs int
		steps    []step
	}{
		{"burst of rate", 5, 10, []step{{"a", 0, 8, 5}}},
		{"refills at rate", 5, 10, []step{{"a", 0, 5, 5}, {"a", 200 * time.Millisecond, 3, 1}, {"a", time.Second, 9, 4}}},
		{"never above the burst", 5, 10, []step{{"a", 0, 1, 1}, {"a", time.Hour, 9, 5}}},
		{"addresses are independent", 2, 10, []step{{"a", 0, 3, 2}, {"b", 0, 3, 2}}},
		{"newcomers beyond the table share one bucket", 2, 2, []step{
			{"a", 0, 1, 1}, {"b", 0, 1, 1}, {"c", 0, 2, 2}, {"d", 0, 2, 0}, {"a", 0, 2, 1},
		}},
		{"refilled buckets make room", 2, 2, []step{
			{"a", 0, 1, 1}, {"b", 0, 1, 1}, {"c", time.Second, 2, 2}, {"d", time.Second, 2, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRateLimiter(tc.rate, tc.maxAddrs)
			for i, s := range tc.steps {
				got := 0
				for range s.n {
					if r.allow(s.addr, h0.Add(s.at)) {
						got++
					}
				}
				if got != s.want {
					t.Fatalf("step %d: %d of %d from %s at %s allowed, want %d", i, got, s.n, s.addr, s.at, s.want)
				}
				if len(r.buckets) > tc.maxAddrs+1 {
					t.Fatalf("step %d: %d buckets for %d addresses", i, len(r.buckets), tc.maxAddrs)
				}
			}
		})
	}
}
