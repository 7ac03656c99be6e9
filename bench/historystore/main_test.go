package main

import (
	"testing"
	"time"
)

// TestBlockRoundTrip: a block decodes to the samples it was encoded from.
func TestBlockRoundTrip(t *testing.T) {
	var xs []sample
	for _, b := range workload(3, 300, 100*time.Millisecond, 9) {
		if b[1].tag == 1 {
			xs = append(xs, b[1])
		}
	}
	xs[5].value, xs[6].value = 0, 0 // equal values: an all-zero XOR
	var got []sample
	if err := decode(1, encode(xs), func(x sample) { got = append(got, x) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(xs) {
		t.Fatalf("%d samples back, want %d", len(got), len(xs))
	}
	for i := range xs {
		if got[i] != xs[i] {
			t.Fatalf("sample %d: %+v, want %+v", i, got[i], xs[i])
		}
	}
}

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

// TestBlockRoundTripOfAnyFloat: values with more than six decimals take
// the XOR mode and still come back exactly.
func TestBlockRoundTripOfAnyFloat(t *testing.T) {
	xs := []sample{{at: 10, value: 1.0 / 3}, {at: 20, value: 2.5, status: 0x80320000}, {at: 35, value: 2.5}, {at: 36, value: -7e-9}}
	var got []sample
	if err := decode(0, encode(xs), func(x sample) { got = append(got, x) }); err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		if got[i] != xs[i] {
			t.Fatalf("sample %d: %+v, want %+v", i, got[i], xs[i])
		}
	}
}
