package clientmodes

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/procs"
)

// ClusterID is the rig's ClusterId.
const ClusterID = "modes"

// Tag is the counter's tag: device "press", tag "FastCounter".
const Tag = "press/FastCounter"

// PollInterval is how often each node polls the device: fast enough that
// every value of the 100 ms counter is seen by each node.
const PollInterval = 20 * time.Millisecond

// RigOptions configure a Rig.
type RigOptions struct {
	// RedundancySupport is OpcUa:RedundancySupport of both nodes ("" keeps
	// the node's default, Warm).
	RedundancySupport string
	// CounterPeriod is the device counter's period. Default
	// fielddevice.FastCounterPeriod (100 ms).
	CounterPeriod time.Duration
	// Edit changes node name's appsettings ("a", then "b") before it
	// starts.
	Edit func(name string, cfg map[string]any)
	// TestHooks starts the nodes with the test hooks on (POST
	// /debug/service-level); the rig hands each node's ServiceLevel to
	// its runtime as soon as it is ready, and again after a restart.
	TestHooks bool
}

// Rig is a pair of `otopcua host` nodes, a and b, serving one field
// device's counter.
type Rig struct {
	t     testing.TB
	dir   string
	Dev   *fielddevice.Device
	Nodes map[string]*procs.Node // "a", "b"
	// Cfgs are the nodes' appsettings as started.
	Cfgs map[string]map[string]any
	// Node is the counter's NodeId as the CLI takes it (ns=<N>;s=press/FastCounter).
	Node string
	// hooks: the nodes run with the test hooks (RigOptions.TestHooks).
	hooks bool
}

// waitReady waits until n serves OPC UA and, with the test hooks on,
// hands its ServiceLevel to the runtime.
func (r *Rig) waitReady(n *procs.Node) {
	r.t.Helper()
	n.WaitReady(60 * time.Second)
	if r.hooks {
		r.PinLevel(n, "runtime")
	}
}

// PinLevel makes n show ServiceLevel level (0–255) whatever its runtime
// computes, or hands it back to the runtime (level "runtime"). The rig
// must run with RigOptions.TestHooks.
func (r *Rig) PinLevel(n *procs.Node, level string) {
	r.t.Helper()
	if _, err := n.Post("/debug/service-level?level=" + level); err != nil {
		r.t.Fatalf("%s: ServiceLevel %s: %v", n.Name, level, err)
	}
}

// StartRig starts the device and its counter, the nodes a (first seed)
// and b, deploys the device and waits until both serve the counter and
// the pair is whole.
func StartRig(t testing.TB, o RigOptions) *Rig {
	t.Helper()
	r := &Rig{t: t, dir: t.TempDir(), Nodes: map[string]*procs.Node{}}
	devAddr := fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))
	dev, err := fielddevice.Start(devAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	r.Dev = dev
	period := o.CounterPeriod
	if period <= 0 {
		period = fielddevice.FastCounterPeriod
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { dev.RunCounter(ctx, fielddevice.PressFastCounter, period) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	ports := map[string]procs.Ports{"a": procs.NewPorts(t), "b": procs.NewPorts(t)}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports["a"].Cluster), fmt.Sprintf("127.0.0.1:%d", ports["b"].Cluster)}
	cfgs := map[string]map[string]any{}
	for _, name := range []string{"a", "b"} {
		cfg := procs.BaseConfig(name, ports[name])
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["Node"].(map[string]any)["ClusterId"] = ClusterID
		other := map[string]string{"a": "b", "b": "a"}[name]
		opc := cfg["OpcUa"].(map[string]any)
		opc["PeerApplicationUris"] = []string{URI(other)}
		if o.RedundancySupport != "" {
			opc["RedundancySupport"] = o.RedundancySupport
		}
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(r.dir, "config.db")}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		if o.Edit != nil {
			o.Edit(name, cfg)
		}
		cfgs[name] = cfg
	}
	r.Cfgs = cfgs
	var env []string
	if o.TestHooks {
		env = []string{host.EnvTestHooks + "=1"}
		r.hooks = true
	}
	for _, name := range []string{"a", "b"} {
		r.Nodes[name] = procs.Start(t, name, cfgs[name], env...)
		r.waitReady(r.Nodes[name])
	}
	procs.Deploy(t, cfgs["a"], deviceDoc(devAddr))
	r.Nodes["a"].WaitDeployed(1)
	r.Nodes["b"].WaitDeployed(1)
	r.Node = fmt.Sprintf("ns=%d;s=%s", r.namespace(r.Nodes["a"]), Tag)
	r.WaitWhole(60 * time.Second)
	return r
}

// URI is the ApplicationUri of node name.
func URI(name string) string { return "urn:" + name + ":otopcua" }

func deviceDoc(devAddr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": "press", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": %q, "timeout": "500ms",
     "tags": [{"name": "FastCounter", "table": "input", "address": %d, "type": "uint16"}]}
  ]
}`, ClusterID, devAddr, PollInterval.String(), fielddevice.PressFastCounter)
}

// namespace is the index of the ClusterId's tag namespace on n.
func (r *Rig) namespace(n *procs.Node) int {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, n.Endpoint(), uaclient.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	defer ch.Close()
	s, err := uaclient.NewSession(ctx, ch, "clientmodes", time.Minute, 5*time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	defer s.Close(ctx, time.Second)
	resp, err := s.Call(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}, 5*time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	arr, _ := resp.(*ua.ReadResponse).Results[0].Value.Value().([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+ClusterID {
			return i
		}
	}
	r.t.Fatalf("no tag namespace in %v", arr)
	return 0
}

// Levels reads both nodes' ServiceLevel (0 for a node that does not answer).
func (r *Rig) Levels() map[string]byte {
	out := map[string]byte{}
	for name, n := range r.Nodes {
		out[name], _ = procs.ReadServiceLevel(n.Endpoint())
	}
	return out
}

// WaitWhole waits until both nodes see both as Up, reachable members of
// a converged cluster, one node is at 250 (the Primary) and the other at
// 240, and returns the Primary's name.
func (r *Rig) WaitWhole(total time.Duration) string {
	r.t.Helper()
	var primary string
	procs.CheckFor(r.t, total, 100*time.Millisecond, func() error {
		for _, n := range r.Nodes {
			if err := bothUp(n); err != nil {
				return err
			}
		}
		l := r.Levels()
		switch {
		case l["a"] == 250 && l["b"] == 240:
			primary = "a"
		case l["b"] == 250 && l["a"] == 240:
			primary = "b"
		default:
			return fmt.Errorf("ServiceLevel a=%d b=%d, want one at 250 and the other at 240", l["a"], l["b"])
		}
		return nil
	})
	return primary
}

// bothUp checks n's view: converged, two members, both Up and reachable.
func bothUp(n *procs.Node) error {
	v, err := n.Members()
	if err != nil {
		return err
	}
	up := 0
	for _, m := range v.Members {
		if m.Status == "Up" && m.Reachable {
			up++
		}
	}
	if !v.Converged || up != 2 || len(v.Members) != 2 {
		return fmt.Errorf("%s sees %d of %d members Up and reachable (converged %v): %+v", n.Name, up, len(v.Members), v.Converged, v.Members)
	}
	return nil
}

// monitoredItems reads n's otopcua_opcua_monitored_items gauge.
func monitoredItems(n *procs.Node) (int, error) {
	body, err := n.Get("/metrics")
	if err != nil {
		return 0, err
	}
	m := itemsLine.FindStringSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("%s: no otopcua_opcua_monitored_items in /metrics", n.Name)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	return int(f), err
}

var itemsLine = regexp.MustCompile(`(?m)^otopcua_opcua_monitored_items(?:\{[^}]*\})? ([0-9.e+]+)$`)

// Drill is one run of trials.
type Drill struct {
	// Mode is the CLI's --mode.
	Mode string
	// WantMode is the mode the client must report (what auto chose; ""
	// means Mode).
	WantMode string
	// Trials is the number of SIGKILLs.
	Trials int
	// Interval is the publishing interval. Default 100 ms.
	Interval time.Duration
	// Symmetric: in the Hot modes the client's subscription exists on both
	// nodes, so before each kill the nodes must hold as many monitored
	// items as each other (the restarted node has its Hot placement back).
	Symmetric bool
	// Args are more CLI arguments.
	Args []string
	// Mirrored: the nodes mirror sessions (HotAndMirrored). Before each
	// kill the survivor must hold the mirror of the client's session
	// (otopcua_mirror_ready 1), and the failover must not fall back to
	// Warm.
	Mirrored bool
	// Env is added to the CLI's environment (OTOPCUA_PASSWORD=…).
	Env []string
	// Signal is what the victim gets: SIGKILL (default, the connection
	// closes at once) or SIGSTOP (a frozen process: the client finds it
	// silent after --lost-after; the test then kills it to restart it).
	Signal syscall.Signal
	// ManualFailover: instead of a signal, each trial asks the Primary's
	// admin API for a manual failover (POST /api/clusters/modes/failover,
	// with the nodes' Token, an Administrator's). The Primary shows
	// ServiceLevel 0 for its drain while it still serves, so the client
	// moves on a planned move (its level left the healthy band), then it
	// leaves and exits 0.
	ManualFailover bool
}

// Result is what a run of trials measured.
type Result struct {
	// FailoverTimes is each trial's Part 4 failover time as the client
	// printed it.
	FailoverTimes []time.Duration
	// Values is every Good counter value the client printed, in order.
	Values []Value
	// Others counts the notifications of the counter that were not Good
	// (a node's value before its first poll, …).
	Others []clientproc.Line
	// Client is the CLI process.
	Client *clientproc.Proc
}

// Value is one counter value the client printed.
type Value struct {
	V      uint16
	Server string // the ApplicationUri it came from
	Seq    int    // the CLI line
}

// Trials starts `otopcua client subscribe` on both node URLs in d.Mode
// and runs d.Trials times: SIGKILL of the node the client is on, the
// client's failover line, the node restarted at its address, the pair
// whole again. It returns the failover times and the value log; it fails
// the test when a step does not happen in time.
func (r *Rig) Trials(d Drill) Result {
	r.t.Helper()
	interval := d.Interval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	want := d.WantMode
	if want == "" {
		want = d.Mode
	}
	urls := r.Nodes["a"].Endpoint() + "," + r.Nodes["b"].Endpoint()
	args := append([]string{"subscribe", r.Node, "-F", urls, "--json", "--mode", d.Mode,
		"--interval", interval.String(), "--sampling-interval", "0", "--no-discovery"}, d.Args...)
	c := clientproc.StartEnv(r.t, d.Env, args...)
	conn := c.WaitFor(30*time.Second, 0, "connected event", func(l clientproc.Line) bool { return l.Type == clientproc.Connected })
	if conn.Mode != want {
		r.t.Fatalf("the client connected in mode %q, want %q: %s", conn.Mode, want, conn.Raw)
	}
	res := Result{Client: c}
	for trial := 1; trial <= d.Trials; trial++ {
		res.FailoverTimes = append(res.FailoverTimes, r.trial(c, d, trial, want))
	}
	r.t.Logf("mode %s: %d trials, failover times %v", want, d.Trials, res.FailoverTimes)
	res.Values, res.Others = values(c.All())
	return res
}

// trial runs one SIGKILL of the active node and returns the failover time.
func (r *Rig) trial(c *clientproc.Proc, d Drill, trial int, mode string) time.Duration {
	r.t.Helper()
	primary := r.WaitWhole(60 * time.Second)
	victim, survivor := r.Nodes[primary], r.Nodes[other(primary)]
	// The client is on the Primary, and its values flow.
	from := c.Next()
	if mode == "hot-b" {
		// Both servers report and the first copy of a value wins the
		// de-duplication: the values printed may all be the other
		// server's.
		c.WaitFor(10*time.Second, from, "a counter value", func(l clientproc.Line) bool { _, ok := counterValue(l); return ok })
	} else {
		// The client's first pick can be the Secondary: a server whose
		// ServiceLevel is known ranks above one whose level is not read
		// yet (a SignAndEncrypt channel under the race detector takes
		// seconds), and the client moves to the Primary once its higher
		// level has held for the prefer-hold (5 s).
		c.WaitFor(30*time.Second, from, "a counter value from the Primary "+primary, isValueFrom(URI(primary)))
	}
	if d.Symmetric {
		procs.CheckFor(r.t, 30*time.Second, 100*time.Millisecond, func() error {
			a, errA := monitoredItems(victim)
			b, errB := monitoredItems(survivor)
			if errA != nil || errB != nil || a != b || a < 2 {
				return fmt.Errorf("monitored items %s=%d (%v) %s=%d (%v): the client's Hot placement is not on both yet", victim.Name, a, errA, survivor.Name, b, errB)
			}
			return nil
		})
	}
	if d.Mirrored {
		WaitMirrorReady(r.t, survivor, 1)
		// The client watches the survivor (its ServiceLevel session there,
		// which the survivor serves and mirrors): the failover is a move to
		// a server it holds a channel to.
		waitMetricAtLeast(r.t, survivor, `otopcua_mirror_sessions{role="served"}`, 1)
	}
	mark := c.Next()
	sig := d.Signal
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	what := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGSTOP: "SIGSTOP"}[sig]
	if d.ManualFailover {
		what = "manual failover of"
		if _, err := victim.Post("/api/clusters/" + ClusterID + "/failover"); err != nil {
			r.t.Fatalf("trial %d: manual failover on %s: %v", trial, victim.Name, err)
		}
	} else {
		victim.Signal(sig)
	}
	ev := c.WaitFor(30*time.Second, mark, fmt.Sprintf("trial %d: failover to %s", trial, survivor.Name), func(l clientproc.Line) bool {
		return l.Type == clientproc.Failover && l.To.URI == URI(survivor.Name)
	})
	if ev.From.URI != URI(primary) || ev.Mode != mode || !ev.HasMs || ev.FailoverMs < 0 {
		r.t.Fatalf("trial %d: failover event %s, want from %s in mode %s with a failover time", trial, ev.Raw, URI(primary), mode)
	}
	if d.ManualFailover && !strings.Contains(ev.Reason, "healthy band") {
		r.t.Fatalf("trial %d: failover event %s, want a planned move (the Primary's level left the healthy band while it still served)", trial, ev.Raw)
	}
	if d.Mirrored && ev.Fallback != "" {
		r.t.Fatalf("trial %d: the mirrored failover fell back to Warm: %s", trial, ev.Raw)
	}
	c.WaitFor(10*time.Second, ev.Seq, "a counter value from the survivor "+survivor.Name, isValueFrom(URI(survivor.Name)))
	// Ten more values before the next trial: the log spans every trial.
	tenValuesSince(r.t, c, ev.Seq, "")
	switch {
	case d.ManualFailover:
		if code := victim.WaitExit(60 * time.Second); code != 0 {
			r.t.Fatalf("trial %d: %s exited %d after its manual failover, want 0", trial, victim.Name, code)
		}
	case sig != syscall.SIGKILL:
		victim.Signal(syscall.SIGKILL)
	}
	victim.WaitExit(30 * time.Second)
	victim.Restart()
	r.waitReady(victim)
	took := time.Duration(ev.FailoverMs * float64(time.Millisecond))
	r.t.Logf("trial %d: %s %s, failover to %s in %v (%s): %s", trial, what, primary, survivor.Name, took, mode, ev.Reason)
	return took
}

// tenValuesSince waits until the client printed ten counter values after
// its line seq, the last of them from the server uri ("": any).
func tenValuesSince(t testing.TB, c *clientproc.Proc, seq int, uri string) {
	t.Helper()
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if v, _ := values(c.Since(seq)); len(v) < 10 || uri != "" && v[len(v)-1].Server != uri {
			return fmt.Errorf("%d counter values since line %d, want 10 (the last from %q)", len(v), seq, uri)
		}
		return nil
	})
}

func other(name string) string { return map[string]string{"a": "b", "b": "a"}[name] }

func isValueFrom(uri string) func(clientproc.Line) bool {
	return func(l clientproc.Line) bool {
		_, ok := counterValue(l)
		return ok && l.Server == uri
	}
}

// counterValue is a Good notification's value as a uint16.
func counterValue(l clientproc.Line) (uint16, bool) {
	if l.Type != clientproc.Notification || l.Status != "Good" {
		return 0, false
	}
	var v *float64
	if json.Unmarshal(l.Value, &v) != nil || v == nil || *v < 0 || *v > 65535 || *v != float64(int(*v)) {
		return 0, false
	}
	return uint16(*v), true
}

// values splits the client's notifications into Good counter values and
// the others.
func values(lines []clientproc.Line) (vals []Value, others []clientproc.Line) {
	for _, l := range lines {
		if l.Type != clientproc.Notification {
			continue
		}
		if v, ok := counterValue(l); ok {
			vals = append(vals, Value{V: v, Server: l.Server, Seq: l.Seq})
		} else {
			others = append(others, l)
		}
	}
	return vals, others
}

// Contiguous checks a value log: every value is the one before plus one,
// modulo 65,536 — no value missed, none twice. The error names the first
// break with its neighbourhood.
func Contiguous(vals []Value) error {
	for i := 1; i < len(vals); i++ {
		if vals[i].V != vals[i-1].V+1 {
			lo, hi := max(0, i-3), min(len(vals), i+3)
			var ctx []string
			for _, v := range vals[lo:hi] {
				ctx = append(ctx, fmt.Sprintf("%d from %s (line %d)", v.V, v.Server, v.Seq))
			}
			what := "missed"
			if int16(vals[i].V-vals[i-1].V) <= 0 {
				what = "delivered twice or out of order"
			}
			return fmt.Errorf("value %d follows %d (%s): %s", vals[i].V, vals[i-1].V, what, strings.Join(ctx, ", "))
		}
	}
	return nil
}

// Percentiles are the median and the 99th percentile (nearest rank) of ds.
func Percentiles(ds []time.Duration) (median, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return rank(0.5), rank(0.99)
}

// WaitMirrorReady waits until n holds its peer's sessions whole
// (otopcua_mirror_ready 1) and at least sessions of them.
func WaitMirrorReady(t testing.TB, n *procs.Node, sessions int) {
	t.Helper()
	procs.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		ready, held := false, 0.0
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "otopcua_mirror_ready{") && strings.HasSuffix(l, " 1") {
				ready = true
			}
			if strings.HasPrefix(l, `otopcua_mirror_sessions{role="replica"`) {
				if f := strings.Fields(l); len(f) == 2 {
					held, _ = strconv.ParseFloat(f[1], 64)
				}
			}
		}
		if !ready || held < float64(sessions) {
			return fmt.Errorf("%s: mirror ready %v, %v replica sessions held (want %d)", n.Name, ready, held, sessions)
		}
		return nil
	})
}

// waitMetricAtLeast waits until n's /metrics has a line series whose value
// is at least want.
func waitMetricAtLeast(t testing.TB, n *procs.Node, series string, want float64) {
	t.Helper()
	procs.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(body, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == series {
				if v, _ := strconv.ParseFloat(f[1], 64); v >= want {
					return nil
				}
				return fmt.Errorf("%s: %s", n.Name, l)
			}
		}
		return fmt.Errorf("%s: no %s", n.Name, series)
	})
}
