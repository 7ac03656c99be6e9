package lease

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// memoryLease is a Lease in this process's memory, on clock. It is for unit
// tests only: it is not shared between nodes, so it gives no split-brain
// safety, and the node's configuration refuses it for a real node.
type memoryLease struct {
	clusterID string
	ttl       time.Duration
	clock     clockwork.Clock

	mu      sync.Mutex // guards the fields below
	holder  string
	epoch   uint64
	expires time.Time
}

var _ Lease = (*memoryLease)(nil)

// NewMemory returns a free in-memory lease of clusterID (tests only). A nil
// clock is the real clock. It panics on an empty clusterID or a ttl ≤ 0.
func NewMemory(clusterID string, ttl time.Duration, clock clockwork.Clock) Lease {
	if err := checkNew(clusterID, ttl, time.Nanosecond); err != nil {
		panic(err)
	}
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &memoryLease{clusterID: clusterID, ttl: ttl, clock: clock}
}

// live reports the holder unless the lease is free or expired; mu is held.
func (m *memoryLease) live(now time.Time) string {
	if m.holder == "" || !now.Before(m.expires) {
		return ""
	}
	return m.holder
}

// Acquire implements Lease.
func (m *memoryLease) Acquire(ctx context.Context, owner string, evict ...string) (Grant, error) {
	if err := checkOwner(owner); err != nil {
		return Grant{}, err
	}
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	h := m.live(now)
	if h != "" && h != owner && !slices.Contains(evict, h) {
		return Grant{}, &HeldError{Holder: h, Epoch: m.epoch}
	}
	if m.holder != owner {
		m.epoch++
	}
	m.holder, m.expires = owner, now.Add(m.ttl)
	return Grant{Holder: owner, Epoch: m.epoch, TTL: m.ttl}, nil
}

// Release implements Lease.
func (m *memoryLease) Release(ctx context.Context, owner string) error {
	if err := checkOwner(owner); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holder == owner {
		m.holder, m.expires = "", time.Time{}
	}
	return nil
}

// Holder implements Lease.
func (m *memoryLease) Holder(ctx context.Context) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	g := Grant{Holder: m.live(now), Epoch: m.epoch}
	if g.Holder != "" {
		g.TTL = m.expires.Sub(now)
	}
	return g, nil
}

// TTL implements Lease.
func (m *memoryLease) TTL() time.Duration { return m.ttl }

// Name implements Lease.
func (m *memoryLease) Name() string { return "memory" }
