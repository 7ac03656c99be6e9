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
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/tests/procs"
)

func main() {
	var c Config
	shapes := flag.String("shape", "1000x100", "sessions×items, comma-separated for several shapes (e.g. 1000x100,10x10000)")
	flag.IntVar(&c.Tags, "tags", 10000, "tags of the deployment, a multiple of -devices")
	flag.IntVar(&c.Devices, "devices", 10, "Modbus TCP devices the tags are spread over")
	flag.DurationVar(&c.Poll, "poll", 100*time.Millisecond, "poll interval of every device")
	flag.IntVar(&c.Changes, "changes", 100, "registers changed every -change-every")
	flag.DurationVar(&c.ChangeEvery, "change-every", 100*time.Millisecond, "how often the changer changes registers")
	flag.DurationVar(&c.Publishing, "publishing", 100*time.Millisecond, "publishing interval of every subscription")
	flag.DurationVar(&c.Sampling, "sampling", 0, "sampling interval of every item (0: every change)")
	flag.IntVar(&c.QueueSize, "queue", 10, "queue size of every item")
	flag.IntVar(&c.Inflight, "inflight", 2, "Publish requests outstanding per session")
	flag.IntVar(&c.SetupWorkers, "setup-workers", 4, "sessions opened at a time")
	flag.DurationVar(&c.Warmup, "warmup", 20*time.Second, "load before the measured window")
	flag.DurationVar(&c.Window, "window", 60*time.Second, "measured window")
	repeat := flag.Int("repeat", 1, "runs of each shape, the modes alternating (Warm, HotAndMirrored, Warm, …); the summary gives medians")
	modes := flag.String("modes", modeWarm+","+modeMirrored, "redundancy modes to compare, in this order")
	short := flag.Bool("short", false, "a quick check: 20x20, 200 tags on one device, 2 s warm-up, 5 s window")
	flag.StringVar(&c.Profile, "profile", "", "record both nodes with perf over each window into PREFIX-<shape>-<mode>-<role>.perf.data (not for the figures: perf costs CPU)")
	jsonOnly := flag.Bool("json", false, "print only the JSON lines")
	verbose := flag.Bool("v", false, "log what the harness does")
	flag.Parse()
	if !*verbose {
		log.SetOutput(io.Discard)
	}
	if *short {
		c = ShortConfig()
		*shapes = c.Shape()
	}
	var cases []Config
	for _, s := range strings.Split(*shapes, ",") {
		cc := c
		var err error
		if cc.Sessions, cc.Items, err = parseShape(s); err != nil {
			fail(2, "-shape: %v", err)
		}
		if err := cc.Check(); err != nil {
			fail(2, "%v", err)
		}
		cases = append(cases, cc)
	}
	ms := strings.Split(*modes, ",")
	for _, m := range ms {
		if m != modeWarm && m != modeMirrored {
			fail(2, "-modes: %q: accepted values are %s and %s", m, modeWarm, modeMirrored)
		}
	}
	go procs.StopOnSignal()

	machine := measure.Machine(time.Now())
	var out []Comparison
	if *repeat < 1 {
		fail(2, "-repeat %d: accepted values are whole numbers ≥ 1", *repeat)
	}
	for _, cc := range cases {
		cc.Progress = os.Stderr
		for rep := 1; rep <= *repeat; rep++ {
			byMode := map[string]Result{}
			for _, m := range ms {
				var r Result
				if err := procs.Run("bench-mirror-"+cc.Shape()+"-"+m, func(t testing.TB) { r = Run(t, cc, m) }); err != nil {
					fail(2, "shape %s %s could not be run: %v", cc.Shape(), m, err)
				}
				r.Run = rep
				byMode[m] = r
			}
			out = append(out, Compare(byMode[modeWarm], byMode[modeMirrored]))
		}
	}
	if !*jsonOnly {
		c0 := cases[0]
		fmt.Printf("bench/mirror, %s\n", machine)
		fmt.Printf("%d tags over %d Modbus TCP devices polled every %v, %d registers changed every %v; publishing %v, sampling %v, queue %d, %d Publish requests per session; %v warm-up, %v measured\n\n",
			c0.Tags, c0.Devices, c0.Poll, c0.Changes, c0.ChangeEvery, c0.Publishing, c0.Sampling, c0.QueueSize, c0.Inflight, c0.Warmup, c0.Window)
		Table(os.Stdout, out)
		fmt.Println()
		if *repeat > 1 {
			Summary(os.Stdout, out)
			fmt.Println()
		}
	}
	JSONLines(os.Stdout, machine, out)
	problems := Problems(out)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "mirror:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// ShortConfig is the quick check (-short, and the package's test).
func ShortConfig() Config {
	return Config{Sessions: 20, Items: 20, Tags: 200, Devices: 1, Poll: 100 * time.Millisecond,
		Changes: 20, ChangeEvery: 100 * time.Millisecond, Publishing: 100 * time.Millisecond,
		QueueSize: 10, Inflight: 2, SetupWorkers: 4, Warmup: 2 * time.Second, Window: 5 * time.Second}
}

// parseShape reads "<sessions>x<items>" (or X).
func parseShape(s string) (sessions, items int, err error) {
	sessions, items, err = flagval.Pair(strings.ToLower(strings.TrimSpace(s)), "x", "sessions", "items", "sessions x items, e.g. 1000x100")
	if err != nil {
		return 0, 0, fmt.Errorf("%q: %w", s, err)
	}
	return sessions, items, nil
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mirror: "+format+"\n", args...)
	os.Exit(code)
}
