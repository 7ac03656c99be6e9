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
	partition := []Fault{fault(FaultPartition, 0, 1000, "a", "b")}
	runCases(t, []tcase{
		{name: "one Primary", run: Run{Clusters: lease, Levels: join(steady("a", 250, 0, 2000), steady("b", 240, 20, 2000))}},
		{
			name: "the Primary is killed, the survivor takes over",
			run: Run{Clusters: lease, Levels: join(steady("a", 250, 0, 1000), quiet("a", 1000, 5000), steady("b", 240, 20, 2000), steady("b", 250, 2000, 5000)),
				Processes: []ProcessEvent{proc(1000, "a", Killed)}, Faults: []Fault{fault(FaultKill, 1000, 4000, "a")}},
		},
		{name: "250 from both nodes 60 ms apart", run: Run{Clusters: lease, Levels: handover(60)}, want: []string{"two-primaries +0.060s"}},
		{name: "250 from both nodes 100 ms apart: two periods", run: Run{Clusters: lease, Levels: handover(100)}},
		{name: "auto-down: 60 ms apart during a partition", run: Run{Clusters: auto, Levels: handover(60), Faults: partition}},
		{name: "lease-majority: 60 ms apart during a partition", run: Run{Clusters: lease, Levels: handover(60), Faults: partition}, want: []string{"two-primaries +0.060s"}},
		{
			name: "a partition of another ClusterId gives no excuse",
			run: Run{Clusters: append(pair(AutoDown), Cluster{ID: "c2", Nodes: []string{"c", "d"}, Downing: AutoDown}),
				Levels: handover(60), Faults: []Fault{fault(FaultPartition, 0, 1000, "c", "d")}},
			want: []string{"two-primaries +0.060s"},
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
	if !strings.Contains(vs[0].Statement, "more until +2.975s") {
		t.Errorf("statement %q does not say the episode lasts until +2.975s", vs[0].Statement)
	}
}
