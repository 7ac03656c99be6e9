// Command historyrecord measures sustained recording of process history on
// one real `otopcua host` node (issue 29, docs/benchmarks.md "Process
// history"): -tags Modbus TCP holding-register tags (int16, over -devices
// field devices served by this process on loopback), polled every -poll,
// every register changed every -change by ±1 (a slowly changing analog: a
// random walk of one count a step), every tag historized with no deadband,
// so every poll's change is a sample.
//
// After -warmup it measures over -window:
//
//   - the node's CPU (utime + stime of /proc/PID/stat) in % of one core;
//   - samples recorded (otopcua_history_samples_recorded_total) and dropped
//     (otopcua_history_samples_dropped_total) per second;
//   - the store's size on disk (the files under History:Path) at the end,
//     divided by every sample recorded since the start: bytes a value, the
//     not yet packed head of each tag included; and the growth of the
//     store during the window divided by the samples of the window.
//
// With -baseline (default) the same rig runs first without historize, so
// that the recording's own CPU is the difference of the two.
//
// Usage:
//
//	go run ./bench/historyrecord                                   # 10,000 tags, 60 s warm-up, 120 s window
//	go run ./bench/historyrecord -tags 1000 -warmup 5s -window 5s # the short variant (go test)
//
// Every process it starts is stopped before it exits, Ctrl-C included.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/tests/procs"
)

// settings are the command's flags.
type settings struct {
	tags, devices  int
	poll, change   time.Duration
	warmup, window time.Duration
	baseline       bool
}

func main() {
	var s settings
	flag.IntVar(&s.tags, "tags", 10000, "tags, all historized")
	flag.IntVar(&s.devices, "devices", 10, "Modbus TCP devices the tags are spread over")
	flag.DurationVar(&s.poll, "poll", 100*time.Millisecond, "poll interval of every device")
	flag.DurationVar(&s.change, "change", 100*time.Millisecond, "every register changes this often")
	flag.DurationVar(&s.warmup, "warmup", 60*time.Second, "time from the deployment to the window")
	flag.DurationVar(&s.window, "window", 120*time.Second, "measured window")
	flag.BoolVar(&s.baseline, "baseline", true, "measure the same rig without history first")
	flag.Parse()
	if s.tags < 1 || s.devices < 1 || s.tags%s.devices != 0 || s.poll <= 0 || s.change <= 0 || s.window <= 0 {
		log.Fatal("-tags must be a positive multiple of -devices; -poll, -change and -window positive")
	}
	go procs.StopOnSignal()
	fmt.Printf("%s; %d tags over %d devices, polled every %v, changed every %v; warm-up %v, window %v\n\n",
		measure.Machine(time.Now()), s.tags, s.devices, s.poll, s.change, s.warmup, s.window)
	var rs []result
	for _, hist := range []bool{false, true} {
		if !hist && !s.baseline {
			continue
		}
		err := procs.Run("bench-historyrecord", func(t testing.TB) { rs = append(rs, run(t, s, hist)) })
		if err != nil {
			log.Fatal(err)
		}
	}
	printResults(os.Stdout, rs)
}
