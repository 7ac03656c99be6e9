package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestShortRun is the CI variant of the harness: 20,000 values, one read
// of each kind on a real node and on node-opcua's historian. It asserts
// what each read returned — never a time: times are the harness's output,
// recorded in docs/benchmarks.md with the command that produced them.
func TestShortRun(t *testing.T) {
	s := settings{values: 20000, per: 10000, runs: 1, only: map[string]bool{"raw": true, "processed": true, "node-opcua": true}}
	rows := run(t, s)
	want := map[string]int{"otopcua raw": 20000, "node-opcua raw": 20000,
		"otopcua Average per 1h over 33m20s": 1, "otopcua Average per 1min over 33m20s": 34, "otopcua Average per 1s over 33m20s": 2000}
	for _, r := range rows {
		k := r.Server + " " + r.Read
		if n, ok := want[k]; !ok || r.Values != n || r.Note != "" {
			t.Errorf("%s: %d values (%s), want %d", k, r.Values, r.Note, n)
		}
		delete(want, k)
	}
	if len(want) > 0 {
		t.Errorf("reads missing: %v", want)
	}
	var out bytes.Buffer
	printRows(&out, rows)
	if !strings.Contains(out.String(), "| otopcua | raw |") {
		t.Errorf("table:\n%s", out.String())
	}
}
