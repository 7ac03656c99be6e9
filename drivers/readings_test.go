package drivers

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// TestReadingsTransitions walks one tag through the status rules: the
// status, the value kept and when the source time moves.
func TestReadingsTransitions(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		do       func(rs *Readings)
		value    any
		status   ua.StatusCode
		timeSecs int // -1: zero time
	}
	steps := []step{
		{func(*Readings) {}, nil, ua.StatusBadNoCommunication, -1},
		{func(rs *Readings) { rs.CommFailed(0, at(1)) }, nil, ua.StatusBadNoCommunication, -1},
		{func(rs *Readings) { rs.Failed(0, ua.StatusBadConfigurationError, at(2)) }, nil, ua.StatusBadConfigurationError, 2},
		{func(rs *Readings) { rs.CommFailed(0, at(3)) }, nil, ua.StatusBadNoCommunication, 3},
		{func(rs *Readings) { rs.Good(0, int16(7), at(4)) }, int16(7), ua.StatusGood, 4},
		{func(rs *Readings) { rs.Good(0, int16(8), at(5)) }, int16(8), ua.StatusGood, 5},
		{func(rs *Readings) { rs.CommFailed(0, at(6)) }, int16(8), ua.StatusBadCommunicationError, 6},
		{func(rs *Readings) { rs.CommFailed(0, at(7)) }, int16(8), ua.StatusBadCommunicationError, 6},
		{func(rs *Readings) { rs.Failed(0, ua.StatusBadDeviceFailure, at(8)) }, int16(8), ua.StatusBadDeviceFailure, 8},
		{func(rs *Readings) { rs.CommFailed(0, at(9)) }, int16(8), ua.StatusBadCommunicationError, 9},
		{func(rs *Readings) { rs.Good(0, int16(9), at(10)) }, int16(9), ua.StatusGood, 10},
	}
	rs := NewReadings(2)
	for k, s := range steps {
		s.do(rs)
		got := rs.Snapshot()
		want := Reading{Value: s.value, Status: s.status}
		if s.timeSecs >= 0 {
			want.SourceTime = at(s.timeSecs)
		}
		if got[0] != want {
			t.Fatalf("step %d: got %+v, want %+v", k, got[0], want)
		}
		if got[1] != (Reading{Status: ua.StatusBadNoCommunication}) {
			t.Fatalf("step %d: the other tag changed: %+v", k, got[1])
		}
	}
	snap := rs.Snapshot()
	snap[0].Value = "changed"
	if rs.Snapshot()[0].Value != int16(9) {
		t.Fatal("Snapshot is not a copy")
	}
}

func TestPolledTime(t *testing.T) {
	at := time.Date(2026, 12, 7, 19, 30, 1, 123_456_789, time.UTC)
	for _, c := range []struct{ t, want time.Time }{
		{at, time.Date(2026, 12, 7, 19, 30, 1, 123_000_000, time.UTC)},
		{at.Truncate(time.Millisecond), at.Truncate(time.Millisecond)},
		{time.Date(1950, 1, 1, 0, 0, 0, 999_999, time.UTC), time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)}, // before 1970: down, too
		{time.Now(), time.Time{}}, // a monotonic reading: PolledTime drops it
	} {
		got := PolledTime(c.t)
		if got.After(c.t) || c.t.Sub(got) >= time.Millisecond || got.Nanosecond()%1e6 != 0 || got.String() != got.Round(0).String() {
			t.Errorf("PolledTime(%v) = %v: not the millisecond it lies in, or with a monotonic reading", c.t, got)
		}
		if !c.want.IsZero() && !got.Equal(c.want) {
			t.Errorf("PolledTime(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}
