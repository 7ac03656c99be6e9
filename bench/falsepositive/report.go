package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Print writes the run's figures and verdict.
func Print(w io.Writer, r Result) {
	c, e, o := r.Config, r.Effective, r.Obs
	fmt.Fprintf(w, "seed %d, strategy %s, duration %v (measured %v)\n", c.Seed, c.Strategy, c.Duration, r.Wall.Round(time.Second))
	fmt.Fprintf(w, "node defaults: heartbeat %v, acceptable heartbeat pause %v, threshold %g, stable-after %v, lease TTL %v\n",
		e.HeartbeatInterval, e.Pause, e.Threshold, e.StableAfter, e.LeaseTTL)
	fmt.Fprintf(w, "load: CPU child %d goroutines %.0f %% of a core; memory child %d MiB cycles %.0f %% of a core, peak RSS %.0f MiB; machine busy %.0f %% of all cores\n",
		c.CPUWorkers, r.LoadCPU, c.MemMB, r.MemCPU, r.MemPeakMB, r.MachineBusy)
	fmt.Fprintf(w, "stalls on %s (the %s): %d, longest %v, total %v (%.1f %% of the run), planned %v–%v every %v–%v, timed by a %s thread\n",
		r.Stalled, role(r.Stalled, o), o.Stalls, o.Longest.Round(time.Millisecond), r.StallTotal.Round(time.Millisecond),
		100*r.StallTotal.Seconds()/max(r.Wall.Seconds(), 1e-9), r.Bounds.MinStall, r.Bounds.MaxStall, r.Bounds.MinGap, r.Bounds.MaxGap, r.StallThread)
	fmt.Fprintln(w, "| node | role | CPU % | ServiceLevel reads (answered) | min level | levels seen | level changes | member views (answered) | views with a member unreachable | device reads ok / failed | log: unreachable / lease store silent / paused |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, n := range sortedNames(o.Nodes) {
		x := o.Nodes[n]
		fmt.Fprintf(w, "| %s | %s | %.0f | %d (%d) | %s | %s | %d | %d (%d) | %d | %d / %d | %d / %d / %d |\n",
			n, role(n, o), r.NodeCPU[n], x.Reads, x.Answered, minLevel(x), levels(x.Levels), x.Changes, x.Views, x.ViewsAnswered,
			x.Unreachable, x.DeviceReads, x.DeviceFailed,
			x.Marks["cluster member unreachable"], x.Marks["lease store did not answer"], x.Marks["did not run for longer than the heartbeat pause"])
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "verdict: PASS — 0 failovers, 0 levels below 200")
		return
	}
	fmt.Fprintf(w, "verdict: FAIL\n  - %s\n", strings.Join(r.Violations, "\n  - "))
}

func role(n string, o Observations) string {
	if n == o.Primary {
		return "Primary"
	}
	return "Secondary"
}

func minLevel(x *NodeObs) string {
	if m := x.MinLevel(); m >= 0 {
		return fmt.Sprint(m)
	}
	return "–"
}

func levels(ls map[byte]int) string {
	var parts []string
	for l := 255; l >= 0; l-- {
		if n := ls[byte(l)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d×%d", n, l))
		}
	}
	return strings.Join(parts, ", ")
}
