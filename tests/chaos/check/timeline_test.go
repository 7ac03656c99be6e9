package check

import (
	"fmt"
	"slices"
	"testing"
)

// TestTimelineGolden checks the whole text of one violation: a Primary
// frozen with SIGSTOP, the survivor taking over, the woken Primary writing
// again.
func TestTimelineGolden(t *testing.T) {
	w := writes(100, "a", 5000, "b", 8010, "a")
	for i := range w {
		w[i].Source = "plc.log:" + w[i].Value
	}
	run := Run{
		Seed: 7, Start: t0, Clusters: pair(LeaseMajority), Writes: w,
		Levels: join(steady("a", 250, 0, 200), quiet("a", 200, 8000), steady("a", 250, 8000, 9000),
			steady("b", 240, 0, 4900), steady("b", 250, 4900, 9000)),
		Processes: []ProcessEvent{
			{At: at(200), Node: "a", Kind: Stopped, Source: "rig"},
			{At: at(8000), Node: "a", Kind: Continued, Source: "rig"},
		},
		Faults:    []Fault{fault(FaultStop, 200, 8000, "a"), fault(FaultConfigDBSlow, 6000, 20000)},
		Failovers: []ClientFailover{{At: at(4950), From: "a", To: "b", Reason: "connection lost", Source: "client.log:12"}},
	}
	vs := Check(run)
	if len(vs) != 2 || vs[0].Invariant != TwoPrimaries || vs[1].Invariant != TwoWriters {
		t.Fatalf("violations %v, want two-primaries then two-writers", vs)
	}
	v := vs[1]
	wantString := "seed 7: two-writers in ClusterId c1 at +8.010s: device plc: a wrote at +0.100s, b at +5.000s, " +
		"a again at +8.010s with no restart of a and no level 240 or 0 from it in between"
	if got := v.String(); got != wantString {
		t.Errorf("String:\n got %s\nwant %s", got, wantString)
	}
	const want = ` +0.000s  a       ServiceLevel 250
 +0.000s  b       ServiceLevel 240
 +0.100s  plc     40001=1 written by a  [plc.log:1]
 +0.200s  run     SIGSTOP a
 +0.200s  a       stopped  [rig]
 +0.200s  a       ServiceLevel no answer
 +4.900s  b       ServiceLevel 250
 +4.950s  client  failover a -> b (connection lost)  [client.log:12]
 +5.000s  plc     40001=2 written by b  [plc.log:2]
 +6.000s  run     Config DB slow
 +8.000s  run     SIGSTOP a ends
 +8.000s  a       continued  [rig]
 +8.000s  a       ServiceLevel 250
 +8.010s  plc     40001=3 written by a  [plc.log:3]
 +8.010s  check   violation: two-writers
+20.000s  run     Config DB slow ends
`
	if got := v.Timeline(); got != want {
		t.Errorf("Timeline:\n%s\nwant:\n%s", got, want)
	}
}

func TestTimelineRelativeTimes(t *testing.T) {
	v := Violation{Origin: at(1000), Events: []Event{
		{At: at(950), Actor: "a", Text: "before time zero"},
		{At: at(13345), Actor: "alarm_history", Text: "later"},
	}}
	const want = " -0.050s  a              before time zero\n+12.345s  alarm_history  later\n"
	if got := v.Timeline(); got != want {
		t.Errorf("Timeline:\n%q\nwant\n%q", got, want)
	}
}

func TestMalformedRunPanics(t *testing.T) {
	for name, run := range map[string]Run{
		"unknown downing strategy":             {Clusters: []Cluster{{ID: "c1", Nodes: []string{"a"}, Downing: "keep-oldest"}}},
		"node in two ClusterIds":               {Clusters: []Cluster{{ID: "c1", Nodes: []string{"a"}, Downing: AutoDown}, {ID: "c2", Nodes: []string{"a"}, Downing: AutoDown}}},
		"sample of an unknown node":            {Clusters: pair(LeaseMajority), Levels: []LevelSample{{At: at(0), Node: "z", ClusterID: "c1"}}},
		"sample in the wrong ClusterId":        {Clusters: pair(LeaseMajority), Levels: []LevelSample{{At: at(0), Node: "a", ClusterID: "c2"}}},
		"write to an unknown device":           {Clusters: pair(LeaseMajority), Writes: []DeviceWrite{{At: at(0), Device: "plc2", Writer: "a"}}},
		"acknowledged write of an unknown tag": {Clusters: pair(LeaseMajority), Acks: []AckedWrite{{At: at(0), NodeID: "ns=2;s=Other", Server: "a"}}},
		"alarm row of an unknown ClusterId":    {Clusters: pair(LeaseMajority), Alarms: []AlarmRow{alarm(0, "c9", "HighTemp", "t1")}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Check did not panic")
				}
			}()
			Check(run)
		})
	}
}

// TestTimelineFoldsStreaks: a streak of writes by one node and of
// acknowledgements by one server keeps its first and last line and counts
// the rest; a change of writer starts a new streak; streaks shorter than
// minStreak stay whole.
func TestTimelineFoldsStreaks(t *testing.T) {
	var ws []DeviceWrite
	var acks []AckedWrite
	for i := range 10 { // a writes 1…10, then b 11, then a 12, 13
		ws = append(ws, write(1000+200*i, "a", fmt.Sprint(i+1)))
		acks = append(acks, ack(1000+200*i, fmt.Sprint(i+1), "a"))
	}
	// b acknowledges a write of another client every 500 ms meanwhile:
	// a's acknowledgements still fold into one streak.
	for i := range 4 {
		acks = append(acks, ack(1100+500*i, fmt.Sprint(100+i), "b"))
	}
	ws = append(ws, write(3000, "b", "11"), write(3200, "a", "12"), write(3400, "a", "13"))
	for _, tc := range []struct {
		name string
		evs  []streakEvent
		want []string
	}{
		{"empty", nil, nil},
		{"three stay", streakOf("k", 3), []string{"0", "1", "2"}},
		{"four fold", streakOf("k", 4), []string{"0", "… 2 more e", "3"}},
		{"two keys", append(streakOf("k", 5), streakOf("l", 2)...), []string{"0", "… 3 more e", "4", "0", "1"}},
	} {
		var got []string
		for _, e := range foldStreaks(tc.evs) {
			got = append(got, e.Text)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	run := Run{Seed: 1, Start: t0, Clusters: pair(LeaseMajority), Writes: ws, Acks: acks,
		Levels: join(steady("a", 250, 0, 4000), steady("b", 240, 0, 4000)), Faults: []Fault{fault(FaultStop, 2900, 3100, "a")}}
	c := newChecker(run)
	v := c.violation(TwoWriters, "c1", at(1000), at(3400), "test")
	v.Events = c.timeline(v)
	const want = `+0.000s  a       ServiceLevel 250
+0.000s  b       ServiceLevel 240
+1.000s  plc     40001=1 written by a
+1.000s  client  write ns=2;s=Setpoint=1 acknowledged by a
+1.100s  client  write ns=2;s=Setpoint=100 acknowledged by b
+1.200s  plc     … 8 more writes by a
+1.200s  client  … 8 more writes acknowledged by a
+1.600s  client  … 2 more writes acknowledged by b
+2.600s  client  write ns=2;s=Setpoint=103 acknowledged by b
+2.800s  plc     40001=10 written by a
+2.800s  client  write ns=2;s=Setpoint=10 acknowledged by a
+2.900s  run     SIGSTOP a
+3.000s  plc     40001=11 written by b
+3.100s  run     SIGSTOP a ends
+3.200s  plc     40001=12 written by a
+3.400s  plc     40001=13 written by a
+3.400s  check   violation: two-writers
`
	if got := v.Timeline(); got != want {
		t.Errorf("Timeline:\n%s\nwant:\n%s", got, want)
	}
}

// streakOf is n events with one key, texts "0", "1", …
func streakOf(key string, n int) []streakEvent {
	var out []streakEvent
	for i := range n {
		out = append(out, streakEvent{Event{at(i), "x", fmt.Sprint(i)}, key, "e"})
	}
	return out
}
