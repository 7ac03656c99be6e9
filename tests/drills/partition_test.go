package drills

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// Drill 12: a clean partition of a pair (each node on its own test host,
// iptables between them) under auto-down → each side downs the other and
// runs alone: the documented dual-active trade, so no invariant sampler
// here. They do not merge when the link heals; the operator restarts one
// side, which rejoins as the youngest: one cluster again.
//
// "drop" is a silent partition (detector + AutoDownUnreachableAfter);
// "reject" answers with TCP resets, which the crash fast path takes for a
// dead process (its documented false positive): both sides down each other
// at once.
func TestDrill12PartitionPairAutoDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f        netem.Filter
		min, max time.Duration
	}{
		{netem.Drop, 5 * time.Second, 40 * time.Second},
		{netem.Reject, 0, 5 * time.Second},
	} {
		t.Run(tc.f.String(), func(t *testing.T) {
			t.Parallel()
			r := hostRig(t, "a", "b")
			r.startAll(shortDowning)
			r.waitSettled(60*time.Second, []string{"a", "b"}, "a", "b")
			a, b := r.net.Host("a"), r.net.Host("b")
			at := time.Now()
			r.net.Partition([]*netem.Host{a}, []*netem.Host{b}, tc.f)
			t.Logf("%s: partitioned a|b (%s)", at.Format("15:04:05.000"), tc.f)
			procs.CheckFor(t, tc.max+15*time.Second, 50*time.Millisecond, func() error {
				_, errA := r.settled([]string{"a"}, "a")
				_, errB := r.settled([]string{"b"}, "b")
				return errors.Join(errA, errB)
			})
			took := time.Since(at)
			t.Logf("drill 12 %s: both sides alone and oldest after %v (dual-active, as documented)", tc.f, took.Round(time.Millisecond))
			if took < tc.min || took > tc.max {
				t.Fatalf("both sides alone after %v, want within [%v, %v]", took, tc.min, tc.max)
			}

			// After the heal the sides must not silently merge: neither may
			// hold the other's downed incarnation as a member again. What each
			// does meanwhile is logged (a removed incarnation may be told so
			// and exit 3, which its supervisor turns into the restart).
			oldA, oldB := mustView(t, r.node("a")).Self, mustView(t, r.node("b")).Self
			r.net.Heal()
			procs.Holds(t, 3*time.Second, 100*time.Millisecond, func() error {
				for _, p := range []struct {
					node  string
					other procs.UniqueAddress
				}{{"a", oldB}, {"b", oldA}} {
					v, err := view(r.node(p.node))
					if err != nil {
						continue // exited or not answering: checked below
					}
					if m, ok := v.Member(p.other.Address); ok && m.UID == p.other.UID {
						return fmt.Errorf("after the heal %s holds the downed %s#%s again: %s", p.node, p.other.Address, p.other.UID, v)
					}
				}
				return nil
			})
			for _, name := range []string{"a", "b"} {
				if code, done := r.node(name).Exited(); done {
					t.Logf("drill 12 %s: %s exited with code %d within 3 s of the heal", tc.f, name, code)
				}
			}
			an := r.node("a")
			if code, done := an.Exited(); done {
				if code != exitDowned {
					t.Fatalf("a exited with code %d after the heal, want %d (told it was downed)\n%s", code, exitDowned, an.Log())
				}
				an.Restart() // its supervisor's restart; it forms or joins again
			}
			bn := r.node("b")
			if bn.Alive() {
				kill(t, bn, syscall.SIGTERM)
			}
			if code := bn.WaitExit(30 * time.Second); code != 0 && code != exitDowned {
				t.Fatalf("b exited with code %d on the operator's restart, want 0 or %d\n%s", code, exitDowned, bn.Log())
			} else {
				t.Logf("drill 12 %s: b stopped with code %d for the restart", tc.f, code)
			}
			start := time.Now()
			bn.Restart()
			views := r.waitSettled(60*time.Second, []string{"a", "b"}, "a", "b")
			t.Logf("drill 12 %s: after heal + restart of b, one cluster again %v after the restart", tc.f, time.Since(start).Round(time.Millisecond))
			assertOldest(t, r, views, "a")
		})
	}
}

// Drill 13: a partition that heals before StableAfter under keep-oldest →
// nobody is downed. StableAfter keeps its production default (15 s); the
// partition lasts until both sides have seen the other unreachable.
func TestDrill13PartitionHealedBeforeStableAfter(t *testing.T) {
	t.Parallel()
	const stableAfter = 15 * time.Second
	r := hostRig(t, "a", "b")
	r.startAll(strategy("keep-oldest"))
	r.waitSettled(60*time.Second, []string{"a", "b"}, "a", "b")
	r.sample()
	a, b := r.net.Host("a"), r.net.Host("b")
	at := time.Now()
	r.net.Partition([]*netem.Host{a}, []*netem.Host{b}, netem.Drop)
	procs.CheckFor(t, stableAfter, 50*time.Millisecond, func() error {
		for _, p := range [][2]string{{"a", "b"}, {"b", "a"}} {
			n := r.node(p[0])
			mustLive(t, n)
			v, err := view(n)
			if err != nil {
				return err
			}
			if m, ok := v.Member(r.addr(p[1])); !ok || m.Reachable {
				return fmt.Errorf("%s does not see %s unreachable yet: %s", p[0], p[1], v)
			}
		}
		return nil
	})
	detected := time.Since(at)
	r.net.Heal()
	t.Logf("drill 13: both sides saw the other unreachable after %v; healed", detected.Round(time.Millisecond))
	r.waitSettled(20*time.Second, []string{"a", "b"}, "a", "b")
	t.Logf("drill 13: reachable again %v after the partition began", time.Since(at).Round(time.Millisecond))
	// Nobody is downed, well past the moment a decision would have been
	// taken had the partition lasted (detection + StableAfter + margin).
	holdUntil := at.Add(detected + stableAfter + 5*time.Second)
	procs.Holds(t, time.Until(holdUntil), 200*time.Millisecond, func() error {
		_, err := r.settled([]string{"a", "b"}, "a", "b")
		return err
	})
}

// Drill 14: a 2|1 partition of three nodes under keep-majority and under
// static-quorum (quorum 2) → the majority side stays Up and removes the
// minority node, which downs itself and exits non-zero.
func TestDrill14MajorityPartition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []opt
	}{
		{"keep-majority", []opt{strategy("keep-majority"), shortDowning}},
		{"static-quorum", []opt{strategy("static-quorum"), clusterKeys("StaticQuorumSize", 2), shortDowning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := hostRig(t, "a", "b", "c")
			r.startAll(tc.opts...)
			r.waitSettled(60*time.Second, []string{"a", "b", "c"}, "a", "b", "c")
			r.sample()
			h := r.net.Host
			at := time.Now()
			r.net.Partition([]*netem.Host{h("a"), h("b")}, []*netem.Host{h("c")}, netem.Drop)
			expectDowned(t, r.node("c"), 60*time.Second)
			t.Logf("drill 14 %s: the minority node downed itself after %v", tc.name, time.Since(at).Round(time.Millisecond))
			views := r.waitSettled(30*time.Second, []string{"a", "b"}, "a", "b")
			t.Logf("drill 14 %s: the majority a, b removed c after %v", tc.name, time.Since(at).Round(time.Millisecond))
			assertOldest(t, r, views, "a")
		})
	}
}
