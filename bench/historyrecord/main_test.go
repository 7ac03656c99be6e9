package main

import (
	"testing"
	"time"
)

// TestShortRun is the CI variant of the harness: 100 tags on one device
// for a few seconds. It asserts that the node recorded and dropped nothing
// and that the store grew — never a rate or a size: those are the
// harness's output, recorded in docs/benchmarks.md with the command that
// produced them.
func TestShortRun(t *testing.T) {
	s := settings{tags: 100, devices: 1, poll: 100 * time.Millisecond, change: 100 * time.Millisecond,
		warmup: 3 * time.Second, window: 3 * time.Second}
	r := run(t, s, true)
	if r.RecordedPerS <= 0 || r.DroppedPerS != 0 || r.StoreBytes <= 0 || r.BytesPerValue <= 0 {
		t.Fatalf("%+v", r)
	}
}
