package drills

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// pair starts a and b (seeds a, b) with opts and waits until they form one
// cluster; it returns the settled views.
func pair(t *testing.T, opts ...opt) (*rig, map[string]*procs.ClusterView) {
	t.Helper()
	r := loopRig(t, "a", "b")
	r.startAll(opts...)
	return r, r.waitSettled(40*time.Second, []string{"a", "b"}, "a", "b")
}

// recorder collects problems found from the sampler's goroutine.
type recorder struct {
	mu   sync.Mutex
	errs []string
}

func (c *recorder) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) < 20 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
}

func (c *recorder) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Error(e)
	}
}

// keepsOldest fails (through rec) any round in which node's own view
// answered but did not name want as the oldest Up driver.
func keepsOldest(r *rig, s *sampler, node, want string, rec *recorder) {
	s.onRound(func(round []Observation) {
		for _, o := range round {
			if o.Node != node || o.View == nil {
				continue
			}
			if got := oldestDriver(o.View); got != r.addr(want) || o.View.SelfStatus != procs.StatusUp {
				rec.add("%s stopped seeing %s as the oldest Up driver: %s", node, want, o.View)
			}
		}
	})
}

// Drill 4: SIGTERM of the oldest → it goes Leaving → Exiting → Removed,
// exits 0, and the other node becomes the oldest.
func TestDrill04SigtermOldest(t *testing.T) {
	t.Parallel()
	r, views := pair(t)
	oldA := views["a"].Self
	s := r.sample()
	at := kill(t, r.node("a"), syscall.SIGTERM)
	expectLeft(t, r.node("a"), 30*time.Second)
	exited := time.Since(at)
	views = r.waitSettled(30*time.Second, []string{"b"}, "b")
	t.Logf("drill 4: a exited 0 after %v; b alone and oldest after %v", exited.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
	assertOldest(t, r, views, "b")
	seen := s.statuses(oldA.Address, oldA.UID)
	if !slices.Contains(seen, procs.StatusLeaving) && !slices.Contains(seen, procs.StatusExiting) {
		t.Fatalf("a (%s#%s) was never seen Leaving or Exiting, only %v", oldA.Address, oldA.UID, seen)
	}
	t.Logf("drill 4: statuses of a seen: %v", seen)
}

// Drill 5: SIGTERM of the younger → it leaves and exits 0; the oldest stays
// the oldest throughout.
func TestDrill05SigtermYounger(t *testing.T) {
	t.Parallel()
	r, views := pair(t)
	oldB := views["b"].Self
	s := r.sample()
	var rec recorder
	keepsOldest(r, s, "a", "a", &rec)
	at := kill(t, r.node("b"), syscall.SIGTERM)
	expectLeft(t, r.node("b"), 30*time.Second)
	views = r.waitSettled(30*time.Second, []string{"a"}, "a")
	t.Logf("drill 5: b left; a alone after %v", time.Since(at).Round(time.Millisecond))
	assertOldest(t, r, views, "a")
	rec.check(t)
	seen := s.statuses(oldB.Address, oldB.UID)
	if !slices.Contains(seen, procs.StatusLeaving) && !slices.Contains(seen, procs.StatusExiting) {
		t.Fatalf("b was never seen Leaving or Exiting, only %v", seen)
	}
}

// Drill 19: the oldest leaves (SIGTERM, as a manual failover does) and is
// restarted at once, while the survivor may still hold its old incarnation
// → the new process joins the existing cluster and never forms a second
// one, even with a self-form window (2 s) shorter than the hand-over.
//
// "immediate" restarts as soon as the old process exited: the survivor
// has usually removed the old incarnation by then (logged). "survivor-frozen"
// makes the reference incident certain: the survivor is frozen (SIGSTOP)
// the moment its view shows the old incarnation Exiting, the new process
// starts and must keep waiting past its self-form window (the frozen
// survivor's port still accepts TCP), and the survivor is thawed, 2.5 s
// after the restart, with the Exiting incarnation still in its ring.
func TestDrill19RestartAfterLeaveWhileOldIncarnationExiting(t *testing.T) {
	t.Parallel()
	for _, frozen := range []bool{false, true} {
		name := "immediate"
		if frozen {
			name = "survivor-frozen"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drill19(t, frozen)
		})
	}
}

func drill19(t *testing.T, freeze bool) {
	r, views := pair(t, selfFormEx("2s"))
	oldA := views["a"].Self
	s := r.sample()
	var rec recorder
	s.onRound(func(round []Observation) {
		for _, o := range round {
			v := o.View
			if o.Node != "a" || v == nil || v.Self.UID == oldA.UID || v.SelfStatus != procs.StatusUp {
				continue
			}
			if m, ok := v.Member(r.addr("b")); !ok || m.Status != procs.StatusUp {
				rec.add("restarted a is Up in a cluster without b (a second cluster): %s", v)
			}
		}
	})
	a, b := r.node("a"), r.node("b")
	kill(t, a, syscall.SIGTERM)
	if freeze {
		procs.CheckFor(t, 15*time.Second, 5*time.Millisecond, func() error {
			v, err := view(b)
			if err != nil {
				return err
			}
			if m, ok := v.Member(oldA.Address); !ok || m.UID != oldA.UID || m.Status != procs.StatusExiting {
				return fmt.Errorf("b does not hold a#%s as Exiting: %s", oldA.UID, v)
			}
			return nil
		})
		kill(t, b, syscall.SIGSTOP)
		t.Cleanup(func() { _ = syscall.Kill(b.PID(), syscall.SIGCONT) })
	}
	expectLeft(t, a, 30*time.Second)
	if !freeze {
		if vb, err := view(b); err == nil {
			if m, ok := vb.Member(oldA.Address); ok {
				t.Logf("drill 19: when a exited, b still held its old incarnation as %s: %s", m.Status, vb)
			} else {
				t.Logf("drill 19: when a exited, b had already removed it: %s", vb)
			}
		}
	}
	start := time.Now()
	a.Restart()
	if freeze {
		// Past one self-form window (2 s, from the cluster start, which
		// precedes the first HTTP answer), but short of seed-node-timeout
		// (5 s): a first seed that no other seed answers within it forms a
		// new cluster by design, whatever the fallback's guards say.
		waitNone(t, a, 30*time.Second)
		staysUnjoined(t, a, time.Until(start.Add(2500*time.Millisecond)))
		kill(t, b, syscall.SIGCONT)
	}
	views = r.waitSettled(60*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 19: the restarted a joined %v after start", time.Since(start).Round(time.Millisecond))
	assertOldest(t, r, views, "b")
	if views["a"].Self.UID == oldA.UID {
		t.Fatalf("restarted a kept uid %s", oldA.UID)
	}
	rec.check(t)
	t.Logf("drill 19: statuses of a's old incarnation seen: %v", s.statuses(oldA.Address, oldA.UID))
}
