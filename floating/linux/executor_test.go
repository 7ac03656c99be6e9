package linux

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/internal/poll"
)

// TestSeizeReassignRelease walks the address through its life on a real
// segment: A seizes it (the client's probe sees A's MAC, and the client's
// kernel learns A's MAC by talking to it); B reassigns it while A still
// holds it with a current hold — two live processes that both claim it, as
// under a partition with dual claims allowed (the client's neighbour entry
// turns to B's MAC after B's gratuitous ARP, and a probe sees both MACs:
// the dual hold is visible, so the samplers of the other tests can see
// one); A's leftover is removed; B releases (nobody answers).
func TestSeizeReassignRelease(t *testing.T) {
	s := newSegment(t)
	macA, macB := macOf(t, s.a), macOf(t, s.b)
	ea := executor(t, s.a, float4, nil)
	eb := executor(t, s.b, float4, nil)
	cl := handleIn(t, s.client)
	addr := float4.Addr()

	apply(t, ea, takePlan(floating.VerbSeize, float4, 1, 3, 20*time.Millisecond))
	if got := probeFrom(t, s.client, addr, 300*time.Millisecond); macsString(got) != macsString([]net.HardwareAddr{macA}) {
		t.Fatalf("after A's seize the client's probe saw %s, want A's %s", macsString(got), macA)
	}
	talk(t, s.client, addr)
	waitNeighbour(t, cl, "client", addr, macA)

	apply(t, eb, takePlan(floating.VerbReassign, float4, 2, 3, 20*time.Millisecond))
	waitNeighbour(t, cl, "client", addr, macB)
	got := probeFrom(t, s.client, addr, 300*time.Millisecond)
	slices.SortFunc(got, func(x, y net.HardwareAddr) int { return strings.Compare(x.String(), y.String()) })
	both := []net.HardwareAddr{macA, macB}
	slices.SortFunc(both, func(x, y net.HardwareAddr) int { return strings.Compare(x.String(), y.String()) })
	if macsString(got) != macsString(both) {
		t.Fatalf("with the address on A (frozen) and B the client's probe saw %s, want both %s and %s", macsString(got), macA, macB)
	}

	if removed, err := ea.RemoveIfPresent(context.Background()); err != nil || !removed {
		t.Fatalf("A's RemoveIfPresent = %v, %v; want removed", removed, err)
	}
	if got := probeFrom(t, s.client, addr, 300*time.Millisecond); macsString(got) != macsString([]net.HardwareAddr{macB}) {
		t.Fatalf("after A's leftover was removed the client's probe saw %s, want B's %s", macsString(got), macB)
	}

	apply(t, eb, releasePlan(float4, 2))
	if got := probeFrom(t, s.client, addr, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("after B's release the client's probe saw %s, want nobody", macsString(got))
	}
	for _, e := range []*Executor{ea, eb} {
		if s, err := e.Look(context.Background()); err != nil || s.Present || s.Kind != floating.HolderNone {
			t.Fatalf("after the release %s sees %+v, %v; want none", e.cfg.Self, s, err)
		}
	}
	// Idempotent: releasing again and seizing twice are no errors.
	apply(t, eb, releasePlan(float4, 2))
	apply(t, ea, takePlan(floating.VerbSeize, float4, 3, 1, 0))
	apply(t, ea, takePlan(floating.VerbSeize, float4, 3, 1, 0))
	if s, err := ea.Look(context.Background()); err != nil || s.Kind != floating.HolderSelf || !s.OnLoopback || s.OnInterface || !s.Answering {
		t.Fatalf("after seizing twice A sees %+v, %v; want self, on lo only, answering", s, err)
	}
}

// TestStaleOrMalformedPlanChangesNothing: a plan older than the fence is
// refused with ErrStaleEpoch, and a plan with an unknown op is refused as
// a whole; in both cases the address stays off the interface and the fence
// keeps its epoch.
func TestStaleOrMalformedPlanChangesNothing(t *testing.T) {
	s := newSegment(t)
	ea := executor(t, s.a, float4, nil)
	ctx := context.Background()

	apply(t, ea, releasePlan(float4, 5))
	err := ea.Apply(ctx, takePlan(floating.VerbSeize, float4, 4, 1, 0))
	var stale *floating.StaleEpochError
	if !errors.Is(err, floating.ErrStaleEpoch) || !errors.As(err, &stale) || stale.Plan != 4 || stale.Last != 5 {
		t.Fatalf("seize at epoch 4 after 5 = %v; want a stale-epoch refusal (4 < 5)", err)
	}
	bad := takePlan(floating.VerbSeize, float4, 6, 1, 0)
	bad.Actions = append(bad.Actions, floating.Action{Op: "route-add", Epoch: 6})
	if err := ea.Apply(ctx, bad); err == nil {
		t.Fatal("a plan with an unknown op ran")
	}
	if l, err := ea.Look(ctx); err != nil || l.Present {
		t.Fatalf("after the refusals A sees %+v, %v; want the address absent", l, err)
	}
	if got := ea.cfg.Fence.Last(); got != 5 {
		t.Fatalf("fence = %d after the refusals, want 5", got)
	}
}

// TestObserveKinds: nobody; self; another member (its MAC is known); a
// third host with the address added by hand (foreign: a conflict).
func TestObserveKinds(t *testing.T) {
	s := newSegment(t)
	macA, macI := macOf(t, s.a), macOf(t, s.intruder)
	known := map[string]string{macA.String(): "a:4053", macOf(t, s.b).String(): "b:4053"}
	ea := executor(t, s.a, float4, known)
	eb := executor(t, s.b, float4, known)
	ctx := context.Background()

	look := func(e *Executor) Sighting {
		t.Helper()
		l, err := e.Look(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := look(eb); l.Kind != floating.HolderNone || l.ID != "" {
		t.Fatalf("nobody holds the address, B sees %+v", l)
	}
	apply(t, ea, takePlan(floating.VerbSeize, float4, 1, 1, 0))
	if l := look(ea); l.Kind != floating.HolderSelf || l.Member != "a:4053" || l.ID != macA.String() || !l.Present {
		t.Fatalf("A holds the address, A sees %+v", l)
	}
	if l := look(eb); l.Kind != floating.HolderMember || l.Member != "a:4053" || l.ID != macA.String() {
		t.Fatalf("A holds the address, B sees %+v", l)
	}
	apply(t, ea, releasePlan(float4, 1))
	sh(t, s.intruder, "ip", "addr", "add", float4.String(), "dev", "eth0")
	if l := look(eb); l.Kind != floating.HolderForeign || l.ID != macI.String() || l.Member != "" {
		t.Fatalf("the intruder holds the address, B sees %+v; want foreign %s", l, macI)
	}
	if o, err := eb.Observe(ctx); err != nil || o.Kind != floating.HolderForeign || o.At.IsZero() {
		t.Fatalf("Observe = %+v, %v; want foreign, stamped", o, err)
	}
}

// TestIPv6SeizeUnsolicitedNA: the same takeover over IPv6: the client's
// neighbour entry turns from A's MAC to B's after B's unsolicited
// neighbour advertisement, and the probe (a neighbour solicitation) sees
// who holds it. The hosts' own addresses are added with nodad (the test
// does not wait for DAD); the executor adds the floating one with nodad
// (see addrFlags).
func TestIPv6SeizeUnsolicitedNA(t *testing.T) {
	s := newSegment(t)
	s.withIPv6(t)
	macA, macB := macOf(t, s.a), macOf(t, s.b)
	known := map[string]string{macA.String(): "a:4053", macB.String(): "b:4053"}
	ea := executor(t, s.a, float6, known)
	eb := executor(t, s.b, float6, known)
	cl := handleIn(t, s.client)
	addr := float6.Addr()

	apply(t, ea, takePlan(floating.VerbSeize, float6, 1, 3, 20*time.Millisecond))
	if got := probeFrom(t, s.client, addr, 300*time.Millisecond); macsString(got) != macsString([]net.HardwareAddr{macA}) {
		t.Fatalf("after A's seize the client's probe saw %s, want A's %s", macsString(got), macA)
	}
	if l, err := eb.Look(context.Background()); err != nil || l.Kind != floating.HolderMember || l.Member != "a:4053" {
		t.Fatalf("A holds the address, B sees %+v, %v", l, err)
	}
	talk(t, s.client, addr)
	waitNeighbour(t, cl, "client", addr, macA)

	apply(t, eb, takePlan(floating.VerbReassign, float6, 2, 3, 20*time.Millisecond))
	waitNeighbour(t, cl, "client", addr, macB)

	if removed, err := ea.RemoveIfPresent(context.Background()); err != nil || !removed {
		t.Fatalf("A's RemoveIfPresent = %v, %v", removed, err)
	}
	apply(t, eb, releasePlan(float6, 3))
	if got := probeFrom(t, s.client, addr, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("after the release the client's probe saw %s", macsString(got))
	}
}

// TestRemoveIfPresent: leftovers added by hand — on the interface (where
// an older version put the address, with another prefix length: the
// kernel answers for it there, so it is Present) and on lo (where an
// earlier run of this version left it: nobody answers, but the kernel
// accepts connections) — are both removed at start-up; a second call
// finds nothing.
func TestRemoveIfPresent(t *testing.T) {
	s := newSegment(t)
	ea := executor(t, s.a, float4, nil)
	ctx := context.Background()
	sh(t, s.a, "ip", "addr", "add", netip.PrefixFrom(float4.Addr(), 32).String(), "dev", "eth0")
	sh(t, s.a, "ip", "addr", "add", netip.PrefixFrom(float4.Addr(), 32).String(), "dev", "lo")
	if l, err := ea.Look(ctx); err != nil || !l.Present || !l.OnInterface || !l.OnLoopback || l.Answering {
		t.Fatalf("the leftovers are not seen: %+v, %v; want present on the interface and on lo, not answering", l, err)
	}
	if removed, err := ea.RemoveIfPresent(ctx); err != nil || !removed {
		t.Fatalf("RemoveIfPresent = %v, %v; want removed", removed, err)
	}
	if l, err := ea.Look(ctx); err != nil || l.Present || l.OnInterface || l.OnLoopback {
		t.Fatalf("after RemoveIfPresent A sees %+v, %v; want the address nowhere", l, err)
	}
	if removed, err := ea.RemoveIfPresent(ctx); err != nil || removed {
		t.Fatalf("second RemoveIfPresent = %v, %v; want nothing removed", removed, err)
	}
	poll.CheckFor(t, 2*time.Second, 20*time.Millisecond, func() error {
		if got := probeFrom(t, s.b, float4.Addr(), 200*time.Millisecond); len(got) != 0 {
			return errors.New("someone still answers: " + macsString(got))
		}
		return nil
	})
}

// TestApplyEndsWithItsContext: a long announce stops when the caller's
// context ends, with its error, instead of holding the node's loop.
func TestApplyEndsWithItsContext(t *testing.T) {
	s := newSegment(t)
	ea := executor(t, s.a, float4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := ea.Apply(ctx, takePlan(floating.VerbSeize, float4, 1, MaxAnnounceCount, MaxAnnounceInterval))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Apply under a 300 ms context = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Apply returned after %v, long after its context ended", d)
	}
	if l, err := ea.Look(context.Background()); err != nil || !l.Present {
		t.Fatalf("the address added before the announce is gone: %+v, %v", l, err)
	}
}
