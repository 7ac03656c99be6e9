// Command idle measures what an idle otopcua node costs the machine it runs
// on: resident memory and CPU of real `otopcua host` processes that have no
// devices and no OPC UA clients.
//
// It starts, at the same moment and on loopback, a lone node (its own
// ClusterId, its own SQLite Config DB) and an idle pair (nodes a and b, one
// ClusterId, both seeds, one shared SQLite Config DB, each naming the other
// as OPC UA peer, as examples/pair does), waits until the lone node is Up
// and both pair nodes see two members Up, then until -settle has passed
// since the start, and then reads /proc for -window:
//
//   - RSS: VmRSS of /proc/PID/status at the end of the window (and its
//     largest sample, every -every), split into RssAnon (heap, stacks,
//     runtime) and RssFile (pages of the executable and libraries mapped
//     by the process);
//   - CPU: utime + stime of /proc/PID/stat, end − start of the window,
//     divided by the window, in % of one core (resolution 10 ms of CPU,
//     0.017 % over 60 s);
//   - context switches of all the node's threads during the window (each
//     one a wake-up: on a shared machine an idle node's CPU follows how
//     often it wakes more than what it does when awake), minor page faults
//     during the window, and go_goroutines from the node's /metrics, read
//     once the window has ended.
//
// -baseline PATH starts the same rig a second time with another otopcua
// executable (say one built from an older commit) and measures both in the
// same window, so that the load other work puts on the machine weighs on
// both alike.
//
// Nothing talks to the nodes during the window.
//
// Usage:
//
//	go run ./bench/idle                              # 25 s settle, 60 s window
//	go run ./bench/idle -runs 3
//	go run ./bench/idle -baseline /tmp/otopcua-main  # beside an older build
//	go run ./bench/idle -settle 5s -window 5s        # the short variant
//
// The short variant is what `go test ./bench/idle` runs. Every process it
// starts is killed before it exits, Ctrl-C included.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/tests/procs"
)

func main() {
	var s settings
	flag.DurationVar(&s.settle, "settle", 25*time.Second, "time from the start of the processes to the window")
	flag.DurationVar(&s.window, "window", 60*time.Second, "measured window")
	flag.DurationVar(&s.every, "every", time.Second, "RSS sample period inside the window")
	runs := flag.Int("runs", 1, "runs, each with fresh processes")
	baseline := flag.String("baseline", "", "an otopcua executable to measure in the same window, beside the tree's own (its rows say baseline)")
	flag.Parse()
	if s.settle <= 0 || s.window <= 0 || s.every <= 0 || *runs < 1 {
		log.Fatal("-settle, -window and -every must be positive and -runs at least 1")
	}
	go procs.StopOnSignal()
	fmt.Printf("%s; settle %v, window %v\n\n", measure.Machine(time.Now()), s.settle, s.window)
	printHeader(os.Stdout)
	failed := false
	for i := 1; i <= *runs; i++ {
		var res []result
		err := procs.Run("bench-idle", func(t testing.TB) { res = run(t, s, *baseline) })
		if err != nil {
			log.Printf("run %d: %v", i, err)
			failed = true
			continue
		}
		for _, r := range res {
			printRow(os.Stdout, i, r)
			failed = failed || !r.alive
		}
	}
	if failed {
		os.Exit(1)
	}
}

// run starts the rig (and the baseline's beside it when baseline names an
// executable), measures one window and returns its results.
func run(t testing.TB, s settings, baseline string) []result {
	r := startRig(t, "", "")
	if baseline != "" {
		r.add(startRig(t, baseline, "baseline "))
	}
	r.waitFormed(t, 60*time.Second)
	return r.measureWindow(t, s)
}

const mb = 1 << 20

func printHeader(w io.Writer) {
	fmt.Fprintln(w, "| run | node | RSS at end (MB) | largest RSS (MB) | RssAnon (MB) | RssFile (MB) | CPU (% of a core) | context switches/s | minor faults/s | goroutines | alive |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
}

func printRow(w io.Writer, run int, r result) {
	fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f | %.1f | %s | %v |\n",
		run, r.label, float64(r.rssEnd)/mb, float64(r.rssMax)/mb, float64(r.anonEnd)/mb, float64(r.fileEnd)/mb,
		r.CPUPercent(), float64(r.switches)/r.window.Seconds(), float64(r.minorFaults)/r.window.Seconds(), r.goroutines, r.alive)
}
