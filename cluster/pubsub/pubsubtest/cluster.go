package pubsubtest

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/pubsub"
)

// Step is the clock step of Cluster.Advance: the daemon's tick interval.
const Step = daemon.DefaultTickInterval

// Port is the cluster port of every test node; nodes differ by host name.
const Port = 2552

// Addr is the address of the test node called name.
func Addr(name string) membership.Address { return membership.Address{Host: name, Port: Port} }

// LogSink collects a node's log lines; safe for concurrent use.
type LogSink struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *LogSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *LogSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Count is how many lines contain text.
func (s *LogSink) Count(text string) int { return strings.Count(s.String(), text) }

// Cluster runs nodes in one process — each a local actor system, a
// cluster daemon on a daemon.MemNetwork and a pub/sub mediator on a
// pubsub.MemNetwork — all on one StepClock.
type Cluster struct {
	T     testing.TB
	Clock *StepClock
	// Net is the one in-memory network of the cluster: Kill, Partition and
	// Heal there apply to the daemons' and the mediators' (and so the
	// singleton managers') traffic alike; PubNet routes over it.
	Net    *daemon.MemNetwork
	PubNet *pubsub.MemNetwork
	// Configure, when set before the first Start, adjusts every node's
	// start (after Start's own configure function).
	Configure func(name string, cfg *Config)
	// OnStart, when set before the first Start, runs after every node
	// started (to start more services on it).
	OnStart func(n *Node)

	mu    sync.Mutex // guards nodes, uid
	nodes map[string]*Node
	uid   uint64
}

// Node is one process of a Cluster.
type Node struct {
	Name     string
	Daemon   *daemon.Daemon
	Mediator *pubsub.Mediator
	System   *actors.System
	Log      *LogSink
	Logger   *slog.Logger

	mu      sync.Mutex // guards cleanup, stopped
	cleanup []func()
	stopped bool
}

// OnStop registers fn to run, in reverse order, before the node's
// mediator and daemon stop (a kill, a restart, or the test's end).
func (n *Node) OnStop(fn func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cleanup = append(n.cleanup, fn)
}

// Stop stops what runs on the node, without a word to the cluster: the
// OnStop functions first, then the mediator and the daemon.
func (n *Node) Stop() { n.stop(false) }

// stop stops the node; crash silences the daemon and the mediator first,
// as a killed process stops sending at once, and runs the OnStop
// functions after them.
func (n *Node) stop(crash bool) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return
	}
	n.stopped = true
	fns := n.cleanup
	n.mu.Unlock()
	if crash {
		n.Daemon.Stop()
		n.Mediator.Stop()
	}
	for _, fn := range slices.Backward(fns) {
		fn()
	}
	n.Mediator.Stop()
	n.Daemon.Stop()
	n.System.Shutdown(false)
}

// New returns an empty cluster; every node is stopped at the test's end.
func New(t testing.TB) *Cluster {
	net := daemon.NewMemNetwork()
	c := &Cluster{T: t, Clock: NewStepClock(), Net: net, PubNet: pubsub.NewMemNetworkOn(net), nodes: map[string]*Node{}}
	t.Cleanup(func() {
		for _, n := range c.All() {
			n.Stop()
		}
	})
	return c
}

// All returns the current node of every name.
func (c *Cluster) All() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Node returns the current node called name.
func (c *Cluster) Node(name string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// Config adjusts one node's start.
type Config struct {
	// Node is the membership configuration: roles admin and driver,
	// ClusterID site-a by default.
	Node *node.Config
	// Daemon options; System, Transport, Prober, Clock and Logger are set.
	Daemon *daemon.Options
}

// Start starts a process called name (a new incarnation when one ran
// there: the old one is stopped silently first).
func (c *Cluster) Start(name string, seeds []string, configure func(*Config)) *Node {
	c.T.Helper()
	c.mu.Lock()
	old := c.nodes[name]
	c.uid++
	uid := c.uid
	c.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	var ss []membership.Address
	for _, s := range seeds {
		ss = append(ss, Addr(s))
	}
	self := membership.UniqueAddress{Host: name, Port: Port, UID: uid}
	nc := node.DefaultConfig(self, ss)
	nc.Roles = []string{"admin", "driver"}
	nc.ClusterID = "site-a"
	sink := &LogSink{}
	logger := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
	sys := actors.NewLocal(logger)
	tr := c.Net.Transport()
	do := daemon.Options{System: sys, Transport: tr, Prober: tr.Prober(), Clock: c.Clock, Logger: logger}
	if configure != nil {
		configure(&Config{Node: &nc, Daemon: &do})
	}
	if c.Configure != nil {
		c.Configure(name, &Config{Node: &nc, Daemon: &do})
	}
	do.Node = nc
	d, err := daemon.Start(do)
	if err != nil {
		c.T.Fatalf("start %s: %v", name, err)
	}
	med, err := pubsub.Start(pubsub.Options{System: sys, Membership: d, Transport: c.PubNet.Transport(), Clock: c.Clock, Logger: logger})
	if err != nil {
		c.T.Fatalf("start mediator %s: %v", name, err)
	}
	n := &Node{Name: name, Daemon: d, Mediator: med, System: sys, Log: sink, Logger: logger}
	c.mu.Lock()
	c.nodes[name] = n
	c.mu.Unlock()
	if c.OnStart != nil {
		c.OnStart(n)
	}
	return n
}

// Kill stops a node's process without a word: its peers are told their
// connection broke, probes of its address are refused, messages to it are
// dropped, and its daemon and mediator send nothing more; its OnStop
// functions run after that.
func (c *Cluster) Kill(name string) {
	n := c.Node(name)
	c.Net.Kill(Addr(name))
	c.PubNet.Kill(Addr(name))
	n.stop(true)
}

// Advance moves the clock by total in Step steps, every tick delivered.
func (c *Cluster) Advance(total time.Duration) {
	c.T.Helper()
	for s := time.Duration(0); s < total; s += Step {
		if err := c.Clock.Step(Step); err != nil {
			c.T.Fatal(err)
		}
		// let the actors run what the tick started before the next
		time.Sleep(200 * time.Microsecond)
	}
}

// Until advances the clock until cond holds and returns the cluster time
// it took; it fails the test after limit of cluster time.
func (c *Cluster) Until(limit time.Duration, what string, cond func() bool) time.Duration {
	c.T.Helper()
	for waited := time.Duration(0); ; waited += Step {
		if cond() {
			return waited
		}
		if waited >= limit {
			c.T.Fatalf("not within %v of cluster time: %s\n%s", limit, what, c.Views())
		}
		c.Advance(Step)
	}
}

// Views renders every running node's membership view.
func (c *Cluster) Views() string {
	var b strings.Builder
	for _, n := range c.All() {
		st := n.Daemon.Snapshot()
		fmt.Fprintf(&b, "%s: %v unreachable=%v\n", n.Name, st.Gossip.Members, st.Gossip.Reachability)
	}
	return b.String()
}

// StatusAt is the status of the member at name's address in n's view,
// Removed when there is none.
func StatusAt(n *Node, name string) membership.Status {
	mb, ok := n.Daemon.Snapshot().Gossip.MemberAt(Addr(name))
	if !ok {
		return membership.Removed
	}
	return mb.Status
}

// StatusAtAddr is the status of the member at a in st, Removed when
// there is none.
func StatusAtAddr(st membership.State, a membership.Address) membership.Status {
	mb, ok := st.Gossip.MemberAt(a)
	if !ok {
		return membership.Removed
	}
	return mb.Status
}

// AllUp reports whether n sees exactly names, all Up.
func AllUp(n *Node, names ...string) func() bool {
	return func() bool {
		st := n.Daemon.Snapshot()
		if len(st.Gossip.Members) != len(names) {
			return false
		}
		for _, name := range names {
			if StatusAt(n, name) != membership.Up {
				return false
			}
		}
		return true
	}
}

// Form starts nodes names, all seeded with the first, and waits until
// every one sees all Up; names[0] is the oldest.
func (c *Cluster) Form(names ...string) []*Node {
	c.T.Helper()
	var out []*Node
	for i, name := range names {
		out = append(out, c.Start(name, names, nil))
		// join one after the other, so that up-numbers follow names
		c.Until(15*time.Second, name+" Up", func() bool { return AllUp(out[0], names[:i+1]...)() })
	}
	c.Until(15*time.Second, "every node sees all Up", func() bool {
		for _, n := range out {
			if !AllUp(n, names...)() {
				return false
			}
		}
		return true
	})
	return out
}
