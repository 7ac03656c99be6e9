package singleton_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/internal/poll"
)

// stopDelay is how long a test instance takes to stop, in cluster time:
// a manager that started its instance before the previous one stopped
// would overlap it for this long. It is shorter than the failure
// detector's acceptable pause (3 s) and the hand-over timeout (5 s), the
// bounds within which a downed node must stop its instance.
const stopDelay = 1500 * time.Millisecond

// tracker counts running test instances across the cluster.
type tracker struct {
	mu      sync.Mutex
	running map[string]int
	starts  map[string]int
	dead    map[*instance]bool // died with their process
	maxRun  int
}

type instance struct {
	t       *tracker
	node    string
	clock   *pubsubtest.StepClock
	closing <-chan struct{} // the test is ending: stop at once
}

func (i *instance) Start(context.Context) {
	i.t.mu.Lock()
	defer i.t.mu.Unlock()
	i.t.running[i.node]++
	i.t.starts[i.node]++
	total := 0
	for _, n := range i.t.running {
		total += n
	}
	i.t.maxRun = max(i.t.maxRun, total)
}

func (i *instance) Stop() {
	i.t.mu.Lock()
	dead := i.t.dead[i]
	i.t.mu.Unlock()
	if !dead {
		select {
		case <-i.clock.After(stopDelay):
		case <-i.closing:
		}
	}
	i.t.mu.Lock()
	defer i.t.mu.Unlock()
	if !i.t.dead[i] {
		i.t.running[i.node]--
	}
}

// kill ends the instances running on node at once, as a killed process
// ends them.
func (t *tracker) kill(node string, live []*instance) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, i := range live {
		if i.node == node && !t.dead[i] {
			t.dead[i] = true
			t.running[node]--
		}
	}
}

func (t *tracker) runningOn() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var on []string
	for n, c := range t.running {
		for range c {
			on = append(on, n)
		}
	}
	return strings.Join(on, ",")
}

func (t *tracker) startsOn(node string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.starts[node]
}

// rig is a cluster where every node runs a singleton manager for role
// "admin", with its exit group in the daemon's leave, and a sampler that
// records how many managers report Active at once.
type rig struct {
	t  *testing.T
	c  *pubsubtest.Cluster
	tr *tracker

	mu   sync.Mutex // guards mgrs, insts, killed, becameActive
	mgrs map[string]*singleton.Manager
	// insts are every instance made, killed the managers of killed nodes
	insts  []*instance
	killed map[*singleton.Manager]bool
	// becameActive records, per node, the other members' statuses in its
	// view at the moment its instance was about to start.
	becameActive map[string][]map[string]membership.Status

	maxActive atomic.Int32
	stop      chan struct{}
	sampled   chan struct{}
	closing   chan struct{}
}

func newRig(t *testing.T, fastPath bool) *rig {
	r := &rig{
		t: t, c: pubsubtest.New(t), tr: &tracker{running: map[string]int{}, starts: map[string]int{}, dead: map[*instance]bool{}},
		mgrs: map[string]*singleton.Manager{}, killed: map[*singleton.Manager]bool{}, becameActive: map[string][]map[string]membership.Status{},
		stop: make(chan struct{}), sampled: make(chan struct{}), closing: make(chan struct{}),
	}
	exits := map[string]*singleton.ExitGroup{}
	r.c.Configure = func(name string, cfg *pubsubtest.Config) {
		g := &singleton.ExitGroup{}
		exits[name] = g
		cfg.Node.CrashFastPath = fastPath
		cfg.Daemon.ExitingTasks = append(cfg.Daemon.ExitingTasks, g.Task)
	}
	r.c.OnStart = func(n *pubsubtest.Node) {
		name := n.Name
		m, err := singleton.Start(singleton.Options{
			Daemon: n.Daemon, Mediator: n.Mediator, Role: "admin", Name: "redundancy-state",
			Factory:  func() singleton.Instance { return r.newInstance(name) },
			OnChange: func(active bool) { r.onChange(n, active) },
			Exit:     exits[name], Clock: r.c.Clock, Logger: n.Logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		r.mgrs[name] = m
		r.mu.Unlock()
		n.OnStop(m.Stop)
	}
	go r.sample()
	t.Cleanup(func() { // runs before the cluster's own cleanup
		close(r.closing)
		close(r.stop)
		<-r.sampled
	})
	return r
}

func (r *rig) newInstance(node string) *instance {
	i := &instance{t: r.tr, node: node, clock: r.c.Clock, closing: r.closing}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.insts = append(r.insts, i)
	return i
}

// kill crashes a node: its instance ends at once and its manager no
// longer counts.
func (r *rig) kill(name string) {
	r.mu.Lock()
	r.killed[r.mgrs[name]] = true
	insts := append([]*instance(nil), r.insts...)
	r.mu.Unlock()
	r.tr.kill(name, insts)
	r.c.Kill(name)
}

func (r *rig) onChange(n *pubsubtest.Node, active bool) {
	if !active {
		return
	}
	st := n.Daemon.Snapshot()
	seen := map[string]membership.Status{}
	for _, mb := range st.Gossip.Members {
		if mb.Address != st.Self {
			seen[mb.Address.Host] = mb.Status
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.becameActive[n.Name] = append(r.becameActive[n.Name], seen)
}

// sample polls every manager's Active until the test ends.
func (r *rig) sample() {
	defer close(r.sampled)
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		r.mu.Lock()
		n := int32(0)
		for _, m := range r.mgrs {
			if !r.killed[m] && m.Active() {
				n++
			}
		}
		r.mu.Unlock()
		if n > r.maxActive.Load() {
			r.maxActive.Store(n)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func (r *rig) mgr(name string) *singleton.Manager {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mgrs[name]
}

func (r *rig) active(name string) func() bool {
	return func() bool { return r.mgr(name).Active() }
}

// checkNoOverlap fails the test if two instances ever ran at once, by the
// instances' own count or by a sample of the managers' Active.
func (r *rig) checkNoOverlap() {
	r.t.Helper()
	r.tr.mu.Lock()
	maxRun := r.tr.maxRun
	r.tr.mu.Unlock()
	if maxRun > 1 || r.maxActive.Load() > 1 {
		r.t.Fatalf("two singleton instances ran at once (instances %d, sampled active managers %d)", maxRun, r.maxActive.Load())
	}
}

func (r *rig) onlyActive(name string) error {
	for _, n := range r.c.All() {
		m := r.mgr(n.Name)
		r.mu.Lock()
		dead := r.killed[m]
		r.mu.Unlock()
		if dead {
			continue
		}
		if got := m.Active(); got != (n.Name == name) {
			return fmt.Errorf("%s active=%v, want only %s active (running: %s)", n.Name, got, name, r.tr.runningOn())
		}
	}
	return nil
}

// logHas waits (5 s at most) until n's log has every text: a line may be
// written just after the state a test waited for.
func logHas(t *testing.T, n *pubsubtest.Node, texts ...string) {
	t.Helper()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		log := n.Log.String()
		for _, text := range texts {
			if !strings.Contains(log, text) {
				return fmt.Errorf("%s's log lacks %q:\n%s", n.Name, text, log)
			}
		}
		return nil
	})
}

// TestRunsOnlyOnOldest: the singleton runs on the oldest member and on no
// other, for as long as nothing changes.
func TestRunsOnlyOnOldest(t *testing.T) {
	r := newRig(t, true)
	ns := r.c.Form("a", "b", "c")
	r.c.Until(3*time.Second, "a active", r.active("a"))
	for range 30 {
		r.c.Advance(200 * time.Millisecond)
		if err := r.onlyActive("a"); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"b", "c"} {
		if p := r.mgr(name).Phase(); p != singleton.Younger {
			t.Fatalf("%s is %v, want Younger", name, p)
		}
	}
	if r.tr.startsOn("a") != 1 {
		t.Fatalf("a started %d times", r.tr.startsOn("a"))
	}
	logHas(t, ns[0], singleton.LogStarted, `"reason":"oldest"`)
	r.checkNoOverlap()
}

// TestHandOverOnLeave: the leaving oldest hands the singleton over to the
// next oldest, which starts it only after the old instance stopped.
func TestHandOverOnLeave(t *testing.T) {
	r := newRig(t, true)
	ns := r.c.Form("a", "b", "c")
	a, b := ns[0], ns[1]
	r.c.Until(3*time.Second, "a active", r.active("a"))
	a.Daemon.Leave()
	r.c.Until(10*time.Second, "b active and a gone", func() bool {
		select {
		case <-a.Daemon.Done():
		default:
			return false
		}
		return r.mgr("b").Active()
	})
	r.checkNoOverlap()
	if err := r.onlyActive("b"); err != nil {
		// a's manager is still registered; it must have stopped
		t.Fatal(err)
	}
	logHas(t, a, singleton.LogHandedOver, `"to":"b:2552"`)
	logHas(t, b, singleton.LogStarted, `"reason":"hand-over"`)
	if strings.Contains(b.Log.String(), singleton.LogTakenOver) {
		t.Fatalf("a graceful leave is a hand-over, not a take-over:\n%s", b.Log.String())
	}
	if r.mgr("a").Phase() == singleton.Oldest || r.tr.startsOn("b") != 1 {
		t.Fatalf("a %v, b started %d times", r.mgr("a").Phase(), r.tr.startsOn("b"))
	}
	r.c.Until(5*time.Second, "c sees a removed", func() bool { return pubsubtest.StatusAt(ns[2], "a") == membership.Removed })
	r.c.Advance(3 * time.Second)
	if err := r.onlyActive("b"); err != nil {
		t.Fatal(err)
	}
	r.checkNoOverlap()
}

// TestTakeOverAfterCrashOnlyOnceDowned: with the crash fast path off, a
// crashed oldest stays unreachable but Up until auto-down; the next
// oldest takes over only once it is downed.
func TestTakeOverAfterCrashOnlyOnceDowned(t *testing.T) {
	r := newRig(t, false)
	ns := r.c.Form("a", "b", "c")
	b := ns[1]
	r.c.Until(3*time.Second, "a active", r.active("a"))
	r.kill("a")
	r.c.Until(10*time.Second, "b holds a unreachable", func() bool {
		st := b.Daemon.Snapshot()
		return !st.Gossip.Reachability.IsReachable(ns[0].Daemon.Self())
	})
	// unreachable, not downed: nobody takes over
	for range 50 {
		r.c.Advance(200 * time.Millisecond)
		if pubsubtest.StatusAt(b, "a") != membership.Up {
			break
		}
		if r.mgr("b").Active() || r.mgr("c").Active() {
			t.Fatalf("the singleton moved while a is merely unreachable:\n%s", r.c.Views())
		}
	}
	took := r.c.Until(20*time.Second, "b active", r.active("b"))
	t.Logf("b took over %v of cluster time after the check", took)
	r.mu.Lock()
	seen := r.becameActive["b"]
	r.mu.Unlock()
	if len(seen) != 1 || (seen[0]["a"] != membership.Down && seen[0]["a"] != membership.Removed && seen[0]["a"] != 0) {
		t.Fatalf("b started while it saw a as %v", seen)
	}
	logHas(t, b, singleton.LogTakenOver, `"reason":"take-over"`)
	r.checkNoOverlap()
	if err := r.onlyActive("b"); err != nil {
		t.Fatal(err)
	}
}

// TestTakeOverAfterCrashFastPath: with the crash fast path, the refused
// port gets the crashed oldest downed at once and the singleton moves
// within a couple of seconds.
func TestTakeOverAfterCrashFastPath(t *testing.T) {
	r := newRig(t, true)
	r.c.Form("a", "b")
	r.c.Until(3*time.Second, "a active", r.active("a"))
	r.kill("a")
	took := r.c.Until(3*time.Second, "b active", r.active("b"))
	t.Logf("take-over after %v of cluster time", took)
	r.checkNoOverlap()
}

// TestStopsOnSelfDown: an oldest that is downed while alive stops its
// instance; the next oldest starts only after that stop.
func TestStopsOnSelfDown(t *testing.T) {
	r := newRig(t, true)
	ns := r.c.Form("a", "b", "c")
	a := ns[0]
	r.c.Until(3*time.Second, "a active", r.active("a"))
	ns[1].Daemon.Down(pubsubtest.Addr("a"))
	r.c.Until(10*time.Second, "b active", r.active("b"))
	r.checkNoOverlap()
	logHas(t, a, `"msg":"`+singleton.LogStopped+`"`, `"reason":"this node was downed"`)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a's manager ended", func() bool { return !r.mgr("a").Active() && r.mgr("a").Phase() == singleton.Ended }))
	if err := r.onlyActive("b"); err != nil {
		t.Fatal(err)
	}
}

// TestRestartedOldestComesBackAsYounger: the crashed oldest, restarted at
// the same address, joins as the youngest and does not take the singleton
// back; the survivor keeps it.
func TestRestartedOldestComesBackAsYounger(t *testing.T) {
	r := newRig(t, true)
	r.c.Form("a", "b")
	r.c.Until(3*time.Second, "a active", r.active("a"))
	r.kill("a")
	r.c.Until(3*time.Second, "b active", r.active("b"))
	a2 := r.c.Start("a", []string{"a", "b"}, nil)
	r.c.Until(25*time.Second, "a rejoined", pubsubtest.AllUp(a2, "a", "b"))
	r.c.Advance(5 * time.Second)
	if err := r.onlyActive("b"); err != nil {
		t.Fatal(err)
	}
	r.checkNoOverlap()
}
