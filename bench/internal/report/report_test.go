package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/bench/internal/subload"
)

func TestThousands(t *testing.T) {
	cases := map[float64]string{0: "0", 999.4: "999", 999.6: "1,000", 1234567: "1,234,567", -4321: "-4,321", 100000: "100,000"}
	for in, want := range cases {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	Table(&b, []subload.Result{
		{Impl: "gopcua", Items: 1000, OK: true, WindowS: 20, NotificationsPerS: 9998.2, AgeP50Ms: 65.4, AgeP99Ms: 81.8, ServerCPUPct: 4.6, NotificationsPerCPU: 217391, ServerRSSMaxMB: 50.7, ClientCPUPct: 0.6},
		{Impl: "otopcua", Items: 1000, Error: "start: a|b"},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	if want := "| gopcua | 1000 | 9,998 | 65.4 | 81.8 | 4.6 | 217,391 | 50.7 | 0.6 |  |"; lines[2] != want {
		t.Errorf("row\n got %s\nwant %s", lines[2], want)
	}
	if !strings.Contains(lines[3], `FAILED: start: a\|b`) {
		t.Errorf("failed row not escaped: %s", lines[3])
	}
}

func TestCheck(t *testing.T) {
	res := []subload.Result{
		{Impl: "gopcua", Items: 50000, OK: true, NotificationsPerCPU: 100000},
		{Impl: "otopcua", Items: 50000, OK: true, NotificationsPerS: 450000, AgeP99Ms: 200, NotificationsPerCPU: 250000},
		{Impl: "gopcua", Items: 1000, OK: true, NotificationsPerCPU: 200000},
		{Impl: "otopcua", Items: 1000, OK: true, NotificationsPerCPU: 300000},
	}
	got := Check(res, DefaultGoals)
	want := []string{
		"MET otopcua at 50000 items: 450,000 notifications/s (goal ≥ 300,000), p99 age 200.0 ms (goal ≤ 250 ms)",
		"MET otopcua at 50000 items: 2.50× gopcua's notifications per CPU-second (goal ≥ 2×)",
		"NOT MET otopcua at 1000 items: 1.50× gopcua's notifications per CPU-second (goal ≥ 2×)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	res[1].AgeP99Ms = 300
	if got := Check(res, DefaultGoals); !strings.HasPrefix(got[0], "NOT MET") {
		t.Fatalf("p99 over the goal must not be met: %s", got[0])
	}

	// A second run of otopcua at 50000 items is averaged in.
	res[1].AgeP99Ms = 200
	res = append(res, subload.Result{Impl: "otopcua", Items: 50000, OK: true, NotificationsPerS: 250000, AgeP99Ms: 280, NotificationsPerCPU: 150000})
	got = Check(res, DefaultGoals)
	if want := "MET otopcua at 50000 items: 350,000 notifications/s (goal ≥ 300,000), p99 age 240.0 ms (goal ≤ 250 ms) (mean of 2 runs)"; got[0] != want {
		t.Fatalf("averaged\n got %s\nwant %s", got[0], want)
	}
	if want := "MET otopcua at 50000 items: 2.00× gopcua's notifications per CPU-second (goal ≥ 2×) (mean of 2 runs)"; got[1] != want {
		t.Fatalf("averaged\n got %s\nwant %s", got[1], want)
	}
	res[4].OK = false
	if got := Check(res, DefaultGoals); !strings.HasPrefix(got[0], "NOT MET") || !strings.Contains(got[1], "a run failed") {
		t.Fatalf("a failed repeat must not be met: %v", got)
	}
}
