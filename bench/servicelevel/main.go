// Command servicelevel measures how fast otopcua's Server.ServiceLevel
// follows a failover, as a SCADA client subscribed to it sees it, with
// real `otopcua host` processes on loopback:
//
//   - crash failover: a pair (seeds a, b; admin + driver; auto-down with
//     the production defaults) publishes 250/240; the Primary gets
//     SIGKILL; the clock runs until the survivor's 250 reaches an OPC UA
//     client subscribed to i=2267 (publishing interval 50 ms). The killed
//     node is then restarted at the same address and the next trial
//     starts once the pair is back at 250/240 — so the Primary alternates.
//     Measured with the crash fast path on (the auto-down default) and off
//     (Cluster:DownOnConnectionRefused false: the failure detector, then
//     AutoDownUnreachableAfter, 15 s).
//   - topology change → every ServiceLevel updated: after each restart,
//     from the moment the rejoining node is Up in the survivor's
//     /api/cluster/members (polled every 10 ms) until the subscribed
//     clients see every node at its new level (the rejoined node at 240,
//     the survivor at 250).
//
// Usage:
//
//	go run ./bench/servicelevel -trials 20 -off-trials 5
//	go run ./bench/servicelevel -trials 20 -off-trials 5 -doc docs/benchmarks-failover.md
//
// Results are printed as a Markdown table (median, p99 by nearest rank,
// min, max); -doc also writes them, with the commands, into that file.
// Every process it starts is killed before it exits, Ctrl-C included.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/demo"
	"github.com/otopcua/otopcua/tests/procs"
)

// Healthy levels.
const (
	primary   byte = 250
	secondary byte = 240
)

func main() {
	trials := flag.Int("trials", 20, "crash failover trials with the fast path on")
	offTrials := flag.Int("off-trials", 5, "crash failover trials with the fast path off (each takes ≈ 20 s)")
	doc := flag.String("doc", "", "also write the results and the commands into this Markdown file")
	verbose := flag.Bool("v", false, "log every step")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if !*verbose {
		log.SetOutput(io.Discard)
	}
	go procs.StopOnSignal()

	var rows []string
	var topo, rejoin []time.Duration
	var topoN int
	if *trials > 0 {
		res := runTrials("fast path on (default)", *trials, nil)
		rows = append(rows, row("SIGKILL of the Primary → survivor's 250 seen by a subscribed client, fast path on (default)", res.failover, *trials))
		topo, rejoin = append(topo, res.topology...), append(rejoin, res.rejoin...)
		topoN += res.restarts
	}
	if *offTrials > 0 {
		res := runTrials("fast path off", *offTrials, func(c map[string]any) { c["DownOnConnectionRefused"] = false })
		rows = append(rows, row("SIGKILL of the Primary → survivor's 250 seen by a subscribed client, fast path off (DownOnConnectionRefused=false)", res.failover, *offTrials))
		topo, rejoin = append(topo, res.topology...), append(rejoin, res.rejoin...)
		topoN += res.restarts
	}
	if topoN > 0 {
		rows = append(rows,
			row("topology change (restarted node Up in the survivor's view) → every ServiceLevel updated", topo, topoN),
			row("restart of the killed node → its 240 seen (process start, join as youngest, snapshot)", rejoin, topoN))
	}
	env := measure.Machine(time.Now())
	table := "| measurement | median | p99 | min | max | trials ok |\n| --- | --- | --- | --- | --- | --- |\n" + strings.Join(rows, "\n") + "\n"
	fmt.Printf("\n%s\n\n%s", env, table)
	if *doc != "" {
		cmdline := "go run ./bench/servicelevel " + strings.Join(os.Args[1:], " ")
		if err := os.WriteFile(*doc, []byte(document(cmdline, env, table)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", *doc)
	}
}

type result struct {
	failover, topology, rejoin []time.Duration
	restarts                   int
}

// runTrials runs n crash failovers on one pair, restarting the killed node
// after each, and returns the times. A trial that fails is reported and
// the pair is built afresh for the next one.
func runTrials(label string, n int, tune func(cluster map[string]any)) result {
	var res result
	done := 0
	for done < n {
		err := run(func(t testing.TB) {
			p := newPair(t, tune)
			for done < n {
				took, topo, rejoin := p.trial(t, label, done+1)
				done++
				res.failover = append(res.failover, took)
				fmt.Fprintf(os.Stderr, "%s, trial %d/%d: failover %v, topology change → levels %v, rejoin %v\n",
					label, done, n, ms(took), ms(topo), ms(rejoin))
				res.topology = append(res.topology, topo)
				res.rejoin = append(res.rejoin, rejoin)
				res.restarts++
			}
		})
		if err != nil {
			done++
			fmt.Fprintf(os.Stderr, "%s, trial %d/%d failed: %v\n", label, done, n, err)
		}
	}
	return res
}

// pair is two nodes, each with a subscribed client.
type pair struct {
	names []string
	nodes map[string]*procs.Node
	addr  map[string]string
	watch map[string]*watched
}

type watched struct {
	w  *demo.Watcher
	mu sync.Mutex
	h  []demo.Reading // mu must be held.
}

func (w *watched) add(r demo.Reading) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.h = append(w.h, r)
}

// first is the first reading at or after since with level, if any.
func (w *watched) first(since time.Time, level byte) (demo.Reading, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.h {
		if !r.At.Before(since) && r.Known && r.Level == level {
			return r, true
		}
	}
	return demo.Reading{}, false
}

func newPair(t testing.TB, tune func(map[string]any)) *pair {
	dir := t.TempDir()
	pa, pb := procs.NewPorts(t), procs.NewPorts(t)
	p := &pair{names: []string{"a", "b"}, nodes: map[string]*procs.Node{}, addr: map[string]string{}, watch: map[string]*watched{}}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", pa.Cluster), fmt.Sprintf("127.0.0.1:%d", pb.Cluster)}
	for i, ports := range []procs.Ports{pa, pb} {
		name := p.names[i]
		cfg := procs.BaseConfig(name, ports)
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		cfg["Node"].(map[string]any)["ClusterId"] = "bench"
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + dir + "/config.db"}
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + p.names[1-i] + ":otopcua"}
		c := cfg["Cluster"].(map[string]any)
		c["SeedNodes"] = seeds
		if tune != nil {
			tune(c)
		}
		n := procs.Start(t, name, cfg)
		w := &watched{}
		w.w = demo.Watch(context.Background(), n.Endpoint(), demo.WatchOptions{Interval: 50 * time.Millisecond}, w.add)
		t.Cleanup(w.w.Close)
		p.nodes[name], p.addr[name], p.watch[name] = n, seeds[i], w
	}
	p.waitHealthy(t, 90*time.Second)
	return p
}

// levels returns the current reading of every node.
func (p *pair) levels() map[string]demo.Reading {
	out := map[string]demo.Reading{}
	for _, n := range p.names {
		out[n] = p.watch[n].w.Current()
	}
	return out
}

// waitHealthy waits for one node at 250 and the other at 240; it returns
// the Primary and the Secondary.
func (p *pair) waitHealthy(t testing.TB, total time.Duration) (string, string) {
	var pr, se string
	procs.CheckFor(t, total, 10*time.Millisecond, func() error {
		for _, n := range p.names {
			if code, done := p.nodes[n].Exited(); done {
				t.Fatalf("%s exited with code %d\n%s", n, code, p.nodes[n].Log())
			}
		}
		l := p.levels()
		a, b := l["a"], l["b"]
		switch {
		case a.Known && b.Known && a.Level == primary && b.Level == secondary:
			pr, se = "a", "b"
		case a.Known && b.Known && b.Level == primary && a.Level == secondary:
			pr, se = "b", "a"
		default:
			return fmt.Errorf("not 250/240 yet: a=%v b=%v", a, b)
		}
		return nil
	})
	return pr, se
}

// trial kills the Primary, times the take-over, restarts the killed node
// and times the rejoin.
func (p *pair) trial(t testing.TB, label string, i int) (failover, topology, rejoin time.Duration) {
	pr, se := p.waitHealthy(t, 90*time.Second)
	// Let the failure detectors collect heartbeats, as in a running pair,
	// and check the levels hold meanwhile.
	procs.Holds(t, 3*time.Second, 50*time.Millisecond, func() error {
		if l := p.levels(); !l[pr].Known || l[pr].Level != primary || !l[se].Known || l[se].Level != secondary {
			return fmt.Errorf("levels moved before the kill: %v", l)
		}
		return nil
	})
	p.nodes[pr].Signal(syscall.SIGKILL)
	killed := time.Now()
	var seen demo.Reading
	procs.CheckFor(t, 90*time.Second, 5*time.Millisecond, func() error {
		if code, done := p.nodes[se].Exited(); done {
			t.Fatalf("the survivor %s exited with code %d\n%s", se, code, p.nodes[se].Log())
		}
		r, ok := p.watch[se].first(killed, primary)
		if !ok {
			return fmt.Errorf("%s not at 250 yet: %v", se, p.watch[se].w.Current())
		}
		seen = r
		return nil
	})
	failover = seen.At.Sub(killed)
	log.Printf("%s trial %d: SIGKILL %s → %s at 250 after %v", label, i, pr, se, failover)

	p.nodes[pr].Restart()
	restarted := time.Now()
	before := p.nodes[pr].PID()
	var up time.Time
	procs.CheckFor(t, 90*time.Second, 10*time.Millisecond, func() error {
		v, err := p.nodes[se].Members()
		if err != nil {
			return err
		}
		m, ok := v.Member(p.addr[pr])
		if !ok || m.Status != procs.StatusUp {
			return fmt.Errorf("%s not Up in %s's view: %s", pr, se, v)
		}
		up = time.Now()
		return nil
	})
	var back demo.Reading
	procs.CheckFor(t, 90*time.Second, 5*time.Millisecond, func() error {
		r, ok := p.watch[pr].first(restarted, secondary)
		if !ok {
			return fmt.Errorf("%s (pid %d) not at 240 yet: %v", pr, before, p.watch[pr].w.Current())
		}
		if l := p.watch[se].w.Current(); !l.Known || l.Level != primary {
			return fmt.Errorf("the survivor %s left 250: %v", se, l)
		}
		back = r
		return nil
	})
	topology = max(back.At.Sub(up), 0)
	rejoin = back.At.Sub(restarted)
	log.Printf("%s trial %d: %s Up in %s's view → levels updated after %v; restart → 240 after %v", label, i, pr, se, topology, rejoin)
	return failover, topology, rejoin
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// row is a Markdown table row: label | median | p99 | min | max | ok/n.
func row(label string, ds []time.Duration, n int) string {
	return fmt.Sprintf("| %s | %s | %d/%d |", label, summary(ds), len(ds), n)
}

// summary is "median | p99 | min | max".
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "– | – | – | –"
	}
	s := measure.Sorted(ds)
	return fmt.Sprintf("%s | %s | %s | %s", ms(measure.Percentile(s, 50)), ms(measure.Percentile(s, 99)), ms(s[0]), ms(s[len(s)-1]))
}

func document(cmdline, env, table string) string {
	return `# ServiceLevel failover benchmarks

Measured with real ` + "`otopcua host`" + ` processes on loopback by ` + "`bench/servicelevel`" + `, as a SCADA client
sees it: every node is watched by an OPC UA client subscribed to ` + "`Server.ServiceLevel`" + ` (i=2267,
publishing interval 50 ms) that reconnects when its node restarts.

## What is measured

- **Crash failover.** A pair (seeds ` + "`a`, `b`" + `; both ` + "`admin` + `driver`" + `; ClusterId ` + "`bench`" + `; one shared SQLite
  Config DB; ` + "`auto-down`" + ` with the production defaults) publishes 250/240. The levels must hold for 3 s,
  then the Primary gets SIGKILL. The clock runs from the kill until the survivor's 250 reaches its
  subscribed client. The killed node is restarted at the same address and the next trial starts when
  the pair is back at 250/240, so the Primary alternates between the nodes.
  - *fast path on*: the ` + "`auto-down`" + ` default (` + "`Cluster:DownOnConnectionRefused`" + ` unset → on): refused TCP
    probes of the dead peer's port down it at once.
  - *fast path off*: ` + "`Cluster:DownOnConnectionRefused: false`" + `: the phi-accrual detector notices the silence,
    then auto-down waits ` + "`AutoDownUnreachableAfter`" + ` (15 s).
- **Topology change → every ServiceLevel updated.** After each restart: from the moment the rejoining
  node is Up in the survivor's ` + "`GET /api/cluster/members`" + ` (polled every 10 ms) until the subscribed clients
  see the rejoined node at 240 with the survivor still at 250 (debounce, snapshot on pub/sub, publish).
  Counted as 0 when the level was already there when the poll saw the node Up.
- **Restart → 240**: from the restart of the killed process until its client sees 240 (process start,
  join as the youngest member, snapshot).

Percentiles are by nearest rank: with 20 trials p99 is the slowest trial. Goal with the fast path:
median ≤ 1 s, p99 ≤ 2 s.

## Commands

` + "```sh\n" + cmdline + "   # the run below\ngo run ./bench/servicelevel -trials 20 -off-trials 0   # fast path only, ≈ 4 min\ngo run ./bench/servicelevel -v ...                     # log every step\n```" + `

The binary is built without the race detector. The command kills every process it started before it
exits, Ctrl-C included.

## Results

` + env + `

` + table
}

// run runs f as one trial with the tests/procs harness (procs.Run).
func run(f func(t testing.TB)) error { return procs.Run("bench-servicelevel", f) }
