package check

import (
	"strings"
	"testing"
	"time"
)

func TestTwoWriters(t *testing.T) {
	lease, auto := pair(LeaseMajority), pair(AutoDown)
	runCases(t, []tcase{
		{name: "one writer", run: Run{Clusters: lease, Writes: writes(0, "a", 100, "a", 200, "a")}},
		{
			name: "killed Primary's last write, then the survivor's first",
			run: Run{Clusters: lease, Writes: writes(0, "a", 100, "a", 1300, "b", 1400, "b"),
				Processes: []ProcessEvent{proc(150, "a", Killed)}, Faults: []Fault{fault(FaultKill, 150, 5000, "a")}},
		},
		{
			name: "killed Primary back as a new process, Primary again after the survivor dies",
			run: Run{Clusters: lease, Writes: writes(100, "a", 1200, "b", 9000, "a"),
				Processes: []ProcessEvent{proc(150, "a", Killed), proc(5000, "a", Started), proc(8000, "b", Killed)}},
		},
		{
			name: "hand-over and back without a restart: the old Primary read 240 in between",
			run:  Run{Clusters: lease, Writes: writes(100, "a", 200, "b", 400, "a"), Levels: []LevelSample{level(150, "a", 240)}},
		},
		{
			name: "writes interleave at the moment of a manual failover",
			run: Run{Clusters: lease, Writes: writes(1000, "a", 1010, "b", 1020, "a", 1030, "b"),
				Faults: []Fault{fault(FaultManualFailover, 1000, 1000, "a")}},
			want: []string{"two-writers +1.020s"}, // b at +1.030s folded into it
		},
		{
			name: "the same within an overlap window of 50 ms",
			run: Run{Clusters: lease, Params: Params{OverlapWindow: 50 * time.Millisecond},
				Writes: writes(1000, "a", 1010, "b", 1020, "a", 1030, "b")},
		},
		{
			name: "a Primary woken from SIGSTOP writes after the survivor took over",
			run: Run{Clusters: lease, Writes: writes(100, "a", 5000, "b", 8010, "a"),
				Processes: []ProcessEvent{proc(200, "a", Stopped), proc(8000, "a", Continued)},
				Faults:    []Fault{fault(FaultStop, 200, 8000, "a")}},
			want: []string{"two-writers +8.010s"},
		},
		{
			name: "a killed Primary's write lands after the survivor's, no restart in between",
			run: Run{Clusters: lease, Writes: writes(100, "a", 200, "b", 250, "a"),
				Processes: []ProcessEvent{proc(150, "a", Killed)}},
			want: []string{"two-writers +0.250s"},
		},
		{
			name: "level 100 does not end a tenure",
			run:  Run{Clusters: lease, Writes: writes(100, "a", 200, "b", 400, "a"), Levels: []LevelSample{level(150, "a", 100), silent(160, "a")}},
			want: []string{"two-writers +0.400s"},
		},
		{
			name: "a restarted node writes beside the Primary: caught at the Primary's next write",
			run: Run{Clusters: lease, Writes: writes(100, "a", 1200, "b", 6000, "a", 6100, "b"),
				Processes: []ProcessEvent{proc(150, "a", Killed), proc(5000, "a", Started)}},
			want: []string{"two-writers +6.100s"},
		},
		{
			name: "auto-down: both sides write during a partition",
			run: Run{Clusters: auto, Writes: writes(100, "a", 17000, "b", 18000, "a"),
				Faults: []Fault{fault(FaultPartition, 1000, 30000, "a", "b")}},
		},
		{
			name: "lease-majority: the same partition gives no excuse",
			run: Run{Clusters: lease, Writes: writes(100, "a", 17000, "b", 18000, "a"),
				Faults: []Fault{fault(FaultPartition, 1000, 30000, "a", "b")}},
			want: []string{"two-writers +18.000s"},
		},
		{
			name: "auto-down: both sides write after the partition and its settle margin",
			run: Run{Clusters: auto, Params: Params{Settle: time.Second}, Writes: writes(100, "a", 17000, "b", 18000, "a"),
				Faults: []Fault{fault(FaultPartition, 1000, 2000, "a", "b")}},
			want: []string{"two-writers +18.000s"},
		},
		{
			name: "auto-down: a Config DB stop is not a partition",
			run: Run{Clusters: auto, Writes: writes(100, "a", 17000, "b", 18000, "a"),
				Faults: []Fault{fault(FaultConfigDBStop, 1000, 30000)}},
			want: []string{"two-writers +18.000s"},
		},
	})
}

func TestTwoWritersFoldsAnEpisode(t *testing.T) {
	var ws []any
	for i := range 20 {
		ws = append(ws, 1000+100*i, []string{"a", "b"}[i%2])
	}
	ws = append(ws, 20000, "b", 20100, "a") // a second episode, 10 s later
	vs := Check(Run{Start: t0, Clusters: pair(LeaseMajority), Writes: writes(ws...)})
	if len(vs) != 2 {
		t.Fatalf("%d violations, want 2 (one per episode): %v", len(vs), vs)
	}
	if want := "(and 17 more until +2.900s)"; !strings.HasSuffix(vs[0].Statement, want) {
		t.Errorf("statement %q, want it to end %q", vs[0].Statement, want)
	}
	if vs[1].At != at(20100) {
		t.Errorf("second episode at %s, want +20.100s", rel(t0, vs[1].At))
	}
}
