package redundancy

import (
	"testing"
	"time"
)

func TestDebounceDeadline(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name          string
		pending, last int // ms after t0
		want          int
	}{
		{"single event: quiet period after it", 0, 0, 250},
		{"a later event pushes the deadline", 0, 100, 350},
		{"events close together keep pushing", 0, 600, 850},
		{"a steady stream is capped at max after the first", 0, 900, 1000},
		{"far past the cap: the cap", 0, 5000, 1000},
		{"cap and quiet coincide", 0, 750, 1000},
		{"pending later than t0", 2000, 2100, 2350},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DebounceDeadline(at(tt.pending), at(tt.last), DebounceQuiet, DebounceMax)
			if !got.Equal(at(tt.want)) {
				t.Fatalf("DebounceDeadline(+%dms, +%dms) = +%v, want +%dms", tt.pending, tt.last, got.Sub(t0), tt.want)
			}
		})
	}
}
