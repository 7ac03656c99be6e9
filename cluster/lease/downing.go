package lease

import (
	"context"
	"time"

	"github.com/otopcua/otopcua/cluster/downing"
)

// DowningOption adjusts ForDowning.
type DowningOption func(*downingLease)

// WithEvict sets the holders each Acquire may evict: evict is called on
// every Acquire and returns the owners the caller has proven dead (their
// cluster port refuses connections). Default: none.
func WithEvict(evict func() []string) DowningOption {
	return func(d *downingLease) { d.evict = evict }
}

// ForDowning adapts l to the cluster core's synchronous downing.Lease. Each
// call runs under a context of timeout, capped at TTL/2 (timeout ≤ 0 means
// TTL/2), so a hanging store cannot outlast half a lease. Any error answers
// false (Acquire, Release) or "" (Holder): not held.
func ForDowning(l Lease, timeout time.Duration, opts ...DowningOption) downing.Lease {
	if half := l.TTL() / 2; timeout <= 0 || timeout > half {
		timeout = half
	}
	d := &downingLease{l: l, timeout: timeout}
	for _, o := range opts {
		o(d)
	}
	return d
}

type downingLease struct {
	l       Lease
	timeout time.Duration
	evict   func() []string
}

var _ downing.Lease = (*downingLease)(nil)

func (d *downingLease) Acquire(owner string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	var evict []string
	if d.evict != nil {
		evict = d.evict()
	}
	g, err := d.l.Acquire(ctx, owner, evict...)
	return err == nil && g.Holder == owner
}

// Release answers true when owner held the lease and it was released.
func (d *downingLease) Release(owner string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	g, err := d.l.Holder(ctx)
	if err != nil || g.Holder != owner {
		return false
	}
	return d.l.Release(ctx, owner) == nil
}

func (d *downingLease) Holder() string {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	g, err := d.l.Holder(ctx)
	if err != nil {
		return ""
	}
	return g.Holder
}
