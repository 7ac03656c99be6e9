package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// Phase is a part of the soak.
type Phase string

// The phases, in order.
const (
	PhaseWarmup   Phase = "warmup"   // the well-behaved client alone
	PhaseAbuse    Phase = "abuse"    // the abusers too
	PhaseStopping Phase = "stopping" // the abusers are releasing what they hold
	PhaseRecovery Phase = "recovery" // the well-behaved client alone again
)

// Config configures a soak.
type Config struct {
	// Warmup is how long the well-behaved client runs alone before the
	// abuse; the baseline sample is the last one of it.
	Warmup time.Duration
	// Duration is how long the abuse runs.
	Duration time.Duration
	// Recover is how long the well-behaved client is watched after the
	// abusers stopped; the after-recovery sample is the last one of it.
	Recover time.Duration
	// Items and Batch size the abusive subscriptions.
	Items, Batch int
	// Vars, when above 0, confines the subscription abusers to the first
	// Vars namespace-0 Variables (more items per variable); 0: all.
	Vars int
	// Seed makes the fuzzers repeatable.
	Seed uint64
	// AbuserIP is the loopback address the abusers connect from, so that
	// they are another client machine than the well-behaved client and the
	// newcomers (127.0.0.1). Default "127.0.0.2".
	AbuserIP string
	// Progress receives one line per phase; nil discards them.
	Progress io.Writer
}

// sampleEvery is how often the host process is read.
const sampleEvery = time.Second

// Summary is the outcome of a soak.
type Summary struct {
	Machine   string  `json:"machine"`
	WarmupS   float64 `json:"warmup_s"`
	DurationS float64 `json:"duration_s"`
	RecoverS  float64 `json:"recover_s"`
	Items     int     `json:"items_per_abusive_subscription"`
	Batch     int     `json:"batch"`
	Seed      uint64  `json:"seed"`
	PID       int     `json:"pid"`

	Good GoodFigures `json:"well_behaved"`

	Baseline    *Sample `json:"baseline"`       // last warm-up sample
	After       *Sample `json:"after_recovery"` // last sample
	PeakRSS     uint64  `json:"peak_rss"`
	PeakFDs     int     `json:"peak_fds"`
	PeakThreads int     `json:"peak_threads"`
	PeakHeap    uint64  `json:"peak_heap_alloc"`
	SampleError string  `json:"sample_error,omitempty"`

	HostCPUWarmupPct float64 `json:"host_cpu_warmup_pct"` // % of one core
	HostCPUAbusePct  float64 `json:"host_cpu_abuse_pct"`

	Abusers    []AbuserCount `json:"abusers"`
	AbuseStopS float64       `json:"abuse_stop_s"`  // how long the abusers took to release everything
	NS0Vars    int           `json:"ns0_variables"` // the variables the subscription abusers rotate over
	Newcomers  AbuserCount   `json:"newcomers"`     // a new client's session every anonymousEvery during the abuse
	// Probes are the well-behaved side's checks during the abuse (the
	// anonymous session's attempts are also Newcomers).
	Probes []ProbeFigures `json:"probes"`
	// Hardened is true when the hardening abusers ran (Verdict checks them).
	Hardened bool `json:"hardened"`
	// HostCounters are the host's own refusal counters at the end (its
	// /metrics lines of hostCounterNames).
	HostCounters []string `json:"host_counters,omitempty"`
	FreshClient  string   `json:"fresh_client"` // a new client's session after recovery: "Good" or what failed
	HostExit     string   `json:"host_exit,omitempty"`

	Checks []Check `json:"checks"`
}

// Run starts an `otopcua host` process on loopback ports (tests/procs),
// runs the well-behaved client, the warm-up, the abuse and the recovery,
// and returns the summary with its checks against DefaultLimits. Setup
// failures end t (t.Fatal); the soak's own findings are in the summary.
func Run(t testing.TB, cfg Config) Summary {
	t.Helper()
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	s := Summary{Machine: measure.Machine(time.Now()), WarmupS: cfg.Warmup.Seconds(), DurationS: cfg.Duration.Seconds(),
		RecoverS: cfg.Recover.Seconds(), Items: cfg.Items, Batch: cfg.Batch, Seed: cfg.Seed}

	rig := startHost(t)
	node := rig.node
	s.PID = node.PID()
	vars := ns0Variables(t, node.Endpoint())
	if cfg.Vars > 0 && cfg.Vars < len(vars) {
		vars = vars[:cfg.Vars]
	}
	s.NS0Vars = len(vars)

	var phase atomic.Value
	phase.Store(PhaseWarmup)
	current := func() Phase { return phase.Load().(Phase) }
	start := time.Now()
	sampler := NewSampler(s.PID, start, current, func() (string, error) { return node.Get("/metrics") })
	sctx, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() { defer close(sampled); sampler.Run(sctx, sampleEvery) }()
	defer func() { stopSampling(); <-sampled }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	good, err := StartGood(ctx, node.Endpoint(), start, current)
	cancel()
	if err != nil {
		t.Fatalf("the well-behaved client could not start: %v", err)
	}
	fmt.Fprintf(progress, "soak: host pid %d at %s; %d ns0 variables; warm-up %v\n", s.PID, node.Endpoint(), len(vars), cfg.Warmup)
	cpu0, wall0 := cpuTime(s.PID), time.Now()
	synced := make(chan string, 1)
	go func() { synced <- rig.peer.firstSync(context.Background()) }()
	time.Sleep(cfg.Warmup) // the warm-up is a phase, not an assertion
	if got := <-synced; got != syncedOutcome {
		t.Fatalf("the harness's replication peer never synced a row through the host: %s", got)
	}
	if b, err := sampler.Take(); err == nil {
		s.Baseline = &b
	}
	cpu1, wall1 := cpuTime(s.PID), time.Now()
	s.HostCPUWarmupPct = measure.CPUPercent(cpu1-cpu0, wall1.Sub(wall0))

	tally := NewTally()
	if cfg.AbuserIP == "" {
		cfg.AbuserIP = "127.0.0.2"
	}
	abuse := &Abuse{Endpoint: node.Endpoint(), LocalIP: cfg.AbuserIP, Tally: tally, Vars: vars, Items: cfg.Items, Batch: cfg.Batch, Seed: cfg.Seed,
		Hardening: rig.hard}
	s.Hardened = true
	phase.Store(PhaseAbuse)
	fmt.Fprintf(progress, "soak: abuse for %v\n", cfg.Duration)
	actx, stopAbuse := context.WithTimeout(context.Background(), cfg.Duration)
	abuseStart := time.Now()
	go func() {
		<-actx.Done()
		phase.CompareAndSwap(PhaseAbuse, PhaseStopping)
	}()
	var probing sync.WaitGroup
	probing.Go(func() { s.Probes = runProbes(actx, goodProbes(node.Endpoint(), rig.hard, rig.password, rig.peer)) })
	abuse.Run(actx) // returns when every abuser has stopped
	stopAbuse()
	probing.Wait()
	stopped := time.Now()
	s.HostCPUAbusePct = measure.CPUPercent(cpuTime(s.PID)-cpu1, stopped.Sub(wall1))
	s.AbuseStopS = max(stopped.Sub(abuseStart)-cfg.Duration, 0).Seconds()
	phase.Store(PhaseRecovery)
	fmt.Fprintf(progress, "soak: abusers stopped %.1f s after the end of the abuse; recovery %v\n", s.AbuseStopS, cfg.Recover)
	time.Sleep(time.Until(stopped.Add(cfg.Recover))) // the recovery is watched, not asserted on by sleeping
	// Memory the host still holds, not memory its runtime has not yet
	// returned to the system: a full collection first (the host's test
	// hook), then the sample.
	if _, err := node.Post("/debug/gc"); err != nil {
		fmt.Fprintf(progress, "soak: no forced collection before the last sample: %v\n", err)
	}
	if a, err := sampler.Take(); err == nil {
		s.After = &a
	}
	s.HostCounters = hostCounters(node)
	s.Good = good.Stop()
	s.FreshClient = freshClient(context.Background(), node.Endpoint())
	if code, exited := node.Exited(); exited {
		s.HostExit = fmt.Sprintf("exited with code %d", code)
	}
	s.Abusers = tally.Counts()
	s.Newcomers = newcomersOf(s.Probes)
	s.fillPeaks(sampler)
	s.Checks = Verdict(s, DefaultLimits)
	return s
}

// fillPeaks copies the largest RSS, fds and threads of every sample.
func (s *Summary) fillPeaks(sm *Sampler) {
	all, err := sm.Samples()
	if err != nil {
		s.SampleError = err.Error()
	}
	for _, x := range all {
		s.PeakRSS = max(s.PeakRSS, x.RSS)
		s.PeakFDs = max(s.PeakFDs, x.FDs)
		s.PeakThreads = max(s.PeakThreads, x.Threads)
		s.PeakHeap = max(s.PeakHeap, x.HeapAlloc)
	}
}

// cpuTime is the CPU time pid has used (0 when it cannot be read).
func cpuTime(pid int) time.Duration {
	d, _ := measure.CPUTime(pid)
	return d
}

// clusterID is the soak host's Node:ClusterId (procs.BaseConfig's).
const clusterID = "test"

// The Operator whose password the abusers guess and the well-behaved
// side knows.
const (
	operatorName     = "soak-operator"
	operatorPassword = "soak-operator-password-15"
)

// hostRig is the soak host and what its abusers and probes need.
type hostRig struct {
	node     *procs.Node
	hard     *Hardening
	password string
	peer     *replicaPeer
}

// startHost starts one `otopcua host` with a loopback appsettings.json, a
// SQLite Config DB holding an Operator, logs at info level, a secured
// endpoint (Basic256Sha256 SignAndEncrypt beside None) whose PKI trusts
// the abusers' client certificate, the HTTP read routes closed to
// anonymous readers, and LocalDb replication with the harness's peer, and
// waits until it is ready.
func startHost(t testing.TB) hostRig {
	t.Helper()
	ports := procs.NewPorts(t)
	dir := t.TempDir()
	cfg := procs.BaseConfig("soak", ports)
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["Http"].(map[string]any)["AnonymousRead"] = false
	pki := filepath.Join(dir, "pki")
	secure := trustedClient(t, pki)
	cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{
		"Policies": []string{"None:None", "Basic256Sha256:SignAndEncrypt"}, "PkiDir": pki, "AllowAnonymous": true,
	}
	syncPort, peerPort := procs.UniquePort(t), procs.UniquePort(t)
	cfg["LocalDb"] = map[string]any{
		"Path": filepath.Join(dir, "local.db"), "SyncListenPort": syncPort,
		"Peers": []string{fmt.Sprintf("127.0.0.1:%d", peerPort)}, "Replication": map[string]any{"ApiKey": replicationKey},
	}
	procs.User(t, cfg, operatorPassword+"\n", "add", operatorName, "--role", "Operator")
	syncAddr := fmt.Sprintf("127.0.0.1:%d", syncPort)
	peer := startReplicaPeer(t, fmt.Sprintf("127.0.0.1:%d", peerPort), syncAddr)
	n := procs.Start(t, "soak", cfg, host.EnvGCHook+"=1")
	n.WaitReady(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := secure.learnServer(ctx, n.Endpoint()); err != nil {
		t.Fatalf("the host's secured endpoint: %v", err)
	}
	return hostRig{node: n, password: operatorPassword, peer: peer,
		hard: &Hardening{HTTP: n.HTTP(), User: operatorName, Replication: syncAddr, Secure: secure}}
}

// ns0Scan is the range of namespace-0 numeric ids searched for Variables.
const ns0Scan = 32768

// ns0Variables returns the numeric ids of namespace-0 Variable nodes of
// the server, found by reading the NodeClass of every id below ns0Scan.
func ns0Variables(t testing.TB, endpoint string) []uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
	if err != nil {
		t.Fatalf("find ns0 variables: %v", err)
	}
	defer ch.Close()
	sess, err := uaclient.NewSession(ctx, ch, "soak setup", time.Minute, 10*time.Second)
	if err != nil {
		t.Fatalf("find ns0 variables: %v", err)
	}
	defer sess.Close(ctx, 5*time.Second)
	var vars []uint32
	const batch = 8192
	for from := uint32(1); from < ns0Scan; from += batch {
		req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnNeither}
		for i := from; i < min(from+batch, ns0Scan); i++ {
			req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, i),
				AttributeID: ua.AttributeIDNodeClass, DataEncoding: &ua.QualifiedName{}})
		}
		resp, err := sess.Call(ctx, req, 10*time.Second)
		if err != nil {
			t.Fatalf("find ns0 variables: Read: %v", err)
		}
		for k, dv := range resp.(*ua.ReadResponse).Results {
			if dv.Status != ua.StatusOK || dv.Value == nil {
				continue
			}
			if c, ok := dv.Value.Value().(int32); ok && ua.NodeClass(c) == ua.NodeClassVariable {
				vars = append(vars, from+uint32(k))
			}
		}
	}
	if len(vars) == 0 {
		t.Fatal("find ns0 variables: the server has no Variable in namespace 0 below i=32768")
	}
	return vars
}

// newcomersOf is the anonymous-session probe's attempts as the newcomers'
// counts (a zero count when it did not run).
func newcomersOf(ps []ProbeFigures) AbuserCount {
	for _, p := range ps {
		if p.Name == probeAnonymous {
			return AbuserCount{Abuser: "newcomer", Ops: uint64(p.Attempts), Outcomes: p.Outcomes}
		}
	}
	return AbuserCount{Abuser: "newcomer"}
}

// freshClient opens a new channel and session after the soak and says
// whether that worked ("Good") or what failed: a server that still holds
// what the abusers left may refuse newcomers.
func freshClient(ctx context.Context, endpoint string) string {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{DialTimeout: opTimeout})
	if err != nil {
		return "channel: " + outcome(err)
	}
	defer ch.Close()
	sess, err := uaclient.NewSession(ctx, ch, "soak newcomer", time.Minute, opTimeout)
	if err != nil {
		return "session: " + outcome(err)
	}
	_ = sess.Close(ctx, opTimeout)
	return "Good"
}

// hostCounterNames are the metrics whose lines HostCounters keeps: the
// password throttle, the OPC UA limits (replays, handshake rates, session
// budget) and the sync port's refusals.
var hostCounterNames = []string{"otopcua_auth_throttled_total", "otopcua_opcua_limit_refusals_total", "otopcua_localdb_sync_refused"}

// hostCounters reads the host's /metrics and keeps the lines of
// hostCounterNames (one line saying why when it cannot be read).
func hostCounters(n *procs.Node) []string {
	body, err := n.Get("/metrics")
	if err != nil {
		return []string{"/metrics: " + err.Error()}
	}
	var out []string
	for _, l := range strings.Split(body, "\n") {
		for _, name := range hostCounterNames {
			if strings.HasPrefix(l, name) {
				out = append(out, l)
			}
		}
	}
	return out
}
