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
	up    map[*procs.Node]int // members Up the node must see once formed
	start time.Time
}

// add adds o's nodes to r, to be measured in the same window.
func (r *rig) add(o *rig) {
	r.nodes = append(r.nodes, o.nodes...)
	for n, l := range o.label {
		r.label[n], r.up[n] = l, o.up[n]
	}
	if o.start.Before(r.start) {
		r.start = o.start
	}
}

// nodeConfig is the appsettings.json of one idle node: the tests' loopback
// base with the examples' telemetry (info logs, metrics on).
func nodeConfig(name, clusterID string, p procs.Ports) map[string]any {
	cfg := procs.BaseConfig(name, p)
	cfg["Telemetry"] = map[string]any{"LogLevel": "info", "LogFormat": "json", "MetricsEnabled": true}
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	return cfg
}

// binaryWrap runs the executable bin instead of the one tests/procs
// builds: procs starts `WRAP… BUILT host --config …`, and the shell drops
// BUILT and execs bin with the rest (the node is the process procs
// signals and waits for).
func binaryWrap(bin string) []string {
	return []string{"/bin/sh", "-c", `shift; exec "$0" "$@"`, bin}
}

// startRig starts the lone node and the pair. The pair shares one SQLite
// Config DB, lists both nodes as seeds and names each other as OPC UA
// peers, as examples/pair does. A non-empty bin runs that executable
// instead of the tree's own, its nodes labelled with prefix.
func startRig(t testing.TB, bin, prefix string) *rig {
	r := &rig{label: map[*procs.Node]string{}, up: map[*procs.Node]int{}, start: time.Now()}
	var o procs.Options
	if bin != "" {
		o.Wrap = binaryWrap(bin)
	}
	lone := procs.StartWith(t, "lone", nodeConfig("lone", "idle-lone", procs.NewPorts(t)), o)
	r.nodes = append(r.nodes, lone)
	r.label[lone], r.up[lone] = prefix+"lone node", 1

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
		n := procs.StartWith(t, name, cfg, o)
		r.nodes = append(r.nodes, n)
		r.label[n], r.up[n] = prefix+"pair node "+name, 2
	}
	return r
}

// waitFormed waits until the lone node is Up on its own and both pair
// nodes see two Up members, so that the window measures nodes at rest and
// not a node still joining.
func (r *rig) waitFormed(t testing.TB, total time.Duration) {
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
			if up != r.up[n] {
				return fmt.Errorf("%s sees %d members Up, want %d", r.label[n], up, r.up[n])
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
	switches         uint64 // context switches of all its threads during the window
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
	switches        uint64 // voluntary + involuntary, summed over the threads
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
	s.switches, err = contextSwitches(pid)
	return s, err
}

// contextSwitches sums voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches over the threads of pid: how often the
// process's threads went to sleep or were put off a CPU, each a wake-up to
// pay for. A thread that ended inside the window takes its count with it,
// so the figure is a lower bound.
func contextSwitches(pid int) (uint64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, measure.ErrNoProcess
	}
	var sum uint64
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, key := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
			n, err := measure.ParseStatusCount(b, key)
			if err != nil {
				return 0, err
			}
			sum += n
		}
	}
	return sum, nil
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
		if last[i].switches > first[i].switches {
			out[i].switches = last[i].switches - first[i].switches
		}
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
