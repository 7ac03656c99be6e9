package leaseetcd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/demo"
	"github.com/otopcua/otopcua/tests/failover"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// The drills' timings.
const (
	// stableAfter is lease-majority's default, which the drills run with
	// (the config sets no timing).
	stableAfter = config.DefaultStableAfterLeaseMajority
	// formTimeout bounds the formation of the pair.
	formTimeout = 60 * time.Second
	clusterID   = "site"
)

var names = []string{"a", "b"}

// rig is a pair (a, b; admin + driver; ClusterId site; one shared SQLite
// Config DB; lease-majority on the etcd lease) of real `otopcua host`
// processes, on loopback or on test hosts of their own, each watched by a
// subscribed OPC UA client and read by tests/failover's invariant sampler.
type rig struct {
	t      *testing.T
	dir    string
	ports  map[string]procs.Ports // loopback
	net    *netem.Net             // test hosts; nil on loopback
	client *netem.Host            // the SCADA client's test host
	lease  []string               // Cluster:Lease:Endpoints

	sampler *failover.Sampler

	mu    sync.Mutex
	nodes map[string]*procs.Node
	watch map[string]*watched
}

type watched struct {
	w *demo.Watcher
	failover.Recorder
}

// newRig is a pair on loopback (random ports).
func newRig(t *testing.T) *rig {
	r := &rig{t: t, dir: t.TempDir(), ports: map[string]procs.Ports{}, nodes: map[string]*procs.Node{}, watch: map[string]*watched{}}
	for _, n := range names {
		r.ports[n] = procs.NewPorts(t)
	}
	r.startSampler()
	return r
}

// newHostRig is a pair on test hosts a and b; the Net also has extra
// hosts (named by the caller) and a host for the OPC UA clients.
func newHostRig(t *testing.T, extra ...string) *rig {
	n := netem.NewNet(t, append(append(slices.Clone(names), extra...), "scada")...)
	r := &rig{t: t, dir: t.TempDir(), net: n, client: n.Host("scada"), nodes: map[string]*procs.Node{}, watch: map[string]*watched{}}
	r.startSampler()
	return r
}

func (r *rig) startSampler() {
	r.sampler = failover.NewSampler(50*time.Millisecond, 300*time.Millisecond)
	r.sampler.Start()
	r.t.Cleanup(func() {
		r.sampler.Stop()
		if v := r.sampler.Violations(); len(v) > 0 {
			r.t.Errorf("invariant sampler: %d rounds with two 250s, first: %v", len(v), v[0])
		}
	})
}

// addr is name's cluster address.
func (r *rig) addr(name string) string {
	if r.net != nil {
		return r.net.Host(name).Addr + ":4053"
	}
	return fmt.Sprintf("127.0.0.1:%d", r.ports[name].Cluster)
}

// config is name's appsettings: both nodes seeds, the other one its OPC UA
// peer, lease-majority on the etcd lease at r.lease.
func (r *rig) config(name string) map[string]any {
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
	for _, o := range names {
		seeds = append(seeds, r.addr(o))
		if o != name {
			peers = append(peers, "urn:"+o+":otopcua")
		}
	}
	c := cfg["Cluster"].(map[string]any)
	c["SeedNodes"] = seeds
	c["SplitBrainResolverStrategy"] = "lease-majority"
	c["Lease"] = map[string]any{"Provider": "etcd", "Endpoints": r.lease} // stable-after, pause, TTL, hold: the defaults
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = peers
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(r.dir, "config.db")}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

func (r *rig) start(name string) {
	r.t.Helper()
	cfg := r.config(name)
	var n *procs.Node
	if r.net != nil {
		h := r.net.Host(name)
		n = procs.StartWith(r.t, name, cfg, procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
	} else {
		n = procs.Start(r.t, name, cfg)
	}
	endpoint := n.Endpoint()
	if r.net != nil {
		endpoint = "opc.tcp://" + netem.Forward(r.t, r.client, r.net.Host(name).Addr+":4840")
	}
	w := &watched{}
	w.w = demo.Watch(context.Background(), endpoint, demo.WatchOptions{}, w.Add)
	r.t.Cleanup(w.w.Close)
	r.mu.Lock()
	r.nodes[name], r.watch[name] = n, w
	r.mu.Unlock()
	r.sampler.Add(failover.Target{Name: name, ClusterID: clusterID, Read: w.w.Read})
}

func (r *rig) node(name string) *procs.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes[name]
}

func (r *rig) watcher(name string) *watched {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watch[name]
}

func (r *rig) level(name string) demo.Reading { return r.watcher(name).w.Current() }

func (r *rig) levelsString() string {
	var s string
	for _, n := range names {
		if w := r.watcher(n); w != nil {
			s += fmt.Sprintf(" %s=%v", n, w.w.Current())
		}
	}
	return s
}

func (r *rig) mustLive(name string) {
	r.t.Helper()
	if code, done := r.node(name).Exited(); done {
		r.t.Fatalf("%s exited unexpectedly with code %d\n%s", name, code, r.node(name).Log())
	}
}

// levelsAre checks every named node's current level as its client sees it.
func (r *rig) levelsAre(want map[string]byte) error {
	for _, name := range names {
		lv, ok := want[name]
		if !ok {
			continue
		}
		r.mustLive(name)
		if got := r.level(name); !got.Known || got.Level != lv {
			return fmt.Errorf("%s ServiceLevel %v, want %d (all:%s)", name, got, lv, r.levelsString())
		}
	}
	return nil
}

// healthy starts both nodes, waits until both are Up and converged and
// the pair reads 250/240, lets the levels hold for 3 s (the failure
// detectors gather heartbeats) and returns the Primary and the Secondary.
func (r *rig) healthy() (primary, secondary string) {
	r.t.Helper()
	for _, n := range names {
		r.start(n)
	}
	procs.CheckFor(r.t, formTimeout, 20*time.Millisecond, func() error {
		for _, n := range names {
			r.mustLive(n)
			v, err := r.node(n).Members()
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			if v.SelfStatus != procs.StatusUp || !v.Converged || len(v.UpAddresses()) != 2 {
				return fmt.Errorf("%s not settled: %s", n, v)
			}
		}
		return nil
	})
	procs.CheckFor(r.t, 30*time.Second, 10*time.Millisecond, func() error {
		a, b := r.level("a"), r.level("b")
		switch {
		case a.Known && b.Known && a.Level == failover.Primary && b.Level == failover.Secondary:
			primary, secondary = "a", "b"
		case a.Known && b.Known && b.Level == failover.Primary && a.Level == failover.Secondary:
			primary, secondary = "b", "a"
		default:
			return fmt.Errorf("not 250/240 yet:%s", r.levelsString())
		}
		return nil
	})
	procs.Holds(r.t, 3*time.Second, 50*time.Millisecond, func() error {
		return r.levelsAre(map[string]byte{primary: failover.Primary, secondary: failover.Secondary})
	})
	r.t.Logf("healthy: Primary %s, Secondary %s:%s", primary, secondary, r.levelsString())
	return primary, secondary
}

// waitFirst waits up to total for name's first reading at or after since
// with level, and returns it.
func (r *rig) waitFirst(total time.Duration, name string, since time.Time, level byte) demo.Reading {
	r.t.Helper()
	var got demo.Reading
	procs.CheckFor(r.t, total, 10*time.Millisecond, func() error {
		for _, rd := range r.watcher(name).History() {
			if !rd.At.Before(since) && rd.Known && rd.Level == level {
				got = rd
				return nil
			}
		}
		return fmt.Errorf("%s: no reading %d since the failure yet (all:%s)", name, level, r.levelsString())
	})
	return got
}

// readingsSince are name's readings at or after since.
func (r *rig) readingsSince(name string, since time.Time) []demo.Reading {
	return r.watcher(name).Since(since)
}

// signal sends sig to name and returns when.
func (r *rig) signal(name string, sig syscall.Signal) time.Time {
	at := time.Now()
	r.node(name).Signal(sig)
	return at
}

// assertInvariant fails the drill if the sampler saw two 250s in one
// round, and checks that it sampled both nodes at all (a sampler that
// never got an answer checked nothing).
func (r *rig) assertInvariant() {
	r.t.Helper()
	if v := r.sampler.Violations(); len(v) > 0 {
		r.t.Fatalf("invariant sampler: %d rounds with two 250s, first: %v", len(v), v[0])
	}
	rounds := r.sampler.Rounds()
	both := failover.Answered(rounds, 2) // the rig's two nodes
	if both < 20 {
		r.t.Fatalf("invariant sampler: only %d of %d rounds read both nodes; the invariant was not checked", both, len(rounds))
	}
	r.t.Logf("invariant sampler: %d rounds (%d with both nodes answering), never two 250s", len(rounds), both)
}
