package check

import (
	"strings"
	"testing"
)

func TestTwoPrimaries(t *testing.T) {
	lease, auto := pair(LeaseMajority), pair(AutoDown)
	// a at 250 until 50 ms, then 240; b at 240, then 250 from `b250` on.
	handover := func(b250 int) []LevelSample {
		return join(steady("a", 250, 0, 50), steady("a", 240, 50, 500), steady("b", 240, 10, b250), steady("b", 250, b250, 500))
	}
	// a at 250 until 100 ms, then 240; b at 240, then 250 from `b250`
	// on: both read 250 from b250 to 50 (b's read at 60 lies inside a's
	// stretch 0–50 when b250 ≤ 50).
	overlap := func(b250 int) []LevelSample {
		return join(steady("a", 250, 0, 100), steady("a", 240, 100, 500), steady("b", 240, 10, b250), steady("b", 250, b250, 500))
	}
	partition := []Fault{fault(FaultPartition, 0, 1000, "a", "b")}
	runCases(t, []tcase{
		{name: "one Primary", run: Run{Clusters: lease, Levels: join(steady("a", 250, 0, 2000), steady("b", 240, 20, 2000))}},
		{
			name: "the Primary is killed, the survivor takes over",
			run: Run{Clusters: lease, Levels: join(steady("a", 250, 0, 1000), quiet("a", 1000, 5000), steady("b", 240, 20, 2000), steady("b", 250, 2000, 5000)),
				Processes: []ProcessEvent{proc(1000, "a", Killed)}, Faults: []Fault{fault(FaultKill, 1000, 4000, "a")}},
		},
		{name: "hand-over within a period: a reads 240 before b reads 250", run: Run{Clusters: lease, Levels: handover(60)}},
		{
			name: "graceful leave: a 250 then 0 at the round b reads 250",
			run:  Run{Clusters: lease, Levels: join(steady("a", 250, 0, 100), steady("a", 0, 100, 500), steady("b", 240, 0, 100), steady("b", 250, 100, 500))},
		},
		{
			name: "killed: a's last read 250, b at 250 one round later",
			run: Run{Clusters: lease, Levels: join(steady("a", 250, 0, 100), quiet("a", 100, 500), steady("b", 240, 0, 100), steady("b", 250, 100, 500)),
				Processes: []ProcessEvent{proc(99, "a", Killed)}},
		},
		{name: "both read 250 in one round", run: Run{Clusters: lease, Levels: overlap(50)}, want: []string{"two-primaries +0.050s"}},
		{
			name: "a lone read of 250 inside the other's stretch",
			run:  Run{Clusters: lease, Levels: join(steady("a", 250, 0, 500), steady("b", 240, 10, 200), []LevelSample{level(210, "b", 250)}, steady("b", 240, 260, 500))},
			want: []string{"two-primaries +0.210s"},
		},
		{
			name: "a stretch is ended by no answer: 250 after a silence is a new one",
			run:  Run{Clusters: lease, Levels: join(steady("a", 250, 0, 100), quiet("a", 100, 300), steady("a", 250, 300, 400), steady("b", 250, 150, 250))},
		},
		{name: "auto-down: both at 250 during a partition", run: Run{Clusters: auto, Levels: overlap(50), Faults: partition}},
		{name: "lease-majority: both at 250 during a partition", run: Run{Clusters: lease, Levels: overlap(50), Faults: partition}, want: []string{"two-primaries +0.050s"}},
		{
			name: "a partition of another ClusterId gives no excuse",
			run: Run{Clusters: append(pair(AutoDown), Cluster{ID: "c2", Nodes: []string{"c", "d"}, Downing: AutoDown}),
				Levels: overlap(50), Faults: []Fault{fault(FaultPartition, 0, 1000, "c", "d")}},
			want: []string{"two-primaries +0.050s"},
		},
		{
			name: "a read of 250 without an answer does not count",
			run:  Run{Clusters: lease, Levels: []LevelSample{level(0, "a", 250), {At: at(30), Node: "b", ClusterID: "c1", Level: 250}}},
		},
		{
			name: "one Primary in each of two ClusterIds",
			run: Run{Clusters: append(pair(LeaseMajority), Cluster{ID: "c2", Nodes: []string{"c", "d"}, Downing: LeaseMajority}),
				Levels: []LevelSample{level(0, "a", 250), {At: at(10), Node: "c", ClusterID: "c2", Level: 250, Answered: true}}},
		},
	})
}

func TestTwoPrimariesFoldsAnEpisode(t *testing.T) {
	vs := Check(Run{Start: t0, Clusters: pair(LeaseMajority), Levels: join(steady("a", 250, 0, 3000), steady("b", 250, 25, 3000))})
	if len(vs) != 1 || vs[0].Invariant != TwoPrimaries || vs[0].At != at(25) {
		t.Fatalf("violations %v, want one two-primaries at +0.025s", vs)
	}
	if !strings.Contains(vs[0].Statement, "both at 250 from +0.025s to +2.950s") {
		t.Errorf("statement %q does not say both were at 250 from +0.025s to +2.950s", vs[0].Statement)
	}
}
