package client

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gopcua/opcua/ua"
)

const ms = int64(1e6)

// TestDedupTable: each case offers samples in order to a fresh Dedup with a
// 1 s window and expects one verdict per sample.
func TestDedupTable(t *testing.T) {
	s := func(node, value string, status uint32, at int64) Sample {
		return Sample{Node: node, Value: value, Status: status, Source: at * ms, HasSource: true}
	}
	cases := []struct {
		name string
		in   []Sample
		want []DedupVerdict
	}{
		{"first value", []Sample{s("n", "1", 0, 0)}, []DedupVerdict{Deliver}},
		{"the other server's copy 20 ms later", []Sample{s("n", "1", 0, 0), s("n", "1", 0, 20)}, []DedupVerdict{Deliver, Duplicate}},
		{"the other server's copy 20 ms earlier", []Sample{s("n", "1", 0, 20), s("n", "1", 0, 0)}, []DedupVerdict{Deliver, Duplicate}},
		{"copy exactly at the window", []Sample{s("n", "1", 0, 0), s("n", "1", 0, 1000)}, []DedupVerdict{Deliver, Duplicate}},
		{"equal value beyond the window is new", []Sample{s("n", "1", 0, 0), s("n", "1", 0, 1001)}, []DedupVerdict{Deliver, Deliver}},
		{"other value", []Sample{s("n", "1", 0, 0), s("n", "2", 0, 5)}, []DedupVerdict{Deliver, Deliver}},
		{"other status", []Sample{s("n", "1", 0, 0), s("n", "1", uint32(ua.StatusBadCommunicationError), 5)}, []DedupVerdict{Deliver, Deliver}},
		{"other node", []Sample{s("n", "1", 0, 0), s("m", "1", 0, 5)}, []DedupVerdict{Deliver, Deliver}},
		{"counter on two servers, interleaved", []Sample{
			s("n", "1", 0, 0), s("n", "1", 0, 15), s("n", "2", 0, 100), s("n", "3", 0, 200), s("n", "2", 0, 118), s("n", "3", 0, 215), s("n", "4", 0, 318),
		}, []DedupVerdict{Deliver, Duplicate, Deliver, Deliver, Duplicate, Duplicate, Deliver}},
		{"stale replay older than the window", []Sample{s("n", "9", 0, 5000), s("n", "3", 0, 3990)}, []DedupVerdict{Deliver, Stale}},
		{"older but within the window is a new value", []Sample{s("n", "9", 0, 5000), s("n", "8", 0, 4100)}, []DedupVerdict{Deliver, Deliver}},
		{"a copy near the window's edge still matches", []Sample{s("n", "1", 0, 0), s("n", "2", 0, 1990), s("n", "1", 0, 995)}, []DedupVerdict{Deliver, Deliver, Duplicate}},
		{"A B A within the window merges the second A (the documented limit)", []Sample{s("n", "A", 0, 0), s("n", "B", 0, 100), s("n", "A", 0, 200)}, []DedupVerdict{Deliver, Deliver, Duplicate}},
		{"a later server's first value older than the newest is superseded", []Sample{s("n", "34", 0, 1016), initial(s("n", "33", 0, 1000)), s("n", "35", 0, 1124)},
			[]DedupVerdict{Deliver, Stale, Deliver}},
		{"a first value newer than the newest is delivered", []Sample{s("n", "34", 0, 1016), initial(s("n", "35", 0, 1100))}, []DedupVerdict{Deliver, Deliver}},
		{"a first value that is the other server's copy is a duplicate", []Sample{s("n", "34", 0, 1016), initial(s("n", "34", 0, 1030))}, []DedupVerdict{Deliver, Duplicate}},
		{"no source timestamp is always delivered", []Sample{{Node: "n", Value: "1"}, {Node: "n", Value: "1"}}, []DedupVerdict{Deliver, Deliver}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &Dedup{Window: 1000 * ms}
			var got []string
			for _, in := range c.in {
				got = append(got, d.Offer(in).String())
			}
			if fmt.Sprint(got) != fmt.Sprint(verdictNames(c.want)) {
				t.Fatalf("verdicts %v, want %v", got, verdictNames(c.want))
			}
		})
	}
}

func initial(s Sample) Sample { s.Initial = true; return s }

func verdictNames(v []DedupVerdict) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.String()
	}
	return out
}

// TestDedupMemoryIsBounded: a node that delivers a new value every 10 ms
// for a minute keeps only the values within twice the window.
func TestDedupMemoryIsBounded(t *testing.T) {
	d := &Dedup{Window: 1000 * ms}
	for i := range int64(6000) {
		if v := d.Offer(Sample{Node: "n", Value: fmt.Sprint(i), Source: i * 10 * ms, HasSource: true}); v != Deliver {
			t.Fatalf("value %d: %v", i, v)
		}
	}
	if n := d.Remembered("n"); n > 201 || n < 199 {
		t.Fatalf("%d values remembered, want about 200 (2 s of 10 ms values)", n)
	}
	d = &Dedup{Window: 1 << 40}
	for i := range int64(MaxRemembered + 100) {
		d.Offer(Sample{Node: "n", Value: fmt.Sprint(i), Source: i, HasSource: true})
	}
	if n := d.Remembered("n"); n != MaxRemembered {
		t.Fatalf("%d values remembered with a huge window, want the cap %d", n, MaxRemembered)
	}
}

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{"", ModeAuto, false}, {"auto", ModeAuto, false}, {"warm", ModeWarm, false}, {"HOT-A", ModeHotA, false},
		{"hot-b", ModeHotB, false}, {"mirrored", ModeMirrored, false}, {"hot", "", true}, {"cold", "", true},
	} {
		got, err := ParseMode(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), "auto, warm, hot-a, hot-b, mirrored") {
			t.Errorf("ParseMode(%q) error %q does not list the accepted values", c.in, err)
		}
	}
}

func TestModeForRedundancySupport(t *testing.T) {
	for _, c := range []struct {
		in   ua.RedundancySupport
		want Mode
	}{
		{ua.RedundancySupportNone, ModeWarm}, {ua.RedundancySupportCold, ModeWarm}, {ua.RedundancySupportWarm, ModeWarm},
		{ua.RedundancySupportHot, ModeHotA}, {ua.RedundancySupportTransparent, ModeMirrored},
		{ua.RedundancySupportHotAndMirrored, ModeMirrored}, {ua.RedundancySupport(42), ModeWarm},
	} {
		if got := ModeFor(c.in); got != c.want {
			t.Errorf("ModeFor(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDialRefusesAnUnknownMode(t *testing.T) {
	_, err := Dial(context.Background(), Options{URLs: []string{"opc.tcp://127.0.0.1:1"}, Mode: "hot"})
	if err == nil || !strings.Contains(err.Error(), `Options.Mode: "hot" is not a client mode; accepted: auto, warm, hot-a, hot-b, mirrored`) {
		t.Fatalf("Dial with mode hot: %v", err)
	}
}
