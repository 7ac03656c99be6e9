package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

func main() {
	if RunLoadChild() {
		return
	}
	c := Config{Bounds: DefaultStallBounds}
	flag.DurationVar(&c.Duration, "duration", 30*time.Minute, "measured window: load, stalls and samplers")
	seed := flag.Int64("seed", 0, "seed of the stall plan (0: drawn from the clock and printed)")
	flag.StringVar(&c.Strategy, "strategy", leaseMajority, "split-brain strategy: lease-majority (the Config DB lease on PostgreSQL) or auto-down")
	flag.StringVar(&c.Stall, "stall", stallPrimary, "node that gets the SIGSTOP/SIGCONT stalls: primary or secondary")
	flag.IntVar(&c.CPUWorkers, "cpu", runtime.NumCPU(), "goroutines the CPU load child spins (0: no CPU load)")
	flag.IntVar(&c.MemMB, "mem", 400, "MiB the memory load child allocates and drops per cycle (0: no memory load)")
	flag.DurationVar(&c.Bounds.MinStall, "stall-min", c.Bounds.MinStall, "shortest stall")
	flag.DurationVar(&c.Bounds.MaxStall, "stall-max", c.Bounds.MaxStall, "longest stall (capped at half the node's acceptable heartbeat pause)")
	flag.DurationVar(&c.Bounds.MinGap, "gap-min", c.Bounds.MinGap, "shortest running time between two stalls")
	flag.DurationVar(&c.Bounds.MaxGap, "gap-max", c.Bounds.MaxGap, "longest running time between two stalls")
	flag.BoolVar(&c.Verbose, "v", false, "print every stall")
	flag.StringVar(&c.LogDir, "logs", "", "write each node's log to this directory at the end")
	flag.Parse()
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() & (1<<62 - 1)
	}
	c.Seed = uint64(*seed)
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	c.Progress = func(s string) { log.Print(s) }
	log.Printf("seed %d (repeat with -seed %d)", c.Seed, c.Seed)
	go procs.StopOnSignal()

	var res Result
	err := procs.Run("bench-falsepositive", func(t testing.TB) { res = Run(t, c) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "the run could not start: %v\n", err)
		os.Exit(1)
	}
	fmt.Println()
	Print(os.Stdout, res)
	if len(res.Violations) > 0 {
		os.Exit(1)
	}
}

// check validates the flags, naming the flag, its value and what is
// accepted.
func (c Config) check() error {
	switch {
	case c.Strategy != leaseMajority && c.Strategy != autoDown:
		return fmt.Errorf("-strategy %q: accepted values are %s and %s", c.Strategy, leaseMajority, autoDown)
	case c.Stall != stallPrimary && c.Stall != stallSecondary:
		return fmt.Errorf("-stall %q: accepted values are %s and %s", c.Stall, stallPrimary, stallSecondary)
	case c.Duration <= 0:
		return fmt.Errorf("-duration %v: accepted values are positive durations (30m, 90s)", c.Duration)
	case c.CPUWorkers < 0 || c.MemMB < 0:
		return fmt.Errorf("-cpu %d, -mem %d: accepted values are 0 or more", c.CPUWorkers, c.MemMB)
	}
	if err := c.Bounds.Validate(); err != nil {
		return fmt.Errorf("-stall-min/-stall-max/-gap-min/-gap-max: %w", err)
	}
	return nil
}
