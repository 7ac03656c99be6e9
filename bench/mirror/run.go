package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/mirror"
	"github.com/otopcua/otopcua/tests/procs"
)

// Redundancy modes compared.
const (
	modeWarm     = "Warm"
	modeMirrored = "HotAndMirrored"
)

// Config is one shape of the benchmark, run once per mode.
type Config struct {
	// Sessions × Items: the load on the Primary.
	Sessions, Items int
	// Tags over Devices, polled every Poll.
	Tags, Devices int
	Poll          time.Duration
	// Changes registers are changed every ChangeEvery.
	Changes     int
	ChangeEvery time.Duration
	// Publishing interval, Sampling interval (0: every change) and
	// QueueSize of every item; Inflight Publish requests per session.
	Publishing, Sampling time.Duration
	QueueSize, Inflight  int
	// SetupWorkers sessions are opened at a time.
	SetupWorkers int
	// Warmup after the load is set up (and, mirrored, the Secondary holds
	// every session), then the measured Window.
	Warmup, Window time.Duration
	// Profile, when set, records both nodes with `perf record -g` over
	// the window into Profile-<shape>-<mode>-<primary|secondary>.perf.data (the profiler's
	// own cost lands in the figures of that run: profile in a run of its
	// own).
	Profile string
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
}

// Shape is "<sessions>x<items>".
func (c Config) Shape() string { return fmt.Sprintf("%dx%d", c.Sessions, c.Items) }

// Layout is the tags' layout over the devices.
func (c Config) Layout() fieldrig.Layout {
	return fieldrig.Layout{Devices: c.Devices, PerDevice: c.Tags / c.Devices}
}

// Check reports what is wrong with c, nil when nothing.
func (c Config) Check() error {
	switch {
	case c.Sessions < 1 || c.Items < 1:
		return fmt.Errorf("-shape %s: sessions and items must be ≥ 1", c.Shape())
	case c.Devices < 1 || c.Tags < 1 || c.Tags%c.Devices != 0 || c.Tags/c.Devices > 65536:
		return fmt.Errorf("-tags %d -devices %d: tags must be a multiple of devices, at most 65,536 per device", c.Tags, c.Devices)
	case c.Poll < 10*time.Millisecond || c.Publishing <= 0 || c.Sampling < 0:
		return fmt.Errorf("-poll must be ≥ 10ms, -publishing > 0, -sampling ≥ 0")
	case c.Changes < 1 || c.Changes > c.Tags || c.ChangeEvery <= 0:
		return fmt.Errorf("-changes must be between 1 and -tags, -change-every > 0")
	case c.QueueSize < 1 || c.Inflight < 1 || c.SetupWorkers < 1 || c.SetupWorkers > 5:
		return fmt.Errorf("-queue and -inflight must be ≥ 1, -setup-workers between 1 and 5 (the node's unactivated sessions per address)")
	case c.Warmup < 0 || c.Window <= 0:
		return fmt.Errorf("-warmup must be ≥ 0 and -window > 0")
	}
	return nil
}

// NodeWindow is what one node process used in the window.
type NodeWindow struct {
	PID int `json:"pid"`
	// CPUPct: utime+stime over the window, % of one core.
	CPUPct float64 `json:"cpu_pct"`
	// RSS (VmRSS every 500 ms) and Go heap in use
	// (go_memstats_heap_inuse_bytes, every 5 s), means over the window.
	RSSMiB  float64 `json:"rss_mean_mib"`
	HeapMiB float64 `json:"heap_inuse_mean_mib"`
}

// Result is one mode of one shape.
type Result struct {
	Shape string `json:"shape"`
	// Run numbers the runs of a shape (-repeat).
	Run      int    `json:"run"`
	Mode     string `json:"mode"`
	Sessions int    `json:"sessions"`
	Items    int    `json:"items"`
	// SetupS: opening the sessions and items; ReadyS: from then until the
	// Secondary held every session (mirrored).
	SetupS        float64       `json:"setup_s"`
	ReadyS        float64       `json:"replica_ready_s"`
	WindowS       float64       `json:"window_s"`
	Primary       NodeWindow    `json:"primary"`
	Second        NodeWindow    `json:"secondary"`
	Client        ClientFigures `json:"client"`
	Mirror        MirrorFigures `json:"mirror"`
	Changes       float64       `json:"changes_per_s"`
	HarnessCPUPct float64       `json:"harness_cpu_pct"`
	// OtherCPUPct: the machine's busy time in the window (/proc/stat)
	// less the two nodes and the harness, % of one core: what else ran.
	OtherCPUPct float64 `json:"other_cpu_pct"`
}

// MirrorFigures are read from the nodes' /metrics (mirrored mode only).
type MirrorFigures struct {
	// Lag: record handed to the transport → peer's acknowledgement, from
	// the Primary's otopcua_mirror_lag_seconds, delta over the window:
	// estimated quantiles (linear in the bucket) and the bucket bounds
	// they lie under.
	LagCount   float64 `json:"lag_count"`
	LagP50Ms   float64 `json:"lag_p50_ms"`
	LagP99Ms   float64 `json:"lag_p99_ms"`
	LagP50LeMs float64 `json:"lag_p50_le_ms"`
	LagP99LeMs float64 `json:"lag_p99_le_ms"`
	// Dropped: sessions put back to Warm (otopcua_mirror_dropped_total
	// with the reasons lag, too-large and encode), both nodes, over the
	// whole run; ByReason every reason of that series by node ("primary
	// inbox-full"; the series also counts
	// refused batches and records, e.g. not-a-peer: a batch that arrived
	// before the receiver listed its sender as a peer). AckTimeouts: otopcua_mirror_dropped_total{reason="ack-timeout"},
	// the times a peer did not acknowledge a NotificationMessage within
	// OpcUa:Mirror:AckTimeout (the message left without it, the peer was
	// not waited for until it caught up; no session leaves the mirror).
	Dropped     float64            `json:"dropped"`
	ByReason    map[string]float64 `json:"dropped_by_reason,omitempty"`
	AckTimeouts float64            `json:"ack_timeouts"`
	// SecondaryAtReady and SecondaryAfterWarmup are the Secondary's
	// otopcua_mirror_dropped_total by reason when it first held every
	// session and at the end of the warm-up: when the events happened.
	SecondaryAtReady     map[string]float64 `json:"secondary_dropped_at_ready,omitempty"`
	SecondaryAfterWarmup map[string]float64 `json:"secondary_dropped_after_warmup,omitempty"`
	// InWindow is ByReason's increase over the measured window.
	InWindow map[string]float64 `json:"dropped_by_reason_in_window,omitempty"`
	// Takeovers: otopcua_mirror_takeovers_total{result="ok"}, both nodes.
	Takeovers float64 `json:"takeovers"`
	// ReplicaSessions: otopcua_mirror_sessions{role="replica"} on the
	// Secondary at the end; Ready its otopcua_mirror_ready.
	ReplicaSessions float64 `json:"replica_sessions"`
	Ready           bool    `json:"ready"`
	// Bytes and records the Primary sent in the window, per second.
	BytesOutPerS   float64 `json:"bytes_out_per_s"`
	RecordsOutPerS float64 `json:"records_out_per_s"`
}

// Run runs c in one mode on a fresh pair. Setup failures end t.
func Run(t testing.TB, c Config, mode string) Result {
	t.Helper()
	say := func(format string, args ...any) {
		if c.Progress != nil {
			fmt.Fprintf(c.Progress, "mirror %s %s: "+format+"\n", append([]any{c.Shape(), mode}, args...)...)
		}
	}
	res := Result{Shape: c.Shape(), Mode: mode, Sessions: c.Sessions, Items: c.Items}
	r := startRig(t, c, mode)
	say("pair up (Primary %s pid %d, Secondary %s pid %d), %d tags Good on both in %.1f s",
		r.primary.Name, r.primary.PID(), r.second.Name, r.second.PID(), c.Tags, r.deployed.Seconds())

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	ch := &changer{l: c.Layout(), devs: r.devs, per: c.Changes, every: c.ChangeEvery}
	wg.Add(1)
	go func() { defer wg.Done(); ch.run(ctx) }()

	t0 := time.Now()
	ld, err := openLoad(ctx, r.primary.Endpoint(), c)
	if err != nil {
		t.Fatalf("opening the load: %v", err)
	}
	t.Cleanup(ld.close)
	wg.Add(1)
	go func() { defer wg.Done(); ld.run(ctx) }()
	res.SetupS = time.Since(t0).Seconds()
	say("%d sessions × %d items open in %.1f s", c.Sessions, c.Items, res.SetupS)
	if mode == modeMirrored {
		t1 := time.Now()
		procs.CheckFor(t, 5*time.Minute, 500*time.Millisecond, func() error {
			s, err := scrape(r.second)
			if err != nil {
				return err
			}
			if n := s.Sum("otopcua_mirror_sessions", `role="replica"`); int(n) != c.Sessions {
				return fmt.Errorf("the Secondary holds %v replica sessions, want %d", n, c.Sessions)
			}
			if s.Sum("otopcua_mirror_ready") < 1 {
				return fmt.Errorf("the Secondary is not ready")
			}
			return nil
		})
		res.ReadyS = time.Since(t1).Seconds()
		say("the Secondary holds every session (ready) after %.1f s", res.ReadyS)
	}
	var atReady Scrape
	if mode == modeMirrored {
		if atReady, err = scrape(r.second); err != nil {
			t.Fatal(err)
		}
	}
	say("warm-up %v, then %v measured", c.Warmup, c.Window)
	time.Sleep(c.Warmup) // the warm-up is a phase, not an assertion

	before := [2]Scrape{}
	for i, n := range []*procs.Node{r.primary, r.second} {
		if before[i], err = scrape(n); err != nil {
			t.Fatal(err)
		}
	}
	changes0 := ch.count.Load()
	harness0, _ := measure.CPUTime(selfPID)
	busy0, total0 := measure.MachineCPU()
	var profs []*exec.Cmd
	if c.Profile != "" {
		for _, n := range []struct {
			role string
			node *procs.Node
		}{{"primary", r.primary}, {"secondary", r.second}} {
			file := fmt.Sprintf("%s-%s-%s-%s.perf.data", c.Profile, c.Shape(), mode, n.role)
			prof := exec.Command("perf", "record", "-g", "-F", "199", "-o", file, "-p", strconv.Itoa(n.node.PID()))
			if err := prof.Start(); err != nil {
				t.Fatalf("perf record: %v", err)
			}
			profs = append(profs, prof)
			say("recording the %s into %s", n.role, file)
		}
	}
	ld.measuring.Store(true)
	wins, wall, err := watch(r.primary, r.second, c.Window)
	ld.measuring.Store(false)
	for _, prof := range profs {
		_ = prof.Process.Signal(os.Interrupt)
		_ = prof.Wait()
	}
	if err != nil {
		t.Fatal(err)
	}
	harness1, _ := measure.CPUTime(selfPID)
	busy1, total1 := measure.MachineCPU()
	res.HarnessCPUPct = measure.CPUPercent(harness1-harness0, wall)
	res.OtherCPUPct = machinePct(busy0, total0, busy1, total1) - res.HarnessCPUPct - wins[0].CPUPct - wins[1].CPUPct
	res.Changes = float64(ch.count.Load()-changes0) / wall.Seconds()
	res.WindowS = wall.Seconds()
	res.Primary, res.Second = wins[0], wins[1]
	res.Client = ld.figures(wall)
	after := [2]Scrape{}
	for i, n := range []*procs.Node{r.primary, r.second} {
		if after[i], err = scrape(n); err != nil {
			t.Fatal(err)
		}
	}
	if mode == modeMirrored {
		res.Mirror = mirrorFigures(before, after, wall)
		res.Mirror.SecondaryAtReady = nonZero(atReady.ByLabel("otopcua_mirror_dropped_total", "reason"))
		res.Mirror.SecondaryAfterWarmup = nonZero(before[1].ByLabel("otopcua_mirror_dropped_total", "reason"))
	}
	for _, n := range []*procs.Node{r.primary, r.second} {
		if code, exited := n.Exited(); exited {
			t.Fatalf("%s exited (code %d) during the run:\n%s", n.Name, code, n.Log())
		}
	}
	say("CPU Primary %.1f %%, value age p99 %.1f ms, Secondary RSS %.1f MiB", res.Primary.CPUPct, res.Client.AgeP99Ms, res.Second.RSSMiB)
	return res
}

// ackTimeout is the otopcua_mirror_dropped_total reason of a peer that
// missed OpcUa:Mirror:AckTimeout.
const ackTimeout = "ack-timeout"

// mirrorFigures reads the mirror's figures from scrapes of the Primary
// ([0]) and the Secondary ([1]) at both ends of the window.
func mirrorFigures(before, after [2]Scrape, wall time.Duration) MirrorFigures {
	const lag = "otopcua_mirror_lag_seconds"
	d := DeltaBuckets(before[0].Buckets(lag), after[0].Buckets(lag))
	m := MirrorFigures{LagCount: Total(d),
		LagP50Ms: 1000 * Quantile(d, 0.5), LagP99Ms: 1000 * Quantile(d, 0.99),
		LagP50LeMs: 1000 * UpperBound(d, 0.5), LagP99LeMs: 1000 * UpperBound(d, 0.99),
		ReplicaSessions: after[1].Sum("otopcua_mirror_sessions", `role="replica"`),
		Ready:           after[1].Sum("otopcua_mirror_ready") >= 1,
		BytesOutPerS:    (after[0].Sum("otopcua_mirror_bytes_total", `direction="out"`) - before[0].Sum("otopcua_mirror_bytes_total", `direction="out"`)) / wall.Seconds(),
		RecordsOutPerS:  (after[0].Sum("otopcua_mirror_records_total", `direction="out"`) - before[0].Sum("otopcua_mirror_records_total", `direction="out"`)) / wall.Seconds(),
	}
	for i, s := range after {
		was := before[i].ByLabel("otopcua_mirror_dropped_total", "reason")
		for reason, n := range s.ByLabel("otopcua_mirror_dropped_total", "reason") {
			if n == 0 {
				continue
			}
			if d := n - was[reason]; d > 0 {
				if m.InWindow == nil {
					m.InWindow = map[string]float64{}
				}
				m.InWindow[[]string{"primary", "secondary"}[i]+" "+reason] += d
			}
			if m.ByReason == nil {
				m.ByReason = map[string]float64{}
			}
			m.ByReason[[]string{"primary", "secondary"}[i]+" "+reason] += n
			switch reason {
			case ackTimeout:
				m.AckTimeouts += n
			case mirror.DropLag, mirror.DropTooLarge, mirror.DropEncode:
				m.Dropped += n
			}
		}
		m.Takeovers += s.Sum("otopcua_mirror_takeovers_total", `result="ok"`)
	}
	for _, f := range []*float64{&m.LagP50Ms, &m.LagP99Ms, &m.LagP50LeMs, &m.LagP99LeMs} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = -1
		}
	}
	return m
}

// scrape reads n's /metrics.
func scrape(n *procs.Node) (Scrape, error) {
	body, err := n.Get("/metrics")
	if err != nil {
		return nil, fmt.Errorf("%s /metrics: %w", n.Name, err)
	}
	return ParseScrape(body)
}

// watch measures both processes over d: CPU at both ends, RSS every
// 500 ms, the Go heap in use every 5 s (and once at the end).
func watch(primary, second *procs.Node, d time.Duration) ([2]NodeWindow, time.Duration, error) {
	nodes := []*procs.Node{primary, second}
	var out [2]NodeWindow
	var cpu0 [2]time.Duration
	var rss, heap [2]float64
	var nRSS, nHeap [2]int
	for i, n := range nodes {
		out[i].PID = n.PID()
		c, err := measure.CPUTime(out[i].PID)
		if err != nil {
			return out, 0, err
		}
		cpu0[i] = c
	}
	readHeap := func() {
		for i, n := range nodes {
			if s, err := scrape(n); err == nil && s.Has("go_memstats_heap_inuse_bytes") {
				heap[i] += s.Sum("go_memstats_heap_inuse_bytes")
				nHeap[i]++
			}
		}
	}
	start := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastHeap := time.Time{}
	for now := start; now.Sub(start) < d; now = <-tick.C {
		for i := range nodes {
			b, err := measure.RSS(out[i].PID)
			if err != nil {
				return out, 0, err
			}
			rss[i] += float64(b)
			nRSS[i]++
		}
		if now.Sub(lastHeap) >= 5*time.Second {
			readHeap()
			lastHeap = now
		}
	}
	wall := time.Since(start)
	for i := range nodes {
		c, err := measure.CPUTime(out[i].PID)
		if err != nil {
			return out, 0, err
		}
		out[i].CPUPct = measure.CPUPercent(c-cpu0[i], wall)
	}
	readHeap()
	for i := range nodes {
		out[i].RSSMiB = rss[i] / float64(nRSS[i]) / (1 << 20)
		if nHeap[i] > 0 {
			out[i].HeapMiB = heap[i] / float64(nHeap[i]) / (1 << 20)
		}
	}
	return out, wall, nil
}

// changer changes `per` registers every `every`. It visits the tags in a
// fixed stride order (tag k×stride mod tags, stride coprime to the tags),
// so that the changes of one tick are spread over the whole tag space
// and so over every session's items, not bunched on the few sessions
// whose items lie next to each other. Each change writes the next value
// of a global counter (never the value the register held).
type changer struct {
	l     fieldrig.Layout
	devs  []*fielddevice.Device
	per   int
	every time.Duration
	next  int    // position in the visit; the changer's goroutine only
	value uint16 // last value written; the changer's goroutine only
	count atomicCount
}

// run changes registers until ctx ends.
func (c *changer) run(ctx context.Context) { fieldrig.Tick(ctx, c.every, c.step) }

// step makes one tick's changes.
func (c *changer) step() {
	for range c.per {
		d, r := c.l.Of(c.next * stride(c.l.Tags()) % c.l.Tags())
		c.next = (c.next + 1) % c.l.Tags()
		c.value = c.value%32000 + 1
		if c.devs[d].Holding(r) == c.value {
			c.value = c.value%32000 + 1
		}
		c.devs[d].SetHolding(r, c.value)
	}
	c.count.Add(uint64(c.per))
}

// stride is the changer's step through n tags: the largest number below
// n×0.618 that is coprime to n (1 for n ≤ 2), so that successive changes
// land far apart and every tag is visited once per n changes.
func stride(n int) int {
	for s := n * 618 / 1000; s > 1; s-- {
		if gcd(s, n) == 1 {
			return s
		}
	}
	return 1
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// nonZero is m without its zero entries (nil when none is left).
func nonZero(m map[string]float64) map[string]float64 {
	var out map[string]float64
	for k, v := range m {
		if v != 0 {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] = v
		}
	}
	return out
}
