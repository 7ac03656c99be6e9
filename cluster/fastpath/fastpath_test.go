package fastpath

import "testing"

func TestDecide(t *testing.T) {
	R, T, A := Refused, Timeout, Accepted
	cases := []struct {
		name string
		in   Input
		want Verdict
	}{
		{"no trigger, even with refused probes", Input{Probes: []ProbeResult{R, R, R}}, NoAction},
		{"connection broken, all three refused (process died)", Input{ConnectionBroken: true, Probes: []ProbeResult{R, R, R}}, MarkUnreachableNow},
		{"detector suspects, all refused", Input{DetectorUnreachable: true, Probes: []ProbeResult{R, R, R}}, MarkUnreachableNow},
		{"single refused probe made", Input{ConnectionBroken: true, Probes: []ProbeResult{R}}, MarkUnreachableNow},
		{"silence: all timeouts (partition)", Input{ConnectionBroken: true, Probes: []ProbeResult{T, T, T}}, DeferToDetector},
		{"mixed refused and timeout", Input{ConnectionBroken: true, Probes: []ProbeResult{R, T, R}}, DeferToDetector},
		{"last probe accepted (restarted process listening)", Input{ConnectionBroken: true, Probes: []ProbeResult{R, R, A}}, DeferToDetector},
		{"accepted first", Input{DetectorUnreachable: true, Probes: []ProbeResult{A}}, DeferToDetector},
		{"no probes made", Input{ConnectionBroken: true}, DeferToDetector},
		{"a fourth probe is ignored", Input{ConnectionBroken: true, Probes: []ProbeResult{R, R, R, A}}, MarkUnreachableNow},
	}
	for _, c := range cases {
		if got := Decide(c.in); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
