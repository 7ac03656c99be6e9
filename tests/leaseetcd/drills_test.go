package leaseetcd

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/failover"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// Log lines the drills look for.
const (
	logAcquired = `"msg":"lease acquired"`
	logFastPath = `"msg":"cluster crash fast path: acquiring the lease before downing`
	logHold     = `"msg":"promotion hold`
)

func mustLog(t *testing.T, name, log string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(log, l) {
			t.Fatalf("%s's log lacks %s\n%s", name, l, log)
		}
	}
}

// holderIs checks that the etcd lease key names node (its cluster address
// host:port#uid), read through the surviving etcd members.
func holderIs(r *rig, s *store, node string) error {
	h, err := s.holder(clusterID)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(h, r.addr(node)+"#") {
		return fmt.Errorf("the etcd lease is held by %q, want %s (%s)", h, node, r.addr(node))
	}
	return nil
}

// Drill a: the etcd leader is SIGKILLed once the pair is healthy (the
// nodes try it first), then the Primary gets SIGKILL → the crash fast path
// acquires the lease through the two remaining members and the survivor
// reads 250 without a promotion hold.
func TestEtcdLeaseDrillKillPrimary(t *testing.T) {
	s := loopbackStore(t)
	leader := s.waitLeader(30 * time.Second)
	r := newRig(t)
	r.lease = s.ordered(leader)
	p, sec := r.healthy()

	etcdKilled := s.killMember(leader)
	newLeader := s.waitLeader(30 * time.Second)
	t.Logf("drill a: etcd leader m%d killed; m%d leads after %v", leader, newLeader, time.Since(etcdKilled).Round(time.Millisecond))
	// One etcd member less changes nothing for a healthy pair.
	procs.Holds(t, 2*time.Second, 50*time.Millisecond, func() error {
		return r.levelsAre(map[string]byte{p: failover.Primary, sec: failover.Secondary})
	})

	killed := r.signal(p, syscall.SIGKILL)
	rd := r.waitFirst(20*time.Second, sec, killed, failover.Primary)
	t.Logf("drill a: SIGKILL of %s → %s at 250 after %v (etcd: 2 of 3 members)", p, sec, rd.At.Sub(killed).Round(time.Millisecond))
	log := r.node(sec).Log()
	mustLog(t, sec, log, logFastPath, logAcquired)
	if strings.Contains(log, logHold) {
		t.Fatalf("a peer proven dead by the fast path was taken over with a promotion hold")
	}
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error { return holderIs(r, s, sec) })
	procs.Holds(t, 2*time.Second, 50*time.Millisecond, func() error {
		return r.levelsAre(map[string]byte{sec: failover.Primary})
	})
	r.assertInvariant()
}

// Drill b: SIGSTOP of the Primary, and the etcd leader SIGKILLed right
// after the freeze → the survivor decides after stable-after, takes the
// lease through the two remaining members, downs the frozen node and reads
// 250 after its promotion hold. SIGCONT → the woken node never reads 250
// beside the survivor and exits with code 3.
func TestEtcdLeaseDrillFreezePrimary(t *testing.T) {
	s := loopbackStore(t)
	leader := s.waitLeader(30 * time.Second)
	r := newRig(t)
	r.lease = s.ordered(leader)
	p, sec := r.healthy()

	frozen := r.signal(p, syscall.SIGSTOP)
	s.killMember(leader)
	t.Logf("drill b: %s frozen; etcd leader m%d killed %v later", p, leader, time.Since(frozen).Round(time.Millisecond))

	rd := r.waitFirst(40*time.Second, sec, frozen, failover.Primary)
	t.Logf("drill b: SIGSTOP of %s → %s at 250 after %v (etcd: 2 of 3 members)", p, sec, rd.At.Sub(frozen).Round(time.Millisecond))
	mustLog(t, sec, r.node(sec).Log(), logAcquired, logHold)
	if err := holderIs(r, s, sec); err != nil {
		t.Fatal(err)
	}

	woke := r.signal(p, syscall.SIGCONT)
	code := r.node(p).WaitExit(30 * time.Second)
	t.Logf("drill b: SIGCONT of %s → exited with code %d after %v", p, code, time.Since(woke).Round(time.Millisecond))
	if code != 3 {
		t.Fatalf("the woken node exited with code %d, want 3 (downed)\n%s", code, r.node(p).Log())
	}
	// The woken node's first Publish response may carry its pre-freeze 250
	// (SourceTimestamp before the freeze) followed, in the same message, by
	// its current level: that 250 is superseded on arrival and was never
	// the level a client could act on. Any other 250 fails the drill.
	rds := r.readingsSince(p, woke)
	for i, rd := range rds {
		if !rd.Known || rd.Level != failover.Primary {
			continue
		}
		if i+1 < len(rds) && rds[i+1].At.Equal(rd.At) {
			t.Logf("drill b: the woken node's first notification after SIGCONT carried its stale 250 (source %s, before the freeze at %s), superseded in the same message by %v",
				rd.Source.Format("15:04:05.000"), frozen.Format("15:04:05.000"), rds[i+1])
			continue
		}
		t.Fatalf("the woken node %s read 250 at %s after SIGCONT (source %s)", p, rd.At.Format("15:04:05.000"), rd.Source.Format("15:04:05.000"))
	}
	if lv := r.level(sec); !lv.Known || lv.Level != failover.Primary {
		t.Fatalf("the survivor reads %v after the woken node left, want 250", lv)
	}
	if err := holderIs(r, s, sec); err != nil {
		t.Fatal(err)
	}
	r.assertInvariant()
}

// Drill c: the nodes on test hosts a and b, the three etcd members on test
// host etcd; a↔b partitioned (iptables DROP both ways), etcd reachable from
// both; the member the nodes try first (a follower) SIGKILLed right after
// the cut → the Primary keeps the lease and 250, the Secondary fails to
// take the lease and downs itself (exit 3); no sampled instant has two 250s.
func TestEtcdLeaseDrillPartition(t *testing.T) {
	r := newHostRig(t, "etcd")
	s := hostStore(t, r.net.Host("etcd"))
	leader := s.waitLeader(30 * time.Second)
	first := (leader + 1) % 3
	r.lease = s.ordered(first)
	p, sec := r.healthy()

	cut := time.Now()
	r.net.Partition([]*netem.Host{r.net.Host(p)}, []*netem.Host{r.net.Host(sec)}, netem.Drop)
	s.killMember(first)
	t.Logf("drill c: %s↔%s partitioned; etcd member m%d (tried first, a follower) killed %v later",
		p, sec, first, time.Since(cut).Round(time.Millisecond))

	code := r.node(sec).WaitExit(stableAfter + 40*time.Second)
	t.Logf("drill c: the Secondary %s exited with code %d after %v", sec, code, time.Since(cut).Round(time.Millisecond))
	if code != 3 {
		t.Fatalf("the Secondary exited with code %d, want 3 (it lost the lease and downed itself)\n%s", code, r.node(sec).Log())
	}
	procs.Holds(t, 3*time.Second, 100*time.Millisecond, func() error {
		return r.levelsAre(map[string]byte{p: failover.Primary})
	})
	plog := r.node(p).Log()
	t.Logf("drill c: the Primary's log: %d × lease acquired, %d × lease released (set whole again), %d × licence unlicensed",
		strings.Count(plog, logAcquired), strings.Count(plog, `"msg":"lease released`), strings.Count(plog, `"licence":"unlicensed`))
	// The Primary keeps 250 throughout: its subscribed client never saw
	// another level after the cut (a dip to 100 is the Primary fenced for
	// want of the lease, however briefly).
	for _, rd := range r.readingsSince(p, cut) {
		if rd.Known && rd.Level != failover.Primary {
			t.Fatalf("the Primary %s left 250 during the partition: %d at %s", p, rd.Level, rd.At.Format("15:04:05.000"))
		}
	}
	mustLog(t, p, r.node(p).Log(), logAcquired)
	if err := holderIs(r, s, p); err != nil {
		t.Fatal(err)
	}
	r.assertInvariant()
}
