// Command failover measures otopcua's cluster take-over and formation times
// with real `otopcua host` processes on loopback:
//
//   - failover: a pair (seeds a, b; auto-down, production defaults) is
//     formed, a (the oldest) is killed with SIGKILL, and b's
//     /api/cluster/members is polled every 10 ms until b is Up and the
//     oldest Up driver in its own view. Measured with the crash fast path
//     on (the auto-down default) and off (Cluster:DownOnConnectionRefused
//     false: detection + AutoDownUnreachableAfter, 15 s).
//   - convergence: N processes (default 24) are started at once (seeds: the
//     first two) and every node is polled until each reports N Up members
//     and converged.
//
// Usage:
//
//	go run ./bench/failover -trials 10 -off-trials 10 -nodes 24 -converge-trials 3
//	go run ./bench/failover -trials 0 -off-trials 0 -nodes 6,12,24 -converge-trials 5
//
// Results are printed as Markdown tables (median, p99 by nearest rank, min,
// max) for docs/benchmarks-cluster.md. Every process it starts is killed
// before it exits.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/tests/procs"
)

var (
	warmup   time.Duration
	timeline bool
)

func main() {
	trials := flag.Int("trials", 10, "failover trials with the crash fast path on")
	offTrials := flag.Int("off-trials", 10, "failover trials with the fast path off (each takes ≈ 20 s)")
	nodes := flag.String("nodes", "24", "processes for the convergence measurement, a comma-separated list of sizes (0 skips it)")
	convTrials := flag.Int("converge-trials", 3, "convergence trials")
	verbose := flag.Bool("v", false, "log every trial")
	flag.BoolVar(&timeline, "timeline", false, "after each convergence trial, print when each node logged its start, its join and its last member Up")
	flag.DurationVar(&warmup, "warmup", 3*time.Second, "how long a formed pair runs before the kill")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if !*verbose {
		log.SetOutput(io.Discard)
	}

	var report []string
	if *trials > 0 {
		report = append(report, measureFailover("fast path on (default)", *trials, nil)...)
	}
	if *offTrials > 0 {
		report = append(report, measureFailover("fast path off (DownOnConnectionRefused=false)", *offTrials,
			func(c map[string]any) { c["DownOnConnectionRefused"] = false })...)
	}
	for _, k := range sizes(*nodes) {
		if *convTrials > 0 {
			report = append(report, measureConvergence(k, *convTrials)...)
		}
	}
	fmt.Printf("\n%s, GOMAXPROCS %d, %s/%s\n", time.Now().UTC().Format("2006-01-02"), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Println(strings.Join(report, "\n"))
}

// sizes parses -nodes: sizes ≥ 2, in order; 0 and empty items are skipped.
func sizes(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" || f == "0" {
			continue
		}
		k, err := strconv.Atoi(f)
		if err != nil || k < 2 {
			fmt.Fprintf(os.Stderr, "-nodes: %q is not a size ≥ 2\n", f)
			os.Exit(2)
		}
		out = append(out, k)
	}
	return out
}

// measureFailover runs n trials and returns the Markdown rows.
func measureFailover(label string, n int, tune func(cluster map[string]any)) []string {
	var took, unreach []time.Duration
	failures := 0
	for i := range n {
		d, u, err := failoverTrial(tune)
		if err != nil {
			failures++
			fmt.Fprintf(os.Stderr, "failover %s, trial %d: %v\n", label, i+1, err)
			continue
		}
		log.Printf("failover %s trial %d: unreachable after %v, take-over after %v", label, i+1, u, d)
		fmt.Fprintf(os.Stderr, "failover %s, trial %d/%d: %v\n", label, i+1, n, d.Round(time.Millisecond))
		took = append(took, d)
		if u > 0 {
			unreach = append(unreach, u)
		}
	}
	return []string{
		fmt.Sprintf("| SIGKILL of the oldest → survivor oldest, %s | %s | %d/%d |", label, summary(took), len(took), n),
		fmt.Sprintf("| … survivor first saw the peer unreachable, %s | %s | %d/%d |", label, summary(unreach), len(unreach), n),
	}
}

// measureConvergence runs n trials with k processes.
func measureConvergence(k, n int) []string {
	var took []time.Duration
	for i := range n {
		d, err := convergenceTrial(k)
		if err != nil {
			fmt.Fprintf(os.Stderr, "convergence trial %d: %v\n", i+1, err)
			continue
		}
		fmt.Fprintf(os.Stderr, "convergence of %d, trial %d/%d: %v\n", k, i+1, n, d.Round(time.Millisecond))
		took = append(took, d)
	}
	return []string{fmt.Sprintf("| %d processes started at once → every node sees %d Up, converged | %s | %d/%d |", k, k, summary(took), len(took), n)}
}

// summary is "median | p99 | min | max" in ms.
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "– | – | – | –"
	}
	s := measure.Sorted(ds)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("%s | %s | %s | %s", ms(measure.Percentile(s, 50)), ms(measure.Percentile(s, 99)), ms(s[0]), ms(s[len(s)-1]))
}

// failoverTrial forms a pair, kills the oldest and times the take-over.
func failoverTrial(tune func(map[string]any)) (took, unreachable time.Duration, err error) {
	err = run(func(t testing.TB) {
		set := procs.NewPortSet(t, 2)
		pa, pb := set[0], set[1]
		seeds := []string{fmt.Sprintf("127.0.0.1:%d", pa.Cluster), fmt.Sprintf("127.0.0.1:%d", pb.Cluster)}
		var ns []*procs.Node
		for i, p := range []procs.Ports{pa, pb} {
			name := string(rune('a' + i))
			cfg := procs.BaseConfig(name, p)
			cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
			c := cfg["Cluster"].(map[string]any)
			c["SeedNodes"] = seeds
			if tune != nil {
				tune(c)
			}
			ns = append(ns, procs.Start(t, name, cfg))
		}
		a, b := ns[0], ns[1]
		waitAll(t, []*procs.Node{a, b}, 2, 60*time.Second)
		// Let the failure detector collect a few heartbeats, as in a
		// running pair.
		time.Sleep(warmup)
		a.Signal(syscall.SIGKILL)
		at := time.Now()
		procs.CheckFor(t, 90*time.Second, 10*time.Millisecond, func() error {
			v, err := b.Members()
			if err != nil {
				if !b.Alive() {
					t.Fatalf("the survivor exited:\n%s", b.Log())
				}
				return err
			}
			if m, ok := v.Member(seeds[0]); ok && !m.Reachable && unreachable == 0 {
				unreachable = time.Since(at)
			}
			self, _ := v.SelfMember()
			if old, ok := v.OldestUp("driver", self.ClusterID); v.SelfStatus != procs.StatusUp || !ok || old.Address != seeds[1] {
				return fmt.Errorf("not taken over: %s", v)
			}
			return nil
		})
		took = time.Since(at)
	})
	return took, unreachable, err
}

// convergenceTrial starts k processes at once and times full convergence.
func convergenceTrial(k int) (time.Duration, error) {
	var took time.Duration
	err := run(func(t testing.TB) {
		ports := procs.NewPortSet(t, k)
		seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports[0].Cluster), fmt.Sprintf("127.0.0.1:%d", ports[1].Cluster)}
		procs.Binary(t) // build before the clock starts
		start := time.Now()
		var ns []*procs.Node
		for i, p := range ports {
			name := fmt.Sprintf("n%02d", i)
			cfg := procs.BaseConfig(name, p)
			cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
			if timeline {
				cfg["Telemetry"].(map[string]any)["LogLevel"] = "debug" // the parts' start-up times
			}
			cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
			cfg["Node"].(map[string]any)["ClusterId"] = fmt.Sprintf("site-%02d", i/2)
			ns = append(ns, procs.Start(t, name, cfg))
		}
		if timeline {
			fmt.Fprintf(os.Stderr, "  started %d processes in %v\n", k, time.Since(start).Round(time.Millisecond))
		}
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(os.Stderr, "convergence of %d failed; every node's view:\n%s", k, describe(ns))
				panic(p)
			}
		}()
		waitAll(t, ns, k, 2*time.Minute)
		took = time.Since(start)
		if timeline {
			fmt.Fprint(os.Stderr, describeTimeline(ns, start))
		}
	})
	return took, err
}

// describe renders every node's view in one line each: status, member
// count, leader, and the addresses it lacks among the others.
func describe(ns []*procs.Node) string {
	var b strings.Builder
	for _, n := range ns {
		v, err := n.Members()
		if err != nil {
			fmt.Fprintf(&b, "  %s %s: %v\n", n.Name, n.ClusterAddr(), err)
			continue
		}
		var missing []string
		for _, o := range ns {
			if _, ok := v.Member(o.ClusterAddr()); !ok {
				missing = append(missing, o.Name)
			}
		}
		fmt.Fprintf(&b, "  %s %s: %s, %d members, leader %s, converged %v, lacks %v\n",
			n.Name, n.ClusterAddr(), v.SelfStatus, len(v.Members), v.Leader, v.Converged, missing)
	}
	return b.String()
}

// describeTimeline prints, for each node, the offsets from start of its
// first log line, its cluster start, its join and its last "member Up"
// line: where a convergence trial's time went.
func describeTimeline(ns []*procs.Node, start time.Time) string {
	var b strings.Builder
	marks := []string{daemon.LogJoined, daemon.LogMemberUp}
	for _, n := range ns {
		first, at := time.Time{}, map[string]time.Time{}
		var slow []string
		for _, line := range strings.Split(n.Log(), "\n") {
			var l struct {
				Time   time.Time `json:"time"`
				Msg    string    `json:"msg"`
				Part   string    `json:"part"`
				TookMs int64     `json:"tookMs"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Time.IsZero() {
				continue
			}
			if l.Msg == "part started" && l.TookMs >= 100 {
				slow = append(slow, fmt.Sprintf("%s %dms", l.Part, l.TookMs))
			}
			if first.IsZero() {
				first = l.Time
			}
			for _, m := range append(marks, "cluster starting") {
				if l.Msg == m && (m == daemon.LogMemberUp || at[m].IsZero()) {
					at[m] = l.Time
				}
			}
		}
		off := func(t time.Time) string {
			if t.IsZero() {
				return "–"
			}
			return fmt.Sprintf("%.2fs", t.Sub(start).Seconds())
		}
		fmt.Fprintf(&b, "  %s: first log %s, cluster starting %s, joined %s, last member Up %s; parts ≥ 100 ms: %s\n",
			n.Name, off(first), off(at["cluster starting"]), off(at[daemon.LogJoined]), off(at[daemon.LogMemberUp]), strings.Join(slow, ", "))
	}
	return b.String()
}

// waitAll polls until every node reports want Up members and converged.
func waitAll(t testing.TB, ns []*procs.Node, want int, total time.Duration) {
	began := time.Now()
	var rounds []string // with -timeline: each poll round's start, length and what it lacked
	defer func() {
		if timeline && len(rounds) > 0 {
			fmt.Fprintf(os.Stderr, "  last poll rounds:\n%s", strings.Join(rounds[max(0, len(rounds)-6):], ""))
		}
	}()
	procs.CheckFor(t, total, 100*time.Millisecond, func() (err error) {
		at := time.Now()
		defer func() {
			if timeline {
				what := "all there"
				if err != nil {
					what = err.Error()
					if len(what) > 300 {
						what = what[:300] + "…"
					}
				}
				rounds = append(rounds, fmt.Sprintf("    %.2fs +%dms: %s\n", at.Sub(began).Seconds(), time.Since(at).Milliseconds(), what))
			}
		}()
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, n := range ns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := n.Members()
				if err != nil && strings.Contains(err.Error(), "404 Not Found") {
					err = fmt.Errorf("this build has no cluster runtime: %w", err)
				}
				if err == nil && (v.SelfStatus != procs.StatusUp || !v.Converged || len(v.UpAddresses()) != want || len(v.Members) != want) {
					err = fmt.Errorf("%s: %s", n.Name, v)
				}
				if err != nil {
					if !n.Alive() {
						err = fmt.Errorf("%s exited:\n%s", n.Name, n.Log())
					}
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if strings.Contains(err.Error(), "no cluster runtime") {
				t.Fatal(err)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%d of %d nodes not there yet, e.g. %w", len(errs), len(ns), errs[0])
		}
		return nil
	})
}

// run runs f as one trial with the tests/procs harness (procs.Run).
func run(f func(t testing.TB)) error { return procs.Run("bench-failover", f) }
