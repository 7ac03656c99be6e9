// Command soak runs a real `otopcua host` process (built from ./cmd/otopcua
// and started by tests/procs on loopback ports below the ephemeral range,
// with a SQLite Config DB holding an Operator, a secured endpoint beside
// None whose PKI trusts the abusers' client certificate, the HTTP read
// routes closed to anonymous readers, and LocalDb replication with a peer
// the harness runs) under a mixed abusive load next to a well-behaved
// client, then stops the abuse and watches the recovery.
//
//   - The well-behaved client (opcua/uaclient, its own goroutines, from
//     127.0.0.1): one session, one subscription with publishing interval
//     200 ms and MaxKeepAliveCount 1 on i=2258 (CurrentTime) and i=2267
//     (ServiceLevel), so that a Publish response is due every 200 ms;
//     every gap between Publish responses is recorded, and a Read of
//     i=2267 every 100 ms records its latency.
//   - The well-behaved probes during the abuse (127.0.0.1, each latency
//     recorded): an anonymous CreateSession+Activate every 2 s (a session
//     within 1 s every time); the Operator's right password every 5 s on
//     OPC UA (Good) and on the admin login (303), while 127.0.0.2 guesses
//     it; a row enqueued in the harness's LocalDb every 5 s, pulled by the
//     host and pulled back through the host's sync port with the key.
//   - The abusers (one goroutine each, paced, bounded, all stopped and
//     released at the end of the abuse), from 127.0.0.2 unless said:
//     connection churn (open+close a secure channel; Hello then silence;
//     Hello+OpenSecureChannel then silence), session churn (CreateSession
//     without ActivateSession; create+activate+close; create+activate then
//     a TCP reset), subscription churn (a subscription of 50,000 items
//     created in requests of 10,000 on a rotating set of namespace-0
//     variables, then deleted; and one whose connection is reset after it
//     is filled, so that it is orphaned and must expire), fuzzing (random
//     and bit-flipped requests after a valid OpenSecureChannel, random
//     Hello frames, declared sizes far beyond the limits), and the
//     attacks on the host's hardening: wrong passwords for the Operator
//     on OPC UA and on the admin login (one each every 2 s); five
//     addresses (127.0.0.2–6) × five never-activated sessions, each
//     recreated when the host drops it; a captured secured
//     OpenSecureChannel replayed byte for byte on a new connection ten
//     times a second (127.0.0.3; a new capture every minute) and a renew
//     storm every 3 s (127.0.0.4); unauthenticated GETs of the HTTP read
//     routes five times a second (127.0.0.5); up to 16 connections of 50
//     keyless sync streams each announcing a 4 MiB message, held open
//     (127.0.0.7). Every operation and every status, ERR code or HTTP
//     status the host answers is counted.
//   - The host process is read every second: VmRSS, open fds, threads.
//
// At the end it prints the well-behaved client's largest and p99 Publish
// gap, its Read latency (p50, p99, max) and errors; RSS, fds and threads
// at the baseline (end of the warm-up), at the peak and after recovery;
// the abusers' counts and status histograms; the probes' outcomes and
// latencies; the host's own refusal counters; then the checks and one
// JSON line. It exits 1 when a check fails: an error seen by the
// well-behaved client, a Publish gap above 700 ms (200 ms + 500 ms), fds
// after recovery above baseline + 10, RSS after recovery above 2 ×
// baseline + 50 MiB, the host gone, a probe that failed once (a password
// refused, a login not 303, an anonymous session refused or later than
// 1 s, a row not synced within 20 s), a password attempt of the attacker
// that succeeded, a replayed OpenSecureChannel not refused, or an
// unauthenticated read not answered 401. It exits 2 when the soak could
// not be set up.
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
