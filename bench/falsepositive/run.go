package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/hostrig"
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// Strategies (-strategy).
const (
	leaseMajority = "lease-majority"
	autoDown      = "auto-down"
)

// Stalled node (-stall).
const (
	stallPrimary   = "primary"
	stallSecondary = "secondary"
)

const clusterID = "fp"

// Config is one run.
type Config struct {
	// Duration is the measured window (load, stalls and samplers running).
	Duration time.Duration
	// Seed draws the stall plan.
	Seed uint64
	// Strategy is lease-majority (the Config DB lease on PostgreSQL) or
	// auto-down.
	Strategy string
	// Stall names the node that gets the stalls: primary or secondary.
	Stall string
	// CPUWorkers is how many goroutines (on as many threads) the CPU load
	// spins; 0 means none.
	CPUWorkers int
	// MemMB is how many MiB the memory load allocates and drops per cycle;
	// 0 means none.
	MemMB int
	// Bounds limit the stalls (capped at half the heartbeat pause).
	Bounds StallBounds
	// Progress receives one line per step and per minute of the run.
	Progress func(string)
	// Verbose also sends every stall to Progress.
	Verbose bool
	// LogDir, when set, receives each node's log at the end (<node>.log).
	LogDir string
}

// Effective are the node settings the run used, read with the node's own
// configuration loader from the appsettings it was given: the harness
// pins none of them, so it tests the defaults of the build it runs.
type Effective struct {
	HeartbeatInterval, Pause, StableAfter, LeaseTTL time.Duration
	Threshold                                       float64
}

// Result is a run's figures and verdict.
type Result struct {
	Config    Config
	Effective Effective
	Bounds    StallBounds // after the cap
	Stalled   string      // the node that got the stalls
	Wall      time.Duration
	// CPU of the load children and of the nodes, in % of one core, and of
	// the whole machine in % of all its cores.
	LoadCPU, MemCPU, MachineBusy float64
	NodeCPU                      map[string]float64
	MemPeakMB                    float64
	StallTotal                   time.Duration
	// StallThread is the scheduling of the thread that times the stalls.
	StallThread string
	Obs         Observations
	Violations  []string
}

// Run builds the otopcua binary (without the race detector: the product
// as shipped), starts PostgreSQL, the device and the pair, waits for
// 250/240 with the device served by both, then runs the load, the stalls
// and the samplers for c.Duration and returns the figures and the verdict.
// Setup failures end the test (t.Fatal); the verdict is the caller's to
// judge.
func Run(t testing.TB, c Config) Result {
	say := func(format string, args ...any) {
		if c.Progress != nil {
			c.Progress(fmt.Sprintf(format, args...))
		}
	}
	bin := procs.PlainBinary(t)
	db := pg.Start(t)
	dev := fieldrig.StartDevices(t, 1)[0]
	dev.Load(fielddevice.Press)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go dev.Animate(ctx, fielddevice.Press, 100*time.Millisecond)

	names := []string{"a", "b"}
	ps := procs.NewPortSet(t, 2)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ps[0].Cluster), fmt.Sprintf("127.0.0.1:%d", ps[1].Cluster)}
	cfgs := map[string]map[string]any{}
	for i, n := range names {
		cfgs[n] = nodeConfig(n, names[1-i], ps[i], seeds, c.Strategy, db.DSN())
	}
	eff := effective(t, cfgs["a"])
	bounds := c.Bounds.Capped(eff.Pause)
	if err := bounds.Validate(); err != nil {
		t.Fatalf("stall bounds: %v", err)
	}
	say("strategy %s; node defaults: heartbeat %v, acceptable pause %v, stable-after %v, lease TTL %v; stalls %v–%v every %v–%v; seed %d",
		c.Strategy, eff.HeartbeatInterval, eff.Pause, eff.StableAfter, eff.LeaseTTL, bounds.MinStall, bounds.MaxStall, bounds.MinGap, bounds.MaxGap, c.Seed)

	nodes := map[string]*procs.Node{}
	for _, n := range names { // a first: the oldest, so the Primary
		nodes[n] = procs.StartWith(t, n, cfgs[n], procs.Options{Binary: bin})
		nodes[n].WaitReady(90 * time.Second)
	}
	procs.DeployWith(t, bin, cfgs["a"], deviceDoc(dev.Addr()))
	for _, n := range names {
		nodes[n].WaitDeployed(1)
	}
	primary, secondary := hostrig.WaitPair(t, nodes)
	addr := map[string]string{}
	for _, n := range names {
		addr[n] = nodes[n].ClusterAddr()
	}
	for _, n := range names {
		waitDeviceRead(t, nodes[n])
	}
	say("pair healthy: %s 250 (Primary), %s 240; the device is read by both", primary, secondary)

	res := Result{Config: c, Effective: eff, Bounds: bounds, NodeCPU: map[string]float64{}}
	res.Stalled = primary
	if c.Stall == stallSecondary {
		res.Stalled = secondary
	}
	obs := Observations{Primary: primary, Secondary: secondary, Pause: eff.Pause, Nodes: map[string]*NodeObs{}}
	var loads []*loadProc
	var cpuLoad, memLoad *loadProc
	if c.CPUWorkers > 0 {
		cpuLoad = startLoad(t, "cpu", fmt.Sprintf("cpu:%d", c.CPUWorkers))
		loads = append(loads, cpuLoad)
	}
	if c.MemMB > 0 {
		memLoad = startLoad(t, "mem", fmt.Sprintf("mem:%d", c.MemMB))
		loads = append(loads, memLoad)
	}

	// The measured window.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for _, l := range loads {
		l.mark()
	}
	busy0, total0 := measure.MachineCPU()
	node0 := map[string]time.Duration{}
	reads0 := map[string][2]int64{}
	for _, n := range names {
		node0[n], _ = measure.CPUTime(nodes[n].PID())
		ok, failed := deviceReads(nodes[n])
		reads0[n] = [2]int64{ok, failed}
	}
	for _, n := range names {
		o := &NodeObs{Levels: map[byte]int{}, Marks: map[string]int{}}
		obs.Nodes[n] = o
		ls := newLevelSampler(nodes[n].Endpoint(), o)
		t.Cleanup(ls.s.Close)
		vs := &viewSampler{node: nodes[n], addrs: []string{addr["a"], addr["b"]}, clusterID: clusterID, primary: addr[primary], mu: &ls.mu, obs: o}
		wg.Add(2)
		go func() { defer wg.Done(); ls.run(stop, nil) }()
		go func() {
			defer wg.Done()
			vs.run(stop, func(f string) { say("%s: member view broke the pair: %s", n, f) })
		}()
	}
	var stallMu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		inject(stop, nodes[res.Stalled], NewPlan(c.Seed, bounds), func(s string) { res.StallThread = s }, func(s Stall, took time.Duration) {
			stallMu.Lock()
			obs.Stalls++
			obs.Longest = max(obs.Longest, took)
			res.StallTotal += took
			stallMu.Unlock()
			if c.Verbose {
				say("stall %s: ran %v, stopped %v (planned %v)", res.Stalled, s.Gap, took.Round(time.Millisecond), s.Stop)
			}
		})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchLoads(stop, start, loads, func(elapsed time.Duration) {
			stallMu.Lock()
			n, longest := obs.Stalls, obs.Longest
			stallMu.Unlock()
			say("%v of %v: %d stalls (longest %v)", elapsed.Round(time.Second), c.Duration, n, longest.Round(time.Millisecond))
		})
	}()
	select {
	case <-time.After(c.Duration):
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	res.Wall = time.Since(start)
	busy1, total1 := measure.MachineCPU()
	if total1 > total0 {
		res.MachineBusy = 100 * float64(busy1-busy0) / float64(total1-total0)
	}
	if cpuLoad != nil {
		res.LoadCPU = measure.CPUPercent(cpuLoad.cpu(), res.Wall)
	}
	if memLoad != nil {
		res.MemCPU = measure.CPUPercent(memLoad.cpu(), res.Wall)
		res.MemPeakMB = float64(memLoad.peak()) / (1 << 20)
	}
	for _, n := range names {
		o := obs.Nodes[n]
		if cpu, err := measure.CPUTime(nodes[n].PID()); err == nil {
			res.NodeCPU[n] = measure.CPUPercent(cpu-node0[n], res.Wall)
		}
		if code, done := nodes[n].Exited(); done {
			o.Exited, o.ExitCode = true, code
		}
		ok, failed := deviceReads(nodes[n])
		o.DeviceReads, o.DeviceFailed = ok-reads0[n][0], failed-reads0[n][1]
		countMarks(nodes[n].Log(), o.Marks)
		if c.LogDir != "" {
			if err := os.WriteFile(filepath.Join(c.LogDir, n+".log"), []byte(nodes[n].Log()), 0o644); err != nil {
				t.Errorf("keep %s's log: %v", n, err)
			}
		}
	}
	res.Obs = obs
	res.Violations = Verdict(obs)
	return res
}

// inject runs the plan against node until stop is closed: run for the
// gap, SIGSTOP, sleep the stall, SIGCONT. A stall that has begun always
// ends with SIGCONT. The process is signalled directly (never through
// the test's Fatal: this runs on its own goroutine).
func inject(stop <-chan struct{}, node *procs.Node, plan *Plan, sched func(string), done func(Stall, time.Duration)) {
	// The thread stays locked (and sharpened) until the goroutine ends;
	// the runtime then retires it.
	runtime.LockOSThread()
	sched(sharpenThread())
	for {
		s := plan.Next()
		select {
		case <-stop:
			return
		case <-time.After(s.Gap):
		}
		if !node.Alive() {
			return
		}
		pid := node.PID()
		at := time.Now()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return
		}
		sleepThread(s.Stop)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		done(s, time.Since(at))
	}
}

// watchLoads samples the load children's memory every 500 ms and reports
// progress every minute.
func watchLoads(stop <-chan struct{}, start time.Time, loads []*loadProc, minute func(time.Duration)) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	next := start.Add(time.Minute)
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for _, l := range loads {
				l.sampleRSS()
			}
			if now.After(next) {
				minute(now.Sub(start))
				next = next.Add(time.Minute)
			}
		}
	}
}

// nodeConfig is name's appsettings: loopback, both nodes seeds in the same
// order, the PostgreSQL Config DB, and under lease-majority the Config DB
// lease. No timing key is set: the node's defaults decide.
func nodeConfig(name, peer string, p procs.Ports, seeds []string, strategy, dsn string) map[string]any {
	cfg := procs.BaseConfig(name, p)
	cl := cfg["Cluster"].(map[string]any)
	cl["SeedNodes"] = seeds
	cl["SplitBrainResolverStrategy"] = strategy
	if strategy == leaseMajority {
		cl["Lease"] = map[string]any{"Provider": "configdb"}
	}
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + peer + ":otopcua"}
	cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": dsn}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

// effective loads cfg with the node's configuration loader and returns
// the failure detector and lease settings it resolves to.
func effective(t testing.TB, cfg map[string]any) Effective {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.LoadBytes("appsettings.json", b, os.Environ())
	if err != nil {
		t.Fatalf("the node's configuration does not load: %v", err)
	}
	fd := c.Cluster.FailureDetector
	return Effective{HeartbeatInterval: fd.HeartbeatInterval, Pause: fd.AcceptableHeartbeatPause, Threshold: fd.Threshold,
		StableAfter: c.Cluster.StableAfter, LeaseTTL: c.Cluster.Lease.Ttl}
}

// deviceDoc is the deployment: the press, polled every 100 ms by both
// nodes.
func deviceDoc(devAddr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": "00:00:00.100", "timeout": "1s",
     "tags": [
       {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true},
       {"name": "Speed", "table": "holding", "address": 10, "type": "float32"},
       {"name": "Temperature", "table": "input", "address": 0, "type": "int16", "scale": 0.1},
       {"name": "Counter", "table": "input", "address": 1, "type": "uint16"},
       {"name": "Run", "table": "coil", "address": 1, "type": "bool"},
       {"name": "Fault", "table": "discrete", "address": 0, "type": "bool"}
     ]}
  ]
}`, clusterID, devAddr)
}

// waitDeviceRead waits until the node has read the device successfully.
func waitDeviceRead(t testing.TB, n *procs.Node) {
	t.Helper()
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if ok, _ := deviceReads(n); ok <= 0 {
			return fmt.Errorf("%s has not read the device yet", n.Name)
		}
		return nil
	})
}

// deviceReads is the node's otopcua_driver_reads_total for the press by
// result (ok, failed) from /metrics; -1 when it cannot be read.
func deviceReads(n *procs.Node) (ok, failed int64) {
	body, err := n.Get("/metrics")
	if err != nil {
		return -1, -1
	}
	ok, failed = -1, -1
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "otopcua_driver_reads_total{") || !strings.Contains(line, `device="press1"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.Contains(line, `result="ok"`):
			ok = int64(v)
		case strings.Contains(line, `result="failed"`):
			failed = int64(v)
		}
	}
	return ok, failed
}

// countMarks adds the number of log lines carrying each marker.
func countMarks(log string, marks map[string]int) {
	for line := range strings.SplitSeq(log, "\n") {
		for _, m := range append(append([]string{}, downMarkers...), noteMarkers...) {
			if strings.Contains(line, m) {
				marks[m]++
			}
		}
	}
}
