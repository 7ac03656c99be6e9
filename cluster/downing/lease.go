package downing

import "sync"

// Lease is the arbiter lease-majority asks: only the holder's side survives
// a split. Implementations may block on I/O; the cluster core never calls a
// Lease itself — it asks its driver (the actor) to, and is told the result.
type Lease interface {
	// Acquire tries to take the lease for owner; true when owner holds it
	// afterwards (also when it already did).
	Acquire(owner string) bool
	// Release gives the lease up if owner holds it; true when released.
	Release(owner string) bool
	// Holder returns the current holder ("" when free).
	Holder() string
}

// MemLease is an in-memory Lease shared by the nodes of one process (tests,
// the in-memory network). It is safe for concurrent use; mu guards holder.
type MemLease struct {
	mu     sync.Mutex
	holder string
}

var _ Lease = (*MemLease)(nil)

// Acquire implements Lease.
func (l *MemLease) Acquire(owner string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == "" || l.holder == owner {
		l.holder = owner
		return true
	}
	return false
}

// Release implements Lease.
func (l *MemLease) Release(owner string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != owner {
		return false
	}
	l.holder = ""
	return true
}

// Holder implements Lease.
func (l *MemLease) Holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder
}

// Evict gives the lease to owner when dead holds it (the crash fast path
// proved dead gone): true when owner holds it afterwards.
func (l *MemLease) Evict(dead, owner string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == dead || l.holder == "" || l.holder == owner {
		l.holder = owner
		return true
	}
	return false
}
