package uaserver

import (
	"crypto/sha256"
	"sync"
	"time"
)

// The guards of the OpenSecureChannel path: what a secured handshake may
// cost before the server pays two RSA private-key operations for it (one
// to decrypt the request, one to sign the answer). All three are pure
// over explicit instants and bounded in memory; handshakeGuard holds them
// for the server.

// maxReplayEntries is the most OpenSecureChannel requests (and client
// nonces) remembered by the replay caches; beyond it the oldest is
// forgotten before its window ends. Measured (TestReplayCacheMemory):
// about 12 MB for 100,000 requests and their 100,000 nonces.
const maxReplayEntries = 100_000

// maxRateAddresses is the most client addresses a rateLimiter keeps a
// bucket for; beyond it the newcomers share one bucket.
const maxRateAddresses = 10_000

// digest identifies a request or a nonce in a replay cache: the first 16
// bytes of its SHA-256 (a collision needs 2^64 requests).
type digest [16]byte

func digestOf(domain byte, b []byte) digest {
	h := sha256.New()
	h.Write([]byte{domain})
	h.Write(b)
	var d digest
	copy(d[:], h.Sum(nil))
	return d
}

// replayCache remembers digests for a window. Insertion order is expiry
// order (one window for all), so a ring of digests evicts the oldest when
// full. Not safe for concurrent use; handshakeGuard locks it.
type replayCache struct {
	window   time.Duration
	capacity int
	until    map[digest]int64 // expiry, Unix nanoseconds
	ring     []slot           // insertion order; ring[head] is the oldest once full
	head     int
}

// slot is one remembered digest and the expiry it was remembered with: a
// slot whose expiry no longer matches the map (the digest was forgotten or
// renewed since) evicts nothing.
type slot struct {
	d   digest
	exp int64
}

func newReplayCache(window time.Duration, capacity int) *replayCache {
	return &replayCache{window: window, capacity: capacity, until: make(map[digest]int64)}
}

// claim reports whether d is new at now (not seen, or seen longer than
// the window ago) and, if so, remembers it until now + window.
func (c *replayCache) claim(d digest, now time.Time) bool {
	if exp, ok := c.until[d]; ok && now.UnixNano() < exp {
		return false
	}
	exp := now.Add(c.window).UnixNano()
	if len(c.ring) < c.capacity {
		c.ring = append(c.ring, slot{d, exp})
	} else {
		if old := c.ring[c.head]; c.until[old.d] == old.exp {
			delete(c.until, old.d)
		}
		c.ring[c.head] = slot{d, exp}
		c.head = (c.head + 1) % c.capacity
	}
	c.until[d] = exp
	return true
}

// len is the number of digests remembered.
func (c *replayCache) len() int { return len(c.until) }

// forget drops d (a request that failed its checks: only verified
// requests stay remembered, so garbage cannot push real ones out).
func (c *replayCache) forget(d digest) { delete(c.until, d) }

// rateLimiter is a token bucket per client address: rate tokens a second,
// at most rate held. Addresses beyond maxAddrs share one bucket (""), so
// memory is bounded and a flood of addresses neither resets nor blocks the
// known ones. Not safe for concurrent use; handshakeGuard locks it.
type rateLimiter struct {
	rate     float64
	maxAddrs int
	buckets  map[string]*bucket
	sweptAt  time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(perSecond, maxAddrs int) *rateLimiter {
	return &rateLimiter{rate: float64(perSecond), maxAddrs: maxAddrs, buckets: make(map[string]*bucket)}
}

// allow takes a token of addr's bucket at now, or reports false when it
// is empty.
func (r *rateLimiter) allow(addr string, now time.Time) bool {
	b := r.buckets[addr]
	if b == nil {
		addr = r.admit(addr, now)
		if b = r.buckets[addr]; b == nil {
			b = &bucket{tokens: r.rate, at: now}
			r.buckets[addr] = b
		}
	}
	r.refill(b, now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (r *rateLimiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(r.rate, b.tokens+d.Seconds()*r.rate)
		b.at = now
	}
}

// admit returns addr when there is room for its bucket, else "". A full
// table first drops, at most once a second, the buckets that have
// refilled (they hold no state worth keeping).
func (r *rateLimiter) admit(addr string, now time.Time) string {
	if len(r.buckets) < r.maxAddrs {
		return addr
	}
	if now.Sub(r.sweptAt) >= time.Second {
		r.sweptAt = now
		for a, b := range r.buckets {
			if r.refill(b, now); b.tokens >= r.rate {
				delete(r.buckets, a)
			}
		}
	}
	if len(r.buckets) < r.maxAddrs {
		return addr
	}
	return ""
}

// handshakeGuard holds the replay caches and the rate limits of secured
// OpenSecureChannel requests. Safe for concurrent use.
type handshakeGuard struct {
	mu       sync.Mutex
	requests *replayCache // whole chunks; mu must be held.
	nonces   *replayCache // client nonces; mu must be held.
	opens    *rateLimiter // Issue per address; mu must be held.
	renewals *rateLimiter // Renew per address; mu must be held.
}

func newHandshakeGuard(window time.Duration, opens, renewals int) *handshakeGuard {
	return &handshakeGuard{
		requests: newReplayCache(window, maxReplayEntries),
		nonces:   newReplayCache(window, maxReplayEntries),
		opens:    newRateLimiter(opens, maxRateAddresses),
		renewals: newRateLimiter(renewals, maxRateAddresses),
	}
}

// claimRequest remembers a secured OpenSecureChannel chunk; false means
// the same bytes were seen within the window.
func (g *handshakeGuard) claimRequest(d digest, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests.claim(d, now)
}

// forgetRequest drops a chunk claimed by claimRequest that failed its
// security checks.
func (g *handshakeGuard) forgetRequest(d digest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests.forget(d)
}

// claimNonce remembers a client nonce; false means it was seen within the
// window.
func (g *handshakeGuard) claimNonce(nonce []byte, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nonces.claim(digestOf('n', nonce), now)
}

// allow takes a token of addr's Issue (renewal false) or Renew bucket.
func (g *handshakeGuard) allow(addr string, renewal bool, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if renewal {
		return g.renewals.allow(addr, now)
	}
	return g.opens.allow(addr, now)
}
