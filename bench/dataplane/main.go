package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/flagval"
	"github.com/otopcua/otopcua/tests/procs"
)

func main() {
	var c Config
	flag.IntVar(&c.Tags, "tags", 10000, "tags of the case, a multiple of -devices")
	flag.IntVar(&c.Devices, "devices", 10, "Modbus TCP devices the tags are spread over")
	flag.DurationVar(&c.Poll, "poll", 100*time.Millisecond, "poll interval of every device")
	flag.DurationVar(&c.Publishing, "publishing", 100*time.Millisecond, "publishing interval of the subscription")
	flag.DurationVar(&c.Sampling, "sampling", 0, "sampling interval requested for every item (0: every change)")
	flag.IntVar(&c.Inflight, "inflight", 4, "Publish requests kept outstanding")
	flag.DurationVar(&c.Idle, "idle", 5*time.Second, "length of the before-deployment and the polling-only windows")
	flag.DurationVar(&c.Warmup, "warmup", 5*time.Second, "changes before the latency window")
	flag.DurationVar(&c.Duration, "duration", 30*time.Second, "latency window")
	flag.IntVar(&c.Changes, "changes", 0, "registers changed per tick (0: tags/100, at least 1)")
	flag.DurationVar(&c.ChangeEvery, "change-every", 50*time.Millisecond, "how often the changer changes registers")
	flag.IntVar(&c.Writes, "writes", 500, "confirmed writes of the write part")
	compare := flag.String("compare", "1000:1", "a second case tags:devices with the same settings (empty: none)")
	verbose := flag.Bool("v", false, "log what the harness does")
	flag.Parse()
	if !*verbose {
		log.SetOutput(io.Discard)
	}
	cases := []Config{withChanges(c)}
	if *compare != "" {
		tags, devices, err := parseCase(*compare)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dataplane: -compare:", err)
			os.Exit(2)
		}
		cc := c
		cc.Tags, cc.Devices = tags, devices
		if c.Changes > 0 {
			cc.Changes = max(1, c.Changes*tags/c.Tags) // the same share of the tags per tick
		}
		cases = append(cases, withChanges(cc))
	}
	for _, cc := range cases {
		if err := cc.Check(); err != nil {
			fmt.Fprintln(os.Stderr, "dataplane:", err)
			os.Exit(2)
		}
	}
	go procs.StopOnSignal()

	m := machine()
	var results []Result
	for _, cc := range cases {
		cc.Progress = os.Stderr
		var r Result
		if err := procs.Run("bench-dataplane-"+cc.Name(), func(t testing.TB) { r = Run(t, cc) }); err != nil {
			fmt.Fprintf(os.Stderr, "dataplane: case %s could not be run: %v\n", cc.Name(), err)
			os.Exit(2)
		}
		results = append(results, r)
	}
	fmt.Printf("bench/dataplane, %s\n", m)
	fmt.Printf("poll %v, publishing %v, sampling %v (0: every change), %d Publish requests outstanding; %v warm-up, %v measured; changes every %v; %d confirmed writes\n\n",
		c.Poll, c.Publishing, c.Sampling, c.Inflight, c.Warmup, c.Duration, c.ChangeEvery, c.Writes)
	Tables(os.Stdout, results)
	fmt.Println()
	JSONLines(os.Stdout, m, results)
	fmt.Println()
	checks := Verdict(results, DefaultGoals)
	PrintChecks(os.Stdout, checks)
	if failed := Failed(checks); len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "dataplane: %d goal(s) not met:\n", len(failed))
		PrintChecks(os.Stderr, failed)
		os.Exit(1)
	}
}

// withChanges fills the default number of changes per tick: 1 % of the
// tags, at least 1.
func withChanges(c Config) Config {
	if c.Changes == 0 {
		c.Changes = max(1, c.Tags/100)
	}
	return c
}

// parseCase reads "tags:devices".
func parseCase(s string) (tags, devices int, err error) {
	tags, devices, err = flagval.Pair(strings.TrimSpace(s), ":", "tags", "devices", "tags:devices, e.g. 1000:1")
	if err != nil {
		return 0, 0, fmt.Errorf("%q: %w", s, err)
	}
	return tags, devices, nil
}
