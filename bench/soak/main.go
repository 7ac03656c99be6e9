// Command soak runs a real `otopcua host` process (built from ./cmd/otopcua
// and started by tests/procs on loopback ports below the ephemeral range,
// with a SQLite Config DB) under a mixed abusive load next to one
// well-behaved client, then stops the abuse and watches the recovery.
//
//   - The well-behaved client (opcua/uaclient, its own goroutines): one
//     session, one subscription with publishing interval 200 ms and
//     MaxKeepAliveCount 1 on i=2258 (CurrentTime) and i=2267
//     (ServiceLevel), so that a Publish response is due every 200 ms; every
//     gap between Publish responses is recorded, and a Read of i=2267
//     every 100 ms records its latency.
//   - The abusers (one goroutine each, paced, bounded, all stopped and
//     released at the end of the abuse): connection churn (open+close a
//     secure channel; Hello then silence; Hello+OpenSecureChannel then
//     silence), session churn (CreateSession without ActivateSession;
//     create+activate+close; create+activate then a TCP reset),
//     subscription churn (a subscription of 50,000 items created in
//     requests of 10,000 on a rotating set of namespace-0 variables, then
//     deleted; and one whose connection is reset after it is filled, so
//     that it is orphaned and must expire), and fuzzing (random and
//     bit-flipped requests after a valid OpenSecureChannel, random Hello
//     frames, declared sizes far beyond the limits). Every operation and
//     every status or ERR code the server answers is counted.
//   - The host process is read every second: VmRSS, open fds, threads.
//
// At the end it prints the well-behaved client's largest and p99 Publish
// gap, its Read latency (p50, p99, max) and errors; RSS, fds and threads
// at the baseline (end of the warm-up), at the peak and after recovery;
// the abusers' counts and status histograms; then the checks and one JSON
// line. It exits 1 when a check fails: an error seen by the well-behaved
// client, a Publish gap above 700 ms (200 ms + 500 ms), fds after recovery
// above baseline + 10, RSS after recovery above 2 × baseline + 50 MiB, or
// the host gone. It exits 2 when the soak could not be set up.
//
// Usage:
//
//	go run ./bench/soak -duration 30m -recover 60s
//
// TestSoakShort runs the same soak for 20 s of abuse and 10 s of recovery
// in `go test`.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

func main() {
	var cfg Config
	flag.DurationVar(&cfg.Duration, "duration", 30*time.Minute, "how long the abuse runs")
	flag.DurationVar(&cfg.Recover, "recover", 60*time.Second, "how long the recovery is watched after the abusers stopped")
	flag.DurationVar(&cfg.Warmup, "warmup", 10*time.Second, "how long the well-behaved client runs alone first (the baseline)")
	flag.IntVar(&cfg.Items, "items", 50000, "monitored items of each abusive subscription")
	flag.IntVar(&cfg.Batch, "batch", 10000, "items per abusive CreateMonitoredItems request")
	flag.IntVar(&cfg.Vars, "vars", 0, "confine the subscription abusers to this many namespace-0 variables (0: every one found)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the fuzzers")
	flag.StringVar(&cfg.AbuserIP, "abuser-ip", "127.0.0.2", "loopback address the abusers connect from (the well-behaved clients use 127.0.0.1)")
	verbose := flag.Bool("v", false, "log what the harness does")
	flag.Parse()
	if cfg.Duration <= 0 || cfg.Recover <= 0 || cfg.Warmup < 2*sampleEvery || cfg.Items < 1 || cfg.Batch < 1 || cfg.Vars < 0 {
		fmt.Fprintln(os.Stderr, "soak: -duration and -recover must be > 0, -warmup ≥ 2s, -items and -batch ≥ 1, -vars ≥ 0")
		os.Exit(2)
	}
	if !*verbose {
		log.SetOutput(io.Discard)
	}
	cfg.Progress = os.Stderr
	go procs.StopOnSignal()

	var s Summary
	err := procs.Run("bench-soak", func(t testing.TB) { s = Run(t, cfg) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: setup failed:", err)
		os.Exit(2)
	}
	Print(os.Stdout, s)
	b, _ := json.Marshal(s)
	fmt.Println(string(b))
	if len(Failed(s.Checks)) > 0 {
		os.Exit(1)
	}
}

// Print writes the human summary of s.
func Print(w io.Writer, s Summary) {
	g := s.Good
	fmt.Fprintf(w, "soak of otopcua host pid %d: %.0f s warm-up, %.0f s abuse, %.0f s recovery; %s\n",
		s.PID, s.WarmupS, s.DurationS, s.RecoverS, s.Machine)
	fmt.Fprintf(w, "\nwell-behaved client: %d Publish responses (%d keep-alives); gap max %s at %.1f s, p99 %s; max by phase:%s\n",
		g.Publishes, g.Keepalives, msText(g.GapMax), g.GapMaxAt.Seconds(), msText(g.GapP99), byPhase(g.GapMaxByPhase))
	fmt.Fprintf(w, "  Read ServiceLevel: %d reads, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", g.Reads, ms(g.ReadP50), ms(g.ReadP99), ms(g.ReadMax))
	fmt.Fprintf(w, "  %d data messages, %d lost; largest gap between the server's PublishTimes %.0f ms; this client's own worst stall %.0f ms\n",
		g.DataMessages, g.Lost, ms(g.ServerGapMax), ms(g.SelfStallMax))
	fmt.Fprintf(w, "  errors: %d\n", g.Errors)
	for _, e := range g.ErrorTexts {
		fmt.Fprintf(w, "    %s\n", e)
	}
	fmt.Fprintf(w, "\nhost process        baseline     peak   after recovery\n")
	if s.Baseline != nil && s.After != nil {
		fmt.Fprintf(w, "  RSS MiB          %8.1f %8.1f %8.1f\n", mb(s.Baseline.RSS), mb(s.PeakRSS), mb(s.After.RSS))
		fmt.Fprintf(w, "  open fds         %8d %8d %8d\n", s.Baseline.FDs, s.PeakFDs, s.After.FDs)
		fmt.Fprintf(w, "  threads          %8d %8d %8d\n", s.Baseline.Threads, s.PeakThreads, s.After.Threads)
		fmt.Fprintf(w, "  Go heap MiB      %8.1f %8.1f %8.1f   (go_memstats_heap_alloc_bytes of /metrics)\n",
			mb(s.Baseline.HeapAlloc), mb(s.PeakHeap), mb(s.After.HeapAlloc))
	}
	fmt.Fprintf(w, "  CPU %% of one core: warm-up %.0f, abuse %.0f\n", s.HostCPUWarmupPct, s.HostCPUAbusePct)
	if s.SampleError != "" {
		fmt.Fprintf(w, "  last sampling error: %s\n", s.SampleError)
	}
	fmt.Fprintf(w, "\nabusers (%d ns0 variables in rotation; all stopped %.1f s after the end of the abuse):\n", s.NS0Vars, s.AbuseStopS)
	for _, a := range s.Abusers {
		fmt.Fprintf(w, "  %s\n", a)
	}
	fmt.Fprintf(w, "\nnew clients during the abuse (one every %v, from another address than the abusers): %s\n", anonymousEvery, s.Newcomers)
	if len(s.Probes) > 0 {
		fmt.Fprintf(w, "\nwell-behaved probes from 127.0.0.1 during the abuse:\n")
		for _, p := range s.Probes {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	fmt.Fprintf(w, "a new client after recovery: %s\n", s.FreshClient)
	if len(s.HostCounters) > 0 {
		fmt.Fprintf(w, "\nthe host's refusal counters at the end:\n")
		for _, l := range s.HostCounters {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "\nchecks:\n")
	for _, c := range s.Checks {
		mark := "PASS"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Name, c.Detail)
	}
}

// byPhase lists m in the order of the phases.
func byPhase(m map[Phase]time.Duration) string {
	var b strings.Builder
	for _, p := range []Phase{PhaseWarmup, PhaseAbuse, PhaseStopping, PhaseRecovery} {
		if d, ok := m[p]; ok {
			fmt.Fprintf(&b, " %s %s", p, msText(d))
		}
	}
	return b.String()
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
