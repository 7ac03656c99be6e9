package devicehealth

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

var long = flag.Bool("drill.long", false, "hold the both-paths-cut window for 60 s instead of 20 s")

const (
	clusterID = "site"
	// after is Redundancy:DeviceFailoverAfter (its default); holdFor is
	// the drill's Redundancy:DeviceFailoverHold (shorter than the 60 s
	// default, to keep the drill short).
	after   = 10 * time.Second
	holdFor = 40 * time.Second
	// healthTick is redundancy.HealthTick; pollWithTimeout is the
	// device's poll interval plus its read timeout (deviceDoc).
	healthTick      = 5 * time.Second
	pollWithTimeout = 600 * time.Millisecond
	// drain is Redundancy:ManualFailoverDrain (its default).
	drain = 2 * time.Second
	// slack is what a shared 2-core machine adds to a documented bound.
	slack = 2 * time.Second

	primary   byte = 250
	secondary byte = 240
)

// rig is one drill: the device, the test hosts, the nodes and the sampler.
type rig struct {
	t      *testing.T
	dir    string
	dev    *fielddevice.Device
	net    *netem.Net
	cfgs   map[string]map[string]any
	nodes  map[string]*procs.Node
	ua     map[string]string // node → its OPC UA endpoint as the scada host reaches it
	conns  map[string]*procs.Session
	sample *sampler

	devMu  sync.Mutex
	devLog []int16 // values written to Setpoint, in order; devMu must be held.
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), cfgs: map[string]map[string]any{}, nodes: map[string]*procs.Node{},
		ua: map[string]string{}, conns: map[string]*procs.Session{}}
	dev, err := fielddevice.StartWith(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)), fielddevice.Options{OnWrite: func(w fielddevice.Write) {
		if w.Table == fielddevice.Holding && w.Address == 0 && len(w.Words) > 0 {
			r.devMu.Lock()
			r.devLog = append(r.devLog, int16(w.Words[0]))
			r.devMu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	r.dev = dev
	r.net = netem.NewNet(t, "a", "b", "scada")
	for _, name := range []string{"a", "b"} {
		h := r.net.Host(name)
		netem.ForwardFrom(t, h, dev.Addr(), dev.Addr())
		r.ua[name] = "opc.tcp://" + netem.Forward(t, r.net.Host("scada"), h.Addr+":4840")
		r.conns[name] = procs.NewSession(r.ua[name])
		t.Cleanup(r.conns[name].Close)
	}
	r.sample = newSampler(t, r.conns)
	return r
}

// config is name's appsettings: test host addresses, both nodes seeds in
// the same order, the shared SQLite Config DB, device health failover.
func (r *rig) config(name string) map[string]any {
	h := r.net.Host(name)
	cfg := procs.BaseConfig(name, procs.Ports{Cluster: 4053, OpcUa: 4840, HTTP: 8080})
	c := cfg["Cluster"].(map[string]any)
	c["Hostname"], c["PublicHostname"] = h.Addr, h.Addr
	c["SeedNodes"] = []string{r.net.Host("a").Addr + ":4053", r.net.Host("b").Addr + ":4053"}
	cfg["Http"].(map[string]any)["Hostname"] = "127.0.0.1"
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	other := map[string]string{"a": "b", "b": "a"}[name]
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other + ":otopcua"}
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + r.dbPath()}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["Redundancy"] = map[string]any{"DeviceHealth": "failover", "DeviceFailoverAfter": after.String(), "DeviceFailoverHold": holdFor.String()}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

func (r *rig) dbPath() string { return filepath.Join(r.dir, "config.db") }

// healthy starts a then b, deploys the device, and waits for a at 250 and
// b at 240 with both reaching the device and one HealthTick more, so that
// each has heard the other's device count. It returns when the sampler
// first saw a at 250 (its tenure as Primary had begun by then).
func (r *rig) healthy() time.Time {
	r.t.Helper()
	for _, name := range []string{"a", "b"} {
		h := r.net.Host(name)
		r.cfgs[name] = r.config(name)
		r.nodes[name] = procs.StartWith(r.t, name, r.cfgs[name], procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
		r.nodes[name].WaitReady(60 * time.Second)
	}
	r.t.Cleanup(r.keepLogs)
	procs.Deploy(r.t, r.cfgs["a"], deviceDoc(r.dev.Addr()))
	r.sample.start()
	for _, name := range []string{"a", "b"} {
		r.waitDevice(name, true, 60*time.Second)
	}
	since := time.Now()
	aPrimary := r.waitLevel("a", 90*time.Second, since, is(primary))
	r.waitLevel("b", 90*time.Second, since, is(secondary))
	// One HealthTick more: each node's NodeStatus with its count crosses,
	// and nothing moves while both reach the device.
	r.steady(healthTick+time.Second, map[string]byte{"a": primary, "b": secondary})
	return aPrimary
}

// steady asserts for total that every node named reads its level and
// runs.
func (r *rig) steady(total time.Duration, want map[string]byte) {
	r.t.Helper()
	from := time.Now()
	procs.Holds(r.t, total, 100*time.Millisecond, func() error {
		for name, l := range want {
			if code, gone := r.nodes[name].Exited(); gone {
				return fmt.Errorf("%s exited with code %d", name, code)
			}
			for _, x := range r.sample.since(name, from) {
				if x.level != l {
					return fmt.Errorf("%s read %d at %s, want %d throughout (changes %s)", name, x.level, x.at.Format("15:04:05.000"), l, r.sample.changes(name, from))
				}
			}
		}
		return nil
	})
	for name := range want {
		if len(r.sample.since(name, from)) == 0 {
			r.t.Fatalf("%s: no ServiceLevel sample in %v", name, total)
		}
	}
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

// iptables runs an iptables command on name's test host.
func (r *rig) iptables(name string, args ...string) {
	r.t.Helper()
	out, err := r.net.Host(name).Output(append([]string{"iptables"}, args...)...)
	if err != nil {
		r.t.Fatalf("iptables %v on %s: %v\n%s", args, name, err, out)
	}
}

// devRule is the iptables rule that cuts a node's path to the device.
func (r *rig) devRule() []string {
	_, port, _ := strings.Cut(r.dev.Addr(), ":")
	return []string{"OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", port, "-j", "REJECT", "--reject-with", "tcp-reset"}
}

// cut cuts name's path to the device (its other paths stay).
func (r *rig) cut(name string) time.Time {
	r.t.Helper()
	r.iptables(name, append([]string{"-I"}, r.devRule()...)...)
	r.t.Logf("%s's path to the device cut", name)
	return time.Now()
}

// restore removes the cut.
func (r *rig) restore(name string) time.Time {
	r.t.Helper()
	r.iptables(name, append([]string{"-D"}, r.devRule()...)...)
	r.t.Logf("%s's path to the device restored", name)
	return time.Now()
}

// deviceState is press1's state in name's /api/deployment.
func (r *rig) deviceState(name string) (string, error) {
	body, err := r.nodes[name].Get("/api/deployment")
	if err != nil {
		return "", err
	}
	var rep struct {
		Devices []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		return "", fmt.Errorf("%s: %v: %.300s", name, err, body)
	}
	for _, d := range rep.Devices {
		if d.Name == "press1" {
			return d.State, nil
		}
	}
	return "", fmt.Errorf("%s: no device press1 yet", name)
}

// waitDevice waits until name's /api/deployment shows press1 connected
// (want true) or in any other state (want false).
func (r *rig) waitDevice(name string, want bool, total time.Duration) {
	r.t.Helper()
	procs.CheckFor(r.t, total, 100*time.Millisecond, func() error {
		st, err := r.deviceState(name)
		if err != nil {
			return err
		}
		if (st == "connected") != want {
			return fmt.Errorf("%s: device %s", name, st)
		}
		return nil
	})
}

// is and degraded are sample predicates.
func is(l byte) func(byte) bool { return func(v byte) bool { return v == l } }
func degraded(v byte) bool      { return v >= 2 && v <= 199 }

// waitLevel waits for the first sample of node at or after since that
// matches, and returns its time.
func (r *rig) waitLevel(node string, total time.Duration, since time.Time, match func(byte) bool) time.Time {
	r.t.Helper()
	var at time.Time
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		if s, ok := r.sample.first(node, since, match); ok {
			at = s.at
			return nil
		}
		l, ok := r.sample.latest(node)
		return fmt.Errorf("%s: no matching level since %s; latest %d (answered %v)", node, since.Format("15:04:05.000"), l, ok)
	})
	return at
}

// write writes v to Setpoint through node and waits until the device
// received it.
func (r *rig) write(node string, v int16) {
	r.t.Helper()
	procs.CheckFor(r.t, 20*time.Second, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tag, err := resolveTag(ctx, r.conns[node])
		if err != nil {
			return err
		}
		st, err := r.conns[node].WriteInt16(ctx, tag, v)
		if err != nil || st != ua.StatusOK {
			return fmt.Errorf("write through %s: %v %v", node, st, err)
		}
		return nil
	})
	procs.CheckFor(r.t, 10*time.Second, 50*time.Millisecond, func() error {
		r.devMu.Lock()
		defer r.devMu.Unlock()
		for _, w := range r.devLog {
			if w == v {
				return nil
			}
		}
		return fmt.Errorf("the device has not received %d (log %v)", v, r.devLog)
	})
}

// deviceAudit is the Config DB's audit rows written by device hand-overs.
func (r *rig) deviceAudit() []configdb.AuditEntry {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, "sqlite", "file:"+r.dbPath())
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.RecentAudit(ctx, 100)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []configdb.AuditEntry
	for _, e := range rows {
		if e.Actor == "device-health" {
			out = append(out, e)
		}
	}
	return out
}

// keepLogs logs both nodes' logs when the test failed.
func (r *rig) keepLogs() {
	if !r.t.Failed() {
		return
	}
	for _, name := range []string{"a", "b"} {
		if n := r.nodes[name]; n != nil {
			log := n.Log()
			if len(log) > 20000 {
				log = log[len(log)-20000:]
			}
			r.t.Logf("---- %s's log (tail) ----\n%s", name, log)
		}
	}
}

// ---- OPC UA sessions ----

func resolveTag(ctx context.Context, c *procs.Session) (*ua.NodeID, error) {
	v, err := c.Read(ctx, ua.NewNumericNodeID(0, id.Server_NamespaceArray))
	if err != nil {
		return nil, err
	}
	arr, _ := v.([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return ua.NewStringNodeID(uint16(i), "press1/Setpoint"), nil
		}
	}
	return nil, fmt.Errorf("no tag namespace in %v", arr)
}

// ---- sampler ----

type sample struct {
	at    time.Time
	level byte
}

// sampler reads Server.ServiceLevel of each node every 100 ms (each read
// bounded by 300 ms) and keeps every answer.
type sampler struct {
	conns map[string]*procs.Session
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once

	mu   sync.Mutex
	seen map[string][]sample // mu must be held.
}

func newSampler(t *testing.T, conns map[string]*procs.Session) *sampler {
	s := &sampler{conns: conns, stop: make(chan struct{}), seen: map[string][]sample{}}
	t.Cleanup(s.close)
	return s
}

func (s *sampler) start() {
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	for n, c := range s.conns {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				v, err := c.Read(ctx, level)
				cancel()
				if b, ok := v.(byte); err == nil && ok {
					s.mu.Lock()
					s.seen[n] = append(s.seen[n], sample{at: time.Now(), level: b})
					s.mu.Unlock()
				}
				select {
				case <-s.stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
}

func (s *sampler) close() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
}

// since is node's samples at or after from.
func (s *sampler) since(node string, from time.Time) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for _, x := range s.seen[node] {
		if !x.at.Before(from) {
			out = append(out, x)
		}
	}
	return out
}

func (s *sampler) first(node string, from time.Time, match func(byte) bool) (sample, bool) {
	for _, x := range s.since(node, from) {
		if match(x.level) {
			return x, true
		}
	}
	return sample{}, false
}

func (s *sampler) latest(node string) (byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.seen[node]
	if len(l) == 0 {
		return 0, false
	}
	return l[len(l)-1].level, true
}

// changes is node's level changes from `from` on, for messages.
func (s *sampler) changes(node string, from time.Time) string {
	var b strings.Builder
	last := -1
	for _, x := range s.since(node, from) {
		if int(x.level) != last {
			b.WriteString(x.at.Format("15:04:05.000") + "=" + strconv.Itoa(int(x.level)) + " ")
			last = int(x.level)
		}
	}
	return b.String()
}
