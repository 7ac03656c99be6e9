// Package leasetest is the contract every lease.Lease implementation
// passes: Run it against a real store.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/lease"
)

// Subject is one implementation under test.
type Subject struct {
	// New returns a lease of clusterID (distinct per subtest) on the store.
	New func(t *testing.T, clusterID string) lease.Lease
	// Pass lets d go by on the store's clock (real stores: sleep; a fake
	// clock: advance it).
	Pass func(t *testing.T, d time.Duration)
	// Now is the clock grant windows are measured on in the concurrency
	// test (nil: the real clock).
	Now func() time.Time
	// Expiry is how long after its TTL a lease may still be seen held
	// (etcd deletes expired keys on its lessor's tick). Default 0.
	Expiry time.Duration
	// Concurrent is how long the concurrency test runs (default 2 s).
	Concurrent time.Duration
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func held(t *testing.T, err error, holder string) *lease.HeldError {
	t.Helper()
	var he *lease.HeldError
	if !errors.As(err, &he) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("want a *HeldError naming %q, got %v", holder, err)
	}
	if he.Holder != holder {
		t.Fatalf("HeldError names %q, want %q", he.Holder, holder)
	}
	return he
}

func acquire(t *testing.T, l lease.Lease, owner string, evict ...string) lease.Grant {
	t.Helper()
	g, err := l.Acquire(ctxT(t), owner, evict...)
	if err != nil {
		t.Fatalf("Acquire(%s, evict %v): %v", owner, evict, err)
	}
	if g.Holder != owner || g.TTL <= 0 {
		t.Fatalf("Acquire(%s) = %+v", owner, g)
	}
	return g
}

func holder(t *testing.T, l lease.Lease) lease.Grant {
	t.Helper()
	g, err := l.Holder(ctxT(t))
	if err != nil {
		t.Fatalf("Holder: %v", err)
	}
	return g
}

// Run runs the contract against s.
func Run(t *testing.T, s Subject) {
	if s.Concurrent == 0 {
		s.Concurrent = 2 * time.Second
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	var n atomic.Int64
	newLease := func(t *testing.T) lease.Lease {
		return s.New(t, fmt.Sprintf("plant-%d-%d", time.Now().UnixNano()%1e6, n.Add(1)))
	}

	t.Run("AcquireRefuseRenewExpire", func(t *testing.T) {
		l := newLease(t)
		if g := holder(t, l); g.Holder != "" {
			t.Fatalf("a new lease is held: %+v", g)
		}
		g1 := acquire(t, l, "node-a")
		if g1.Epoch == 0 {
			t.Fatalf("epoch 0 on a grant: %+v", g1)
		}
		if h := holder(t, l); h.Holder != "node-a" || h.Epoch != g1.Epoch || h.TTL <= 0 || h.TTL > l.TTL()+time.Second {
			t.Fatalf("Holder = %+v after a grant %+v", h, g1)
		}
		_, err := l.Acquire(ctxT(t), "node-b")
		if he := held(t, err, "node-a"); he.Epoch != g1.Epoch {
			t.Fatalf("HeldError epoch %d, grant epoch %d", he.Epoch, g1.Epoch)
		}
		s.Pass(t, l.TTL()/2)
		renewed := s.Now()
		g2 := acquire(t, l, "node-a")
		if g2.Epoch != g1.Epoch {
			t.Fatalf("renewal changed the epoch: %d → %d", g1.Epoch, g2.Epoch)
		}
		// The renewal moved the expiry: after another 3/4 TTL (5/4 TTL
		// since the first grant) node-a still holds it. The check holds
		// only when the refused call ended before the renewal's TTL was
		// over (a stalled test machine may oversleep).
		s.Pass(t, 3*l.TTL()/4)
		_, err = l.Acquire(ctxT(t), "node-b")
		if over := s.Now().Sub(renewed); over < l.TTL() {
			held(t, err, "node-a")
		} else {
			t.Logf("renewal check inconclusive: node-b asked %v after the renewal (TTL %v): %v", over, l.TTL(), err)
			if err == nil {
				_ = l.Release(ctxT(t), "node-b")
				acquire(t, l, "node-a")
			}
		}
		// Expiry, on the store's clock.
		s.Pass(t, l.TTL()/4+s.Expiry+l.TTL()/10)
		if h := holder(t, l); h.Holder != "" {
			t.Fatalf("Holder after expiry = %+v", h)
		}
		g3 := acquire(t, l, "node-b")
		if g3.Epoch <= g1.Epoch {
			t.Fatalf("epoch after a change of holder %d, before %d", g3.Epoch, g1.Epoch)
		}
		_, err = l.Acquire(ctxT(t), "node-a")
		held(t, err, "node-b")
	})

	t.Run("Evict", func(t *testing.T) {
		l := newLease(t)
		g1 := acquire(t, l, "node-a")
		_, err := l.Acquire(ctxT(t), "node-b", "node-c")
		held(t, err, "node-a")
		g2 := acquire(t, l, "node-b", "node-c", "node-a")
		if g2.Epoch <= g1.Epoch {
			t.Fatalf("evicting did not raise the epoch: %d → %d", g1.Epoch, g2.Epoch)
		}
		if h := holder(t, l); h.Holder != "node-b" || h.Epoch != g2.Epoch {
			t.Fatalf("Holder after evict = %+v", h)
		}
		_, err = l.Acquire(ctxT(t), "node-a")
		if he := held(t, err, "node-b"); he.Epoch != g2.Epoch {
			t.Fatalf("HeldError epoch %d, want %d", he.Epoch, g2.Epoch)
		}
		// node-a releasing what it no longer holds changes nothing.
		if err := l.Release(ctxT(t), "node-a"); err != nil {
			t.Fatalf("Release by a non-holder: %v", err)
		}
		if h := holder(t, l); h.Holder != "node-b" {
			t.Fatalf("Release by a non-holder freed the lease: %+v", h)
		}
	})

	t.Run("Release", func(t *testing.T) {
		l := newLease(t)
		g1 := acquire(t, l, "node-a")
		if err := l.Release(ctxT(t), "node-a"); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if h := holder(t, l); h.Holder != "" {
			t.Fatalf("Holder after Release = %+v", h)
		}
		g2 := acquire(t, l, "node-b")
		if g2.Epoch <= g1.Epoch {
			t.Fatalf("epoch after release and a new holder %d, before %d", g2.Epoch, g1.Epoch)
		}
		if err := l.Release(ctxT(t), "node-b"); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctxT(t), "node-b"); err != nil {
			t.Fatalf("second Release: %v", err)
		}
	})

	t.Run("ContextCancel", func(t *testing.T) {
		l := newLease(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for name, call := range map[string]func() error{
			"Acquire": func() error { _, err := l.Acquire(ctx, "node-a"); return err },
			"Release": func() error { return l.Release(ctx, "node-a") },
			"Holder":  func() error { _, err := l.Holder(ctx); return err },
		} {
			start := time.Now()
			err := call()
			if err == nil {
				t.Errorf("%s with a cancelled context succeeded", name)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("%s with a cancelled context took %v", name, took)
			}
		}
		if h := holder(t, l); h.Holder != "" {
			t.Fatalf("a cancelled Acquire took the lease: %+v", h)
		}
	})

	t.Run("Concurrent", func(t *testing.T) { concurrent(t, s, newLease(t)) })
}

// window is a span during which owner certainly held the lease: from the
// return of a successful Acquire to the earliest of its start + TTL and the
// start of any Release by the owner that may have been applied after it.
type window struct {
	owner      string
	epoch      uint64
	start, end time.Time
}

// concurrent runs 20 goroutines, 10 per owner, that acquire, hold a little,
// sometimes release, for s.Concurrent; then checks that no two windows of
// different owners overlap and that the epoch rose at every change.
func concurrent(t *testing.T, s Subject, l lease.Lease) {
	owners := []string{"node-a", "node-b"}
	type ev struct {
		owner        string
		release      bool
		start, done  time.Time
		epoch        uint64
		ttl          time.Duration
		acquired     bool
		otherErr     error
		heldByHolder string
	}
	var (
		mu     sync.Mutex
		events []ev
		wg     sync.WaitGroup
	)
	stop := time.Now().Add(s.Concurrent)
	for i := 0; i < 20; i++ {
		owner := owners[i%2]
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; time.Now().Before(stop); k++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				e := ev{owner: owner, start: s.Now()}
				g, err := l.Acquire(ctx, owner)
				e.done = s.Now()
				var he *lease.HeldError
				switch {
				case err == nil:
					e.acquired, e.epoch, e.ttl = true, g.Epoch, g.TTL
				case errors.As(err, &he):
					e.heldByHolder = he.Holder
				default:
					e.otherErr = err
				}
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
				if err == nil && (i+k)%5 == 0 {
					r := ev{owner: owner, release: true, start: s.Now()}
					_ = l.Release(ctx, owner)
					r.done = s.Now()
					mu.Lock()
					events = append(events, r)
					mu.Unlock()
				}
				cancel()
				time.Sleep(time.Duration(1+(i*7+k*3)%10) * time.Millisecond)
			}
		}(i)
	}
	wg.Wait()

	var wins = map[string]int{}
	var windows []window
	for _, e := range events {
		if e.otherErr != nil {
			t.Errorf("%s: Acquire failed: %v", e.owner, e.otherErr)
		}
		if e.heldByHolder == e.owner {
			t.Errorf("%s refused with a HeldError naming itself", e.owner)
		}
		if !e.acquired {
			continue
		}
		wins[e.owner]++
		w := window{owner: e.owner, epoch: e.epoch, start: e.done, end: e.start.Add(e.ttl)}
		for _, r := range events {
			// A release that ended after the acquire began may have been
			// applied after it: the window ends when that release began
			// (no window at all when it began first).
			if r.release && r.owner == e.owner && r.done.After(e.start) && r.start.Before(w.end) {
				w.end = r.start
			}
		}
		if w.end.After(w.start) {
			windows = append(windows, w)
		}
	}
	if wins["node-a"]+wins["node-b"] == 0 {
		t.Fatal("nobody acquired the lease")
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i].start.Before(windows[j].start) })
	for i := range windows {
		for j := i + 1; j < len(windows) && windows[j].start.Before(windows[i].end); j++ {
			if windows[i].owner != windows[j].owner {
				t.Fatalf("overlapping grants: %+v and %+v", windows[i], windows[j])
			}
		}
	}
	// Epochs follow the holders: one epoch is never granted to two owners.
	byEpoch := map[uint64]string{}
	for _, w := range windows {
		if o, ok := byEpoch[w.epoch]; ok && o != w.owner {
			t.Fatalf("epoch %d granted to %s and %s", w.epoch, o, w.owner)
		}
		byEpoch[w.epoch] = w.owner
	}
	t.Logf("%d events, wins %v, %d distinct epochs", len(events), wins, len(byEpoch))
}
