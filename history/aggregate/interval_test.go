package aggregate

import (
	"errors"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

func TestIntervals(t *testing.T) {
	iv := func(from, to float64, partial bool) Interval {
		return Interval{Start: at(from), End: at(to), Partial: partial}
	}
	cases := []struct {
		name       string
		start, end float64
		processing time.Duration
		max        int
		want       []Interval
		err        error
	}{
		{name: "start equals end", start: 10, end: 10, processing: time.Second, err: ErrInvalidArgument},
		{name: "negative processing interval", start: 0, end: 10, processing: -time.Second, err: ErrInvalidArgument},
		{name: "processing 0 is one interval", start: 0, end: 100, processing: 0,
			want: []Interval{iv(0, 100, false)}},
		{name: "processing equal to the range", start: 0, end: 100, processing: 100 * time.Second,
			want: []Interval{iv(0, 100, false)}},
		{name: "processing longer than the range is one partial interval", start: 0, end: 100, processing: 150 * time.Second,
			want: []Interval{iv(0, 100, true)}},
		{name: "even division", start: 0, end: 30, processing: 10 * time.Second,
			want: []Interval{iv(0, 10, false), iv(10, 20, false), iv(20, 30, false)}},
		{name: "remainder in a partial last interval", start: 0, end: 25, processing: 10 * time.Second,
			want: []Interval{iv(0, 10, false), iv(10, 20, false), iv(20, 25, true)}},
		{name: "backward even division", start: 30, end: 0, processing: 10 * time.Second,
			want: []Interval{iv(30, 20, false), iv(20, 10, false), iv(10, 0, false)}},
		{name: "backward remainder", start: 25, end: 0, processing: 10 * time.Second,
			want: []Interval{iv(25, 15, false), iv(15, 5, false), iv(5, 0, true)}},
		{name: "backward processing 0", start: 25, end: 0,
			want: []Interval{iv(25, 0, false)}},
		{name: "at the limit", start: 0, end: 30, processing: 10 * time.Second, max: 3,
			want: []Interval{iv(0, 10, false), iv(10, 20, false), iv(20, 30, false)}},
		{name: "over the limit", start: 0, end: 31, processing: 10 * time.Second, max: 3, err: ErrTooManyIntervals},
		{name: "max 0 is unbounded", start: 0, end: 1000, processing: time.Second, max: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Intervals(at(c.start), at(c.end), c.processing, c.max)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if c.want == nil {
				if c.err == nil && len(got) != 1000 {
					t.Fatalf("%d intervals, want 1000", len(got))
				}
				return
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d intervals %v, want %d", len(got), got, len(c.want))
			}
			for i := range got {
				g, w := got[i], c.want[i]
				if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) || g.Partial != w.Partial {
					t.Errorf("interval %d = [%s, %s) partial %v, want [%s, %s) partial %v", i,
						g.Start.Sub(t0), g.End.Sub(t0), g.Partial, w.Start.Sub(t0), w.End.Sub(t0), w.Partial)
				}
			}
		})
	}
}

// TestIntervalsTile checks that the intervals of a range tile it exactly,
// in the direction of time, for a spread of lengths.
func TestIntervalsTile(t *testing.T) {
	for _, rng := range []time.Duration{1, 999, time.Second, 61 * time.Second, 3*time.Hour + 7} {
		for _, p := range []time.Duration{1, 7, time.Second, 10 * time.Second, time.Hour} {
			for _, backward := range []bool{false, true} {
				start, end := t0, t0.Add(rng)
				if backward {
					start, end = end, start
				}
				ivs, err := Intervals(start, end, p, 100_000)
				if errors.Is(err, ErrTooManyIntervals) {
					if rng/p < 100_000 {
						t.Fatalf("range %s step %s: %v", rng, p, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if !ivs[0].Start.Equal(start) || !ivs[len(ivs)-1].End.Equal(end) {
					t.Fatalf("range %s step %s: intervals do not span it", rng, p)
				}
				for i := 1; i < len(ivs); i++ {
					if !ivs[i].Start.Equal(ivs[i-1].End) || ivs[i-1].Partial {
						t.Fatalf("range %s step %s: gap or early partial at %d", rng, p, i)
					}
				}
			}
		}
	}
}

func TestKinds(t *testing.T) {
	ids := map[Kind]uint32{
		Interpolative: 2341, Average: 2342, TimeAverage: 2343, Minimum: 2346, Maximum: 2347,
		MinimumActualTime: 2348, MaximumActualTime: 2349, Range: 2350, Count: 2352,
		Start: 2357, End: 2358, Delta: 2359, DurationGood: 2360, DurationBad: 2361,
		PercentGood: 2362, PercentBad: 2363,
	}
	ks := Kinds()
	if len(ks) != len(ids) {
		t.Fatalf("Kinds() has %d kinds, want %d", len(ks), len(ids))
	}
	for _, k := range ks {
		n := k.NodeID()
		if n.Namespace() != 0 || n.IntID() != ids[k] {
			t.Errorf("%v.NodeID() = %v, want i=%d", k, n, ids[k])
		}
		back, ok := KindOf(n)
		if !ok || back != k {
			t.Errorf("KindOf(%v) = %v, %v; want %v", n, back, ok, k)
		}
		if k.String() == "" || k.String()[0] == 'K' {
			t.Errorf("%d has no name: %q", int(k), k.String())
		}
	}
	for _, n := range []*ua.NodeID{
		nil,
		ua.NewNumericNodeID(0, id.AggregateFunction_Total),
		ua.NewNumericNodeID(2, id.AggregateFunction_Average),
		ua.NewStringNodeID(0, "Average"),
	} {
		if k, ok := KindOf(n); ok {
			t.Errorf("KindOf(%v) = %v, want not supported", n, k)
		}
	}
	if s := Kind(0).String(); s != "Kind(0)" {
		t.Errorf("Kind(0).String() = %q", s)
	}
	if Kind(99).NodeID() != nil {
		t.Error("Kind(99).NodeID() is not nil")
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		good, bad uint8
		ok        bool
	}{
		{100, 100, true}, {80, 20, true}, {50, 50, true}, {100, 0, true},
		{79, 20, false}, {101, 100, false}, {100, 101, false},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.PercentDataGood, cfg.PercentDataBad = c.good, c.bad
		if err := cfg.Validate(); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrConfigRejected)) {
			t.Errorf("good %d bad %d: Validate() = %v, want ok %v", c.good, c.bad, err, c.ok)
		}
	}
	d := DefaultConfig()
	if !d.TreatUncertainAsBad || d.PercentDataBad != 100 || d.PercentDataGood != 100 || d.UseSlopedExtrapolation || d.Stepped {
		t.Errorf("DefaultConfig() = %+v", d)
	}
}

func TestComputeRejects(t *testing.T) {
	raw := []Sample{goodAt(0, 1)}
	if r := Compute(Average, DefaultConfig(), fwd(5, 5), raw); r.Status != ua.StatusBadInvalidArgument || !r.At.Equal(at(5)) || r.Raw != -1 {
		t.Errorf("zero-length interval: %+v", r)
	}
	if r := Compute(Kind(0), DefaultConfig(), fwd(0, 5), raw); r.Status != ua.StatusBadAggregateNotSupported {
		t.Errorf("Kind(0): %+v", r)
	}
}
