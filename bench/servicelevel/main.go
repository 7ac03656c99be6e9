// Command servicelevel measures how fast otopcua's Server.ServiceLevel
// follows a failover, as a SCADA client subscribed to it sees it, with
// real `otopcua host` processes on loopback:
//
//   - failover: a pair (seeds a, b; admin + driver; one shared SQLite
//     Config DB) publishes 250/240; the Primary gets SIGKILL (-signal
//     kill, the default) or SIGSTOP (-signal stop); the clock runs until
//     the survivor's 250 reaches an OPC UA client subscribed to i=2267
//     (publishing interval 50 ms). A killed node is then restarted at the
//     same address; a stopped node gets SIGCONT once the survivor reads
//     250, must then exit on its own (it was downed: exit code 3) and is
//     restarted. The next trial starts once the pair is back at 250/240
//     and has held it for 3 s — so the Primary alternates.
//     -strategy auto-down (the default: auto-down with the production
//     defaults) or lease-majority (the Config DB lease on the pair's
//     shared Config DB, lease-majority's defaults; -configdb postgres
//     puts it on a PostgreSQL server started for the pair). SIGKILL is
//     measured with the crash fast path on (the default of both
//     strategies) and off (Cluster:DownOnConnectionRefused false: the
//     failure detector, then AutoDownUnreachableAfter or StableAfter).
//   - topology change → every ServiceLevel updated: after each restart,
//     from the moment the rejoining node is Up in the survivor's
//     /api/cluster/members (polled every 10 ms) until the subscribed
//     clients see every node at its new level (the rejoined node at 240,
//     the survivor at 250).
//   - -matrix: SIGKILL and SIGSTOP under auto-down and lease-majority,
//     -trials each (fast path on), printed as one table.
//
// Usage:
//
//	go run ./bench/servicelevel -trials 20 -off-trials 5
//	go run ./bench/servicelevel -trials 20 -off-trials 5 -doc docs/benchmarks-failover.md
//	go run ./bench/servicelevel -strategy lease-majority -signal stop -configdb postgres -trials 20 -off-trials 0
//	go run ./bench/servicelevel -matrix -trials 20
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
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// Healthy levels.
const (
	primary   byte = 250
	secondary byte = 240
)

// Strategies (-strategy), signals (-signal) and Config DBs (-configdb).
const (
	autoDown      = "auto-down"
	leaseMajority = "lease-majority"
	sigKill       = "kill"
	sigStop       = "stop"
	dbSqlite      = "sqlite"
	dbPostgres    = "postgres"
)

// Set from the flags before the first pair starts.
var (
	configDb = dbSqlite // the pair's shared Config DB (-configdb)
	logDir   = ""       // where each trial's node logs go (-logs); "" none
)

// mode is one measured configuration: the split-brain strategy, the
// signal the Primary gets, and whether the crash fast path is off.
type mode struct {
	strategy    string
	signal      string
	fastPathOff bool
}

// tune edits a node's Cluster section for m.
func (m mode) tune(c map[string]any) {
	if m.strategy == leaseMajority {
		// lease-majority's defaults: heartbeat, pause, stable-after, TTL,
		// minority delay and promotion hold are not set here.
		c["SplitBrainResolverStrategy"] = leaseMajority
		c["Lease"] = map[string]any{"Provider": "configdb"}
	}
	if m.fastPathOff {
		c["DownOnConnectionRefused"] = false
	}
}

func (m mode) sig() syscall.Signal {
	if m.signal == sigStop {
		return syscall.SIGSTOP
	}
	return syscall.SIGKILL
}

func (m mode) sigName() string {
	if m.signal == sigStop {
		return "SIGSTOP"
	}
	return "SIGKILL"
}

func (m mode) strategyLabel() string {
	if m.strategy == leaseMajority {
		if configDb == dbPostgres {
			return "lease-majority (Config DB lease on PostgreSQL, its defaults)"
		}
		return "lease-majority (Config DB lease, its defaults)"
	}
	return "auto-down"
}

// label names m in progress lines.
func (m mode) label() string {
	l := m.sigName() + ", " + m.strategy
	if m.fastPathOff {
		return l + ", fast path off"
	}
	return l + ", fast path on"
}

// rowLabel is the measurement column of m's failover row; auto-down with
// SIGKILL keeps the labels of the runs before -strategy and -signal.
func (m mode) rowLabel() string {
	l := m.sigName() + " of the Primary → survivor's 250 seen by a subscribed client"
	if m.strategy != autoDown || m.signal != sigKill {
		l += ", " + m.strategyLabel()
	}
	if m.fastPathOff {
		return l + ", fast path off (DownOnConnectionRefused=false)"
	}
	return l + ", fast path on (default)"
}

func main() {
	trials := flag.Int("trials", 20, "failover trials with the fast path on (with -matrix: per cell)")
	offTrials := flag.Int("off-trials", 5, "SIGKILL trials with the fast path off (each takes ≈ 20 s under auto-down); ignored with -matrix and -signal stop")
	strategy := flag.String("strategy", autoDown, "split-brain strategy: auto-down or lease-majority (the Config DB lease on the shared Config DB, lease-majority's defaults)")
	signal := flag.String("signal", sigKill, "what the Primary gets: kill (SIGKILL) or stop (SIGSTOP; SIGCONT once the survivor reads 250, then it must exit with code 3 and is restarted)")
	matrix := flag.Bool("matrix", false, "run SIGKILL and SIGSTOP under auto-down and lease-majority, -trials each, and print one table")
	db := flag.String("configdb", dbSqlite, "the pair's shared Config DB (and lease-majority's lease): sqlite (a file) or postgres (a PostgreSQL server started for each pair on loopback)")
	logs := flag.String("logs", "", "write both nodes' logs of every trial into this directory (trial-N-a.log, trial-N-b.log)")
	doc := flag.String("doc", "", "also write the results and the commands into this Markdown file")
	verbose := flag.Bool("v", false, "log every step")
	flag.Parse()
	if *strategy != autoDown && *strategy != leaseMajority {
		fmt.Fprintf(os.Stderr, "-strategy %q: accepted values are %s and %s\n", *strategy, autoDown, leaseMajority)
		os.Exit(2)
	}
	if *signal != sigKill && *signal != sigStop {
		fmt.Fprintf(os.Stderr, "-signal %q: accepted values are %s and %s\n", *signal, sigKill, sigStop)
		os.Exit(2)
	}
	if *db != dbSqlite && *db != dbPostgres {
		fmt.Fprintf(os.Stderr, "-configdb %q: accepted values are %s and %s\n", *db, dbSqlite, dbPostgres)
		os.Exit(2)
	}
	configDb, logDir = *db, *logs
	if logDir != "" {
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if !*verbose {
		log.SetOutput(io.Discard)
	}
	go procs.StopOnSignal()

	var table string
	if *matrix {
		table = matrixTable(*trials)
	} else {
		table = singleTable(mode{strategy: *strategy, signal: *signal}, *trials, *offTrials)
	}
	env := measure.Machine(time.Now())
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

const tableHead = "| measurement | median | p99 | min | max | trials ok |\n| --- | --- | --- | --- | --- | --- |\n"

// singleTable measures one strategy and signal: the failover with the
// fast path on (trials), with it off (offTrials, SIGKILL only), and the
// topology and rejoin times of every restart.
func singleTable(m mode, trials, offTrials int) string {
	var rows []string
	var topo, rejoin []time.Duration
	var topoN int
	if trials > 0 {
		res := runTrials(m, trials)
		rows = append(rows, row(m.rowLabel(), res.failover, trials))
		topo, rejoin = append(topo, res.topology...), append(rejoin, res.rejoin...)
		topoN += res.restarts
	}
	if offTrials > 0 && m.signal == sigKill {
		off := m
		off.fastPathOff = true
		res := runTrials(off, offTrials)
		rows = append(rows, row(off.rowLabel(), res.failover, offTrials))
		topo, rejoin = append(topo, res.topology...), append(rejoin, res.rejoin...)
		topoN += res.restarts
	}
	if topoN > 0 {
		rows = append(rows,
			row("topology change (restarted node Up in the survivor's view) → every ServiceLevel updated", topo, topoN),
			row("restart of the "+map[string]string{sigKill: "killed", sigStop: "downed"}[m.signal]+" node → its 240 seen (process start, join as youngest, snapshot)", rejoin, topoN))
	}
	return tableHead + strings.Join(rows, "\n") + "\n"
}

// matrixTable measures SIGKILL and SIGSTOP under auto-down and
// lease-majority, trials each with the fast path on, and returns one
// table with a row per cell.
func matrixTable(trials int) string {
	var rows []string
	for _, sig := range []string{sigKill, sigStop} {
		for _, st := range []string{autoDown, leaseMajority} {
			m := mode{strategy: st, signal: sig}
			res := runTrials(m, trials)
			rows = append(rows, fmt.Sprintf("| %s of the Primary | %s | %s | %d/%d |", m.sigName(), m.strategyLabel(), summary(res.failover), len(res.failover), trials))
		}
	}
	return "Failover: from the signal to the survivor's 250 seen by a subscribed client (crash fast path on, the default).\n\n" +
		"| failure | strategy | median | p99 | min | max | trials ok |\n| --- | --- | --- | --- | --- | --- | --- |\n" +
		strings.Join(rows, "\n") + "\n"
}

type result struct {
	failover, topology, rejoin []time.Duration
	restarts                   int
}

// runTrials runs n failovers of mode m on one pair, restarting the killed
// (or downed) node after each, and returns the times. A trial that fails
// is reported and the pair is built afresh for the next one.
func runTrials(m mode, n int) result {
	label := m.label()
	var res result
	done := 0
	for done < n {
		err := run(func(t testing.TB) {
			p := newPair(t, m.tune)
			for done < n {
				took, topo, rejoin := p.trial(t, m, done+1)
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
	db := map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + dir + "/config.db"}
	if configDb == dbPostgres {
		db = map[string]any{"Provider": "postgres", "ConnectionString": pg.Start(t).DSN()}
	}
	for i, ports := range []procs.Ports{pa, pb} {
		name := p.names[i]
		cfg := procs.BaseConfig(name, ports)
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		cfg["Node"].(map[string]any)["ClusterId"] = "bench"
		cfg["ConfigDb"] = db
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

// trial signals the Primary (m.sig), times the take-over, brings the
// Primary back (SIGKILL: restart; SIGSTOP: SIGCONT, wait for its exit
// with code 3, restart) and times the rejoin.
func (p *pair) trial(t testing.TB, m mode, i int) (failover, topology, rejoin time.Duration) {
	label := m.label()
	pr, se := p.waitHealthy(t, 90*time.Second)
	// Let the failure detectors collect heartbeats, as in a running pair,
	// and check the levels hold meanwhile.
	procs.Holds(t, 3*time.Second, 50*time.Millisecond, func() error {
		if l := p.levels(); !l[pr].Known || l[pr].Level != primary || !l[se].Known || l[se].Level != secondary {
			return fmt.Errorf("levels moved before the %s: %v", m.sigName(), l)
		}
		return nil
	})
	p.saveLogsAs(t, fmt.Sprintf("trial-%d-before", i))
	p.nodes[pr].Signal(m.sig())
	signalled := time.Now()
	var seen demo.Reading
	procs.CheckFor(t, 90*time.Second, 5*time.Millisecond, func() error {
		if code, done := p.nodes[se].Exited(); done {
			t.Fatalf("the survivor %s exited with code %d\n%s", se, code, p.nodes[se].Log())
		}
		r, ok := p.watch[se].first(signalled, primary)
		if !ok {
			return fmt.Errorf("%s not at 250 yet: %v", se, p.watch[se].w.Current())
		}
		seen = r
		return nil
	})
	failover = seen.At.Sub(signalled)
	log.Printf("%s trial %d: %s %s at %s → %s at 250 after %v", label, i, m.sigName(), pr, signalled.UTC().Format(time.RFC3339Nano), se, failover)

	if m.signal == sigStop {
		// The frozen node wakes to find itself downed: it must leave on
		// its own (exit code 3, for its supervisor to restart it).
		p.nodes[pr].Signal(syscall.SIGCONT)
		woke := time.Now()
		code := p.nodes[pr].WaitExit(60 * time.Second)
		log.Printf("%s trial %d: SIGCONT %s → exited with code %d after %v", label, i, pr, code, time.Since(woke))
		if code != 3 {
			t.Fatalf("the woken node %s exited with code %d, want 3 (downed)\n%s", pr, code, p.nodes[pr].Log())
		}
	}
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
	p.saveLogs(t, i)
	rejoin = back.At.Sub(restarted)
	log.Printf("%s trial %d: %s Up in %s's view → levels updated after %v; restart → 240 after %v", label, i, pr, se, topology, rejoin)
	return failover, topology, rejoin
}

// saveLogs writes both nodes' logs of trial i into logDir, if set.
func (p *pair) saveLogs(t testing.TB, i int) { p.saveLogsAs(t, fmt.Sprintf("trial-%d", i)) }

// saveLogsAs writes both nodes' logs into logDir as prefix-NODE.log, if
// set: before a signal too, since a restarted node's log starts afresh.
func (p *pair) saveLogsAs(t testing.TB, prefix string) {
	if logDir == "" {
		return
	}
	for _, n := range p.names {
		f := fmt.Sprintf("%s/%s-%s.log", logDir, prefix, n)
		if err := os.WriteFile(f, []byte(p.nodes[n].Log()), 0o644); err != nil {
			t.Fatalf("-logs: %v", err)
		}
	}
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
- **Strategy and signal** (` + "`-strategy`, `-signal`, `-matrix`" + `). The same pair, trial loop and client-side
  clock, with:
  - ` + "`-strategy lease-majority`" + `: ` + "`Cluster:SplitBrainResolverStrategy: lease-majority`" + `,
    ` + "`Lease: {Provider: configdb}`" + ` and every timing at lease-majority's defaults — the lease is a row of
    the pair's shared Config DB (docs/redundancy.md, "lease-majority on a shared lease"). The crash fast
    path stays on (its default); it takes the lease before downing.
  - ` + "`-configdb postgres`" + `: the pair's Config DB (and so its lease) is a PostgreSQL server the command
    starts on loopback for each pair, instead of a shared SQLite file.
  - ` + "`-signal stop`" + `: the Primary gets SIGSTOP instead of SIGKILL (a frozen process: its port still accepts
    connections, so only the failure detector and the strategy's wait can decide). Once the survivor's
    250 is seen, the frozen node gets SIGCONT; it must then leave on its own — it was downed, exit code 3 —
    within 60 s (a trial whose woken node exits otherwise fails), and is restarted at the same address.
    The next trial again starts only from a 250/240 pair that held for 3 s.
  - ` + "`-matrix`" + `: SIGKILL and SIGSTOP under ` + "`auto-down`" + ` and ` + "`lease-majority`" + `, ` + "`-trials`" + ` each (fast path on),
    in that order, one table with a row per cell.
- **Topology change → every ServiceLevel updated.** After each restart: from the moment the rejoining
  node is Up in the survivor's ` + "`GET /api/cluster/members`" + ` (polled every 10 ms) until the subscribed clients
  see the rejoined node at 240 with the survivor still at 250 (debounce, snapshot on pub/sub, publish).
  Counted as 0 when the level was already there when the poll saw the node Up.
- **Restart → 240**: from the restart of the killed process until its client sees 240 (process start,
  join as the youngest member, snapshot).

Percentiles are by nearest rank: with 20 trials p99 is the slowest trial. Goal with the fast path:
median ≤ 1 s, p99 ≤ 2 s.

## Commands

` + "```sh\n" + cmdline + "   # the run below\ngo run ./bench/servicelevel -trials 20 -off-trials 0   # fast path only, ≈ 4 min\ngo run ./bench/servicelevel -matrix -trials 20         # SIGKILL/SIGSTOP × auto-down/lease-majority, ≈ 25 min\ngo run ./bench/servicelevel -strategy lease-majority -signal stop -trials 20 -off-trials 0   # one cell\ngo run ./bench/servicelevel -v ...                     # log every step\n```" + `

The binary is built without the race detector. The command kills every process it started before it
exits, Ctrl-C included.

## Results

` + env + `

` + table
}

// run runs f as one trial with the tests/procs harness (procs.Run).
func run(f func(t testing.TB)) error { return procs.Run("bench-servicelevel", f) }
