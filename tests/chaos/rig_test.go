package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/etcd"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// pairSpec is one ClusterId of the run: its downing strategy and lease.
type pairSpec struct {
	ID      string // ClusterId
	Downing string // check.AutoDown or check.LeaseMajority
	Lease   string // Cluster:Lease:Provider: "" (none), "configdb", "etcd"
	Prefix  string // of its node names (PREFIX-a, PREFIX-b) and device (plc_PREFIX)
}

// pairSpecs are the pairs a full run has: one per downing strategy the
// product supports for a pair.
var pairSpecs = []pairSpec{
	{ID: "auto-down", Downing: check.AutoDown, Prefix: "auto"},
	{ID: "lease-pg", Downing: check.LeaseMajority, Lease: "configdb", Prefix: "pg"},
	{ID: "lease-etcd", Downing: check.LeaseMajority, Lease: "etcd", Prefix: "etcd"},
}

func pairIDs(specs []pairSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.ID
	}
	return out
}

// The nodes' ports, the same on every test host (each is a namespace of
// its own).
const (
	clusterPort = 4053
	opcPort     = 4840
	httpPort    = 8080
)

// Device registers and the alarm of every pair's deployment.
const (
	counterReg  = 0 // input register the run bumps every 100 ms
	setpointReg = 1 // holding register the client writes
	levelReg    = 2 // holding register the run toggles under the alarm
	alarmName   = "HighLevel"
	// supervisorDelay is the supervisor's restart delay for a node that
	// exited by itself (systemd's RestartSec).
	supervisorDelay = time.Second
	adminUser       = "chaos"
	adminPassword   = "chaos-run-administrator"
)

// rig is one chaos run's world: the Config DB, the etcd member, the test
// hosts, the devices and every node's paths, the nodes, the samplers and
// the clients, and the recorder of what they saw.
type rig struct {
	t     *testing.T
	o     options
	dir   string // logs and records; kept when the test fails
	bin   string // the otopcua binary (PlainBinary)
	rec   *recorder
	db    *pg.Server
	etcd  *etcd.Cluster
	net   *netem.Net
	scada *netem.Host // the SCADA host: samplers' and clients' path to the nodes
	pairs []*pair
	nodes map[string]*node
	token string // an Administrator's API token (manual failovers)
	env   []string

	stop    chan struct{} // closed when the run ends
	wg      sync.WaitGroup
	endOnce sync.Once
}

// pair is one ClusterId: its two nodes, its device and its client.
type pair struct {
	spec   pairSpec
	index  int
	nodes  [2]*node // a (first seed), b
	dev    *fielddevice.Device
	device string // device name (deployment and checker)
	doc    string // the deployment document
	ns     uint16 // index of the ClusterId's namespace on its nodes
	client *pairClient
}

func (p *pair) other(n *node) *node {
	if p.nodes[0] == n {
		return p.nodes[1]
	}
	return p.nodes[0]
}

// newRig builds the world of o's pairs, with nothing started on the test
// hosts yet.
func newRig(t *testing.T, o options) *rig {
	t.Helper()
	dir, err := os.MkdirTemp("", "otopcua-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos seed %d: logs and records kept in %s (nodes' logs under nodes/, the run's records beside them)", o.Seed, dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	r := &rig{t: t, o: o, dir: dir, bin: ownCopy(t, procs.PlainBinary(t), dir), nodes: map[string]*node{}, stop: make(chan struct{})}
	r.rec = newRecorder(o.Seed)
	if o.Mutation != "" {
		r.env = []string{"OTOPCUA_TEST_MUTATION=" + o.Mutation, host.EnvTestHooks + "=1"}
	}
	var names []string
	for i, id := range o.Clusters {
		spec := pairSpecs[slices.IndexFunc(pairSpecs, func(s pairSpec) bool { return s.ID == id })]
		p := &pair{spec: spec, index: i, device: "plc_" + spec.Prefix}
		r.pairs = append(r.pairs, p)
		names = append(names, spec.Prefix+"-a", spec.Prefix+"-b")
	}
	r.db = pg.Start(t)
	for _, p := range r.pairs {
		if p.spec.Lease == "etcd" {
			r.etcd = etcd.Start(t, 1)
		}
	}
	r.net = netem.NewNet(t, append(names, "scada")...)
	r.scada = r.net.Host("scada")
	for _, p := range r.pairs {
		r.addDevice(p)
		for i, suffix := range []string{"-a", "-b"} {
			n := r.addNode(p, p.spec.Prefix+suffix)
			p.nodes[i] = n
		}
	}
	for _, p := range r.pairs {
		for _, n := range p.nodes {
			n.cfg = r.config(n)
		}
	}
	return r
}

// ownCopy links (or copies) the binary bin into dir and returns the copy:
// the supervisor starts nodes from it for the whole run, whatever happens
// meanwhile to the shared build directory under the machine's temporary
// directory (a run lost its binary to a cleanup there after six minutes).
func ownCopy(t *testing.T, bin, dir string) string {
	t.Helper()
	dst := filepath.Join(dir, "otopcua")
	if err := os.Link(bin, dst); err == nil {
		return dst
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// addDevice starts p's Modbus TCP device, its counter and its alarm
// toggle. Every write a client (a node) makes is recorded with the writer
// its source address names.
func (r *rig) addDevice(p *pair) {
	dev, err := fielddevice.StartWith(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(r.t)), fielddevice.Options{
		MaxClients: 64,
		OnWrite:    func(w fielddevice.Write) { r.rec.deviceWrite(p.device, w) },
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(dev.Close)
	p.dev = dev
	p.doc = deploymentDoc(p.spec.ID, p.device, dev.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { dev.RunCounter(ctx, counterReg, 100*time.Millisecond) })
	wg.Go(func() { r.toggleAlarm(ctx, p) })
	r.t.Cleanup(func() { cancel(); wg.Wait() })
}

// toggleAlarm moves p's Level register across the alarm's threshold every
// 3 s until ctx ends: every toggle is an alarm transition.
func (r *rig) toggleAlarm(ctx context.Context, p *pair) {
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	high := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		high = !high
		v := uint16(0)
		if high {
			v = 100
		}
		p.dev.SetHolding(levelReg, v)
		r.rec.toggle(p.spec.ID)
	}
}

// deploymentDoc is a pair's deployment: the device with the counter, the
// writable setpoint and the level under the alarm.
func deploymentDoc(clusterID, device, addr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": %q, "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": "00:00:00.100", "timeout": "500ms",
     "tags": [
       {"name": "Counter", "table": "input", "address": %d, "type": "uint16"},
       {"name": "Setpoint", "table": "holding", "address": %d, "type": "uint16", "writable": true},
       {"name": "Level", "table": "holding", "address": %d, "type": "int16"}
     ]}
  ],
  "alarms": [
    {"name": %q, "source": "%s/Level", "condition": "%s.Level > 50", "severity": 700, "message": "Level above 50"}
  ]
}`, clusterID, device, addr, counterReg, setpointReg, levelReg, alarmName, device, device)
}

// addNode gives node name of p its paths: to the Config DB through a proxy
// the run can slow, to the device through a proxy it can cut (dialling
// from an address of the node's own, so the device's write log names the
// writer), to the etcd member, and from the SCADA host to its OPC UA port.
func (r *rig) addNode(p *pair, name string) *node {
	h := r.net.Host(name)
	n := &node{name: name, pair: p, host: h, r: r, dir: r.nodeDir(name)}
	n.src = net.IPv4(127, 0, 0, byte(11+len(r.nodes)))
	n.dbPath = netem.NewProxy(r.t, "127.0.0.1:0", r.db.Addr())
	netem.ForwardFrom(r.t, h, r.db.Addr(), n.dbPath.Addr())
	n.devPath = netem.NewProxy(r.t, "127.0.0.1:0", p.dev.Addr())
	n.devPath.SetSource(n.src)
	netem.ForwardFrom(r.t, h, p.dev.Addr(), n.devPath.Addr())
	if p.spec.Lease == "etcd" {
		for _, e := range r.etcd.Endpoints() {
			addr := e[len("http://"):]
			netem.ForwardFrom(r.t, h, addr, addr)
		}
	}
	n.endpoint = "opc.tcp://" + netem.Forward(r.t, r.scada, h.Addr+":"+strconv.Itoa(opcPort))
	r.rec.writer(n.src.String(), name)
	r.nodes[name] = n
	return n
}

func (r *rig) nodeDir(name string) string {
	d := fmt.Sprintf("%s/nodes/%s", r.dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		r.t.Fatal(err)
	}
	return d
}

// config is n's appsettings: its test host's address, both nodes of its
// pair as seeds in the same order, its pair's downing strategy and lease,
// the PostgreSQL Config DB, forwarded writes.
func (r *rig) config(n *node) map[string]any {
	p := n.pair
	cfg := procs.BaseConfig(n.name, procs.Ports{Cluster: clusterPort, OpcUa: opcPort, HTTP: httpPort})
	c := cfg["Cluster"].(map[string]any)
	c["Hostname"], c["PublicHostname"] = n.host.Addr, n.host.Addr
	c["SeedNodes"] = []string{p.nodes[0].host.Addr + ":" + strconv.Itoa(clusterPort), p.nodes[1].host.Addr + ":" + strconv.Itoa(clusterPort)}
	switch p.spec.Lease {
	case "":
		c["SplitBrainResolverStrategy"] = "auto-down"
	case "configdb":
		c["SplitBrainResolverStrategy"] = "lease-majority"
		c["Lease"] = map[string]any{"Provider": "configdb"}
	case "etcd":
		c["SplitBrainResolverStrategy"] = "lease-majority"
		c["Lease"] = map[string]any{"Provider": "etcd", "Endpoints": r.etcd.Endpoints()}
	}
	cfg["Node"].(map[string]any)["ClusterId"] = p.spec.ID
	opc := cfg["OpcUa"].(map[string]any)
	opc["PeerApplicationUris"] = []string{uri(p.other(n).name)}
	opc["WriteMode"] = "forward"
	cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": r.db.DSN()}
	cfg["Deployment"] = map[string]any{"PollInterval": "1s"}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

// uri is node name's ApplicationUri.
func uri(name string) string { return "urn:" + name + ":otopcua" }

// setUp stores the Administrator and every pair's deployment, starts the
// nodes (first seeds first) and the samplers, waits until every pair is
// whole, and starts the clients.
func (r *rig) setUp() {
	r.t.Helper()
	cfg := r.pairs[0].nodes[0].cfg
	r.token = procs.AddUserWith(r.t, r.bin, cfg, adminUser, "Administrator", adminPassword)
	for _, p := range r.pairs {
		procs.DeployWith(r.t, r.bin, p.nodes[0].cfg, p.doc)
	}
	for i := range 2 {
		for _, p := range r.pairs {
			p.nodes[i].start()
		}
	}
	// The run's end before the nodes' cleanups kill them: no supervisor
	// starts a node again once the test is over.
	r.t.Cleanup(r.end)
	r.rec.begin(time.Now())
	for _, n := range r.nodes {
		r.wg.Go(func() { r.sample(n) })
	}
	for _, p := range r.pairs {
		for _, n := range p.nodes {
			n.proc.WaitReady(90 * time.Second)
		}
	}
	for _, p := range r.pairs {
		poll.CheckFor(r.t, 120*time.Second, 100*time.Millisecond, func() error { return r.ready(p) })
	}
	for _, p := range r.pairs {
		r.startClient(p)
	}
	r.t.Logf("every pair whole and its client writing %s after the nodes started", time.Since(r.rec.origin).Round(time.Second))
}

// ready reports nil when p can start its run: whole, or under a mutation
// (which may break exactly that: secondary-claims-primary shows two 250s,
// secondary-stuck-low a 199 beside the 250) one node at 250 and both
// answering 240–250, or 199 under secondary-stuck-low.
func (r *rig) ready(p *pair) error {
	if r.o.Mutation == "" {
		return r.whole(p)
	}
	low := check.LevelSecondary
	if strings.Contains(r.o.Mutation, mutation.SecondaryStuckLow) {
		low = mutation.StuckLowLevel
	}
	primary := false
	for _, n := range p.nodes {
		l, ok := r.rec.latest(n.name, time.Second)
		if !ok || l < low || l > check.LevelPrimary || l != check.LevelPrimary && l != check.LevelSecondary && l != low {
			return fmt.Errorf("%s: %s", p.spec.ID, r.levelsText(p))
		}
		primary = primary || l == check.LevelPrimary
	}
	if !primary {
		return fmt.Errorf("%s: no Primary: %s", p.spec.ID, r.levelsText(p))
	}
	return nil
}

// whole reports nil when p's latest samples (under a second old) show one
// node at 250 and the other at 240.
func (r *rig) whole(p *pair) error {
	a, okA := r.rec.latest(p.nodes[0].name, time.Second)
	b, okB := r.rec.latest(p.nodes[1].name, time.Second)
	if okA && okB && (a == check.LevelPrimary && b == check.LevelSecondary || a == check.LevelSecondary && b == check.LevelPrimary) {
		return nil
	}
	return fmt.Errorf("%s: %s", p.spec.ID, r.levelsText(p))
}

// levelsText is p's nodes' latest ServiceLevels, for a message.
func (r *rig) levelsText(p *pair) string {
	s := ""
	for _, n := range p.nodes {
		if l, ok := r.rec.latest(n.name, time.Second); ok {
			s += fmt.Sprintf(" %s=%d", n.name, l)
		} else {
			s += fmt.Sprintf(" %s=?", n.name)
		}
	}
	return s[1:]
}

// end stops the samplers, the clients and the supervisors (no node is
// started again), once.
func (r *rig) end() {
	r.endOnce.Do(func() {
		close(r.stop)
		for _, p := range r.pairs {
			if p.client != nil {
				p.client.close()
			}
		}
		r.wg.Wait()
		for _, n := range r.nodes {
			n.retire()
		}
	})
}

// alarmRows reads alarm_history.
func (r *rig) alarmRows() ([]alarmRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.db.DSN())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT cluster_id, alarm, transition_id, event_time FROM alarm_history ORDER BY event_time, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []alarmRow
	for rows.Next() {
		var a alarmRow
		if err := rows.Scan(&a.cluster, &a.alarm, &a.transition, &a.at); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

type alarmRow struct {
	cluster, alarm, transition string
	at                         time.Time
}
