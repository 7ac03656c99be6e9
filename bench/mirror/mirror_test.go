package main

import (
	"math"
	"strings"
	"testing"
)

// TestShort runs the harness's short mode once on real processes (a
// pair, a Modbus TCP device, 20 sessions × 20 items, both modes) and
// asserts that every figure was measured and that mirroring held every
// session without dropping one — not the goals: those are the harness's
// output, recorded in docs/benchmarks.md with the command.
func TestShort(t *testing.T) {
	c := ShortConfig()
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	warm := Run(t, c, modeWarm)
	mirrored := Run(t, c, modeMirrored)
	cmp := Compare(warm, mirrored)
	var b strings.Builder
	Table(&b, []Comparison{cmp})
	JSONLines(&b, "test", []Comparison{cmp})
	t.Log("\n" + b.String())
	if p := Problems([]Comparison{cmp}); len(p) > 0 {
		t.Errorf("problems: %v", p)
	}
	for _, r := range []Result{warm, mirrored} {
		if r.Primary.CPUPct <= 0 || r.Second.CPUPct <= 0 || r.Second.RSSMiB <= 0 || r.Second.HeapMiB <= 0 {
			t.Errorf("%s: process figures not read: %+v %+v", r.Mode, r.Primary, r.Second)
		}
		if r.Client.AgeP99Ms <= 0 || r.Client.AgeP50Ms > r.Client.AgeP99Ms || r.Client.NoSource > 0 {
			t.Errorf("%s: value age p50 %.1f p99 %.1f ms, %d without SourceTimestamp", r.Mode, r.Client.AgeP50Ms, r.Client.AgeP99Ms, r.Client.NoSource)
		}
		if r.Changes <= 0 {
			t.Errorf("%s: no register changed in the window", r.Mode)
		}
	}
	m := mirrored.Mirror
	if m.LagP99Ms <= 0 || m.LagP50Ms > m.LagP99Ms || m.LagP99Ms > m.LagP99LeMs || m.RecordsOutPerS <= 0 {
		t.Errorf("mirror figures: %+v", m)
	}
	if warm.Mirror.LagCount != 0 || warm.Mirror.ReplicaSessions != 0 || warm.Mirror.RecordsOutPerS != 0 {
		t.Errorf("Warm run has mirror figures: %+v", warm.Mirror)
	}
}

const sample = `# HELP otopcua_mirror_lag_seconds Time from handing …
# TYPE otopcua_mirror_lag_seconds histogram
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:1",le="0.001"} 10
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:1",le="0.002"} 18
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:1",le="0.005"} 20
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:1",le="+Inf"} 20
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:2",le="0.001"} 0
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:2",le="0.002"} 0
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:2",le="0.005"} 0
otopcua_mirror_lag_seconds_bucket{otel_scope_name="x",peer="127.0.0.1:2",le="+Inf"} 0
otopcua_mirror_lag_seconds_count{peer="127.0.0.1:1"} 20
otopcua_mirror_sessions{role="replica"} 7
otopcua_mirror_sessions{role="served"} 0
otopcua_mirror_dropped_total{reason="lag"} 2
otopcua_mirror_dropped_total{reason="ack-timeout"} 3
go_memstats_heap_inuse_bytes 1.2e+07
`

func TestScrape(t *testing.T) {
	s, err := ParseScrape(sample)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sum("otopcua_mirror_sessions", `role="replica"`); got != 7 {
		t.Errorf("replica sessions %v, want 7", got)
	}
	if got := s.ByLabel("otopcua_mirror_dropped_total", "reason"); len(got) != 2 || got["lag"] != 2 || got["ack-timeout"] != 3 {
		t.Errorf("dropped by reason %v, want lag 2, ack-timeout 3", got)
	}
	if got := s.Sum("go_memstats_heap_inuse_bytes"); got != 12e6 || !s.Has("go_memstats_heap_inuse_bytes") || s.Has("go_memstats") {
		t.Errorf("heap %v", got)
	}
	bs := s.Buckets("otopcua_mirror_lag_seconds")
	want := []Bucket{{0.001, 10}, {0.002, 18}, {0.005, 20}, {math.Inf(1), 20}}
	if len(bs) != len(want) {
		t.Fatalf("buckets %v, want %v", bs, want)
	}
	for i := range want {
		if bs[i] != want[i] {
			t.Fatalf("buckets %v, want %v", bs, want)
		}
	}
	// Window: 10 more observations, all between 2 and 5 ms.
	later := []Bucket{{0.001, 10}, {0.002, 18}, {0.005, 30}, {math.Inf(1), 30}}
	d := DeltaBuckets(bs, later)
	if Total(d) != 10 {
		t.Fatalf("delta %v", d)
	}
	if q := Quantile(d, 0.5); math.Abs(q-0.0035) > 1e-9 {
		t.Errorf("p50 %v, want 3.5 ms (half way through the 2–5 ms bucket)", q)
	}
	if q := UpperBound(d, 0.99); q != 0.005 {
		t.Errorf("p99 bound %v, want 5 ms", q)
	}
	// Whole: p50 of 20 lies in the first bucket, from 0.
	if q := Quantile(bs, 0.25); math.Abs(q-0.0005) > 1e-9 {
		t.Errorf("p25 %v, want 0.5 ms", q)
	}
	if !math.IsNaN(Quantile(DeltaBuckets(bs, bs), 0.5)) {
		t.Error("quantile of no observation is not NaN")
	}
	if q := Quantile([]Bucket{{0.001, 1}, {math.Inf(1), 10}}, 0.99); q != 0.001 {
		t.Errorf("a rank in +Inf answers %v, want the largest finite bound", q)
	}
	if _, err := ParseScrape("novalue"); err == nil {
		t.Error("a line without a value was accepted")
	}
}

func TestParseShape(t *testing.T) {
	if s, i, err := parseShape(" 1000x100 "); err != nil || s != 1000 || i != 100 {
		t.Fatalf("parseShape = %d, %d, %v", s, i, err)
	}
	for _, bad := range []string{"1000", "x100", "10xy"} {
		if _, _, err := parseShape(bad); err == nil {
			t.Errorf("parseShape(%q) accepted", bad)
		}
	}
	c := ShortConfig()
	c.Tags = 201
	if err := c.Check(); err != nil {
		t.Fatalf("201 tags on one device refused: %v", err)
	}
	c.Devices = 2
	if err := c.Check(); err == nil {
		t.Error("201 tags over 2 devices accepted")
	}
}

func TestCompare(t *testing.T) {
	warm := Result{Sessions: 10, Items: 100, Primary: NodeWindow{CPUPct: 20}, Second: NodeWindow{RSSMiB: 50, HeapMiB: 10},
		Client: ClientFigures{AgeP99Ms: 100}}
	mirrored := warm
	mirrored.Mode = modeMirrored
	mirrored.Primary.CPUPct = 23
	mirrored.Second = NodeWindow{RSSMiB: 51, HeapMiB: 10.5}
	mirrored.Client.AgeP99Ms = 104
	c := Compare(warm, mirrored)
	if math.Abs(c.CPURatio-1.15) > 1e-9 || c.RSSPerItemB != 1048.576 || c.HeapPerItemB != 524.288 || math.Abs(c.AgeP99DeltaMs-4) > 1e-9 {
		t.Fatalf("%+v", c)
	}
}

// TestStride: the changer visits every tag once per round, and one tick's
// changes reach many sessions' items.
func TestStride(t *testing.T) {
	for _, n := range []int{1, 2, 3, 200, 1000, 10000} {
		seen := make([]bool, n)
		st := stride(n)
		for k := range n {
			seen[k*st%n] = true
		}
		for k, ok := range seen {
			if !ok {
				t.Fatalf("n=%d stride %d: tag %d never visited", n, st, k)
			}
		}
	}
	// 100 changes of 10,000 tags touch ≥ 60 of the 100 blocks of 100
	// contiguous tags (a 1000x100 load's sessions).
	st, blocks := stride(10000), map[int]bool{}
	for k := range 100 {
		blocks[k*st%10000/100] = true
	}
	if len(blocks) < 60 {
		t.Fatalf("stride %d: 100 changes touch %d sessions of 100", st, len(blocks))
	}
}

func TestSummary(t *testing.T) {
	if median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, 3, 2}) != 2.5 || median(nil) != 0 {
		t.Fatal("median")
	}
	mk := func(shape string, run int, ratio float64) Comparison {
		return Comparison{Shape: shape, CPURatio: ratio, Warm: Result{Shape: shape, Run: run, Mode: modeWarm},
			Mirrored: Result{Shape: shape, Run: run, Mode: modeMirrored}}
	}
	var b strings.Builder
	Summary(&b, []Comparison{mk("1x1", 1, 1.3), mk("1x1", 2, 1.1), mk("1x1", 3, 1.2), mk("2x2", 1, 1.0)})
	for _, want := range []string{"| 1x1 | 3 | 1.20 (1.30, 1.10, 1.20) |", "| 2x2 | 1 | 1.00 (1.00) |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
