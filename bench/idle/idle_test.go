package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestShortRun is the CI variant of the harness: the lone node and the
// pair on real processes, 5 s windows. It asserts that every node stayed up
// through the window and that each figure was read from /proc — never a
// size or a time: those are the harness's output, recorded in
// docs/benchmarks.md with the command that produced them.
func TestShortRun(t *testing.T) {
	res := run(t, settings{settle: 5 * time.Second, window: 5 * time.Second, every: 500 * time.Millisecond}, "")
	if len(res) != 3 {
		t.Fatalf("%d results, want the lone node and two pair nodes", len(res))
	}
	var out bytes.Buffer
	printHeader(&out)
	for _, r := range res {
		printRow(&out, 1, r)
		if !r.alive {
			t.Errorf("%s exited during the window", r.label)
		}
		if r.samples < 2 {
			t.Errorf("%s: %d samples in the window, want at least 2", r.label, r.samples)
		}
		if r.rssEnd == 0 || r.rssMax < r.rssEnd || r.anonEnd == 0 || r.fileEnd == 0 || r.anonEnd+r.fileEnd > r.rssEnd {
			t.Errorf("%s: RSS %d (largest %d) = anon %d + file %d + shmem: not a reading of /proc", r.label, r.rssEnd, r.rssMax, r.anonEnd, r.fileEnd)
		}
		if r.window < 5*time.Second {
			t.Errorf("%s: window %v, shorter than asked", r.label, r.window)
		}
		if r.switches == 0 {
			t.Errorf("%s: no context switch in 5 s: the threads were not read", r.label)
		}
		if r.goroutines == "?" {
			t.Errorf("%s: go_goroutines missing from /metrics", r.label)
		}
	}
	t.Log("\n" + out.String())
	if n := strings.Count(out.String(), "\n"); n != 5 {
		t.Errorf("table has %d lines, want a header, a rule and 3 rows:\n%s", n, out.String())
	}
}
