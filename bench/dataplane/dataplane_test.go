package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers/modbus"
)

// TestTiny runs the harness's core at a tiny size on a real host process
// and real devices: 100 tags on one device for 2 s, 20 writes. It asserts
// that every part measured something, not the goals.
func TestTiny(t *testing.T) {
	c := Config{Tags: 100, Devices: 1, Poll: 100 * time.Millisecond, Publishing: 100 * time.Millisecond,
		Inflight: 3, Idle: 500 * time.Millisecond, Warmup: time.Second, Duration: 2 * time.Second,
		Changes: 1, ChangeEvery: 50 * time.Millisecond, Writes: 20}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	r := Run(t, c)
	var b strings.Builder
	Tables(&b, []Result{r})
	JSONLines(&b, machine(), []Result{r})
	t.Log("\n" + b.String())

	l := r.Latency
	if l.Changes < 20 || l.Notified == 0 || l.P99Ms <= 0 || l.MaxMs < l.P50Ms {
		t.Errorf("latency: %d changes, %d notified, p50 %.1f ms, p99 %.1f ms, max %.1f ms", l.Changes, l.Notified, l.P50Ms, l.P99Ms, l.MaxMs)
	}
	if l.ToSourceP99Ms <= 0 || l.SourceToRcvP99Ms <= 0 {
		t.Errorf("latency parts: change → read p99 %.1f ms, read → receipt p99 %.1f ms", l.ToSourceP99Ms, l.SourceToRcvP99Ms)
	}
	w := r.Write
	if w.Good != c.Writes || w.Landed != c.Writes || w.RegisterP99Ms <= 0 || w.ResponseP99Ms <= 0 {
		t.Errorf("writes: %d Good, %d landed of %d; register p99 %.2f ms, response p99 %.2f ms (%s)",
			w.Good, w.Landed, c.Writes, w.RegisterP99Ms, w.ResponseP99Ms, w.First)
	}
	for name, win := range map[string]Window{"before": r.Resources.Before, "polling": r.Resources.Polling, "case": r.Resources.Case} {
		if win.Seconds <= 0 || win.RSSMeanMiB <= 0 || win.RSSMaxMiB < win.RSSMeanMiB {
			t.Errorf("window %s: %+v", name, win)
		}
	}
	if r.Resources.Case.CPUPct <= 0 {
		t.Errorf("no host CPU during the latency window: %+v", r.Resources.Case)
	}
}

func TestTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	k := NewTracker(3)
	good := func(h int, v int16, src, rcv time.Duration) {
		k.Notify(h, ua.MustVariant(v), ua.StatusOK, t0.Add(src), t0.Add(rcv))
	}
	// Initial values: every register holds 0.
	for h := range 3 {
		good(h, 0, 0, 0)
	}
	if k.Seen() != 3 {
		t.Fatalf("Seen = %d, want 3", k.Seen())
	}
	before := k.Change(0, t0) // before the window: notified, not counted
	good(0, before, 10*ms, 20*ms)
	k.SetMeasuring(true)
	a := k.Change(1, t0.Add(100*ms))
	b := k.Change(2, t0.Add(100*ms))
	b2 := k.Change(2, t0.Add(150*ms)) // supersedes b
	c := k.Change(0, t0.Add(160*ms))
	k.SetMeasuring(false)
	if a == 0 || b == b2 || c == before {
		t.Fatalf("values a=%d b=%d b2=%d c=%d before=%d: a change must differ from the register", a, b, b2, c, before)
	}
	good(1, a-1, 110*ms, 120*ms) // not the change's value
	good(1, a, 130*ms, 180*ms)   // latency 80 ms
	good(1, a, 130*ms, 190*ms)   // a repeat: not counted again
	good(2, b, 120*ms, 200*ms)   // the superseded value
	k.Notify(0, nil, ua.StatusBadCommunicationError, t0.Add(170*ms), t0.Add(200*ms))
	if k.Open() != 2 {
		t.Fatalf("Open = %d, want 2 (b2 and c)", k.Open())
	}
	good(2, b2, 160*ms, 350*ms) // latency 200 ms
	f := k.Figures()
	want := TrackerCounts{Changes: 4, Notified: 2, Superseded: 1, Notifications: 9, Bad: 1, Unmatched: 6}
	if f.TrackerCounts != want || f.Unnotified != 1 {
		t.Fatalf("counts %+v unnotified %d, want %+v and 1", f.TrackerCounts, f.Unnotified, want)
	}
	// Histograms are exact to 0.1 ms (the upper bucket edge, capped at
	// the largest duration).
	if f.P50Ms != 80.1 || f.MaxMs != 200 || f.P99Ms != 200 {
		t.Fatalf("p50 %.1f p99 %.1f max %.1f, want 80.1, 200, 200", f.P50Ms, f.P99Ms, f.MaxMs)
	}
	if f.ToSourceP50Ms != 10.1 || f.SourceToRcvP99Ms != 190 {
		t.Fatalf("change → read p50 %.1f, read → receipt p99 %.1f; want 10.1 and 190", f.ToSourceP50Ms, f.SourceToRcvP99Ms)
	}
}

// TestDocument checks the generated deployment against the deployment
// rules and the driver's read plan: 1,000 contiguous tags are 8 requests.
func TestDocument(t *testing.T) {
	l := fieldrig.Layout{Devices: 2, PerDevice: 1000}
	b, err := fieldrig.Document(clusterID, l, []string{"127.0.0.1:1502", "127.0.0.1:1503"}, 100*time.Millisecond, writeTag)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := deployment.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ClusterId != clusterID || len(doc.Devices) != 2 {
		t.Fatalf("cluster %q, %d devices", doc.ClusterId, len(doc.Devices))
	}
	for d, dev := range doc.Devices {
		plan, err := modbus.Plan(dev.Tags, modbus.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan) != 8 {
			t.Errorf("device %s: %d read requests, want 8", dev.Name, len(plan))
		}
		if dev.PollInterval.Std() != 100*time.Millisecond {
			t.Errorf("device %s: poll interval %v", dev.Name, dev.PollInterval.Std())
		}
		for r, tag := range dev.Tags {
			if want := d*l.PerDevice+r == writeTag; tag.Writable != want {
				t.Errorf("%s/%s writable %v, want %v", dev.Name, tag.Name, tag.Writable, want)
			}
		}
	}
	if _, err := fieldrig.Document(clusterID, l, []string{"127.0.0.1:1502"}, time.Second, writeTag); err == nil {
		t.Fatal("a document with a missing device address must fail")
	}
}

func TestRotation(t *testing.T) {
	l := fieldrig.Layout{Devices: 3, PerDevice: 4}
	got := Rotation(l)
	want := []int{4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11} // register 0 of devices 1, 2, then register 1 …; never writeTag
	if len(got) != len(want) {
		t.Fatalf("Rotation = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Rotation = %v, want %v", got, want)
		}
	}
	if d, r := l.Of(7); d != 1 || r != 3 {
		t.Fatalf("Of(7) = %d, %d; want device 1, register 3", d, r)
	}
}

func TestVerdict(t *testing.T) {
	ok := Result{Case: "x",
		Latency: LatencyFigures{TrackerCounts: TrackerCounts{Changes: 10, Notified: 10}, P99Ms: 250},
		Write:   WriteFigures{Writes: 5, Good: 5, Landed: 5, RegisterP99Ms: 20, ResponseP99Ms: 21}}
	cases := []struct {
		name   string
		edit   func(r *Result)
		failed []string
	}{
		{"all met at the limits", func(*Result) {}, nil},
		{"latency too high", func(r *Result) { r.Latency.P99Ms = 250.1 }, []string{"latency p99 x"}},
		{"no latency measured", func(r *Result) { r.Latency = LatencyFigures{} }, []string{"latency p99 x", "changes notified x"}},
		{"a change lost", func(r *Result) { r.Latency.Notified = 9 }, []string{"changes notified x"}},
		{"write too slow", func(r *Result) { r.Write.RegisterP99Ms = 20.01 }, []string{"write p99 x"}},
		{"a write refused", func(r *Result) { r.Write.Good = 4 }, []string{"writes landed x"}},
		{"no write landed", func(r *Result) { r.Write.Landed = 0 }, []string{"write p99 x", "writes landed x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.edit(&r)
			var got []string
			for _, f := range Failed(Verdict([]Result{r}, DefaultGoals)) {
				got = append(got, f.Name)
			}
			if strings.Join(got, ",") != strings.Join(c.failed, ",") {
				t.Fatalf("failed %v, want %v", got, c.failed)
			}
		})
	}
}

func TestParseCase(t *testing.T) {
	if tags, devs, err := parseCase(" 1000:1 "); err != nil || tags != 1000 || devs != 1 {
		t.Fatalf("parseCase = %d, %d, %v", tags, devs, err)
	}
	for _, bad := range []string{"1000", "x:1", "10:y"} {
		if _, _, err := parseCase(bad); err == nil {
			t.Errorf("parseCase(%q) accepted", bad)
		}
	}
	if err := (Config{Tags: 1000, Devices: 3}).Check(); err == nil {
		t.Error("1000 tags over 3 devices accepted")
	}
}
