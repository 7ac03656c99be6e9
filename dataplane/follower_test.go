package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/internal/poll"
)

// fakeCentral is a Config DB that can be down.
type fakeCentral struct {
	mu      sync.Mutex
	down    bool
	version int64
	doc     []byte
}

func (c *fakeCentral) LatestDeployment(context.Context, string) (int64, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.down:
		return 0, nil, errors.New("connection refused")
	case c.version == 0:
		return 0, nil, fmt.Errorf("site-a: %w", ErrNoDeployment)
	}
	return c.version, c.doc, nil
}

func (c *fakeCentral) put(v int64, doc []byte) { c.mu.Lock(); c.version, c.doc = v, doc; c.mu.Unlock() }
func (c *fakeCentral) setDown(d bool)          { c.mu.Lock(); c.down = d; c.mu.Unlock() }

type fakeCache struct {
	mu      sync.Mutex
	version int64
	doc     []byte
	saves   int
}

func (c *fakeCache) SaveArtifact(_ context.Context, _ string, v int64, doc []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.doc, c.saves = v, doc, c.saves+1
	return nil
}

func (c *fakeCache) LoadArtifact(context.Context, string) (int64, []byte, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == 0 {
		return 0, nil, "", fmt.Errorf("empty: %w", ErrNoDeployment)
	}
	return c.version, c.doc, "", nil
}

func (c *fakeCache) cached() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.version }

func encode(t *testing.T, devices ...string) []byte {
	t.Helper()
	d := deployment.Document{ClusterId: "site-a"}
	for _, n := range devices {
		d.Devices = append(d.Devices, deployment.Device{Name: n, Driver: deployment.DriverSimulated})
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeJSON stands in for deployment.Decode: plain JSON, and a document
// with a device named "bad" is invalid.
func decodeJSON(b []byte) (*deployment.Document, error) {
	var d deployment.Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	for _, dev := range d.Devices {
		if dev.Name == "bad" {
			return nil, errors.New(`devices[0].name = "bad": accepted values are good names`)
		}
	}
	return &d, nil
}

type followRig struct {
	clock   *clockwork.FakeClock
	central *fakeCentral
	cache   *fakeCache
	f       *Follower
	mu      sync.Mutex
	applied [][]string
}

func newFollowRig(t *testing.T) *followRig {
	r := &followRig{clock: clockwork.NewFakeClock(), central: &fakeCentral{}, cache: &fakeCache{}}
	r.f = NewFollower(FollowerOptions{
		ClusterID: "site-a", Central: r.central, Cache: r.cache, Decode: decodeJSON,
		Apply: func(d *deployment.Document) error {
			var names []string
			for _, dev := range d.Devices {
				names = append(names, dev.Name)
			}
			r.mu.Lock()
			r.applied = append(r.applied, names)
			r.mu.Unlock()
			return nil
		},
		PollInterval: 5 * time.Second, Clock: r.clock, Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(r.f.Stop)
	return r
}

func (r *followRig) appliedCount() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.applied) }

// tick advances one poll interval and waits until the follower has looked.
func (r *followRig) tick(t *testing.T, want func(FollowStatus) bool) {
	t.Helper()
	r.clock.Advance(5 * time.Second)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the follower's poll", func() bool { return want(r.f.Status()) }))
}

func TestFollowerAppliesNewVersionsAndCachesThem(t *testing.T) {
	r := newFollowRig(t)
	r.central.put(1, encode(t, "press1"))
	r.f.Start()
	if s := r.f.Status(); s.Version != 1 || s.Source != SourceCentral || r.appliedCount() != 1 || r.cache.cached() != 1 {
		t.Fatalf("after start: %+v, applied %d, cached %d", s, r.appliedCount(), r.cache.cached())
	}
	r.central.put(2, encode(t, "press1", "press2"))
	if err := r.clock.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	r.tick(t, func(s FollowStatus) bool { return s.Version == 2 })
	if r.cache.cached() != 2 || r.appliedCount() != 2 {
		t.Fatalf("cached %d, applied %d", r.cache.cached(), r.appliedCount())
	}
	// Kick looks at once.
	r.central.put(3, encode(t, "press3"))
	r.f.Kick()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the kicked poll", func() bool { return r.f.Status().Version == 3 }))
}

func TestFollowerRefusesABadDocumentAndKeepsThePrevious(t *testing.T) {
	r := newFollowRig(t)
	r.central.put(1, encode(t, "press1"))
	r.f.Start()
	r.central.put(2, encode(t, "bad"))
	r.f.Kick()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the refusal", func() bool { return r.f.Status().Refused == 2 }))
	s := r.f.Status()
	if s.Version != 1 || s.RefusedReason == "" || r.appliedCount() != 1 || r.cache.cached() != 1 {
		t.Fatalf("after a bad document: %+v, applied %d, cached %d", s, r.appliedCount(), r.cache.cached())
	}
	// A document for another ClusterId is refused too.
	other, _ := json.Marshal(deployment.Document{ClusterId: "site-b"})
	r.central.put(3, other)
	r.f.Kick()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the second refusal", func() bool { return r.f.Status().Refused == 3 }))
	if s := r.f.Status(); s.Version != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestFollowerBootsFromTheCacheWhileTheConfigDbIsDown(t *testing.T) {
	r := newFollowRig(t)
	r.cache.version, r.cache.doc = 4, encode(t, "press1")
	r.central.setDown(true)
	r.f.Start()
	s := r.f.Status()
	if s.Version != 4 || s.Source != SourceCache || r.appliedCount() != 1 || s.LastError != "" {
		t.Fatalf("boot during an outage: %+v, applied %d", s, r.appliedCount())
	}
	// Still down: stays on the cache, says why.
	if err := r.clock.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	r.tick(t, func(s FollowStatus) bool { return s.LastError != "" })
	// Back with the same version: the central copy takes over, nothing is
	// re-applied.
	r.central.put(4, encode(t, "press1"))
	r.central.setDown(false)
	r.tick(t, func(s FollowStatus) bool { return s.Source == SourceCentral })
	if r.appliedCount() != 1 {
		t.Fatalf("re-applied the same version: %d applies", r.appliedCount())
	}
}

func TestFollowerWithNothingAnywhere(t *testing.T) {
	r := newFollowRig(t)
	r.central.setDown(true)
	r.f.Start()
	if s := r.f.Status(); s.Version != 0 || s.LastError == "" || r.appliedCount() != 0 {
		t.Fatalf("%+v", s)
	}
	// A Config DB with no deployment: nothing to serve, no error.
	r2 := newFollowRig(t)
	r2.f.Start()
	if s := r2.f.Status(); s.Version != 0 || s.LastError != "" {
		t.Fatalf("%+v", s)
	}
}
