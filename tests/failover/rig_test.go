package failover

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/demo"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// Roles.
const (
	admin  = "admin"
	driver = "driver"
)

// spec describes one node of a rig.
type spec struct {
	name      string
	clusterID string
	roles     []string
}

func pairSpecs(clusterID string, names ...string) []spec {
	var out []spec
	for _, n := range names {
		out = append(out, spec{name: n, clusterID: clusterID, roles: []string{admin, driver}})
	}
	return out
}

// rig is one drill's nodes: real `otopcua host` processes on loopback
// (random ports) or on test hosts of their own (netem, production ports),
// each watched by a subscribed OPC UA client (demo.Watcher) that
// reconnects across restarts, and all read by the invariant sampler.
type rig struct {
	t      *testing.T
	specs  []spec
	dir    string
	ports  map[string]procs.Ports // loopback
	net    *netem.Net             // test hosts; nil on loopback
	client *netem.Host            // the test hosts' SCADA client host
	edit   map[string][]func(cfg map[string]any)

	sampler *Sampler

	mu    sync.Mutex
	nodes map[string]*procs.Node // mu must be held.
	watch map[string]*watched    // mu must be held.
	addrs map[string]string      // cluster address → name; mu must be held.
}

// watched is a node's subscribed client and every reading it reported.
type watched struct {
	w *demo.Watcher
	Recorder
}

func (w *watched) history() []demo.Reading { return w.History() }

// newRig reserves ports (loopback) for every node.
func newRig(t *testing.T, specs ...spec) *rig {
	r := &rig{t: t, specs: specs, dir: t.TempDir(), ports: map[string]procs.Ports{}, edit: map[string][]func(map[string]any){},
		nodes: map[string]*procs.Node{}, watch: map[string]*watched{}, addrs: map[string]string{}}
	for _, s := range specs {
		r.ports[s.name] = procs.NewPorts(t)
		r.addrs[fmt.Sprintf("127.0.0.1:%d", r.ports[s.name].Cluster)] = s.name
	}
	r.startSampler()
	return r
}

// newHostRig puts every node on a test host of its own (network
// namespaces), plus a host for the test's OPC UA clients.
func newHostRig(t *testing.T, specs ...spec) *rig {
	var names []string
	for _, s := range specs {
		names = append(names, s.name)
	}
	n := netem.NewNet(t, append(names, "scada")...)
	r := &rig{t: t, specs: specs, dir: t.TempDir(), net: n, client: n.Host("scada"), edit: map[string][]func(map[string]any){},
		nodes: map[string]*procs.Node{}, watch: map[string]*watched{}, addrs: map[string]string{}}
	for _, s := range specs {
		r.addrs[n.Host(s.name).Addr+":4053"] = s.name
	}
	r.startSampler()
	return r
}

func (r *rig) startSampler() {
	r.sampler = NewSampler(50*time.Millisecond, 300*time.Millisecond)
	r.sampler.Start()
	r.t.Cleanup(func() {
		r.sampler.Stop()
		if v := r.sampler.Violations(); len(v) > 0 {
			r.t.Errorf("invariant sampler: %d rounds with two Primaries in one ClusterId, first: %v", len(v), v[0])
		}
	})
}

func (r *rig) spec(name string) spec {
	for _, s := range r.specs {
		if s.name == name {
			return s
		}
	}
	r.t.Fatalf("no node %q in the rig", name)
	return spec{}
}

// configure adds an edit of name's appsettings ("" edits every node).
func (r *rig) configure(name string, f func(cfg map[string]any)) {
	if name == "" {
		for _, s := range r.specs {
			r.edit[s.name] = append(r.edit[s.name], f)
		}
		return
	}
	r.edit[name] = append(r.edit[name], f)
}

// addr is name's cluster address.
func (r *rig) addr(name string) string {
	if r.net != nil {
		return r.net.Host(name).Addr + ":4053"
	}
	return fmt.Sprintf("127.0.0.1:%d", r.ports[name].Cluster)
}

// config is name's appsettings: every node of the rig a seed (in rig
// order), the spec's roles and ClusterId, one shared SQLite Config DB, the
// other nodes of its ClusterId as OPC UA peers, info logs, then the edits.
func (r *rig) config(name string) map[string]any {
	s := r.spec(name)
	var cfg map[string]any
	if r.net != nil {
		h := r.net.Host(name)
		cfg = procs.BaseConfig(name, procs.Ports{Cluster: 4053, OpcUa: 4840, HTTP: 8080})
		c := cfg["Cluster"].(map[string]any)
		c["Hostname"], c["PublicHostname"] = h.Addr, h.Addr
		cfg["Http"].(map[string]any)["Hostname"] = "127.0.0.1"
	} else {
		cfg = procs.BaseConfig(name, r.ports[name])
	}
	var seeds, peers []string
	for _, o := range r.specs {
		seeds = append(seeds, r.addr(o.name))
		if o.name != name && o.clusterID == s.clusterID {
			peers = append(peers, "urn:"+o.name+":otopcua")
		}
	}
	c := cfg["Cluster"].(map[string]any)
	c["SeedNodes"], c["Roles"] = seeds, s.roles
	cfg["Node"].(map[string]any)["ClusterId"] = s.clusterID
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = peers
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(r.dir, "config.db")}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	for _, f := range r.edit[name] {
		f(cfg)
	}
	return cfg
}

// start starts name and, the first time, its watcher and sampler target.
func (r *rig) start(name string) *procs.Node {
	r.t.Helper()
	cfg := r.config(name)
	var n *procs.Node
	if r.net != nil {
		h := r.net.Host(name)
		n = procs.StartWith(r.t, name, cfg, procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
	} else {
		n = procs.Start(r.t, name, cfg)
	}
	r.mu.Lock()
	r.nodes[name] = n
	_, watching := r.watch[name]
	r.mu.Unlock()
	if !watching {
		r.watchNode(name, n)
	}
	return n
}

func (r *rig) startAll() {
	r.t.Helper()
	for _, s := range r.specs {
		r.start(s.name)
	}
}

func (r *rig) watchNode(name string, n *procs.Node) {
	endpoint := n.Endpoint()
	if r.net != nil {
		endpoint = "opc.tcp://" + netem.Forward(r.t, r.client, r.net.Host(name).Addr+":4840")
	}
	w := &watched{}
	w.w = demo.Watch(context.Background(), endpoint, demo.WatchOptions{}, w.Add)
	r.t.Cleanup(w.w.Close)
	r.mu.Lock()
	r.watch[name] = w
	r.mu.Unlock()
	r.sampler.Add(Target{Name: name, ClusterID: r.spec(name).clusterID, Read: w.w.Read})
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

func (r *rig) watcher(name string) *watched {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watch[name]
}

// level is name's ServiceLevel as its subscribed client last saw it.
func (r *rig) level(name string) demo.Reading { return r.watcher(name).w.Current() }

// nameOf maps a cluster address to the node's name.
func (r *rig) nameOf(addr string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrs[addr]
}

// mustLive fails at once when n has exited.
func mustLive(t *testing.T, n *procs.Node) {
	t.Helper()
	if code, done := n.Exited(); done {
		t.Fatalf("%s exited unexpectedly with code %d\n%s", n.Name, code, n.Log())
	}
}

// levelsAre checks that every named node's subscribed client currently
// sees the wanted level.
func (r *rig) levelsAre(want map[string]byte) error {
	for _, name := range sortedKeys(want) {
		mustLive(r.t, r.node(name))
		got := r.level(name)
		if !got.Known || got.Level != want[name] {
			return fmt.Errorf("%s ServiceLevel %v, want %d (all: %s)", name, got, want[name], r.levelsString())
		}
	}
	return nil
}

// waitLevels polls levelsAre every 10 ms for up to total and returns when
// it held.
func (r *rig) waitLevels(total time.Duration, want map[string]byte) time.Time {
	r.t.Helper()
	procs.CheckFor(r.t, total, 10*time.Millisecond, func() error { return r.levelsAre(want) })
	return time.Now()
}

func (r *rig) levelsString() string {
	var s string
	for _, sp := range r.specs {
		if w := r.watcher(sp.name); w != nil {
			s += fmt.Sprintf(" %s=%v", sp.name, w.w.Current())
		}
	}
	return s
}

// firstReading is the first reading of name at or after since that
// satisfies ok, if any.
func (r *rig) firstReading(name string, since time.Time, ok func(demo.Reading) bool) (demo.Reading, bool) {
	for _, rd := range r.watcher(name).history() {
		if !rd.At.Before(since) && ok(rd) {
			return rd, true
		}
	}
	return demo.Reading{}, false
}

// readingsSince are name's readings at or after since.
func (r *rig) readingsSince(name string, since time.Time) []demo.Reading {
	return r.watcher(name).Since(since)
}

// waitFirst waits up to total for a reading of name at or after since that
// satisfies ok, and returns it.
func (r *rig) waitFirst(total time.Duration, name string, since time.Time, what string, ok func(demo.Reading) bool) demo.Reading {
	r.t.Helper()
	var got demo.Reading
	procs.CheckFor(r.t, total, 10*time.Millisecond, func() error {
		rd, found := r.firstReading(name, since, ok)
		if !found {
			return fmt.Errorf("%s: no reading %s yet (now %v; all:%s)", name, what, r.level(name), r.levelsString())
		}
		got = rd
		return nil
	})
	return got
}

func is(level byte) func(demo.Reading) bool {
	return func(rd demo.Reading) bool { return rd.Known && rd.Level == level }
}

// view fetches name's cluster view.
func (r *rig) view(name string) (*procs.ClusterView, error) {
	n := r.node(name)
	if code, done := n.Exited(); done {
		return nil, fmt.Errorf("%s exited with code %d", name, code)
	}
	return n.Members()
}

// allUp checks that every node in names sees exactly the nodes in names
// Up, reachable and converged; it returns the first view.
func (r *rig) allUp(names []string) (*procs.ClusterView, error) {
	var want []string
	for _, n := range names {
		want = append(want, r.addr(n))
	}
	slices.Sort(want)
	var first *procs.ClusterView
	for _, name := range names {
		mustLive(r.t, r.node(name))
		v, err := r.view(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if v.SelfStatus != procs.StatusUp || !v.Converged {
			return nil, fmt.Errorf("%s not settled: %s", name, v)
		}
		var up []string
		for _, m := range v.Members {
			if m.Status == procs.StatusUp && m.Reachable {
				up = append(up, m.Address)
			}
		}
		slices.Sort(up)
		if !slices.Equal(up, want) {
			return nil, fmt.Errorf("%s: reachable Up members %v, want %v: %s", name, up, want, v)
		}
		if first == nil {
			first = v
		}
	}
	return first, nil
}

// waitAllUp polls allUp every 20 ms; it returns the view and when the
// poll first saw every node Up.
func (r *rig) waitAllUp(total time.Duration, names ...string) (*procs.ClusterView, time.Time) {
	r.t.Helper()
	var v *procs.ClusterView
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		var err error
		v, err = r.allUp(names)
		return err
	})
	return v, time.Now()
}

// expectedLevels is what a healthy rig publishes according to view: per
// ClusterId the oldest Up driver 250, every other Up driver 240.
func (r *rig) expectedLevels(v *procs.ClusterView, names ...string) map[string]byte {
	want := map[string]byte{}
	for _, name := range names {
		s := r.spec(name)
		if !slices.Contains(s.roles, driver) {
			continue
		}
		oldest, ok := v.OldestUp(driver, s.clusterID)
		if ok && r.nameOf(oldest.Address) == name {
			want[name] = Primary
		} else {
			want[name] = Secondary
		}
	}
	return want
}

// primaryOf returns the node of clusterID that want names Primary.
func primaryOf(want map[string]byte) []string {
	var out []string
	for _, n := range sortedKeys(want) {
		if want[n] == Primary {
			out = append(out, n)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// assertInvariant fails the test now if the sampler saw two Primaries in
// one ClusterId, and checks that it actually sampled.
func (r *rig) assertInvariant() {
	r.t.Helper()
	// A drill that ends fast (a pair formed and a crash replaced within a
	// second) may end before ten answered rounds: the sampler goes on
	// checking the state after the drill until it has them.
	procs.CheckFor(r.t, 10*time.Second, 50*time.Millisecond, func() error {
		if n := Answered(r.sampler.Rounds(), 1); n < 10 {
			return fmt.Errorf("invariant sampler: %d rounds with an answer so far", n)
		}
		return nil
	})
	if v := r.sampler.Violations(); len(v) > 0 {
		r.t.Fatalf("invariant sampler: %d rounds with two Primaries in one ClusterId, first: %v", len(v), v[0])
	}
	rounds := r.sampler.Rounds()
	r.t.Logf("invariant sampler: %d rounds, no two Primaries in one ClusterId", len(rounds))
}
