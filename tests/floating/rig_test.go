package floating

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// trials is the number of SIGKILL trials of TestFloatingKillPrimary: 2 in
// CI; docs/benchmarks-failover.md's figures come from 10.
var trials = flag.Int("floating.trials", 2, "SIGKILL trials of TestFloatingKillPrimary (the documented figures come from 10)")

const (
	clusterID = "site"
	// floatIP is the floating address: an unused address of netem's
	// subnet, which exists only inside the namespaces the test creates.
	floatIP      = netem.Subnet + "100"
	floatAddress = floatIP + "/24"
	opcPort      = 4840
	httpPort     = 8080
	// namespaceURI and tag name the deployment's tag on every node.
	namespaceURI = "urn:otopcua:cluster:" + clusterID
	tag          = "press1/Counter"
	// reconcile is Redundancy:FloatingAddress:ReconcileInterval in the
	// drills (short, so that drift is repaired within seconds).
	reconcile = time.Second
	// leaseTTL is the Config DB lease's TTL (the documented pair setting).
	leaseTTL = 6 * time.Second
)

// rig is one drill: PostgreSQL and the Modbus device on the machine's
// loopback, the test hosts (a and b run the nodes, client runs the
// node-opcua client and the sampler), the nodes and the sampler.
type rig struct {
	t      *testing.T
	db     *pg.Server
	dev    *fielddevice.Device
	net    *netem.Net
	client *netem.Host

	// ip and cidr are the floating address (Redundancy:FloatingAddress:Address).
	ip   netip.Addr
	cidr string

	cfgs  map[string]map[string]any
	nodes map[string]*procs.Node
	api   map[string]string // node → base URL of its HTTP port from the root namespace
	macs  map[string]string // host → MAC of its eth0

	counter atomic.Uint32 // the device register's value
	poll    string        // the device's poll interval (deployment syntax); "": 100 ms
	sampler *sampler
}

// newRig starts PostgreSQL, the device (its register bumped every
// 100 ms), the test hosts a, b, client and any extra ones, the forwarders
// that give a and b their own path to PostgreSQL and the device on their
// 127.0.0.1, and the sampler in the client namespace. The nodes are
// started by start.
func newRig(t *testing.T, extra ...string) *rig {
	t.Helper()
	return newRigAt(t, floatAddress, extra...)
}

// newRigAt is newRig with the floating address cidr; for an IPv6 one
// every host gets fd00:18::N/64 on its eth0 first.
func newRigAt(t *testing.T, cidr string, extra ...string) *rig {
	t.Helper()
	r := &rig{t: t, cidr: cidr, ip: netip.MustParsePrefix(cidr).Addr(), cfgs: map[string]map[string]any{}, nodes: map[string]*procs.Node{},
		api: map[string]string{}, macs: map[string]string{}}
	r.db = pg.Start(t)
	dev, err := fielddevice.Start(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	r.dev = dev
	r.bump()
	r.net = netem.NewNet(t, append([]string{"a", "b", "client"}, extra...)...)
	r.client = r.net.Host("client")
	if r.ip.Is6() {
		withIPv6(t, r.net)
	}
	for _, h := range r.net.Hosts {
		r.macs[h.Name] = macOf(t, h)
	}
	for _, name := range []string{"a", "b"} {
		h := r.net.Host(name)
		netem.ForwardFrom(t, h, r.db.Addr(), r.db.Addr())
		netem.ForwardFrom(t, h, dev.Addr(), dev.Addr())
		r.api[name] = "http://" + netem.Forward(t, h, fmt.Sprintf("127.0.0.1:%d", httpPort))
	}
	r.sampler = startSampler(t, r.client, r.ip)
	return r
}

// bump increments the device's holding register 0 every 100 ms until the
// test ends: the tag the client subscribes to changes with every poll.
func (r *rig) bump() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			r.dev.SetHolding(0, uint16(r.counter.Add(1)))
		}
	}()
	r.t.Cleanup(func() { close(stop); <-done })
}

// macOf reads h's eth0 MAC.
func macOf(t *testing.T, h *netem.Host) string {
	t.Helper()
	out, err := h.Output("cat", "/sys/class/net/eth0/address")
	if err != nil {
		t.Fatalf("%s: MAC of eth0: %v: %s", h.Name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// config is name's appsettings: the test host's address, both nodes seeds
// in the same order, lease-majority on the PostgreSQL Config DB, the
// floating address on the host's eth0 with a 1 s reconcile interval.
func (r *rig) config(name string) map[string]any {
	h := r.net.Host(name)
	cfg := procs.BaseConfig(name, procs.Ports{Cluster: 4053, OpcUa: opcPort, HTTP: httpPort})
	c := cfg["Cluster"].(map[string]any)
	c["Hostname"], c["PublicHostname"] = h.Addr, h.Addr
	c["SeedNodes"] = []string{r.net.Host("a").Addr + ":4053", r.net.Host("b").Addr + ":4053"}
	c["SplitBrainResolverStrategy"] = "lease-majority"
	c["StableAfter"] = "3s"
	c["Lease"] = map[string]any{"Provider": "configdb", "Ttl": leaseTTL.String()}
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other(name) + ":otopcua"}
	cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": r.db.DSN()}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	cfg["Redundancy"] = map[string]any{"FloatingAddress": map[string]any{
		"Address": r.cidr, "Interface": "eth0", "Provider": "linux", "ReconcileInterval": reconcile.String()}}
	return cfg
}

func other(n string) string {
	if n == "a" {
		return "b"
	}
	return "a"
}

// start starts name with its config (r.cfgs[name], made by config when
// unset) on its test host and waits until its OPC UA endpoint listens.
func (r *rig) start(name string) *procs.Node {
	r.t.Helper()
	h := r.net.Host(name)
	if r.cfgs[name] == nil {
		r.cfgs[name] = r.config(name)
	}
	n := procs.StartWith(r.t, name, r.cfgs[name], procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
	r.nodes[name] = n
	n.WaitReady(90 * time.Second)
	return n
}

// healthy starts a then b, deploys the device, and waits until a is the
// Primary holding the floating address, both nodes agree on it and the
// sampler sees a's MAC answer for it.
func (r *rig) healthy() {
	r.t.Helper()
	r.start("a")
	r.start("b")
	r.t.Cleanup(r.keepLogs) // before the nodes' cleanups and their directories' removal
	poll := r.poll
	if poll == "" {
		poll = "00:00:00.100"
	}
	procs.Deploy(r.t, r.cfgs["a"], deviceDocPolled(r.dev.Addr(), poll))
	r.waitOwner("a", 90*time.Second)
	r.sampler.waitMAC(r.t, r.macs["a"], time.Now().Add(-time.Hour), 30*time.Second)
}

func deviceDoc(devAddr string) string { return deviceDocPolled(devAddr, "00:00:00.100") }

// deviceDocPolled is deviceDoc with the device polled every poll.
func deviceDocPolled(devAddr, poll string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": %q, "timeout": "500ms",
     "tags": [{"name": "Counter", "table": "holding", "address": 0, "type": "uint16"}]}
  ]
}`, clusterID, devAddr, poll)
}

// report is the part of GET /api/floating the drills read.
type report struct {
	Address  string `json:"address"`
	Self     string `json:"self"`
	Holds    bool   `json:"holds"`
	Owner    string `json:"owner"`
	Verb     string `json:"verb"`
	Reason   string `json:"reason"`
	Epoch    uint64 `json:"epoch"`
	Drift    string `json:"drift"`
	Conflict bool   `json:"conflict"`
	Observed *struct {
		Kind   string `json:"kind"`
		ID     string `json:"id"`
		Member string `json:"member"`
	} `json:"observed"`
	LastAction string `json:"lastAction"`
	LastError  string `json:"lastError"`
}

// floating reads name's GET /api/floating.
func (r *rig) floating(name string) (report, error) {
	body, err := r.nodes[name].Get("/api/floating")
	if err != nil {
		return report{}, err
	}
	var rep report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		return report{}, fmt.Errorf("%s: GET /api/floating: %v: %s", name, err, body)
	}
	return rep, nil
}

// nodeID is name's cluster address, the floating report's node name.
func (r *rig) nodeID(name string) string { return r.net.Host(name).Addr + ":4053" }

// waitOwner waits until every running node names owner as the owner and
// only owner holds the address.
func (r *rig) waitOwner(owner string, total time.Duration) {
	r.t.Helper()
	var asked []string
	for name, n := range r.nodes {
		if n.Alive() {
			asked = append(asked, name)
		}
	}
	r.waitOwnerOn(owner, total, asked...)
}

// waitOwnerOn waits until each of the nodes asked names owner as the
// owner, held only by it.
func (r *rig) waitOwnerOn(owner string, total time.Duration, asked ...string) {
	r.t.Helper()
	procs.CheckFor(r.t, total, 50*time.Millisecond, func() error {
		for _, name := range asked {
			rep, err := r.floating(name)
			if err != nil {
				return err
			}
			if rep.Owner != r.nodeID(owner) || rep.Holds != (name == owner) {
				return fmt.Errorf("%s: owner %q holds %v (verb %s: %s; last error %s), want owner %s held by %s",
					name, rep.Owner, rep.Holds, rep.Verb, rep.Reason, rep.LastError, r.nodeID(owner), owner)
			}
		}
		return nil
	})
}

// metric returns the value of the sample of name's /metrics whose line
// starts with prefix (a metric name with its labels).
func (r *rig) metric(name, prefix string) (string, error) {
	body, err := r.nodes[name].Get("/metrics")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			f := strings.Fields(l)
			return f[len(f)-1], nil
		}
	}
	return "", fmt.Errorf("%s: no %s in /metrics", name, prefix)
}

// checkOwned asserts otopcua_floating_address_owned{cluster_id} is 1 on
// holder and 0 on the other running node.
func (r *rig) checkOwned(holder string) {
	r.t.Helper()
	procs.CheckFor(r.t, 10*time.Second, 100*time.Millisecond, func() error {
		for name, n := range r.nodes {
			if !n.Alive() {
				continue
			}
			v, err := r.metric(name, `otopcua_floating_address_owned{cluster_id="`+clusterID+`"`)
			if err != nil {
				return err
			}
			want := "0"
			if name == holder {
				want = "1"
			}
			if v != want {
				return fmt.Errorf("%s: otopcua_floating_address_owned %s, want %s", name, v, want)
			}
		}
		return nil
	})
}

// keepLogs copies the nodes' logs into $FLOATING_LOGDIR, when set.
func (r *rig) keepLogs() {
	dir := os.Getenv("FLOATING_LOGDIR")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	for n, node := range r.nodes {
		_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(r.t.Name(), "/", "_")+"-"+n+".log"), []byte(node.Log()), 0o644)
	}
}

// floatingLines are name's log lines of the floating address, for a
// failure message.
func (r *rig) floatingLines(name string) string {
	var out []string
	for _, l := range strings.Split(r.nodes[name].Log(), "\n") {
		if strings.Contains(l, "floating address") {
			if len(l) > 400 {
				l = l[:400] + "…"
			}
			out = append(out, l)
		}
	}
	if len(out) > 30 {
		out = append(out[:10], append([]string{"…"}, out[len(out)-20:]...)...)
	}
	return strings.Join(out, "\n")
}

// withIPv6 gives every host fd00:18::N/64 on eth0 (no DAD: the test made
// every address) and waits until no address of eth0 is tentative: the
// link-local address, which neighbour discovery sends from, must have left
// DAD.
func withIPv6(t *testing.T, n *netem.Net) {
	t.Helper()
	for i, h := range n.Hosts {
		if out, err := h.Output("ip", "-6", "addr", "add", fmt.Sprintf("fd00:18::%d/64", i+1), "dev", "eth0", "nodad"); err != nil {
			t.Fatalf("%s: %v: %s", h.Name, err, out)
		}
	}
	for _, h := range n.Hosts {
		procs.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			out, err := h.Output("ip", "-6", "-o", "addr", "show", "dev", "eth0")
			if err != nil {
				return fmt.Errorf("%s: %v: %s", h.Name, err, out)
			}
			if strings.Contains(string(out), "tentative") || !strings.Contains(string(out), "fe80::") {
				return fmt.Errorf("%s: eth0 not ready for neighbour discovery yet:\n%s", h.Name, out)
			}
			return nil
		})
	}
}

// otopcua runs the otopcua command with args in the root namespace and
// returns its output (stdout and stderr) and exit code.
func otopcua(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(procs.Binary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("otopcua %s: %v", strings.Join(args, " "), err)
	return "", 0
}
