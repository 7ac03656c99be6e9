package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

// levelRegister is the holding register the test drives.
const levelRegister = 20

// step is one value of the scripted signal and how long it is held.
type step struct {
	value int16
	hold  time.Duration
}

// TestDeadbandAndMaxIntervalOnARealNode: a real node records a Modbus
// register that the test drives with a known signal, under an absolute
// deadband of 5 and a maximum interval of 1 s, and a simulated ramp under
// a deadband of 10 % of its range; HistoryRead returns exactly the samples
// the rules keep.
func TestDeadbandAndMaxIntervalOnARealNode(t *testing.T) {
	dev, devAddr := startDevice(t, false)

	cfg := singleNode(t)
	n := procs.Start(t, "h", cfg)
	n.WaitReady(30 * time.Second)
	procs.Deploy(t, cfg, fmt.Sprintf(`{"clusterId": %q, "devices": [
  {"name": "press1", "driver": "modbus-tcp", "address": %q, "pollInterval": "20ms",
   "tags": [{"name": "Level", "table": "holding", "address": %d, "type": "int16",
             "historize": true, "historyDeadband": 5, "historyMaxInterval": "1s"}]},
  {"name": "sim", "driver": "simulated", "pollInterval": "100ms",
   "tags": [{"name": "Ramp", "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100,
             "historize": true, "historyDeadband": "10%%"}]}]}`, clusterID, devAddr, levelRegister))

	c := connect(t, n)
	ns := c.namespace()
	level, ramp := ua.NewStringNodeID(ns, "press1/Level"), ua.NewStringNodeID(ns, "sim/Ramp")
	t0 := time.Now().Add(-time.Minute)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if dvs, st := c.history(level, t0, time.Now()); st != ua.StatusOK || len(dvs) == 0 {
			return fmt.Errorf("%d values, %v", len(dvs), st)
		}
		return nil
	})

	// The signal, from the register's 0: a jump to 100 (recorded), steps
	// within the deadband (103, 105: a change of exactly 5 is not beyond
	// it), one beyond it (106), back within it (102) and beyond (100),
	// then 100 held for 3.5 s (recorded again 1 s, 2 s and 3 s after),
	// then 94 (beyond), 98 and 90 (within 5 of 94) and 88 (beyond). No
	// stretch between two recorded samples is 1 s long except the flat one.
	script := []step{{100, 250 * time.Millisecond}, {103, 250 * time.Millisecond}, {105, 250 * time.Millisecond},
		{106, 250 * time.Millisecond}, {102, 250 * time.Millisecond}, {100, 3500 * time.Millisecond},
		{94, 250 * time.Millisecond}, {98, 250 * time.Millisecond}, {90, 250 * time.Millisecond}, {88, 0}}
	want := []float64{100, 106, 100, 100, 100, 100, 94, 88}
	repeats := map[int]bool{3: true, 4: true, 5: true} // indices of want recorded by the maximum interval

	start := time.Now()
	at := start
	for _, s := range script {
		dev.SetHolding(levelRegister, uint16(s.value))
		at = at.Add(s.hold)
		time.Sleep(time.Until(at)) // the signal's timing is the test's input
	}
	lastSet := time.Now()
	// The last step's samples: none can be a repeat before 1 s has passed.
	end := lastSet.Add(500 * time.Millisecond)
	var got []*ua.DataValue
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		dvs, st := c.history(level, start.Add(-time.Second), end)
		if st != ua.StatusOK {
			return fmt.Errorf("raw read: %v", st)
		}
		got = got[:0]
		for _, dv := range dvs {
			if v := dv.Value.Value().(int16); len(got) > 0 || v == 100 {
				got = append(got, dv)
			} else if v != 0 {
				return fmt.Errorf("a value %d before the signal's first", v)
			}
		}
		if len(got) == 0 || got[len(got)-1].Value.Value().(int16) != 88 {
			return fmt.Errorf("the signal's last value is not recorded yet: %d values", len(got))
		}
		return nil
	})
	var vals []float64
	for _, dv := range got {
		vals = append(vals, float64(dv.Value.Value().(int16)))
	}
	if fmt.Sprint(vals) != fmt.Sprint(want) {
		t.Fatalf("recorded %v, want %v", vals, want)
	}
	for i := 1; i < len(got); i++ {
		gap := got[i].SourceTimestamp.Sub(got[i-1].SourceTimestamp)
		if got[i].Status != ua.StatusOK {
			t.Fatalf("sample %d: %v", i, got[i].Status)
		}
		switch {
		case repeats[i] && (gap < time.Second || gap > 1200*time.Millisecond):
			t.Fatalf("repeat %d came %v after the sample before it, want 1 s and at most a poll or two more", i, gap)
		case !repeats[i] && gap >= time.Second:
			t.Fatalf("sample %d came %v after the one before it: the script's steps are 250 ms apart", i, gap)
		}
	}
	t.Logf("absolute deadband 5, max interval 1 s: recorded %v", vals)

	// Percent: 10 % of the ramp's range 0–100 is 10; the ramp rises 1 a
	// poll (10 a second, polled every 100 ms) and drops back to 0 every
	// 10 s. Each value recorded is the ramp's value at its source time, a
	// rise is recorded at the first poll more than 10 above the last
	// recorded value (so at most one poll's rise later: ≤ 11, and 13 for a
	// poll up to 200 ms late), and every drop back to 0 is recorded.
	var dvs []*ua.DataValue
	procs.CheckFor(t, 15*time.Second, 200*time.Millisecond, func() error {
		var st ua.StatusCode
		dvs, st = c.history(ramp, t0, time.Now())
		if st != ua.StatusOK || len(dvs) < 2 || dvs[len(dvs)-1].SourceTimestamp.Sub(dvs[0].SourceTimestamp) < 11*time.Second {
			return fmt.Errorf("ramp: %d values, %v", len(dvs), st)
		}
		return nil
	})
	drops := 0
	for i, dv := range dvs {
		v := dv.Value.Value().(float64)
		if want := rampAt(dv.SourceTimestamp); abs(v-want) > 1e-5 {
			t.Fatalf("ramp value %d: %v at %v, the ramp's value then is %v", i, v, dv.SourceTimestamp, want)
		}
		if i == 0 {
			continue
		}
		prev := dvs[i-1].Value.Value().(float64)
		dt := dv.SourceTimestamp.Sub(dvs[i-1].SourceTimestamp)
		wrapped := rampWraps(dvs[i-1].SourceTimestamp, dv.SourceTimestamp)
		switch {
		case wrapped:
			drops++
			if v >= prev {
				t.Fatalf("ramp value %d: %v after %v across a drop", i, v, prev)
			}
		case v-prev <= 10 || v-prev > 13:
			t.Fatalf("ramp value %d: %v, %v above the one recorded %v before; want more than 10 and at most a poll's rise more", i, v, v-prev, dt)
		}
	}
	if drops == 0 {
		t.Fatal("no drop of the ramp recorded in more than a period")
	}
	t.Logf("percent deadband 10%%: %d ramp values recorded, %d drops", len(dvs), drops)
}

// rampAt is the simulated ramp's value at t: 0 + 100·φ, φ the phase of t
// in its 10 s period counted from the Unix epoch (docs/deployments.md,
// simulated signals).
func rampAt(t time.Time) float64 {
	p := int64(10 * time.Second)
	return 100 * float64(t.UnixNano()%p) / float64(p)
}

// rampWraps reports whether a ramp period ends between a and b.
func rampWraps(a, b time.Time) bool {
	p := int64(10 * time.Second)
	return a.UnixNano()/p != b.UnixNano()/p
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
