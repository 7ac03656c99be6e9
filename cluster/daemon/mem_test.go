package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
	"github.com/otopcua/otopcua/internal/poll"
)

// logSink collects a daemon's log lines.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// memCluster runs daemons on a MemNetwork, each in its own local actor
// system with its own fake clock; advance moves every clock but those of
// paused nodes (a paused node is like a process stopped by SIGSTOP).
type memCluster struct {
	t     *testing.T
	net   *MemNetwork
	nodes map[string]*memNode
	uid   uint64
}

type memNode struct {
	name   string
	d      *Daemon
	sys    *actors.System
	log    *logSink
	tr     *MemTransport
	clock  *clockwork.FakeClock
	paused bool
}

func newMemCluster(t *testing.T) *memCluster {
	c := &memCluster{t: t, net: NewMemNetwork(), nodes: map[string]*memNode{}}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.d.Stop()
			n.sys.Shutdown(false)
		}
	})
	return c
}

func memAddr(name string) m.Address { return m.Address{Host: name, Port: 2552} }

// start starts a process on name (a new incarnation if one ran there).
func (c *memCluster) start(name string, seeds []string, configure func(*node.Config)) *memNode {
	c.t.Helper()
	return c.startWith(name, seeds, configure, nil)
}

func (c *memCluster) startWith(name string, seeds []string, configure func(*node.Config), options func(*Options)) *memNode {
	c.t.Helper()
	if old := c.nodes[name]; old != nil {
		old.d.Stop()
		old.sys.Shutdown(false)
	}
	c.uid++
	var ss []m.Address
	for _, s := range seeds {
		ss = append(ss, memAddr(s))
	}
	self := m.UniqueAddress{Host: name, Port: 2552, UID: c.uid}
	cfg := node.DefaultConfig(self, ss)
	cfg.Roles = []string{"admin", "driver"}
	cfg.ClusterID = "site-a"
	if configure != nil {
		configure(&cfg)
	}
	sink := &logSink{}
	logger := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sys := actors.NewLocal(logger)
	tr := c.net.Transport()
	clock := clockwork.NewFakeClock()
	o := Options{Node: cfg, System: sys, Transport: tr, Prober: tr.Prober(), Clock: clock, Logger: logger}
	if options != nil {
		options(&o)
	}
	d, err := Start(o)
	if err != nil {
		c.t.Fatal(err)
	}
	n := &memNode{name: name, d: d, sys: sys, log: sink, tr: tr, clock: clock}
	c.nodes[name] = n
	return n
}

// kill stops a node's process without a word: its peers are told the
// connection broke and probes of its address are refused.
func (c *memCluster) kill(name string) {
	n := c.nodes[name]
	c.net.Kill(memAddr(name))
	n.d.Stop()
}

// advance moves the clock in tick steps and waits until every running
// daemon has processed each tick.
func (c *memCluster) advance(total time.Duration) {
	c.t.Helper()
	for step := time.Duration(0); step < total; step += DefaultTickInterval {
		for _, n := range c.nodes {
			select {
			case <-n.d.stopTick:
				continue
			default:
			}
			if n.paused {
				continue
			}
			n.clock.Advance(DefaultTickInterval)
			want := int64(n.clock.Since(n.d.epoch) / time.Millisecond)
			poll.CheckFor(c.t, 5*time.Second, time.Millisecond, func() error {
				if last := n.d.lastTick.Load(); last < want {
					return fmt.Errorf("%s did not process the tick at %d ms (last %d)", n.name, want, last)
				}
				return nil
			})
		}
	}
}

// until advances the clock until cond holds, failing after limit.
func (c *memCluster) until(limit time.Duration, what string, cond func() bool) time.Duration {
	c.t.Helper()
	for waited := time.Duration(0); ; waited += DefaultTickInterval {
		if cond() {
			return waited
		}
		if waited >= limit {
			c.t.Fatalf("not within %v of cluster time: %s\n%s", limit, what, c.views())
		}
		c.advance(DefaultTickInterval)
	}
}

func (c *memCluster) views() string {
	var b strings.Builder
	for name, n := range c.nodes {
		st := n.d.Snapshot()
		fmt.Fprintf(&b, "%s: %v unreachable=%v\n", name, st.Gossip.Members, st.Gossip.Reachability)
	}
	return b.String()
}

func statusAt(st m.State, name string) m.Status {
	mb, ok := st.Gossip.MemberAt(memAddr(name))
	if !ok {
		return m.Removed
	}
	return mb.Status
}

func allUp(n *memNode, names ...string) func() bool {
	return func() bool {
		st := n.d.Snapshot()
		if len(st.Gossip.Members) != len(names) {
			return false
		}
		for _, name := range names {
			if statusAt(st, name) != m.Up {
				return false
			}
		}
		return true
	}
}

func oldestIs(n *memNode, name string) func() bool {
	return func() bool {
		o, ok := n.d.Snapshot().Oldest("driver")
		return ok && o.Address.Address() == memAddr(name)
	}
}

func formPair(t *testing.T, configure func(*node.Config)) (*memCluster, *memNode, *memNode) {
	c := newMemCluster(t)
	a := c.start("a", []string{"a", "b"}, configure)
	b := c.start("b", []string{"a", "b"}, configure)
	c.until(10*time.Second, "a and b Up on both", func() bool { return allUp(a, "a", "b")() && allUp(b, "a", "b")() })
	if !oldestIs(b, "a")() {
		t.Fatalf("the first seed must be the oldest:\n%s", c.views())
	}
	return c, a, b
}

// TestCrashFastPathDownsAtOnce: a crashed peer (connection broken, port
// refusing) is downed and removed by the leader within a couple of
// seconds, not after the 15 s auto-down window; the survivor is oldest.
func TestCrashFastPathDownsAtOnce(t *testing.T) {
	c, _, b := formPair(t, nil)
	c.kill("a")
	took := c.until(3*time.Second, "b alone and oldest", func() bool {
		st := b.d.Snapshot()
		return len(st.Gossip.Members) == 1 && oldestIs(b, "b")()
	})
	t.Logf("oldest crashed: survivor oldest after %v of cluster time", took)
	for _, want := range []string{LogUnreachable, "cluster crash fast path: downing", LogDowned, LogRemoved} {
		if !strings.Contains(b.log.String(), want) {
			t.Fatalf("survivor log lacks %q:\n%s", want, b.log.String())
		}
	}
}

// TestCrashFastPathLooksAgainAtADyingListener: right after a SIGKILL the
// dead process's listening socket may still accept for a moment; the
// fast path looks once more and still downs the peer at once.
func TestCrashFastPathLooksAgainAtADyingListener(t *testing.T) {
	c, _, b := formPair(t, nil)
	c.net.KillDying(memAddr("a"), 1)
	c.nodes["a"].d.Stop()
	took := c.until(3*time.Second, "b alone", func() bool { return len(b.d.Snapshot().Gossip.Members) == 1 })
	t.Logf("removed after %v of cluster time", took)
	if !strings.Contains(b.log.String(), `"probes":"[Accepted]"`) || !strings.Contains(b.log.String(), `"probes":"[Refused Refused Refused]"`) {
		t.Fatalf("expected an inconclusive probe and a second, conclusive one:\n%s", b.log.String())
	}
}

// TestProvenDeadSeenWithTheDown: a subscriber that gets the MemberDowned
// of a crashed peer (the host's lease keeper) reads ProvenDead true when
// the fast path found its port refusing, and false when the downing came
// from the detector and auto-down (fast path off): the record is the
// core's, published with the state that downed the peer.
func TestProvenDeadSeenWithTheDown(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fastPath=%v", fast), func(t *testing.T) {
			c, a, b := formPair(t, func(cfg *node.Config) { cfg.CrashFastPath = fast })
			var mu sync.Mutex
			var seen []bool
			_, unsub := b.d.Subscribe(func(ev m.Event) {
				if ev.Kind == m.MemberDowned && ev.Member.Address == a.d.Self() {
					mu.Lock()
					seen = append(seen, b.d.ProvenDead(ev.Member.Address))
					mu.Unlock()
				}
			})
			defer unsub()
			c.kill("a")
			c.until(30*time.Second, "b heard that a was downed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) > 0
			})
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || seen[0] != fast {
				t.Fatalf("ProvenDead at a's MemberDowned = %v, want [%v]", seen, fast)
			}
		})
	}
}

// TestFastPathOffWaitsForAutoDown is the control: without the fast path
// the survivor needs the detector and the 15 s auto-down window.
func TestFastPathOffWaitsForAutoDown(t *testing.T) {
	c, _, b := formPair(t, func(cfg *node.Config) { cfg.CrashFastPath = false })
	c.kill("a")
	c.advance(10 * time.Second)
	if statusAt(b.d.Snapshot(), "a") != m.Up {
		t.Fatalf("a downed within 10 s without the fast path:\n%s", c.views())
	}
	took := c.until(15*time.Second, "a removed", func() bool { return statusAt(b.d.Snapshot(), "a") == m.Removed })
	t.Logf("without the fast path: removed after %v more", took)
}

// TestSilentPartitionGoesThroughDetector: a partition gives no connection
// event and probes time out, so the fast path does not fire: each side
// marks the other unreachable after the phi detector's pause and downs it
// only after auto-down-unreachable-after.
func TestSilentPartitionGoesThroughDetector(t *testing.T) {
	c, a, b := formPair(t, nil)
	c.net.Partition(memAddr("a"), memAddr("b"))
	took := c.until(10*time.Second, "b sees a unreachable", func() bool {
		return !b.d.Snapshot().Gossip.Reachability.IsReachableFrom(b.d.Self(), a.d.Self())
	})
	if took < 3*time.Second {
		t.Fatalf("unreachable after %v: faster than the detector's acceptable pause", took)
	}
	c.advance(10 * time.Second)
	if statusAt(b.d.Snapshot(), "a") == m.Removed || statusAt(b.d.Snapshot(), "a") == m.Down {
		t.Fatalf("silent peer downed before the auto-down window:\n%s", c.views())
	}
	if !strings.Contains(b.log.String(), `"verdict":"DeferToDetector"`) {
		t.Fatalf("the detector's suspicion must have been probed (timeouts: defer):\n%s", b.log.String())
	}
	c.until(10*time.Second, "b downs a", func() bool { return statusAt(b.d.Snapshot(), "a") == m.Removed })
}

// TestLeave: a graceful leave goes Leaving → Exiting → Removed on the
// other node; the leaver's Result is ReasonLeft with LeaveRequested; a
// subscriber of the other node sees the events in order.
func TestLeave(t *testing.T) {
	c, a, b := formPair(t, nil)
	var mu sync.Mutex
	var kinds []string
	_, cancel := a.d.Subscribe(func(ev m.Event) {
		if ev.Member.Address == b.d.Self() {
			mu.Lock()
			kinds = append(kinds, ev.Kind.String())
			mu.Unlock()
		}
	})
	defer cancel()
	b.d.Leave()
	c.until(5*time.Second, "b done", isDone(b))
	if r := b.d.Result(); r.Reason != node.ReasonLeft || !r.LeaveRequested || r.Err != nil {
		t.Fatalf("b result = %+v", r)
	}
	c.until(3*time.Second, "b removed on a", func() bool { return statusAt(a.d.Snapshot(), "b") == m.Removed })
	poll.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		mu.Lock()
		got := strings.Join(kinds, " ")
		mu.Unlock()
		if got != "MemberLeft MemberExited MemberRemoved" {
			return fmt.Errorf("a's subscriber saw %q", got)
		}
		return nil
	})
	if v := Members(a.d.Snapshot(), false); len(v.Members) != 1 || v.Oldest["driver"] != "a:2552" {
		t.Fatalf("a after b left: %+v", v)
	}
	if a.d.Stats().Quarantined != 0 {
		t.Fatal("nothing should have come from the removed incarnation yet")
	}
}

// TestLeaveBeforeJoiningStopsAtOnce: a node still looking for seeds has
// nothing to leave.
func TestLeaveBeforeJoiningStopsAtOnce(t *testing.T) {
	c := newMemCluster(t)
	b := c.start("b", []string{"a", "b"}, nil) // a never starts
	c.advance(time.Second)
	if b.d.Info().Phase != node.SeedJoining {
		t.Fatalf("phase %v", b.d.Info().Phase)
	}
	b.d.Leave()
	c.until(2*time.Second, "b done", isDone(b))
	if r := b.d.Result(); r.Reason != node.ReasonLeft || !r.LeaveRequested {
		t.Fatalf("result %+v", r)
	}
	if v := Members(b.d.Snapshot(), true); v.SelfStatus != "Removed" {
		t.Fatalf("selfStatus %q", v.SelfStatus)
	}
}

// TestSelfFormFallback: a non-first seed whose peer never answers forms a
// cluster on itself after Cluster:SelfFormAfter, and the restarted first
// seed then joins it as the youngest.
func TestSelfFormFallback(t *testing.T) {
	c := newMemCluster(t)
	b := c.start("b", []string{"a", "b"}, func(cfg *node.Config) { cfg.SelfFormAfter = 3000 })
	if v := Members(b.d.Snapshot(), false); v.SelfStatus != "None" || v.Converged {
		t.Fatalf("before joining: %+v", v)
	}
	c.until(6*time.Second, "b self-formed", allUp(b, "b"))
	if !strings.Contains(b.log.String(), LogSelfFormed) || !strings.Contains(b.log.String(), LogJoined) {
		t.Fatalf("log lacks the self-form lines:\n%s", b.log.String())
	}
	a := c.start("a", []string{"a", "b"}, nil)
	c.until(10*time.Second, "a joined b's cluster", func() bool { return allUp(a, "a", "b")() && allUp(b, "a", "b")() })
	if !oldestIs(a, "b")() {
		t.Fatalf("b formed the cluster and must stay oldest:\n%s", c.views())
	}
}

// TestRestartedNodeRejoinsAsYoungest: a crashed oldest restarts at the same
// address with a new uid and joins as the youngest; stale messages for its
// old uid are dropped.
func TestRestartedNodeRejoinsAsYoungest(t *testing.T) {
	c, a, b := formPair(t, nil)
	old := a.d.Self()
	c.kill("a")
	c.until(3*time.Second, "a removed on b", func() bool { return statusAt(b.d.Snapshot(), "a") == m.Removed })
	a2 := c.start("a", []string{"a", "b"}, nil)
	// a message still addressed to the old incarnation
	a2.tr.inbox(&wire.Heartbeat{From: &wire.UniqueAddress{Host: "b", Port: 2552, Uid: b.d.Self().UID},
		To: &wire.UniqueAddress{Host: "a", Port: 2552, Uid: old.UID}, Seq: 99})
	c.until(10*time.Second, "a rejoined", func() bool { return allUp(b, "a", "b")() && allUp(a2, "a", "b")() })
	if !oldestIs(a2, "b")() {
		t.Fatalf("the restarted node must be the youngest:\n%s", c.views())
	}
	// a2's actor takes the injected message in turn; the rejoin, now a few
	// 100 ms rounds, can be over before it has.
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("stale message counted", func() bool { return a2.d.Stats().WrongIncarnation >= 1 }))
	// the removed incarnation is quarantined on b
	b.tr.inbox(&wire.Heartbeat{From: &wire.UniqueAddress{Host: "a", Port: 2552, Uid: old.UID},
		To: &wire.UniqueAddress{Host: "b", Port: 2552, Uid: b.d.Self().UID}})
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("quarantined heartbeat counted", func() bool { return b.d.Stats().Quarantined >= 1 }))
}

func isDone(n *memNode) func() bool {
	return func() bool {
		select {
		case <-n.d.Done():
			return true
		default:
			return false
		}
	}
}

// TestExitingTasksRunBeforeTheExit: the leave tasks run while the node is
// Exiting, before it confirms its exit.
func TestExitingTasksRunBeforeTheExit(t *testing.T) {
	c := newMemCluster(t)
	ran := make(chan m.Status, 1)
	var a *memNode
	a = c.startWith("a", []string{"a"}, nil, func(o *Options) {
		o.ExitingTasks = []func(context.Context) error{func(context.Context) error {
			mb, _ := a.d.Snapshot().SelfMember()
			ran <- mb.Status
			return nil
		}}
	})
	c.until(2*time.Second, "a Up", allUp(a, "a"))
	a.d.Leave()
	c.until(5*time.Second, "a done", func() bool { return a.d.Info().Finished })
	select {
	case st := <-ran:
		if st != m.Exiting {
			t.Fatalf("leave task ran while %v", st)
		}
	default:
		t.Fatal("leave task did not run")
	}
}

// TestPausedNodeRemovedThenStops: a node frozen past its removal (SIGSTOP,
// a VM pause) comes back talking to a cluster that removed it; the
// quarantine notice makes it down itself and stop with ReasonDowned
// instead of running on alone.
func TestPausedNodeRemovedThenStops(t *testing.T) {
	c, a, b := formPair(t, nil)
	b.paused = true
	c.net.Partition(memAddr("a"), memAddr("b"))
	c.until(30*time.Second, "a removed the silent b", func() bool { return statusAt(a.d.Snapshot(), "b") == m.Removed })
	c.net.Heal(memAddr("a"), memAddr("b"))
	b.paused = false
	c.until(5*time.Second, "b stopped", isDone(b))
	if r := b.d.Result(); r.Reason != node.ReasonDowned || r.LeaveRequested {
		t.Fatalf("b result %+v", r)
	}
	if !allUp(a, "a")() || a.d.Stats().Quarantined == 0 {
		t.Fatalf("a must stay alone and have refused b: %+v\n%s", a.d.Stats(), c.views())
	}
	if !strings.Contains(a.log.String(), "no longer a member") {
		t.Fatalf("a's log lacks the quarantine notice:\n%s", a.log.String())
	}
}

// panicky is a transport whose Send panics, standing in for a broken
// invariant on the daemon's goroutine.
type panicky struct{ *MemTransport }

func (panicky) Send(m.Address, proto.Message) { panic("invariant broken") }

// TestCrashStopsTheDaemon: a panic on the actor goroutine does not restart
// the daemon with a fresh node (peers still count this incarnation): it
// stops for good and Done reports the error, for the host to exit.
func TestCrashStopsTheDaemon(t *testing.T) {
	c := newMemCluster(t)
	b := c.startWith("b", []string{"a", "b"}, nil, func(o *Options) { o.Transport = panicky{o.Transport.(*MemTransport)} })
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("crash reported", isDone(b)))
	r := b.d.Result()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "invariant broken") || !b.d.Info().Finished {
		t.Fatalf("result %+v", r)
	}
	if !strings.Contains(b.log.String(), "cluster daemon crashed") {
		t.Fatalf("log lacks the crash:\n%s", b.log.String())
	}
	if got := b.d.Snapshot(); len(got.Gossip.Members) != 0 {
		t.Fatalf("b crashed before joining: %v", got.Gossip.Members)
	}
}
