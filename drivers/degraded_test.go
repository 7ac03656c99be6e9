package drivers

import (
	"testing"
	"time"
)

func TestReadRunNext(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var r ReadRun
	steps := []struct {
		start int
		good  bool
		want  ReadRun
	}{
		{0, false, ReadRun{Failed: 1, Since: at(0)}},
		{1, false, ReadRun{Failed: 2, Since: at(0)}},
		{2, true, ReadRun{LastGood: at(2)}},
		{3, false, ReadRun{Failed: 1, Since: at(3), LastGood: at(2)}},
		{4, false, ReadRun{Failed: 2, Since: at(3), LastGood: at(2)}},
		{5, true, ReadRun{LastGood: at(5)}},
	}
	for i, s := range steps {
		r = r.Next(at(s.start), s.good)
		if r != s.want {
			t.Fatalf("step %d: %+v, want %+v", i, r, s.want)
		}
	}
}

// TestCondition is the whole table of Condition, with explicit instants.
func TestCondition(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	failing := func(n int, since time.Duration) ReadRun { return ReadRun{Failed: n, Since: t0.Add(-since)} }
	short := DegradedRule{Polls: 2, After: 100 * time.Millisecond}
	for _, tc := range []struct {
		name string
		h    Health
		rule DegradedRule
		want State
	}{
		{"connected, reads good", Health{State: StateConnected, ConnectOK: true, Reads: ReadRun{LastGood: t0}}, DegradedRule{}, StateConnected},
		{"connected, two failed polls", Health{State: StateConnected, ConnectOK: true, Reads: failing(2, time.Minute)}, DegradedRule{}, StateConnected},
		{"connected, three failed polls for 4.9 s", Health{State: StateConnected, ConnectOK: true, Reads: failing(3, 4900*time.Millisecond)}, DegradedRule{}, StateConnected},
		{"connected, three failed polls for exactly 5 s", Health{State: StateConnected, ConnectOK: true, Reads: failing(3, 5*time.Second)}, DegradedRule{}, StateDegraded},
		{"connected, 50 failed polls for 10 s (exceptions)", Health{State: StateConnected, ConnectOK: true, Reads: failing(50, 10*time.Second)}, DegradedRule{}, StateDegraded},
		{"back-off after a connection that opened and timed out", Health{State: StateDisconnected, ConnectOK: true, Reads: failing(6, 30*time.Second)}, DegradedRule{}, StateDegraded},
		{"reconnecting to a silent device", Health{State: StateConnecting, ConnectOK: true, Reads: failing(6, 30*time.Second)}, DegradedRule{}, StateDegraded},
		{"connects refused", Health{State: StateDisconnected, ConnectOK: false, Reads: failing(6, 30*time.Second)}, DegradedRule{}, StateDisconnected},
		{"connect hanging after refusals", Health{State: StateConnecting, Reads: failing(6, 30*time.Second)}, DegradedRule{}, StateConnecting},
		{"never connected, never polled", Health{State: StateDisconnected}, DegradedRule{}, StateDisconnected},
		{"closed while degraded", Health{State: StateClosed, ConnectOK: true, Reads: failing(6, 30*time.Second)}, DegradedRule{}, StateClosed},
		{"a shorter rule: two polls, 100 ms", Health{State: StateConnected, ConnectOK: true, Reads: failing(2, 100*time.Millisecond)}, short, StateDegraded},
		{"a shorter rule, 99 ms", Health{State: StateConnected, ConnectOK: true, Reads: failing(2, 99*time.Millisecond)}, short, StateConnected},
		{"only Polls set: After takes its default", Health{State: StateConnected, ConnectOK: true, Reads: failing(2, time.Second)}, DegradedRule{Polls: 2}, StateConnected},
	} {
		if got := Condition(tc.h, t0, tc.rule); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
