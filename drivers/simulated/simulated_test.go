package simulated

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ drivers.Driver = (*Driver)(nil)

func ptr[T any](v T) *T { return &v }

// epoch is an instant at phase 0 of every period that divides 10 s.
var epoch = time.Unix(1_700_000_000, 0)

func simTag(name, signal, typ string, period time.Duration, lo, hi float64) deployment.Tag {
	return deployment.Tag{Name: name, Signal: signal, Type: typ, Period: deployment.Duration(period), Min: &lo, Max: &hi}
}

// TestSignals reads each signal at known instants of a fake clock.
func TestSignals(t *testing.T) {
	ms := time.Millisecond
	s := time.Second
	tags := []deployment.Tag{
		simTag("ramp", "ramp", "float64", 10*s, 0, 100),
		simTag("sine", "sine", "float64", 10*s, 0, 100),
		simTag("square", "square", "float64", 10*s, -1, 1),
		simTag("const", "constant", "float64", 10*s, 42, 50),
		simTag("ramp16", "ramp", "int16", 4*s, -10, 10),
		simTag("squareBool", "square", "bool", 2*s, 0, 1),
		simTag("rampU16", "ramp", "uint16", 10*s, -50, 50),
		simTag("sine32", "sine", "float32", 4*s, -1, 1),
		{Name: "defaults", Type: "float64", Signal: "ramp"}, // 10 s, 0–100
		{Name: "none", Type: "int32"},                       // constant 0
		simTag("constBool", "constant", "bool", 0, 1, 1),
	}
	nan := math.NaN()
	for _, c := range []struct {
		at   time.Duration // after epoch
		want []any         // nan: skip
	}{
		{0, []any{0.0, 50.0, 1.0, 42.0, int16(-10), true, uint16(0), float32(0), 0.0, int32(0), true}},
		{1 * s, []any{10.0, 50 + 50*math.Sin(math.Pi/5), 1.0, 42.0, int16(-5), false, uint16(0), float32(1), 10.0, int32(0), true}},
		{2500 * ms, []any{25.0, 100.0, 1.0, 42.0, int16(3), true, uint16(0), float32(math.Sin(math.Pi * 1.25)), 25.0, int32(0), true}},
		// Stamped to the millisecond (drivers.PolledTime): the signals' values at 2.5 s.
		{2500*ms + 999*time.Microsecond, []any{25.0, 100.0, 1.0, 42.0, int16(3), true, uint16(0), float32(math.Sin(math.Pi * 1.25)), 25.0, int32(0), true}},
		{4999 * ms, []any{49.99, nan, 1.0, 42.0, nan, true, uint16(0), nan, 49.99, int32(0), true}},
		{5 * s, []any{50.0, 50.0, -1.0, 42.0, int16(-5), false, uint16(0), float32(1), 50.0, int32(0), true}},
		{7500 * ms, []any{75.0, 0.0, -1.0, 42.0, int16(8), false, uint16(25), float32(math.Sin(math.Pi * 1.75)), 75.0, int32(0), true}},
		{10 * s, []any{0.0, 50.0, 1.0, 42.0, int16(0), true, uint16(0), float32(0), 0.0, int32(0), true}},
		{-2500 * ms, []any{75.0, 0.0, -1.0, 42.0, int16(-3), false, uint16(25), float32(math.Sin(math.Pi * 0.75)), 75.0, int32(0), true}},
	} {
		clock := clockwork.NewFakeClockAt(epoch.Add(c.at))
		d, err := New(deployment.Device{Name: "sim", Tags: tags}, drivers.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := d.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range c.want {
			r := rs[i]
			if r.Status != ua.StatusGood || !r.SourceTime.Equal(epoch.Add(c.at.Truncate(ms))) {
				t.Errorf("+%v %s: %+v", c.at, tags[i].Name, r)
			}
			if f, ok := want.(float64); ok && math.IsNaN(f) {
				continue
			}
			if !near(r.Value, want) {
				t.Errorf("+%v %s = %v (%T), want %v (%T)", c.at, tags[i].Name, r.Value, r.Value, want, want)
			}
		}
		d.Close()
	}
}

func near(got, want any) bool {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		return ok && math.Abs(g-w) < 1e-9
	case float32:
		g, ok := got.(float32)
		return ok && math.Abs(float64(g-w)) < 1e-6
	}
	return got == want
}

func TestPhase(t *testing.T) {
	for _, c := range []struct {
		t      time.Time
		period time.Duration
		want   float64
	}{
		{time.Unix(0, 0), time.Second, 0},
		{time.Unix(0, 250_000_000), time.Second, 0.25},
		{time.Unix(-1, 250_000_000), time.Second, 0.25}, // before the epoch
		{time.Unix(-1, 0), 4 * time.Second, 0.75},
		{time.Unix(7, 0), 0, 0},
	} {
		if got := phase(c.t, c.period); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("phase(%v, %v) = %v, want %v", c.t, c.period, got, c.want)
		}
	}
}

// TestRandomWalk: the walk starts in the middle, moves at most (max −
// min)/50 a step, stays in [min, max], is the same for the same seed and
// instants however often it is read, and differs for another seed.
func TestRandomWalk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.Float64Range(-1000, 1000).Draw(t, "min")
		hi := lo + rapid.Float64Range(0.001, 1000).Draw(t, "width")
		period := time.Duration(rapid.Int64Range(int64(10*time.Millisecond), int64(time.Minute)).Draw(t, "period"))
		seed := rapid.Uint64().Draw(t, "seed")
		step := max(period/100, time.Millisecond)
		a := NewWalk(lo, hi, period, seed, epoch)
		b := NewWalk(lo, hi, period, seed, epoch)
		other := NewWalk(lo, hi, period, seed+1, epoch)
		if v := a.At(epoch); v != (lo+hi)/2 {
			t.Fatalf("start %v, want %v", v, (lo+hi)/2)
		}
		prev := (lo + hi) / 2
		differs := false
		for k := int64(1); k <= 300; k++ {
			at := epoch.Add(time.Duration(k) * step)
			v := a.At(at)
			if v < lo || v > hi {
				t.Fatalf("step %d: %v outside [%v, %v]", k, v, lo, hi)
			}
			if math.Abs(v-prev) > (hi-lo)/50*(1+1e-9) {
				t.Fatalf("step %d moved %v > %v", k, math.Abs(v-prev), (hi-lo)/50)
			}
			prev = v
			if k%37 == 0 { // b is read far less often
				if w := b.At(at); w != v {
					t.Fatalf("step %d: %v read often, %v read seldom", k, v, w)
				}
			}
			if other.At(at) != v {
				differs = true
			}
		}
		if !differs {
			t.Fatal("another seed walked the same")
		}
		// Back in time: the walk starts over and agrees with itself.
		if v, w := a.At(epoch.Add(5*step)), NewWalk(lo, hi, period, seed, epoch).At(epoch.Add(5*step)); v != w {
			t.Fatalf("after going back: %v, want %v", v, w)
		}
	})
}

// TestRandomWalkDriver: two drivers with the same seed and clock serve the
// same walk; the default seed comes from the device's name.
func TestRandomWalkDriver(t *testing.T) {
	tags := []deployment.Tag{simTag("w", "random-walk", "float64", time.Second, 0, 10), simTag("w2", "random-walk", "float64", time.Second, 0, 10)}
	mk := func(name string, seed uint64) (*Driver, *clockwork.FakeClock) {
		clock := clockwork.NewFakeClockAt(epoch)
		d, err := New(deployment.Device{Name: name, Tags: tags}, drivers.Options{Clock: clock, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return d, clock
	}
	series := func(d *Driver, clock *clockwork.FakeClock) (out []any) {
		for k := 0; k < 50; k++ {
			clock.Advance(30 * time.Millisecond)
			rs, _ := d.Read(context.Background())
			out = append(out, rs[0].Value, rs[1].Value)
		}
		return out
	}
	a := series(mk("sim", 0))
	b := series(mk("sim", 0))
	c := series(mk("sim", 7))
	e := series(mk("other", 0))
	same := func(x, y []any) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same name and clock walked differently")
	}
	if same(a, c) || same(a, e) {
		t.Error("another seed or name walked the same")
	}
	var w1, w2 []any
	for i := 0; i < len(a); i += 2 {
		w1, w2 = append(w1, a[i]), append(w2, a[i+1])
	}
	if same(w1, w2) {
		t.Error("two tags of one device walked the same")
	}
}

// TestWritableTags: a written value is held from then on; the rest follow
// their signals; what does not fit is refused.
func TestWritableTags(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	set := simTag("set", "ramp", "float64", 10*time.Second, 0, 100)
	set.Writable = true
	small := simTag("small", "constant", "int16", 0, 3, 3)
	small.Writable = true
	flag := simTag("flag", "square", "bool", time.Second, 0, 1)
	flag.Writable = true
	ro := simTag("ro", "ramp", "float64", 10*time.Second, 0, 100)
	d, err := New(deployment.Device{Name: "sim", Tags: []deployment.Tag{set, small, flag, ro}}, drivers.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, w := range []struct {
		tag string
		v   any
	}{{"set", 12.5}, {"small", int64(-7)}, {"flag", false}} {
		if err := d.Write(ctx, w.tag, w.v); err != nil {
			t.Fatalf("Write(%s, %v): %v", w.tag, w.v, err)
		}
	}
	for k := 0; k < 3; k++ {
		clock.Advance(2500 * time.Millisecond)
		rs, err := d.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []any{12.5, int16(-7), false, 25.0 * float64(k+1)}
		for i := range want {
			if !near(rs[i].Value, want[i]) || rs[i].Status != ua.StatusGood {
				t.Errorf("read %d tag %d: %+v, want %v", k, i, rs[i], want[i])
			}
		}
	}
	for _, c := range []struct {
		tag  string
		v    any
		want error
	}{
		{"ro", 1.0, drivers.ErrNotWritable},
		{"nope", 1.0, drivers.ErrUnknownTag},
		{"small", 40000, drivers.ErrOutOfRange},
		{"small", 1.5, drivers.ErrOutOfRange},
		{"flag", 1, drivers.ErrTypeMismatch},
		{"set", "x", drivers.ErrTypeMismatch},
	} {
		if err := d.Write(ctx, c.tag, c.v); !errors.Is(err, c.want) {
			t.Errorf("Write(%s, %v) = %v, want %v", c.tag, c.v, err, c.want)
		}
	}
	st := d.Stats()
	if st.WritesOK != 3 || st.WritesFailed != 6 || st.ReadsOK != 3 || st.Polls != 3 || !st.Connected {
		t.Errorf("stats %+v", st)
	}
	if h := d.Health(); h.State != drivers.StateConnected {
		t.Errorf("health %+v", h)
	}
	d.Close()
	if _, err := d.Read(ctx); !errors.Is(err, drivers.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if err := d.Write(ctx, "set", 1.0); !errors.Is(err, drivers.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := d.Connect(ctx); !errors.Is(err, drivers.ErrClosed) {
		t.Errorf("Connect after Close: %v", err)
	}
	if h, st := d.Health(), d.Stats(); h.State != drivers.StateClosed || st.Connected {
		t.Errorf("after Close: %+v %+v", h, st)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		dev  deployment.Device
	}{
		{"signal", deployment.Device{Tags: []deployment.Tag{{Name: "a", Type: "float64", Signal: "triangle"}}}},
		{"type", deployment.Device{Tags: []deployment.Tag{{Name: "a", Type: "int64"}}}},
		{"duplicate", deployment.Device{Tags: []deployment.Tag{{Name: "a", Type: "int16"}, {Name: "a", Type: "int16"}}}},
		{"driver", deployment.Device{Driver: "modbus-tcp"}},
	} {
		if _, err := New(c.dev, drivers.Options{}); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	// Max below Min: swapped.
	d, err := New(deployment.Device{Driver: "simulated", Tags: []deployment.Tag{simTag("r", "ramp", "float64", 10*time.Second, 100, 0)}},
		drivers.Options{Clock: clockwork.NewFakeClockAt(epoch.Add(2500 * time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := d.Read(context.Background()); !near(rs[0].Value, 25.0) {
		t.Errorf("swapped ramp: %v", rs[0].Value)
	}
}
