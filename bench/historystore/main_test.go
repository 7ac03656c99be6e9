package main

import (
	"testing"
	"time"
)

// TestEveryStoreReadsBackWhatItRecorded runs the harness on a small
// workload: measure checks the count of every read.
func TestEveryStoreReadsBackWhatItRecorded(t *testing.T) {
	batches := workload(20, 600, time.Second, 3)
	for _, mk := range []func(string) (store, error){openRows, func(d string) (store, error) { return openBlocks(d, 64) }, openPebble, func(d string) (store, error) { return openPebbleBlocks(d, 64) }} {
		dir := t.TempDir()
		s, err := mk(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := measure(s, dir, batches, 20, 5, 1); err != nil {
			t.Fatalf("%s: %v", s.name(), err)
		}
	}
}
