package history

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/internal/poll"
)

func TestFilter(t *testing.T) {
	const bad = 0x80320000
	for _, c := range []struct {
		name string
		p    Policy
		in   []Sample
		want []bool
	}{
		{"every change without a deadband", Policy{}, []Sample{{At: 1, Value: 1}, {At: 2, Value: 1}, {At: 3, Value: 1.5}, {At: 4, Value: 1.5}}, []bool{true, false, true, false}},
		{"deadband", Policy{Deadband: 0.5}, []Sample{{At: 1, Value: 10}, {At: 2, Value: 10.5}, {At: 3, Value: 10.51}, {At: 4, Value: 10.2}, {At: 5, Value: 11.02}}, []bool{true, false, true, false, true}},
		{"a status change is recorded whatever the deadband", Policy{Deadband: 100}, []Sample{{At: 1, Value: 1}, {At: 2, Value: 1, Status: bad}, {At: 3, Value: 1, Status: bad}, {At: 4, Value: 2}}, []bool{true, true, false, true}},
		{"max interval", Policy{MaxInterval: time.Second}, []Sample{{At: 0, Value: 1}, {At: 5_000_000, Value: 1}, {At: 10_000_000, Value: 1}, {At: 15_000_000, Value: 1}, {At: 20_000_000, Value: 1}}, []bool{true, false, true, false, true}},
		{"not newer than the last recorded", Policy{}, []Sample{{At: 5, Value: 1}, {At: 5, Value: 2}, {At: 4, Value: 3}, {At: 6, Value: 3}}, []bool{true, false, false, true}},
		{"NaN once", Policy{}, []Sample{{At: 1, Value: math.NaN()}, {At: 2, Value: math.NaN()}}, []bool{true, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f filter
			for i, x := range c.in {
				if got := f.decide(c.p, x); got != c.want[i] {
					t.Fatalf("sample %d %+v: recorded %v, want %v", i, x, got, c.want[i])
				}
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	yes, no := true, false
	lo, hi := 0.0, 200.0
	doc := &deployment.Document{ClusterId: "c", Devices: []deployment.Device{
		{Name: "press1", History: deployment.History{Historize: &yes, Deadband: &deployment.Deadband{Value: 0.5}}, Tags: []deployment.Tag{
			{Name: "a"}, {Name: "b", History: deployment.History{Historize: &no}},
			{Name: "c", History: deployment.History{MaxInterval: deployment.Duration(time.Minute), Retention: deployment.Duration(time.Hour)}},
		}},
		{Name: "sim", Tags: []deployment.Tag{{Name: "s", Min: &lo, Max: &hi, History: deployment.History{Historize: &yes, Deadband: &deployment.Deadband{Value: 2, Percent: true}}}}},
	}}
	got := Policies(doc)
	want := map[string]map[string]Policy{
		"press1": {"a": {Deadband: 0.5, Retention: deployment.DefaultHistoryRetention}, "c": {Deadband: 0.5, MaxInterval: time.Minute, Retention: time.Hour}},
		"sim":    {"s": {Deadband: 4, Retention: deployment.DefaultHistoryRetention}},
	}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for d, tags := range want {
		for n, p := range tags {
			if got[d][n] != p {
				t.Errorf("%s/%s: %+v, want %+v", d, n, got[d][n], p)
			}
		}
		if len(got[d]) != len(tags) {
			t.Errorf("%s: %v", d, got[d])
		}
	}
}

func TestTrim(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	if err := s.Append(recs("t", 0, 10, func(i int) float64 { return float64(i) })); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact("t", false); err != nil { // blocks [0 s–3 s] [4 s–7 s], head 8 s, 9 s
		t.Fatal(err)
	}
	if err := s.Trim("t", 5*sec); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, s, "t", math.MinInt64, math.MaxInt64)
	if len(got) != 6 || got[0].At != 4*sec {
		t.Fatalf("after trimming at 5 s: %v (the block from 4 s stays whole)", got)
	}
	if err := s.Trim("t", 9*sec); err != nil {
		t.Fatal(err)
	}
	got = readAll(t, s, "t", math.MinInt64, math.MaxInt64)
	if len(got) != 1 || got[0].At != 9*sec {
		t.Fatalf("after trimming at 9 s: %v", got)
	}
	if st := s.tags[s.ids["t"]]; len(st.head) != 1 || st.head[0].At != 9*sec {
		t.Fatalf("head after trimming: %+v", st)
	}
}

// TestRecorder: polls offered to a running recorder reach the store
// through each tag's filter; a tag not historized is not recorded.
func TestRecorder(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	yes := true
	r := NewRecorder(s, RecorderOptions{CompactEvery: 10 * time.Millisecond})
	r.Apply(&deployment.Document{ClusterId: "c", Devices: []deployment.Device{{Name: "press1", Tags: []deployment.Tag{
		{Name: "Temperature", History: deployment.History{Historize: &yes, Deadband: &deployment.Deadband{Value: 1}}},
		{Name: "Running", History: deployment.History{Historize: &yes}},
		{Name: "Other"},
	}}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	temps := []float64{20, 20.5, 21.2, 21.3, 25}
	for i, v := range temps {
		at := t0.Add(time.Duration(i) * time.Second)
		r.Offer("press1", []Reading{{Tag: "Temperature", Value: v, At: at}, {Tag: "Running", Value: i >= 2, At: at}, {Tag: "Other", Value: int16(i), At: at}})
	}
	r.Offer("press1", []Reading{{Tag: "Temperature", Value: nil, Status: 0x80320000, At: time.Time{}}}) // nothing read yet: skipped
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, poll.True("recorded", func() bool { return r.Status().Recorded == 5 }))
	cancel()
	<-done
	var got []float64
	if err := s.Read("press1/Temperature", math.MinInt64, math.MaxInt64, func(x Sample) bool { got = append(got, x.Value); return true }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []float64{20, 21.2, 25}) {
		t.Fatalf("Temperature recorded %v", got)
	}
	run := readAll(t, s, "press1/Running", math.MinInt64, math.MaxInt64)
	if len(run) != 2 || run[0].Value != 0 || run[1].Value != 1 || !TimeOf(run[1].At).Equal(t0.Add(2*time.Second)) {
		t.Fatalf("Running recorded %v", run)
	}
	if tags := s.Tags(); !slices.Equal(tags, []string{"press1/Running", "press1/Temperature"}) {
		t.Fatalf("tags %v", tags)
	}
	if st := r.Status(); st.Dropped != 0 || st.Tags != 2 {
		t.Fatalf("status %+v", st)
	}
}

// TestRecorderNeverBlocks: with the store not keeping up (no Run), a
// poll returns at once and its samples are counted as dropped.
func TestRecorderNeverBlocks(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	yes := true
	r := NewRecorder(s, RecorderOptions{Queue: 2})
	r.Apply(&deployment.Document{ClusterId: "c", Devices: []deployment.Device{{Name: "d", Tags: []deployment.Tag{{Name: "x", History: deployment.History{Historize: &yes}}}}}})
	t0 := time.Now()
	for i := range 10 {
		r.Offer("d", []Reading{{Tag: "x", Value: float64(i), At: t0.Add(time.Duration(i) * time.Second)}})
	}
	if st := r.Status(); st.Dropped != 8 {
		t.Fatalf("status %+v, want 8 dropped", st)
	}
}

// TestRecorderStartAt: a reading older than the start of the tag's
// back-fill gap is not recorded (the peer's samples fill that time); the
// first one at or after it is.
func TestRecorderStartAt(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	yes := true
	r := NewRecorder(s, RecorderOptions{Queue: 8})
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	r.StartAt([]string{"d/x"}, Ticks(t0))
	r.Apply(&deployment.Document{ClusterId: "c", Devices: []deployment.Device{{Name: "d", Tags: []deployment.Tag{{Name: "x", History: deployment.History{Historize: &yes}}}}}})
	for i, at := range []time.Time{t0.Add(-time.Millisecond), t0, t0.Add(time.Second)} {
		r.Offer("d", []Reading{{Tag: "x", Value: float64(i), At: at}})
	}
	var got []Record
	for len(r.q) > 0 {
		got = append(got, <-r.q...)
	}
	if len(got) != 2 || got[0].At != Ticks(t0) || got[1].Value != 2 {
		t.Fatalf("recorded %+v", got)
	}
}

func TestTicks(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 123456700, time.UTC)
	if got := TimeOf(Ticks(at)); !got.Equal(at) {
		t.Fatalf("%v", got)
	}
	if Ticks(time.Unix(0, 0)) != uaEpochTicks || Ticks(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)) != 0 {
		t.Fatal("epochs")
	}
	for _, at := range []time.Time{time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), time.Date(1500, 6, 1, 0, 0, 0, 0, time.UTC)} {
		if got := TimeOf(Ticks(at)); !got.Equal(at) {
			t.Fatalf("%v: %v", at, got)
		}
	}
}
