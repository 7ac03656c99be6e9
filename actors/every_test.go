package actors

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestNextMultiple(t *testing.T) {
	base := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC) // a whole hour: a multiple of every d below
	ms := time.Millisecond
	for _, c := range []struct {
		now  time.Time
		d    time.Duration
		want time.Time
	}{
		{base, 250 * ms, base.Add(250 * ms)},                                    // on a multiple: the next one
		{base.Add(1 * ms), 250 * ms, base.Add(250 * ms)},                        // just after
		{base.Add(249 * ms), 250 * ms, base.Add(250 * ms)},                      // just before
		{base.Add(250 * ms), 500 * ms, base.Add(500 * ms)},                      // a 250 ms tick is not a 500 ms one
		{base.Add(501 * ms), 500 * ms, base.Add(1000 * ms)},                     // a late wake-up skips to the next
		{base.Add(2 * time.Second), 3 * time.Second, base.Add(3 * time.Second)}, // periods that do not divide a second
		{base.Add(999 * ms), time.Second, base.Add(time.Second)},
		{base.Add(7 * time.Second), 10 * time.Second, base.Add(10 * time.Second)},
	} {
		if got := NextMultiple(c.now, c.d); !got.Equal(c.want) {
			t.Errorf("NextMultiple(%s, %v) = %s, want %s", c.now.Format("15:04:05.000"), c.d, got.Format("15:04:05.000"), c.want.Format("15:04:05.000"))
		}
	}
	// Periods that divide each other share their instants: every 500 ms
	// tick is a 250 ms tick, every 1 s tick a 500 ms one.
	now := base.Add(123 * ms)
	for range 20 {
		n500, n250 := NextMultiple(now, 500*ms), NextMultiple(now, 250*ms)
		if n500.Sub(n250)%(250*ms) != 0 {
			t.Fatalf("500 ms tick %v is not on the 250 ms grid %v", n500, n250)
		}
		now = n250
	}
}

func TestEveryAlignsOnlyTheRealClock(t *testing.T) {
	if !isRealClock(RealClock()) || !isRealClock(clockwork.NewRealClock()) {
		t.Error("the real clock is not recognised: its ticks would not be aligned")
	}
	if isRealClock(clockwork.NewFakeClock()) {
		t.Error("a fake clock is taken for the real one: tests would see ticks off their d")
	}
}
