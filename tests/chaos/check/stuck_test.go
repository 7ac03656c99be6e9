package check

import (
	"testing"
	"time"
)

func TestStuckLevel(t *testing.T) {
	lease := pair(LeaseMajority)
	p := Params{Settle: 5 * time.Second} // StuckLimit 10 s by default
	primary := steady("a", 250, 0, 60000)
	runCases(t, []tcase{
		{name: "below 200 for less than the limit", run: Run{Clusters: lease, Params: p, Levels: join(primary, steady("b", 0, 0, 8000), steady("b", 240, 8000, 20000))}},
		{name: "200 is in the Healthy band", run: Run{Clusters: lease, Params: p, Levels: join(primary, steady("b", 200, 0, 60000))}},
		{name: "at 0 for 15 s with no fault", run: Run{Clusters: lease, Params: p, Levels: join(primary, steady("b", 0, 0, 15000))}, want: []string{"stuck-level +10.000s"}},
		{
			name: "at 100 while the Config DB is stopped and settles",
			run:  Run{Clusters: lease, Params: p, Faults: []Fault{fault(FaultConfigDBStop, 0, 20000)}, Levels: join(steady("a", 100, 0, 30000), steady("b", 100, 0, 30000))},
		},
		{
			name: "at 255 long after a fault ended",
			run:  Run{Clusters: lease, Params: p, Faults: []Fault{fault(FaultKill, 0, 1000, "b")}, Levels: join(primary, steady("b", 255, 40000, 52000))},
			want: []string{"stuck-level +50.000s"},
		},
		{
			name: "stuck from inside a fault to past its settle margin",
			run: Run{Clusters: lease, Params: p, Faults: []Fault{fault(FaultDeviceCut, 0, 10000, "plc")},
				Levels: join(primary, steady("b", 100, 5000, 40000))},
			want: []string{"stuck-level +25.000s"},
		},
		{
			name: "a restart of a node keeps its pair unhealthy for the settle margin",
			run:  Run{Clusters: lease, Params: p, Processes: []ProcessEvent{proc(0, "b", Started)}, Levels: join(primary, steady("b", 0, 0, 14000))},
		},
		{
			name: "reads without an answer do not end a stretch",
			run:  Run{Clusters: lease, Params: p, Levels: join(primary, steady("b", 0, 0, 1000), quiet("b", 1000, 12000), steady("b", 0, 12000, 12500))},
			want: []string{"stuck-level +10.000s"},
		},
	})
}
