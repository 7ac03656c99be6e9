package leasepg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	clusterID = "site"
	// stableAfter and ttl are lease-majority's defaults, which the drills
	// run with (the config sets neither).
	stableAfter = config.DefaultStableAfterLeaseMajority
	ttl         = config.DefaultLeaseTtl
	// pause is the failure detector's acceptable heartbeat pause (its
	// lease-majority default): a Primary that lost its peer and cannot
	// take the lease is fenced once the peer has been silent this long.
	pause = config.DefaultAcceptableHeartbeatPauseLeaseMajority
	// slack is what a shared 2-core machine adds to a documented bound.
	slack = 2 * time.Second
	// levels.
	primary   byte = 250
	secondary byte = 240
	degraded  byte = 100
)

// rig is one drill: PostgreSQL, the device, the test hosts, the nodes, the
// sampler and the writer.
type rig struct {
	t     *testing.T
	db    *pg.Server
	dev   *fielddevice.Device
	net   *netem.Net
	scada *netem.Host

	dbPath map[string]*netem.Proxy // node → its path to PostgreSQL
	cfgs   map[string]map[string]any
	nodes  map[string]*procs.Node
	ua     map[string]string // node → opc.tcp endpoint (a root-namespace forwarder through the scada host)

	devMu   sync.Mutex
	devLog  []devWrite // devMu must be held.
	sampler *sampler
	writer  *writer
}

// devWrite is one value the device received at the Setpoint register.
type devWrite struct {
	At    time.Time
	Value uint16
}

// by tells which node's writer sent v.
func by(v uint16) string {
	switch {
	case v >= 10000 && v < 20000:
		return "a"
	case v >= 20000 && v < 30000:
		return "b"
	}
	return "?"
}

func other(n string) string {
	if n == "a" {
		return "b"
	}
	return "a"
}

// newRig starts PostgreSQL and the device on loopback, the test hosts a, b
// and scada, and the forwarders; the nodes are started by start.
func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, dbPath: map[string]*netem.Proxy{}, cfgs: map[string]map[string]any{}, nodes: map[string]*procs.Node{}, ua: map[string]string{}}
	r.db = pg.Start(t)
	dev, err := fielddevice.StartWith(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)), fielddevice.Options{OnWrite: func(w fielddevice.Write) {
		if w.Table == fielddevice.Holding && w.Address == 0 && len(w.Words) > 0 {
			r.devMu.Lock()
			r.devLog = append(r.devLog, devWrite{At: time.Now(), Value: w.Words[0]})
			r.devMu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	r.dev = dev
	r.net = netem.NewNet(t, "a", "b", "scada")
	r.scada = r.net.Host("scada")
	for _, name := range []string{"a", "b"} {
		h := r.net.Host(name)
		// The node's own path to PostgreSQL: its loopback at the server's
		// port → this forwarder → a proxy the test can blackhole → the
		// server. The device is reached the same way, never cut.
		p := netem.NewProxy(t, "127.0.0.1:0", r.db.Addr())
		r.dbPath[name] = p
		netem.ForwardFrom(t, h, r.db.Addr(), p.Addr())
		netem.ForwardFrom(t, h, dev.Addr(), dev.Addr())
		r.ua[name] = "opc.tcp://" + netem.Forward(t, r.scada, h.Addr+":4840")
	}
	r.sampler = newSampler(t, r.ua)
	r.writer = newWriter(t, r.ua)
	return r
}

// config is name's appsettings: test host addresses, both nodes seeds in
// the same order, lease-majority on the PostgreSQL Config DB lease.
func (r *rig) config(name string) map[string]any {
	h := r.net.Host(name)
	cfg := procs.BaseConfig(name, procs.Ports{Cluster: 4053, OpcUa: 4840, HTTP: 8080})
	c := cfg["Cluster"].(map[string]any)
	c["Hostname"], c["PublicHostname"] = h.Addr, h.Addr
	c["SeedNodes"] = []string{r.net.Host("a").Addr + ":4053", r.net.Host("b").Addr + ":4053"}
	c["SplitBrainResolverStrategy"] = "lease-majority"
	c["Lease"] = map[string]any{"Provider": "configdb"} // stable-after, pause, TTL, hold: the defaults
	cfg["Http"].(map[string]any)["Hostname"] = "127.0.0.1"
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other(name) + ":otopcua"}
	cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": r.db.DSN()}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

// healthy starts a then b, deploys the device, waits for a at 250 and b
// at 240 and for both writers' values to be served (a's reaching the
// device), and returns the Primary and the Secondary.
func (r *rig) healthy() (p, s string) {
	r.t.Helper()
	for _, name := range []string{"a", "b"} {
		h := r.net.Host(name)
		r.cfgs[name] = r.config(name)
		r.nodes[name] = procs.StartWith(r.t, name, r.cfgs[name], procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
		r.nodes[name].WaitReady(60 * time.Second)
	}
	r.t.Cleanup(r.keepLogs) // runs before the nodes' cleanups and their directories' removal
	procs.Deploy(r.t, r.cfgs["a"], deviceDoc(r.dev.Addr()))
	for _, n := range r.nodes {
		n.WaitDeployed(1)
	}
	start := time.Now()
	r.sampler.start()
	at := r.waitLevels(90*time.Second, map[string]byte{"a": primary, "b": secondary})
	p, s = "a", "b"
	r.t.Logf("healthy: a=250 b=240 %v after the sampler started", at.Sub(start).Round(time.Millisecond))
	r.writer.start()
	since := time.Now()
	procs.CheckFor(r.t, 30*time.Second, 50*time.Millisecond, func() error {
		if r.countBy(p, since, time.Time{}) < 3 {
			return fmt.Errorf("the device has not received 3 of %s's values yet (log %s)", p, r.devSummary(since))
		}
		return nil
	})
	if n := r.countBy(s, since, time.Time{}); n > 0 {
		r.t.Fatalf("healthy pair: %d of the Secondary %s's values reached the device", n, s)
	}
	return p, s
}

func deviceDoc(devAddr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": "00:00:00.100", "timeout": "500ms",
     "tags": [{"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true}]}
  ]
}`, clusterID, devAddr)
}

// waitLevels waits until one sampled round shows every named node at its
// wanted level, and returns that round's time.
func (r *rig) waitLevels(total time.Duration, want map[string]byte) time.Time {
	r.t.Helper()
	var at time.Time
	since := time.Now()
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		for _, rd := range r.sampler.since(since) {
			ok := true
			for n, l := range want {
				if o := rd.obs[n]; !o.ok || o.level != l {
					ok = false
				}
			}
			if ok {
				at = rd.at
				return nil
			}
		}
		return fmt.Errorf("no round with %v yet; last %s", want, r.sampler.last())
	})
	return at
}

// waitLevel waits for the first round at or after since where node reads
// level.
func (r *rig) waitLevel(total time.Duration, node string, level byte, since time.Time) time.Time {
	r.t.Helper()
	var at time.Time
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		for _, rd := range r.sampler.since(since) {
			if o := rd.obs[node]; o.ok && o.level == level {
				at = rd.at
				return nil
			}
		}
		return fmt.Errorf("%s has not read %d since %s; last %s", node, level, since.Format("15:04:05.000"), r.sampler.last())
	})
	return at
}

// writes returns the device's log within [from, to) (zero to: until now).
func (r *rig) writes(from, to time.Time) []devWrite {
	r.devMu.Lock()
	defer r.devMu.Unlock()
	var out []devWrite
	for _, w := range r.devLog {
		if !w.At.Before(from) && (to.IsZero() || w.At.Before(to)) {
			out = append(out, w)
		}
	}
	return out
}

func (r *rig) countBy(node string, from, to time.Time) int {
	n := 0
	for _, w := range r.writes(from, to) {
		if by(w.Value) == node {
			n++
		}
	}
	return n
}

// lastBy is the last device write by node within [from, now), if any.
func (r *rig) lastBy(node string, from time.Time) (devWrite, bool) {
	ws := r.writes(from, time.Time{})
	for i := len(ws) - 1; i >= 0; i-- {
		if by(ws[i].Value) == node {
			return ws[i], true
		}
	}
	return devWrite{}, false
}

// firstBy is the first device write by node at or after from, if any.
func (r *rig) firstBy(node string, from time.Time) (devWrite, bool) {
	for _, w := range r.writes(from, time.Time{}) {
		if by(w.Value) == node {
			return w, true
		}
	}
	return devWrite{}, false
}

// switches counts the changes of writer along the device log within
// [from, now).
func (r *rig) switches(from time.Time) int {
	n, prev := 0, ""
	for _, w := range r.writes(from, time.Time{}) {
		b := by(w.Value)
		if prev != "" && b != prev {
			n++
		}
		prev = b
	}
	return n
}

// devSummary is a short account of the device log from `from` on.
func (r *rig) devSummary(from time.Time) string {
	ws := r.writes(from, time.Time{})
	cnt := map[string]int{}
	for _, w := range ws {
		cnt[by(w.Value)]++
	}
	var tail []string
	for _, w := range ws[max(0, len(ws)-6):] {
		tail = append(tail, fmt.Sprintf("%s=%d", w.At.Format("15:04:05.000"), w.Value))
	}
	return fmt.Sprintf("%d writes (a %d, b %d, other %d), last: %s", len(ws), cnt["a"], cnt["b"], cnt["?"], strings.Join(tail, " "))
}

// assertOnePrimary fails unless the sampler answered enough rounds and no
// round from `from` on shows both nodes at 250.
func (r *rig) assertOnePrimary(from time.Time) {
	r.t.Helper()
	rounds := r.sampler.since(from)
	answered, both := 0, 0
	var first time.Time
	for _, rd := range rounds {
		if rd.obs["a"].ok || rd.obs["b"].ok {
			answered++
		}
		if rd.obs["a"].ok && rd.obs["b"].ok && rd.obs["a"].level == primary && rd.obs["b"].level == primary {
			if both == 0 {
				first = rd.at
			}
			both++
		}
	}
	if both > 0 {
		r.t.Fatalf("sampler: %d rounds with a and b both at 250, the first at %s", both, first.Format("15:04:05.000"))
	}
	if answered < 20 {
		r.t.Fatalf("sampler: only %d of %d rounds had an answer; the invariant was not checked", answered, len(rounds))
	}
	r.t.Logf("sampler: %d rounds (%d answered) since %s, none with two 250s", len(rounds), answered, from.Format("15:04:05.000"))
}

// signal sends sig to node and returns when.
func (r *rig) signal(node string, sig syscall.Signal) time.Time {
	at := time.Now()
	r.nodes[node].Signal(sig)
	return at
}

// logLines are node's log lines containing any of the product's lease
// markers, for the report.
func (r *rig) logLines(node string) string {
	var out []string
	for _, l := range strings.Split(r.nodes[node].Log(), "\n") {
		if strings.Contains(l, "dataplane: write") {
			continue
		}
		for _, m := range []string{"Primary licence", "lease acquired", "lease lost", "lease store did not answer", "promotion hold", "cluster crash fast path", "could not acquire the lease", "downing"} {
			if strings.Contains(l, m) {
				if len(l) > 400 {
					l = l[:400] + "…"
				}
				out = append(out, l)
				break
			}
		}
	}
	if len(out) > 40 {
		out = append(out[:20], append([]string{"…"}, out[len(out)-20:]...)...)
	}
	return strings.Join(out, "\n")
}

// keepLogs copies the nodes' logs into $LEASEPG_LOGDIR, when set, as
// <test>-<node>.log: the evidence of a passing drill too.
func (r *rig) keepLogs() {
	dir := os.Getenv("LEASEPG_LOGDIR")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	for n, node := range r.nodes {
		_ = os.WriteFile(filepath.Join(dir, r.t.Name()+"-"+n+".log"), []byte(node.Log()), 0o644)
	}
}

// ---- OPC UA clients (gopcua) ----

// ---- sampler ----

type obs struct {
	level byte
	ok    bool
}

type round struct {
	at  time.Time
	obs map[string]obs
}

// sampler reads Server.ServiceLevel of every node every 50 ms over
// sessions of its own: one loop per node (each read bounded by 300 ms, so
// a stopped node stalls only its own loop), and every 50 ms a round takes
// each node's latest answer, counting one older than 150 ms as no answer.
type sampler struct {
	conns map[string]*procs.Session
	stop  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	latest map[string]sample // mu must be held.
	rounds []round           // mu must be held.
	reads  int               // answered reads; mu must be held.
}

type sample struct {
	at    time.Time
	level byte
	ok    bool
}

func newSampler(t *testing.T, endpoints map[string]string) *sampler {
	s := &sampler{conns: map[string]*procs.Session{}, stop: make(chan struct{}), latest: map[string]sample{}}
	for n, e := range endpoints {
		s.conns[n] = procs.NewSession(e)
	}
	t.Cleanup(s.close)
	return s
}

func (s *sampler) start() {
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	for n, c := range s.conns {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				v, err := c.Read(ctx, level)
				cancel()
				b, isByte := v.(byte)
				s.mu.Lock()
				if err == nil && isByte {
					s.latest[n] = sample{at: time.Now(), level: b, ok: true}
					s.reads++
				} else {
					s.latest[n] = sample{at: time.Now()}
				}
				s.mu.Unlock()
				select {
				case <-s.stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			now := time.Now()
			rd := round{at: now, obs: map[string]obs{}}
			s.mu.Lock()
			for n := range s.conns {
				l := s.latest[n]
				rd.obs[n] = obs{level: l.level, ok: l.ok && now.Sub(l.at) <= 150*time.Millisecond}
			}
			s.rounds = append(s.rounds, rd)
			s.mu.Unlock()
		}
	}()
}

func (s *sampler) close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *sampler) since(from time.Time) []round {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []round
	for _, rd := range s.rounds {
		if !rd.at.Before(from) {
			out = append(out, rd)
		}
	}
	return out
}

func (s *sampler) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rounds) == 0 {
		return "(no round yet)"
	}
	return s.rounds[len(s.rounds)-1].String()
}

func (rd round) String() string {
	var b strings.Builder
	b.WriteString(rd.at.Format("15:04:05.000"))
	for _, n := range []string{"a", "b"} {
		if o, ok := rd.obs[n]; ok && o.ok {
			fmt.Fprintf(&b, " %s=%d", n, o.level)
		} else {
			fmt.Fprintf(&b, " %s=?", n)
		}
	}
	return b.String()
}

// levels returns node's readings from `from` on as "time=level" changes,
// for the report.
func (s *sampler) changes(node string, from time.Time) string {
	var out []string
	prev := -2
	for _, rd := range s.since(from) {
		o := rd.obs[node]
		cur := -1
		if o.ok {
			cur = int(o.level)
		}
		if cur != prev {
			v := "?"
			if cur >= 0 {
				v = fmt.Sprint(cur)
			}
			out = append(out, rd.at.Format("15:04:05.000")+"="+v)
			prev = cur
		}
	}
	return strings.Join(out, " ")
}

// ---- writer ----

// attempt is one write the writer made.
type attempt struct {
	at     time.Time
	node   string
	value  int16
	status ua.StatusCode
	err    error
}

// writer writes press1/Setpoint on every node every 100 ms: a gets
// 10000+i, b 20000+i. One goroutine per node, each write bounded by
// 500 ms, so a stopped node does not stall the other's writes.
type writer struct {
	conns map[string]*procs.Session
	stop  chan struct{}
	wg    sync.WaitGroup

	mu       sync.Mutex
	attempts []attempt // mu must be held.
}

func newWriter(t *testing.T, endpoints map[string]string) *writer {
	w := &writer{conns: map[string]*procs.Session{}, stop: make(chan struct{})}
	for n, e := range endpoints {
		w.conns[n] = procs.NewSession(e)
	}
	t.Cleanup(w.close)
	return w
}

func (w *writer) close() {
	select {
	case <-w.stop:
		return
	default:
	}
	close(w.stop)
	w.wg.Wait()
	for _, c := range w.conns {
		c.Close()
	}
}

// start resolves the tag's namespace on each node and starts writing.
func (w *writer) start() {
	for name, c := range w.conns {
		base := map[string]int{"a": 10000, "b": 20000}[name]
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			var tag *ua.NodeID
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				if tag == nil {
					tag = resolveTag(ctx, c)
				}
				a := attempt{at: time.Now(), node: name, value: int16(base + i%10000)}
				if tag == nil {
					a.err = errors.New("tag namespace not resolved")
				} else {
					a.status, a.err = c.WriteInt16(ctx, tag, a.value)
				}
				cancel()
				w.mu.Lock()
				w.attempts = append(w.attempts, a)
				w.mu.Unlock()
			}
		}()
	}
}

func resolveTag(ctx context.Context, c *procs.Session) *ua.NodeID {
	v, err := c.Read(ctx, ua.NewNumericNodeID(0, id.Server_NamespaceArray))
	if err != nil {
		return nil
	}
	arr, _ := v.([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return ua.NewStringNodeID(uint16(i), "press1/Setpoint")
		}
	}
	return nil
}

// summary counts node's write attempts from `from` on by outcome.
func (w *writer) summary(node string, from time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	cnt := map[string]int{}
	for _, a := range w.attempts {
		if a.node != node || a.at.Before(from) {
			continue
		}
		switch {
		case a.err != nil:
			cnt["error"]++
		default:
			cnt[a.status.Error()]++
		}
	}
	return fmt.Sprint(cnt)
}

// attemptOf describes the write attempt that sent value, for a failure
// message: when the writer sent it and what the node answered.
func (w *writer) attemptOf(value uint16) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.attempts {
		if uint16(a.value) == value {
			if a.err != nil {
				return fmt.Sprintf("sent to %s at %s, answered with error %v", a.node, a.at.Format("15:04:05.000"), a.err)
			}
			return fmt.Sprintf("sent to %s at %s, answered %v", a.node, a.at.Format("15:04:05.000"), a.status)
		}
	}
	return "not among the writer's attempts"
}
