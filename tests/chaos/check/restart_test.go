package check

import "testing"

func TestRestartBudget(t *testing.T) {
	lease := pair(LeaseMajority)
	// b is killed at 1 s and restarted at 2 s; its budget is 20 s.
	kill := []ProcessEvent{proc(0, "b", Started), proc(1000, "b", Killed), proc(2000, "b", Started)}
	faults := []Fault{fault(FaultKill, 1000, 2000, "b")}
	// back is b's samples: no answer from 1 s, 0 from 2 s, 240 from `back` to 40 s.
	back := func(back int) []LevelSample {
		return join(steady("b", 240, 0, 1000), quiet("b", 1000, 2000), steady("b", 0, 2000, back), steady("b", 240, back, 40000))
	}
	primary := steady("a", 250, 0, 40000)
	runCases(t, []tcase{
		{name: "back within its budget", run: Run{Clusters: lease, Processes: kill, Faults: faults, Levels: join(primary, back(10000))}},
		{name: "back after its budget", run: Run{Clusters: lease, Processes: kill, Faults: faults, Levels: join(primary, back(25000))}, want: []string{"restart-budget +22.000s"}},
		{name: "never back", run: Run{Clusters: lease, Processes: kill, Faults: faults, Levels: join(primary, back(40000))}, want: []string{"restart-budget +22.000s"}},
		{
			name: "not judged: the run ended within the budget",
			run:  Run{Clusters: lease, Processes: kill, Faults: faults, Levels: join(steady("a", 250, 0, 15000), back(15000))},
		},
		{
			name: "the budget starts again when a Config DB stop during it ends",
			run: Run{Clusters: lease, Processes: kill, Levels: join(primary, back(30000)),
				Faults: append(faults, fault(FaultConfigDBStop, 3000, 15000))},
		},
		{
			name: "a node's first start is not a restart",
			run:  Run{Clusters: lease, Processes: []ProcessEvent{proc(30000, "b", Started)}, Levels: join(primary, steady("b", 240, 60000, 61000))},
		},
	})
}
