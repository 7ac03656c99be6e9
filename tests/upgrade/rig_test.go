package upgrade

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/failover"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	clusterID = "upgrade"
	device    = "press"
	alarmName = "HighLevel"
	// The device's registers: the counter the test bumps every 100 ms
	// (input), the register the client writes (holding) and the one the
	// alarm watches (holding).
	counterAddr  = fielddevice.PressFastCounter
	setpointAddr = 0
	levelAddr    = 1
	levelHigh    = 80
	levelLow     = 0
	// pollInterval is how often each node reads the device: every value of
	// the 100 ms counter is seen by both.
	pollInterval = 20 * time.Millisecond
	// setpointRegister is the Setpoint as the write log names it.
	setpointRegister = "holding:0"
	replicationKey   = "the-pair's-shared-replication-key"
	adminPassword    = "correct horse battery staple"
	// Levels.
	levelPrimary   byte = 250
	levelSecondary byte = 240
)

func other(name string) string { return map[string]string{"a": "b", "b": "a"}[name] }

// uri is node name's ApplicationUri (procs.BaseConfig's).
func uri(name string) string { return "urn:" + name + ":otopcua" }

// rig is the pair (a, b), PostgreSQL, the device and everything that
// watches them: the ServiceLevel sampler, the SCADA client, the alarm
// toggler and the record the checker reads.
type rig struct {
	t     *testing.T
	dir   string
	db    *pg.Server
	dev   *fielddevice.Device
	cfgs  map[string]map[string]any
	nodes map[string]*procs.Node
	// bins is what each node runs now ("old" or "new" binary path);
	// the test goroutine only.
	bins           map[string]string
	oldBin, newBin string
	token          string // an Administrator's API token
	rec            *record
	writers        *writers
	sampler        *failover.Sampler
	sessions       map[string]*procs.Session // the sampler's
	tags           tagIDs
	scada          *scada
	toggles        *toggler
	excuse         *excuse // the counter gap the previous release is known for, if any
	forwarded      int     // writes made through the Secondary so far
}

// tagIDs are the deployment's OPC UA NodeIds.
type tagIDs struct{ counter, setpoint *ua.NodeID }

// newRig starts PostgreSQL and the device (counter running, writes
// logged with their writer) and writes the nodes' configurations; start
// starts the nodes.
func newRig(t *testing.T, oldBin, newBin string) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), cfgs: map[string]map[string]any{}, nodes: map[string]*procs.Node{},
		bins: map[string]string{}, oldBin: oldBin, newBin: newBin, rec: newRecord(), sessions: map[string]*procs.Session{}}
	r.db = pg.Start(t)
	devAddr := fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))
	r.writers = newWriters(devAddr)
	dev, err := fielddevice.StartWith(devAddr, fielddevice.Options{OnWrite: r.onWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	r.dev = dev
	dev.SetHolding(levelAddr, levelLow)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { dev.RunCounter(ctx, counterAddr, fielddevice.FastCounterPeriod) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	r.configure()
	return r
}

// configure writes a's and b's appsettings: PostgreSQL Config DB,
// lease-majority on its lease, HotAndMirrored, forwarded writes, LocalDb
// replicated between the two.
func (r *rig) configure() {
	ports := map[string]procs.Ports{"a": procs.NewPorts(r.t), "b": procs.NewPorts(r.t)}
	syncPorts := map[string]int{"a": procs.UniquePort(r.t), "b": procs.UniquePort(r.t)}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports["a"].Cluster), fmt.Sprintf("127.0.0.1:%d", ports["b"].Cluster)}
	for _, name := range []string{"a", "b"} {
		cfg := procs.BaseConfig(name, ports[name])
		c := cfg["Cluster"].(map[string]any)
		c["SeedNodes"] = seeds
		c["SplitBrainResolverStrategy"] = "lease-majority"
		c["Lease"] = map[string]any{"Provider": "configdb"}
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		opc := cfg["OpcUa"].(map[string]any)
		opc["PeerApplicationUris"] = []string{uri(other(name))}
		opc["RedundancySupport"] = "HotAndMirrored"
		opc["WriteMode"] = "forward"
		cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": r.db.DSN()}
		cfg["LocalDb"] = map[string]any{
			"Path": filepath.Join(r.dir, name+"-local.db"), "SyncListenPort": syncPorts[name],
			"Peers": []string{fmt.Sprintf("127.0.0.1:%d", syncPorts[other(name)])}, "Replication": map[string]any{"ApiKey": replicationKey},
		}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		r.cfgs[name] = cfg
	}
}

// deviceDoc is the deployment: the counter, the writable setpoint and the
// level, read every pollInterval, and an alarm on the level.
func deviceDoc(devAddr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [{
    "name": %q, "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": %q, "timeout": "500ms",
    "tags": [
      {"name": "Counter", "table": "input", "address": %d, "type": "uint16"},
      {"name": "Setpoint", "table": "holding", "address": %d, "type": "int16", "writable": true},
      {"name": "Level", "table": "holding", "address": %d, "type": "int16"}
    ]
  }],
  "alarms": [{"name": %q, "source": "press/Level", "condition": "press.Level > 50", "severity": 700, "message": "Level above 50"}]
}`, clusterID, device, devAddr, pollInterval.String(), counterAddr, setpointAddr, levelAddr, alarmName)
}

// startOld starts a then b from the previous release, stores the
// deployment and an Administrator with the previous release's own
// commands, and waits until a is Primary (250) and b Secondary (240).
func (r *rig) startOld() {
	r.t.Helper()
	for _, name := range []string{"a", "b"} {
		r.bins[name] = r.oldBin
		r.rec.process(name, check.Started, 0)
		n := procs.StartWith(r.t, name, r.cfgs[name], procs.Options{Binary: r.oldBin})
		r.nodes[name] = n
		r.writers.add(name, n)
		n.WaitReady(60 * time.Second)
	}
	r.t.Cleanup(r.keepTimeline)
	procs.DeployWith(r.t, r.oldBin, r.cfgs["a"], deviceDoc(r.dev.Addr()))
	r.token = procs.AddUserWith(r.t, r.oldBin, r.cfgs["a"], "ops", "Administrator", adminPassword)
	for _, n := range r.nodes {
		n.Token = r.token
		n.WaitDeployed(1)
	}
	r.startSampler()
	r.resolveTags()
	r.waitWhole("a", 60*time.Second)
}

// startSampler reads both nodes' ServiceLevel every 50 ms over sessions
// of its own (each read bounded by 300 ms).
func (r *rig) startSampler() {
	r.sampler = failover.NewSampler(50*time.Millisecond, 300*time.Millisecond)
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	for _, name := range []string{"a", "b"} {
		s := procs.NewSession(r.nodes[name].Endpoint())
		r.sessions[name] = s
		r.sampler.Add(failover.Target{Name: name, ClusterID: clusterID, Read: func(ctx context.Context) (byte, error) {
			v, err := s.Read(ctx, level)
			if err != nil {
				return 0, err
			}
			b, ok := v.(byte)
			if !ok {
				return 0, fmt.Errorf("ServiceLevel is %T", v)
			}
			return b, nil
		}})
	}
	r.sampler.Start()
	r.t.Cleanup(func() {
		r.sampler.Stop()
		for _, s := range r.sessions {
			s.Close()
		}
	})
}

// resolveTags reads the index of the ClusterId's namespace from a.
func (r *rig) resolveTags() {
	r.t.Helper()
	var ns int
	procs.CheckFor(r.t, 30*time.Second, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		v, err := r.sessions["a"].Read(ctx, ua.NewNumericNodeID(0, id.Server_NamespaceArray))
		if err != nil {
			return err
		}
		arr, _ := v.([]string)
		for i, u := range arr {
			if u == "urn:otopcua:cluster:"+clusterID {
				ns = i
				return nil
			}
		}
		return fmt.Errorf("no namespace of ClusterId %s in %v", clusterID, arr)
	})
	r.tags = tagIDs{counter: ua.NewStringNodeID(uint16(ns), device+"/Counter"), setpoint: ua.NewStringNodeID(uint16(ns), device+"/Setpoint")}
}

// lastRound is the sampler's latest round (zero when none yet).
func (r *rig) lastRound() failover.Round {
	rounds := r.sampler.Rounds()
	if len(rounds) == 0 {
		return failover.Round{}
	}
	return rounds[len(rounds)-1]
}

// waitWhole waits until both nodes see both as Up, reachable members of a
// converged cluster, each seeing the other's current incarnation, and the
// sampler reads primary at 250 and the other at 240.
func (r *rig) waitWhole(primary string, total time.Duration) {
	r.t.Helper()
	procs.CheckFor(r.t, total, 100*time.Millisecond, func() error {
		if err := r.gossip(); err != nil {
			return err
		}
		rd := r.lastRound()
		p, okP := rd.Level(primary)
		s, okS := rd.Level(other(primary))
		if !okP || !okS || !p.OK || !s.OK || p.Level != levelPrimary || s.Level != levelSecondary {
			return fmt.Errorf("sampled %s: want %s at 250 and %s at 240", roundText(rd), primary, other(primary))
		}
		return nil
	})
}

func roundText(rd failover.Round) string {
	var b strings.Builder
	b.WriteString(rd.At.Format("15:04:05.000"))
	for _, o := range rd.Obs {
		if o.OK {
			fmt.Fprintf(&b, " %s=%d", o.Node, o.Level)
		} else {
			fmt.Fprintf(&b, " %s=?", o.Node)
		}
	}
	return b.String()
}

// stop stops node name gracefully (SIGTERM: it leaves the cluster) and
// waits for its exit, which must be 0.
func (r *rig) stop(name string) {
	r.t.Helper()
	n := r.nodes[name]
	at := time.Now()
	n.Signal(syscall.SIGTERM)
	code := n.WaitExit(60 * time.Second)
	r.rec.process(name, check.Exited, code)
	r.rec.fault(check.Fault{Kind: check.FaultLeave, Targets: []string{name}, Start: at, End: time.Now()})
	if code != 0 {
		r.t.Fatalf("%s exited %d after SIGTERM, want 0", name, code)
	}
}

// restart starts node name again from bin at the same address, with the
// same configuration and data (LocalDb), and waits until it serves OPC UA.
func (r *rig) restart(name, bin string) {
	r.t.Helper()
	r.bins[name] = bin
	r.rec.process(name, check.Started, 0)
	r.nodes[name].RestartWith(bin)
	r.nodes[name].WaitReady(60 * time.Second)
}

// upgrade replaces node name's binary with the current tree's: a graceful
// stop, then the new binary at the same address with the same data.
func (r *rig) upgrade(name string) {
	r.t.Helper()
	r.stop(name)
	r.restart(name, r.newBin)
}

// version is the version node name reports in otopcua_build_info.
func (r *rig) version(name string) (string, error) {
	body, err := r.nodes[name].Get("/metrics")
	if err != nil {
		return "", err
	}
	if m := buildVersion.FindStringSubmatch(body); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("%s: no otopcua_build_info in /metrics", name)
}

var buildVersion = regexp.MustCompile(`(?m)^otopcua_build_info\{(?:[^}]*,)?version="([^"]*)"`)

// keepTimeline logs the sampled ServiceLevel changes when the test failed.
func (r *rig) keepTimeline() {
	if !r.t.Failed() || r.sampler == nil {
		return
	}
	prev := ""
	var lines []string
	for _, rd := range r.sampler.Rounds() {
		s := roundText(rd)
		if _, levels, _ := strings.Cut(s, " "); levels != prev {
			lines = append(lines, s)
			prev = levels
		}
	}
	r.t.Logf("ServiceLevel changes:\n%s", strings.Join(lines, "\n"))
}
