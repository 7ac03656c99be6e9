package main

import (
	"flag"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

var (
	fpDuration = flag.Duration("fp.duration", 75*time.Second, "measured window of TestHealthyPairUnderLoadNeverFailsOver (the command's -duration)")
	fpSeed     = flag.Uint64("fp.seed", 27, "stall plan seed of TestHealthyPairUnderLoadNeverFailsOver")
)

// TestMain lets the test binary serve as the harness's load child.
func TestMain(m *testing.M) {
	if RunLoadChild() {
		return
	}
	os.Exit(m.Run())
}

// TestHealthyPairUnderLoadNeverFailsOver is the command's run, short: a
// lease-majority pair on PostgreSQL with the node's defaults, both cores
// spun by a CPU child, a 400 MiB allocation cycle, 10–200 ms stalls of the
// Primary for 75 s (-fp.duration). It fails on any failover, any level
// below 200, and when the samplers could not check.
func TestHealthyPairUnderLoadNeverFailsOver(t *testing.T) {
	if raceDetector {
		t.Skip("runs in scripts/test.sh's pass without the race detector, alone: its load would starve the packages tested beside it")
	}
	c := Config{Duration: *fpDuration, Seed: *fpSeed, Strategy: leaseMajority, Stall: stallPrimary,
		CPUWorkers: runtime.NumCPU(), MemMB: 400, Bounds: DefaultStallBounds, Progress: func(s string) { t.Log(s) }}
	r := Run(t, c)
	var b strings.Builder
	Print(&b, r)
	t.Log("\n" + b.String())
	for _, v := range r.Violations {
		t.Error(v)
	}
	// The run was the one it claims: stalls were injected and the load ran.
	if least := int(c.Duration / DefaultStallBounds.MaxGap); r.Obs.Stalls < least {
		t.Errorf("%d stalls injected in %v, want at least %d", r.Obs.Stalls, r.Wall, least)
	}
	// Lenient: CI runs other packages beside this one; the check is that
	// the load ran, not how hard.
	if r.LoadCPU < 25 {
		t.Errorf("the CPU load used %.0f %% of a core, want at least 25 %%", r.LoadCPU)
	}
	if r.MemPeakMB < 200 {
		t.Errorf("the memory load peaked at %.0f MiB, want at least 200", r.MemPeakMB)
	}
}

func TestPlanIsSeededAndBounded(t *testing.T) {
	b := DefaultStallBounds
	p1, p2, p3 := NewPlan(7, b), NewPlan(7, b), NewPlan(8, b)
	same, differ := true, false
	seenMin, seenMax := time.Hour, time.Duration(0)
	for range 2000 {
		s1, s2, s3 := p1.Next(), p2.Next(), p3.Next()
		if s1 != s2 {
			same = false
		}
		if s1 != s3 {
			differ = true
		}
		if s1.Stop < b.MinStall || s1.Stop > b.MaxStall || s1.Gap < b.MinGap || s1.Gap > b.MaxGap {
			t.Fatalf("stall %+v outside %+v", s1, b)
		}
		if s1.Stop%time.Millisecond != 0 {
			t.Fatalf("stall %v not in whole milliseconds", s1.Stop)
		}
		seenMin, seenMax = min(seenMin, s1.Stop), max(seenMax, s1.Stop)
	}
	if !same {
		t.Error("two plans of seed 7 differ")
	}
	if !differ {
		t.Error("seeds 7 and 8 give the same plan")
	}
	// 2000 uniform draws over 191 values reach both ends.
	if seenMin != b.MinStall || seenMax != b.MaxStall {
		t.Errorf("stalls spanned %v…%v, want %v…%v", seenMin, seenMax, b.MinStall, b.MaxStall)
	}
}

func TestStallBoundsCapped(t *testing.T) {
	cases := []struct {
		pause    time.Duration
		min, max time.Duration
	}{
		{3 * time.Second, 10 * time.Millisecond, 200 * time.Millisecond},
		{2 * time.Second, 10 * time.Millisecond, 200 * time.Millisecond},
		{400 * time.Millisecond, 10 * time.Millisecond, 200 * time.Millisecond},
		{300 * time.Millisecond, 10 * time.Millisecond, 150 * time.Millisecond},
		{10 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
	}
	for _, c := range cases {
		got := DefaultStallBounds.Capped(c.pause)
		if got.MinStall != c.min || got.MaxStall != c.max {
			t.Errorf("pause %v: stalls %v…%v, want %v…%v", c.pause, got.MinStall, got.MaxStall, c.min, c.max)
		}
		if got.MaxStall >= c.pause {
			t.Errorf("pause %v: longest stall %v not shorter", c.pause, got.MaxStall)
		}
	}
}

func healthyObs() Observations {
	n := func(level byte) *NodeObs {
		return &NodeObs{Reads: 100, Answered: 95, Levels: map[byte]int{level: 95}, Views: 20, ViewsAnswered: 20, Marks: map[string]int{}, DeviceReads: 500}
	}
	return Observations{Primary: "a", Secondary: "b", Nodes: map[string]*NodeObs{"a": n(250), "b": n(240)},
		Pause: 2 * time.Second, Stalls: 40, Longest: 190 * time.Millisecond}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		name string
		edit func(o *Observations)
		want string // a substring of the only violation; "" = pass
	}{
		{"healthy", func(*Observations) {}, ""},
		{"stale but serving is healthy", func(o *Observations) { o.Nodes["b"].Levels[200] = 3 }, ""},
		{"unreachable marks are reported only", func(o *Observations) {
			o.Nodes["a"].Unreachable = 4
			o.Nodes["a"].Marks["cluster member unreachable"] = 1
		}, ""},
		{"secondary at 250", func(o *Observations) { o.Nodes["b"].Levels[250] = 1 }, "failover: the Secondary b read 250"},
		{"primary at 240", func(o *Observations) { o.Nodes["a"].Levels[240] = 2 }, "failover: the Primary a read 240"},
		{"degraded level", func(o *Observations) { o.Nodes["b"].Levels[100] = 1 }, "b left the Healthy band: 1×100"},
		{"level 0", func(o *Observations) { o.Nodes["a"].Levels[0] = 1 }, "a left the Healthy band: 1×0"},
		{"exit", func(o *Observations) { o.Nodes["a"].Exited, o.Nodes["a"].ExitCode = true, 3 }, "a exited with code 3"},
		{"view fault", func(o *Observations) { o.Nodes["b"].ViewFaults, o.Nodes["b"].FirstFault = 1, "x is Down" }, "b: 1 member views broke the pair (first: x is Down)"},
		{"downed in the log", func(o *Observations) { o.Nodes["b"].Marks["cluster member downed"] = 1 }, `b logged "cluster member downed" 1 times`},
		{"levels unchecked", func(o *Observations) { o.Nodes["a"].Answered = 49 }, "a answered 49 of 100 ServiceLevel reads"},
		{"nothing read", func(o *Observations) { o.Nodes["a"].Reads, o.Nodes["a"].Answered = 0, 0 }, "a answered 0 of 0"},
		{"views unchecked", func(o *Observations) { o.Nodes["b"].ViewsAnswered = 9 }, "b answered 9 of 20 member views"},
		{"idle data plane", func(o *Observations) { o.Nodes["b"].DeviceReads = 0 }, "b read nothing from the device"},
		{"stall as long as the pause", func(o *Observations) { o.Longest = 2 * time.Second }, "the longest stall (2s) was not shorter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := healthyObs()
			c.edit(&o)
			got := Verdict(o)
			switch {
			case c.want == "" && len(got) > 0:
				t.Fatalf("violations %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Fatalf("violations %q, want one containing %q", got, c.want)
			}
		})
	}
}

func TestCheckView(t *testing.T) {
	view := func(ms ...procs.Member) *procs.ClusterView { return &procs.ClusterView{Members: ms} }
	up := func(addr string, upNumber int, reachable bool) procs.Member {
		return procs.Member{Address: addr, Status: procs.StatusUp, Roles: []string{"admin", "driver"}, ClusterID: clusterID, UpNumber: upNumber, Reachable: reachable}
	}
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	cases := []struct {
		name        string
		v           *procs.ClusterView
		unreachable bool
		err         string
	}{
		{"both up, a oldest", view(up(addrs[0], 1, true), up(addrs[1], 2, true)), false, ""},
		{"b unreachable", view(up(addrs[0], 1, true), up(addrs[1], 2, false)), true, ""},
		{"b missing", view(up(addrs[0], 1, true)), false, "127.0.0.1:2 missing"},
		{"b down", view(up(addrs[0], 1, true), func() procs.Member { m := up(addrs[1], 2, false); m.Status = procs.StatusDown; return m }()), false, "127.0.0.1:2 is Down"},
		{"b oldest", view(up(addrs[0], 3, true), up(addrs[1], 2, true)), false, "oldest driver is \"127.0.0.1:2\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := checkView(c.v, addrs, clusterID, addrs[0])
			if u != c.unreachable {
				t.Errorf("unreachable %v, want %v", u, c.unreachable)
			}
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("err %v, want %q", err, c.err)
			}
		})
	}
}
