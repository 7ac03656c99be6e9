package drills

import (
	"flag"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

var long = flag.Bool("drills.long", false, "also run the long drill variants (minutes each)")

// secured runs every loopback drill with an authenticated cluster: mutual
// TLS (a CA made for the rig, a certificate per node) and one
// Cluster:Secret. `go test ./tests/drills/ -drills.tls` shows that the
// membership behaviour does not change with them on.
var secured = flag.Bool("drills.tls", false, "run the loopback drills with Cluster:Tls and Cluster:Secret on")

// drillSecret is the rig's Cluster:Secret under -drills.tls.
const drillSecret = "drill-cluster-secret-0123456789"

// exitDowned is the exit code of `otopcua host` when the node was downed and
// its termination watchdog ended the process (the supervisor restarts it).
const exitDowned = 3

// rig is one drill's set of nodes: on loopback (random ports on 127.0.0.1)
// or on test hosts (one network namespace per node, production ports).
type rig struct {
	t     *testing.T
	names []string
	net   *netem.Net             // nil on loopback
	ports map[string]procs.Ports // loopback only

	mu    sync.Mutex
	nodes map[string]*procs.Node // mu must be held.
	ca    *testcert.CA           // -drills.tls: the rig's CA; mu must be held.
}

// loopRig reserves loopback ports for every named node. Like hostRig, it
// builds the binary first, so that no drill's timing includes the build.
func loopRig(t *testing.T, names ...string) *rig {
	procs.Binary(t)
	r := &rig{t: t, names: names, ports: map[string]procs.Ports{}, nodes: map[string]*procs.Node{}}
	for _, n := range names {
		// Distinct from every port handed to any drill of this test binary:
		// the drills run in parallel.
		r.ports[n] = procs.NewPorts(t)
	}
	return r
}

// hostRig puts every named node on a test host of its own.
func hostRig(t *testing.T, names ...string) *rig {
	procs.Binary(t)
	return &rig{t: t, names: names, net: netem.NewNet(t, names...), nodes: map[string]*procs.Node{}}
}

// addr is a node's cluster address (its NodeId), "host:port".
func (r *rig) addr(name string) string {
	if r.net != nil {
		return r.net.Host(name).Addr + ":4053"
	}
	p, ok := r.ports[name]
	if !ok {
		r.t.Fatalf("no node %q in the rig", name)
	}
	return fmt.Sprintf("127.0.0.1:%d", p.Cluster)
}

// opt changes a node's appsettings before it starts.
type opt func(r *rig, cfg map[string]any)

// seeds sets Cluster:SeedNodes to the named nodes' addresses, in order.
func seeds(names ...string) opt {
	return func(r *rig, cfg map[string]any) {
		var s []string
		for _, n := range names {
			s = append(s, r.addr(n))
		}
		cfg["Cluster"].(map[string]any)["SeedNodes"] = s
	}
}

// seedAddrs sets Cluster:SeedNodes to literal addresses.
func seedAddrs(addrs ...string) opt {
	return func(_ *rig, cfg map[string]any) { cfg["Cluster"].(map[string]any)["SeedNodes"] = addrs }
}

// clusterKeys sets keys of the Cluster section: key, value, key, value…
func clusterKeys(kv ...any) opt {
	return func(_ *rig, cfg map[string]any) {
		c := cfg["Cluster"].(map[string]any)
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
	}
}

// clusterID sets Node:ClusterId.
func clusterID(id string) opt {
	return func(_ *rig, cfg map[string]any) { cfg["Node"].(map[string]any)["ClusterId"] = id }
}

// Timings. The production defaults are the config package's: failure
// detector 1 s / 3 s / 10, AutoDownUnreachableAfter 15 s, StableAfter 15 s,
// SelfFormAfter 10 s. Drills that only need a decision to happen use the
// short ones; the detector keeps its defaults everywhere (shorter pauses
// make false suspicions likely on two loaded cores).
var (
	shortDowning = clusterKeys("AutoDownUnreachableAfter", "5s", "StableAfter", "5s")
	strategy     = func(s string) opt { return clusterKeys("SplitBrainResolverStrategy", s) }
	selfFormEx   = func(d string) opt { return clusterKeys("SelfFormAfter", d) }
)

// config builds a node's appsettings: seeds = every node of the rig in
// order (the first is the first seed), roles admin+driver, ClusterId
// "test", then opts.
func (r *rig) config(name string, opts ...opt) map[string]any {
	var cfg map[string]any
	if r.net != nil {
		h := r.net.Host(name)
		cfg = procs.BaseConfig(name, procs.Ports{Cluster: 4053, OpcUa: 4840, HTTP: 8080})
		c := cfg["Cluster"].(map[string]any)
		c["Hostname"], c["PublicHostname"] = h.Addr, h.Addr
		cfg["Http"].(map[string]any)["Hostname"] = "127.0.0.1" // the host's own loopback
	} else {
		cfg = procs.BaseConfig(name, r.ports[name])
	}
	seeds(r.names...)(r, cfg)
	if *secured && r.net == nil {
		r.mu.Lock()
		if r.ca == nil {
			r.ca = testcert.NewCA(r.t, "drill cluster ca")
		}
		ca := r.ca
		r.mu.Unlock()
		cert, key := ca.Node(r.t, name)
		c := cfg["Cluster"].(map[string]any)
		c["Tls"] = map[string]any{"CaFile": ca.File, "CertFile": cert, "KeyFile": key}
		c["Secret"] = drillSecret
	}
	for _, o := range opts {
		o(r, cfg)
	}
	return cfg
}

// start starts node name.
func (r *rig) start(name string, opts ...opt) *procs.Node {
	r.t.Helper()
	cfg := r.config(name, opts...)
	var n *procs.Node
	if r.net != nil {
		h := r.net.Host(name)
		n = procs.StartWith(r.t, name, cfg, procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
	} else {
		n = procs.Start(r.t, name, cfg)
	}
	r.mu.Lock()
	r.nodes[name] = n
	r.mu.Unlock()
	return n
}

// startAll starts every node of the rig with the same opts.
func (r *rig) startAll(opts ...opt) []*procs.Node {
	r.t.Helper()
	var out []*procs.Node
	for _, name := range r.names {
		out = append(out, r.start(name, opts...))
	}
	return out
}

func (r *rig) node(name string) *procs.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[name]
	if !ok {
		r.t.Fatalf("node %q not started", name)
	}
	return n
}

// started returns the started nodes by name.
func (r *rig) started() map[string]*procs.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.nodes)
}

// view fetches a node's view; an exited node is an error that names it.
func view(n *procs.Node) (*procs.ClusterView, error) {
	if code, done := n.Exited(); done {
		return nil, fmt.Errorf("%s exited with code %d", n.Name, code)
	}
	v, err := n.Members()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Name, err)
	}
	return v, nil
}

// mustLive fails the test at once if n has exited (a poll would otherwise
// run into its deadline with a less useful message).
func mustLive(t *testing.T, n *procs.Node) {
	t.Helper()
	if code, done := n.Exited(); done {
		t.Fatalf("%s exited unexpectedly with code %d\n%s", n.Name, code, n.Log())
	}
}

// settled checks that every node in nodes is Up and converged, its view
// holds exactly the members at want (all Up), and all views agree on
// members (address, uid, status, up-number), leader and oldest driver.
func (r *rig) settled(nodes []string, want ...string) (map[string]*procs.ClusterView, error) {
	views := map[string]*procs.ClusterView{}
	wantAddrs := make([]string, 0, len(want))
	for _, w := range want {
		wantAddrs = append(wantAddrs, r.addr(w))
	}
	slices.Sort(wantAddrs)
	var first string
	for _, name := range nodes {
		n := r.node(name)
		mustLive(r.t, n)
		v, err := view(n)
		if err != nil {
			return nil, err
		}
		if v.SelfStatus != procs.StatusUp || !v.Converged {
			return nil, fmt.Errorf("%s not settled: %s", name, v)
		}
		if got := v.UpAddresses(); !slices.Equal(got, wantAddrs) || len(v.Members) != len(wantAddrs) {
			return nil, fmt.Errorf("%s: Up members %v, want exactly %v: %s", name, got, wantAddrs, v)
		}
		for _, m := range v.Members {
			if !m.Reachable {
				return nil, fmt.Errorf("%s: %s is unreachable: %s", name, m.Address, v)
			}
		}
		views[name] = v
		if first == "" {
			first = name
			continue
		}
		if d := diffViews(views[first], v); d != "" {
			return nil, fmt.Errorf("views of %s and %s differ: %s\n  %s\n  %s", first, name, d, views[first], v)
		}
	}
	return views, nil
}

// waitSettled polls settled until it holds or total passes.
func (r *rig) waitSettled(total time.Duration, nodes []string, want ...string) map[string]*procs.ClusterView {
	r.t.Helper()
	var views map[string]*procs.ClusterView
	procs.CheckFor(r.t, total, 100*time.Millisecond, func() error {
		var err error
		views, err = r.settled(nodes, want...)
		return err
	})
	return views
}

func memberKey(m procs.Member) string {
	return fmt.Sprintf("%s#%s %s(%d) %s %v", m.Address, m.UID, m.Status, m.UpNumber, m.ClusterID, m.Roles)
}

// diffViews describes how two views' member tables, leaders and oldest
// drivers differ ("" when they agree).
func diffViews(a, b *procs.ClusterView) string {
	ka, kb := []string{}, []string{}
	for _, m := range a.Members {
		ka = append(ka, memberKey(m))
	}
	for _, m := range b.Members {
		kb = append(kb, memberKey(m))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	var d []string
	if !slices.Equal(ka, kb) {
		d = append(d, "members")
	}
	if a.Leader != b.Leader {
		d = append(d, "leader")
	}
	if a.Oldest[DriverRole] != b.Oldest[DriverRole] {
		d = append(d, "oldest driver")
	}
	return strings.Join(d, ", ")
}

// oldestDriver is the oldest Up driver of the view's own ClusterId.
func oldestDriver(v *procs.ClusterView) string {
	self, _ := v.SelfMember()
	m, ok := v.OldestUp(DriverRole, self.ClusterID)
	if !ok {
		return ""
	}
	return m.Address
}

// waitNone waits until n answers the members endpoint and has not joined.
func waitNone(t *testing.T, n *procs.Node, total time.Duration) {
	t.Helper()
	procs.CheckFor(t, total, 100*time.Millisecond, func() error {
		mustLive(t, n)
		v, err := view(n)
		if err != nil {
			return err
		}
		if v.SelfStatus != procs.StatusNone {
			return fmt.Errorf("%s: want selfStatus None before anyone can answer it, got %s", n.Name, v)
		}
		return nil
	})
}

// staysUnjoined asserts that n keeps answering with selfStatus None for total.
func staysUnjoined(t *testing.T, n *procs.Node, total time.Duration) {
	t.Helper()
	procs.Holds(t, total, 100*time.Millisecond, func() error {
		mustLive(t, n)
		v, err := view(n)
		if err != nil {
			return err
		}
		if v.SelfStatus != procs.StatusNone {
			return fmt.Errorf("%s joined or formed a cluster: %s", n.Name, v)
		}
		return nil
	})
}

// expectDowned waits for n to exit and asserts it exited as a downed node:
// non-zero, not a configuration error, not killed by a signal.
func expectDowned(t *testing.T, n *procs.Node, total time.Duration) int {
	t.Helper()
	code := n.WaitExit(total)
	if code != exitDowned {
		t.Fatalf("%s exited with code %d, want %d (downed; the termination watchdog's exit)\n%s", n.Name, code, exitDowned, n.Log())
	}
	return code
}

// expectLeft waits for n to exit after a graceful leave: code 0.
func expectLeft(t *testing.T, n *procs.Node, total time.Duration) {
	t.Helper()
	if code := n.WaitExit(total); code != 0 {
		t.Fatalf("%s exited with code %d after SIGTERM, want 0\n%s", n.Name, code, n.Log())
	}
}

// sampler is the invariant sampler: every 50 ms it asks every started
// node for its view concurrently (500 ms timeout: a stopped or cut-off node
// simply has no view that round), feeds the round to a OneOldestChecker and
// records every status each incarnation was seen in.
type sampler struct {
	r     *rig
	stop  chan struct{}
	done  chan struct{}
	every time.Duration

	mu      sync.Mutex
	checker OneOldestChecker           // mu must be held.
	seen    map[string]map[string]bool // address#uid → statuses seen; mu must be held.
	hook    func(round []Observation)  // mu must be held.
}

// sample starts the invariant sampler; when the test ends it fails the test
// on a violation, or if it never completed 10 rounds or never saw a claim
// (a sampler that saw nothing checked nothing).
func (r *rig) sample() *sampler {
	s := &sampler{r: r, stop: make(chan struct{}), done: make(chan struct{}), every: 50 * time.Millisecond, seen: map[string]map[string]bool{}}
	go s.run()
	// The drill acts only once the sampler has seen the state before the
	// action: two complete rounds.
	procs.CheckFor(r.t, 10*time.Second, 10*time.Millisecond, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if n := s.checker.Rounds(); n < 2 {
			return fmt.Errorf("invariant sampler: %d rounds so far", n)
		}
		return nil
	})
	r.t.Cleanup(func() {
		// A drill that ends fast (a crash replaced in a few hundred ms) may
		// end before ten rounds on a busy machine: the sampler keeps
		// checking the state after the drill until it has them, and until
		// it has seen a claim (a drill that ends the moment its cluster
		// forms may end before any sampled round carried one).
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			s.mu.Lock()
			n, claims := s.checker.Rounds(), s.checker.ClaimRounds()
			s.mu.Unlock()
			if n >= 10 && claims > 0 {
				break
			}
			time.Sleep(s.every)
		}
		s.halt()
		s.mu.Lock()
		defer s.mu.Unlock()
		c := &s.checker
		r.t.Logf("invariant sampler: %d rounds, %d with a claim, %d near misses, %d violations", c.Rounds(), c.ClaimRounds(), c.NearMisses(), len(c.Violations()))
		for _, v := range c.Violations() {
			r.t.Errorf("invariant violated (at most one oldest driver per ClusterId): %s", v)
		}
		if c.Rounds() < 10 || c.ClaimRounds() == 0 {
			r.t.Errorf("invariant sampler checked nothing: %d rounds, %d with a claim", c.Rounds(), c.ClaimRounds())
		}
	})
	return s
}

func (s *sampler) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

func (s *sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		nodes := s.r.started()
		round := make([]Observation, 0, len(nodes))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for name, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var v *procs.ClusterView
				if n.Alive() {
					v, _ = procs.FetchView(clientOf(s.r, name), n.HTTP(), 500*time.Millisecond)
				}
				mu.Lock()
				round = append(round, Observation{Node: name, View: v})
				mu.Unlock()
			}()
		}
		wg.Wait()
		s.mu.Lock()
		s.checker.Round(round)
		for _, o := range round {
			if o.View == nil {
				continue
			}
			for _, m := range o.View.Members {
				k := m.Address + "#" + string(m.UID)
				if s.seen[k] == nil {
					s.seen[k] = map[string]bool{}
				}
				s.seen[k][m.Status] = true
			}
			if o.View.SelfStatus != "" && o.View.Self.Address != "" {
				k := o.View.Self.Address + "#" + string(o.View.Self.UID)
				if s.seen[k] == nil {
					s.seen[k] = map[string]bool{}
				}
				s.seen[k][o.View.SelfStatus] = true
			}
		}
		hook := s.hook
		s.mu.Unlock()
		if hook != nil {
			hook(round)
		}
	}
}

// statuses returns every status incarnation addr#uid was seen in, in any
// node's view.
func (s *sampler) statuses(addr string, uid procs.UID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.seen[addr+"#"+string(uid)]))
}

// onRound installs a function called after every round (from the
// sampler's goroutine).
func (s *sampler) onRound(f func(round []Observation)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

// clientOf is the HTTP client that reaches a node of a host rig (nil on
// loopback).
func clientOf(r *rig, name string) *http.Client {
	if r.net == nil {
		return nil
	}
	return r.net.Host(name).HTTPClient()
}

// kill sends sig and logs it with the time, for reading drill logs.
func kill(t *testing.T, n *procs.Node, sig syscall.Signal) time.Time {
	t.Helper()
	at := time.Now()
	n.Signal(sig)
	t.Logf("%s: sent %v to %s (pid %d)", at.Format("15:04:05.000"), sig, n.Name, n.PID())
	return at
}

// grepLog returns the lines of n's log that contain any of words.
func grepLog(n *procs.Node, words ...string) string {
	var out []string
	for _, line := range strings.Split(n.Log(), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// mustView fetches n's view or fails the test.
func mustView(t *testing.T, n *procs.Node) *procs.ClusterView {
	t.Helper()
	v, err := view(n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
