package fielddevice

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"
)

func TestPressAt(t *testing.T) {
	for _, tc := range []struct {
		elapsed time.Duration
		want    PressValues
	}{
		{0, PressValues{Speed: 750, Temperature: 200, Counter: 0, Fault: false}},
		{999 * time.Millisecond, PressValues{Speed: float32(750 + 750*math.Sin(2*math.Pi*0.999/60)), Temperature: 206, Counter: 0}},
		{15 * time.Second, PressValues{Speed: 1500, Temperature: 288, Counter: 15}},
		{30 * time.Second, PressValues{Speed: float32(750 + 750*math.Sin(math.Pi)), Temperature: 375, Counter: 30, Fault: true}},
		{35*time.Second - time.Nanosecond, PressValues{Speed: float32(750 + 750*math.Sin(2*math.Pi*(35-1e-9)/60)), Temperature: 404, Counter: 34, Fault: true}},
		{35 * time.Second, PressValues{Speed: float32(750 + 750*math.Sin(2*math.Pi*35/60)), Temperature: 404, Counter: 35}},
		{45 * time.Second, PressValues{Speed: 0, Temperature: 463, Counter: 45}},
		{120 * time.Second, PressValues{Speed: float32(750 + 750*math.Sin(4*math.Pi)), Temperature: 900, Counter: 120}},
		{240 * time.Second, PressValues{Speed: float32(750 + 750*math.Sin(8*math.Pi)), Temperature: 200, Counter: 240}},
	} {
		if got := PressAt(tc.elapsed); got != tc.want {
			t.Errorf("PressAt(%v) = %+v, want %+v", tc.elapsed, got, tc.want)
		}
	}
	if got := PressAt(65535*time.Second + 500*time.Millisecond).Counter; got != 65535 {
		t.Errorf("Counter at 65535.5 s = %d, want 65535", got)
	}
	if got := PressAt(65536 * time.Second).Counter; got != 0 {
		t.Errorf("Counter at 65536 s = %d, want 0 (wrapped)", got)
	}
}

// TestPressBounds sweeps ten minutes: every value stays in its range, the
// counter is the whole seconds, and Fault is on 5 s of every minute.
func TestPressBounds(t *testing.T) {
	const step = 10 * time.Millisecond
	faultOn := map[time.Duration]time.Duration{} // minute → time Fault was true
	prev := PressAt(0)
	for e := time.Duration(0); e < 10*time.Minute; e += step {
		v := PressAt(e)
		if v.Speed < 0 || v.Speed > 1500 || math.IsNaN(float64(v.Speed)) {
			t.Fatalf("Speed at %v = %v, outside 0…1500", e, v.Speed)
		}
		if v.Temperature < 200 || v.Temperature > 900 {
			t.Fatalf("Temperature at %v = %d, outside 200…900", e, v.Temperature)
		}
		if d := v.Temperature - prev.Temperature; d < -1 || d > 1 {
			t.Fatalf("Temperature jumps by %d in %v at %v", d, step, e)
		}
		if want := uint16(e / time.Second); v.Counter != want {
			t.Fatalf("Counter at %v = %d, want %d", e, v.Counter, want)
		}
		if v.Fault {
			faultOn[e/time.Minute] += step
		}
		prev = v
	}
	for m := time.Duration(0); m < 10; m++ {
		if faultOn[m] != 5*time.Second {
			t.Errorf("minute %d: Fault true for %v, want 5s", m, faultOn[m])
		}
	}
}

func TestTankAt(t *testing.T) {
	for _, tc := range []struct {
		elapsed time.Duration
		want    TankValues
	}{
		{0, TankValues{Level: 0}},
		{30 * time.Second, TankValues{Level: 500}},
		{54 * time.Second, TankValues{Level: 900}},
		{54*time.Second + 60*time.Millisecond, TankValues{Level: 901, HighLevel: true}},
		{60 * time.Second, TankValues{Level: 1000, HighLevel: true}},
		{66 * time.Second, TankValues{Level: 900}},
		{90 * time.Second, TankValues{Level: 500}},
		{120 * time.Second, TankValues{Level: 0}},
		{150 * time.Second, TankValues{Level: 500}},
	} {
		if got := TankAt(tc.elapsed); got != tc.want {
			t.Errorf("TankAt(%v) = %+v, want %+v", tc.elapsed, got, tc.want)
		}
	}
	for e := time.Duration(0); e < 5*time.Minute; e += 10 * time.Millisecond {
		v := TankAt(e)
		if v.Level > 1000 || v.HighLevel != (v.Level > 900) {
			t.Fatalf("TankAt(%v) = %+v", e, v)
		}
	}
}

// TestProfilesKeepTheirMap checks every built-in profile against its own
// point list: Step is pure, stores only into read-only points it lists,
// with their width; Initial sets every writable point; no two points
// share a register or bit.
func TestProfilesKeepTheirMap(t *testing.T) {
	for _, name := range ProfileNames() {
		p := Profiles[name]
		t.Run(name, func(t *testing.T) {
			if p.Name != name {
				t.Fatalf("Profiles[%q].Name = %q", name, p.Name)
			}
			type cell struct {
				table Table
				addr  int
			}
			owner := map[cell]Point{}
			for _, pt := range p.Points {
				for i := 0; i < max(pt.Words(), 1); i++ {
					c := cell{pt.Table, int(pt.Address) + i}
					if other, dup := owner[c]; dup {
						t.Fatalf("%s and %s share %s %d", other.Name, pt.Name, c.table, c.addr)
					}
					owner[c] = pt
				}
				if (pt.Words() == 0) != (pt.Table == Coil || pt.Table == Discrete) {
					t.Errorf("%s: type %s in table %s", pt.Name, pt.Type, pt.Table)
				}
				if pt.Writable && pt.Table != Holding && pt.Table != Coil {
					t.Errorf("%s: writable in read-only table %s", pt.Name, pt.Table)
				}
			}
			find := func(w Write) (Point, bool) {
				pt, ok := owner[cell{w.Table, int(w.Address)}]
				return pt, ok && pt.Address == w.Address && len(w.Words) == pt.Words()
			}
			initial := map[string]bool{}
			for _, w := range p.Initial {
				pt, ok := find(w)
				if !ok {
					t.Fatalf("Initial write %+v matches no point", w)
				}
				initial[pt.Name] = true
			}
			for _, pt := range p.Points {
				if pt.Writable && !initial[pt.Name] {
					t.Errorf("writable %s has no initial value", pt.Name)
				}
			}
			for e := time.Duration(0); e < 5*time.Minute; e += 333 * time.Millisecond {
				ws := p.Step(e)
				if !reflect.DeepEqual(ws, p.Step(e)) {
					t.Fatalf("Step(%v) differs between two calls", e)
				}
				for _, w := range ws {
					pt, ok := find(w)
					if !ok {
						t.Fatalf("Step(%v) write %+v matches no point", e, w)
					}
					if pt.Writable {
						t.Fatalf("Step(%v) stores into writable %s", e, pt.Name)
					}
				}
			}
		})
	}
}

func TestPressMapLine(t *testing.T) {
	want := "holding 0 Setpoint int16 writable: initial 50; " +
		"holding 10-11 Speed float32: big word order (high word first), sine 0…1500, period 60 s, 750 at start; " +
		"input 0 Temperature int16: raw tenths of °C (scale 0.1), triangle 200…900 (20.0–90.0 °C), period 240 s, 200 at start; " +
		"input 1 Counter uint16: +1 every second from 0, wraps at 65535; " +
		"input 2 FastCounter uint16: +1 every 100 ms from 0 (exactly one per period, never skipping), wraps at 65535; " +
		"coil 1 Run bool writable: initial true; " +
		"discrete 0 Fault bool: true from 30 s to 35 s of every 60 s"
	if got := Press.Map(); got != want {
		t.Errorf("Press.Map() =\n%s\nwant\n%s", got, want)
	}
}

// TestRunCounterCountsUp: the counter starts at 0 and only goes up, and
// every Counter of the press is a uint16 point of its map.
func TestRunCounterCountsUp(t *testing.T) {
	d := &Device{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.RunCounter(ctx, PressFastCounter, time.Millisecond) }()
	seen := []uint16{}
	for len(seen) < 50 {
		v := d.Input(PressFastCounter)
		if len(seen) == 0 || v != seen[len(seen)-1] {
			seen = append(seen, v)
		}
		runtime.Gosched()
	}
	cancel()
	<-done
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("counter went back: %v", seen)
		}
	}
	if n := d.Input(PressFastCounter); int(n) < len(seen)-1 {
		t.Fatalf("counter at %d after %d distinct values", n, len(seen))
	}
	for _, c := range Press.Counters {
		found := false
		for _, pt := range Press.Points {
			found = found || pt.Table == Input && pt.Address == c.Address && pt.Type == "uint16"
		}
		if !found {
			t.Errorf("counter at input %d is not a uint16 point of the press's map", c.Address)
		}
	}
}
