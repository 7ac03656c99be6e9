package linux

import (
	"testing"
	"time"
)

func TestHoldAnswers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name  string
		state holdState
		now   time.Time
		want  bool
	}{
		{"never seized", holdState{}, t0, false},
		{"released with a current hold", holdState{Holding: false, Until: t0.Add(time.Second)}, t0, false},
		{"held, hold current", holdState{Holding: true, Until: t0.Add(time.Second)}, t0, true},
		{"held, a nanosecond before the end", holdState{Holding: true, Until: t0.Add(time.Second)}, t0.Add(time.Second - 1), true},
		{"held, at the end of the hold", holdState{Holding: true, Until: t0.Add(time.Second)}, t0.Add(time.Second), false},
		{"held, woken after a freeze", holdState{Holding: true, Until: t0.Add(time.Second)}, t0.Add(time.Minute), false},
		{"held, never renewed", holdState{Holding: true}, t0, false},
	} {
		if got := c.state.answers(c.now); got != c.want {
			t.Errorf("%s: answers = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHoldRenewDoesNotTake: Renew after a release leaves the address
// released; a seize after it holds again.
func TestHoldRenewDoesNotTake(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var h hold
	h.take(t0.Add(time.Second))
	h.renew(t0.Add(time.Hour))
	if !h.get().answers(t0.Add(time.Minute)) {
		t.Fatal("a renewed hold does not answer before its new end")
	}
	h.drop()
	h.renew(t0.Add(time.Hour))
	if s := h.get(); s.Holding || s.answers(t0) {
		t.Fatalf("renew after the release = %+v, want released", s)
	}
	h.take(t0.Add(time.Second))
	if !h.get().answers(t0) {
		t.Fatal("a seize after the release does not answer")
	}
}
