package redundancy

import (
	"strings"
	"testing"
	"time"
)

// TestDeviceFailover drives the decision through sequences of counts on
// explicit instants (seconds after t0) and checks at which steps it hands
// over.
func TestDeviceFailover(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	type step struct {
		at                   int // seconds after t0
		primary              bool
		reached, total, peer int
		handOver             bool
	}
	p := func(at, reached, peer int) step {
		return step{at: at, primary: true, reached: reached, total: 2, peer: peer}
	}
	s := func(at, reached, peer int) step { return step{at: at, reached: reached, total: 2, peer: peer} }
	hand := func(st step) step { st.handOver = true; return st }
	tests := []struct {
		name  string
		steps []step
	}{
		{"healthy Primary never hands over", []step{p(0, 2, 2), p(60, 2, 2), p(600, 2, 2)}},
		{"peer reaches more for After, after the hold: hand over", []step{p(0, 2, 2), p(60, 1, 2), p(65, 1, 2), hand(p(70, 1, 2))}},
		{"not before After", []step{p(0, 2, 2), p(60, 1, 2), p(69, 1, 2)}},
		{"a break restarts After", []step{p(0, 2, 2), p(60, 1, 2), p(65, 2, 2), p(66, 1, 2), p(75, 1, 2), hand(p(76, 1, 2))}},
		{"counts may change while the peer stays ahead", []step{p(0, 2, 2), p(60, 1, 2), p(65, 0, 1), hand(p(70, 0, 2))}},
		{"both lose the same devices: nobody moves", []step{p(0, 2, 2), p(60, 1, 1), p(120, 0, 0), p(600, 0, 0)}},
		{"peer reaches fewer: nothing", []step{p(0, 2, 0), p(600, 1, 0)}},
		{"no peer news (peer 0): nothing", []step{p(0, 0, 0), p(600, 0, 0)}},
		{"a Secondary never hands over", []step{s(0, 0, 2), s(600, 0, 2)}},
		{"fresh Primary waits for the hold", []step{p(0, 0, 2), p(10, 0, 2), p(59, 0, 2), hand(p(60, 0, 2))}},
		{"after a hand-over none within the hold", []step{p(0, 2, 2), p(60, 1, 2), hand(p(70, 1, 2)), p(75, 1, 2), p(129, 1, 2), hand(p(130, 1, 2))}},
		{"hold 0: a repeat only after another After", []step{p(0, 2, 2), p(5, 1, 2), hand(p(15, 1, 2)), p(15, 1, 2), p(24, 1, 2), hand(p(25, 1, 2))}},
		{"a new tenure restarts the hold", []step{p(0, 2, 2), s(30, 0, 2), p(40, 0, 2), p(99, 0, 2), hand(p(100, 0, 2))}},
		{"losing the role and regaining it restarts the hold", []step{p(0, 2, 2), p(60, 1, 2), s(65, 1, 2), p(66, 1, 2), p(125, 1, 2), hand(p(126, 1, 2))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDeviceFailover(10*time.Second, 60*time.Second)
			if strings.HasPrefix(tt.name, "hold 0") {
				d.Hold = 0
			}
			for i, st := range tt.steps {
				got := d.Step(DeviceCounts{Now: t0.Add(time.Duration(st.at) * time.Second), Primary: st.primary,
					Reached: st.reached, Total: st.total, PeerReached: st.peer})
				if (got != nil) != st.handOver {
					t.Fatalf("step %d (%+v): hand over = %v, want %v", i, st, got != nil, st.handOver)
				}
				if got != nil && !strings.Contains(got.Reason, "device health") {
					t.Fatalf("step %d: reason %q does not name device health", i, got.Reason)
				}
			}
		})
	}
}

func TestNewDeviceFailoverDefaults(t *testing.T) {
	d := NewDeviceFailover(0, -1)
	if d.After != DefaultDeviceFailoverAfter || d.Hold != DefaultDeviceFailoverHold {
		t.Fatalf("defaults: after %v hold %v", d.After, d.Hold)
	}
}
