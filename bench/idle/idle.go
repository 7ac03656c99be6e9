package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/tests/procs"
)

// settings are one run's durations.
type settings struct {
	settle time.Duration // from the start of the processes to the window
	window time.Duration // the measured window
	every  time.Duration // RSS sample period inside the window
}

// rig is the set of idle nodes one run measures: a lone node and the two
// nodes of a pair, all started at the same moment.
type rig struct {
	nodes []*procs.Node
	label map[*procs.Node]string
	start time.Time
}

// nodeConfig is the appsettings.json of one idle node: the tests' loopback
// base with the examples' telemetry (info logs, metrics on).
func nodeConfig(name, clusterID string, p procs.Ports) map[string]any {
	cfg := procs.BaseConfig(name, p)
	cfg["Telemetry"] = map[string]any{"LogLevel": "info", "LogFormat": "json", "MetricsEnabled": true}
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	return cfg
}

// startRig starts the lone node and the pair. The pair shares one SQLite
// Config DB, lists both nodes as seeds and names each other as OPC UA
// peers, as examples/pair does.
func startRig(t testing.TB) *rig {
	r := &rig{label: map[*procs.Node]string{}, start: time.Now()}
	lone := procs.Start(t, "lone", nodeConfig("lone", "idle-lone", procs.NewPorts(t)))
	r.nodes = append(r.nodes, lone)
	r.label[lone] = "lone node"

	dir := t.TempDir()
	ps := procs.NewPortSet(t, 2)
	names := []string{"a", "b"}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ps[0].Cluster), fmt.Sprintf("127.0.0.1:%d", ps[1].Cluster)}
	for i, name := range names {
		cfg := nodeConfig(name, "idle-pair", ps[i])
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + dir + "/config.db"}
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		ua := cfg["OpcUa"].(map[string]any)
		ua["PeerApplicationUris"] = []string{"urn:" + names[1-i] + ":otopcua"}
		ua["PeerDiscoveryUrls"] = []string{fmt.Sprintf("opc.tcp://127.0.0.1:%d", ps[1-i].OpcUa)}
		n := procs.Start(t, name, cfg)
		r.nodes = append(r.nodes, n)
		r.label[n] = "pair node " + name
	}
	return r
}

// waitFormed waits until the lone node is Up on its own and both pair
// nodes see two Up members, so that the window measures nodes at rest and
// not a node still joining.
func (r *rig) waitFormed(t testing.TB, total time.Duration) {
	want := map[*procs.Node]int{r.nodes[0]: 1, r.nodes[1]: 2, r.nodes[2]: 2}
	procs.CheckFor(t, total, 100*time.Millisecond, func() error {
		for _, n := range r.nodes {
			v, err := n.Members()
			if err != nil {
				return fmt.Errorf("%s: %w", r.label[n], err)
			}
			up := 0
			for _, m := range v.Members {
				if m.Status == procs.StatusUp {
					up++
				}
			}
			if up != want[n] {
				return fmt.Errorf("%s sees %d members Up, want %d", r.label[n], up, want[n])
			}
		}
		return nil
	})
}

// result is what the window showed of one node.
type result struct {
	label            string
	rssEnd, rssMax   uint64 // VmRSS, bytes
	anonEnd, fileEnd uint64 // RssAnon, RssFile at the end, bytes
	cpu              time.Duration
	window           time.Duration
	minorFaults      uint64 // during the window
	goroutines       string // go_goroutines from /metrics after the window
	alive            bool
	samples          int // readings inside the window
}

// CPUPercent is the node's share of one core over the window.
func (res result) CPUPercent() float64 { return measure.CPUPercent(res.cpu, res.window) }

// snapshot is one reading of a process's /proc files.
type snapshot struct {
	rss, anon, file uint64
	cpu             time.Duration
	minflt          uint64
}

func read(pid int) (snapshot, error) {
	var s snapshot
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, measure.ErrNoProcess
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, measure.ErrNoProcess
	}
	ticks, err := measure.ParseStatTicks(st)
	if err != nil {
		return s, err
	}
	s.cpu = time.Duration(ticks) * measure.ClockTick
	if s.minflt, err = measure.ParseStatMinorFaults(st); err != nil {
		return s, err
	}
	if s.rss, err = measure.ParseStatusKB(status, "VmRSS"); err != nil {
		return s, err
	}
	if s.anon, err = measure.ParseStatusKB(status, "RssAnon"); err != nil {
		return s, err
	}
	if s.file, err = measure.ParseStatusKB(status, "RssFile"); err != nil {
		return s, err
	}
	return s, nil
}

// measureWindow waits until settle has passed since the processes started,
// then samples every node for the window. Nothing talks to the nodes
// during the window: the only reads are of /proc.
func (r *rig) measureWindow(t testing.TB, s settings) []result {
	if wait := time.Until(r.start.Add(s.settle)); wait > 0 {
		time.Sleep(wait)
	}
	pids := make([]int, len(r.nodes))
	first := make([]snapshot, len(r.nodes))
	out := make([]result, len(r.nodes))
	for i, n := range r.nodes {
		pids[i] = n.PID()
		snap, err := read(pids[i])
		if err != nil {
			t.Fatalf("%s: %v", r.label[n], err)
		}
		first[i] = snap
		out[i] = result{label: r.label[n], rssMax: snap.rss}
	}
	begin := time.Now()
	last := append([]snapshot(nil), first...)
	for time.Since(begin) < s.window {
		time.Sleep(min(s.every, s.window-time.Since(begin)))
		for i := range r.nodes {
			snap, err := read(pids[i])
			if errors.Is(err, measure.ErrNoProcess) {
				continue // reported as not alive below
			}
			if err != nil {
				t.Fatalf("%s: %v", out[i].label, err)
			}
			last[i] = snap
			out[i].samples++
			out[i].rssMax = max(out[i].rssMax, snap.rss)
		}
	}
	elapsed := time.Since(begin)
	for i, n := range r.nodes {
		out[i].window = elapsed
		out[i].rssEnd, out[i].anonEnd, out[i].fileEnd = last[i].rss, last[i].anon, last[i].file
		out[i].cpu = last[i].cpu - first[i].cpu
		out[i].minorFaults = last[i].minflt - first[i].minflt
		out[i].alive = n.Alive()
		out[i].goroutines = goroutines(n)
	}
	return out
}

// goroutines reads go_goroutines from the node's /metrics, "?" when it
// cannot.
func goroutines(n *procs.Node) string {
	body, err := n.Get("/metrics")
	if err != nil {
		return "?"
	}
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
