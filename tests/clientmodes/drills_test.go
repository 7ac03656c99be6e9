package clientmodes

import (
	"flag"
	"syscall"
	"testing"
)

// trials is how many SIGKILLs each drill runs: 3 in CI (the package stays
// under about three minutes on two cores), 20 for the figures
// (docs/benchmarks.md): go test ./tests/clientmodes -clientmodes.trials 20.
var trials = flag.Int("clientmodes.trials", 3, "SIGKILLs of the Primary per client mode drill")

// TestHotBSurvivesSIGKILLs: `--mode hot-b` on both node URLs; over N
// SIGKILLs of the node the client is on, every counter value reaches the
// application exactly once.
func TestHotBSurvivesSIGKILLs(t *testing.T) {
	r := StartRig(t, RigOptions{})
	res := r.Trials(Drill{Mode: "hot-b", Trials: *trials, Symmetric: true})
	check(t, res, *trials)
}

// TestHotASurvivesSIGKILLs: nodes that say Hot make `--mode auto` choose
// hot-a; over N SIGKILLs every counter value reaches the application
// exactly once (the survivor's Sampling queue fills each gap).
func TestHotASurvivesSIGKILLs(t *testing.T) {
	r := StartRig(t, RigOptions{RedundancySupport: "Hot"})
	res := r.Trials(Drill{Mode: "auto", WantMode: "hot-a", Trials: *trials, Symmetric: true})
	check(t, res, *trials)
}

// check asserts the value log and reports the failover times.
func check(t *testing.T, res Result, n int) {
	t.Helper()
	if len(res.FailoverTimes) != n {
		t.Fatalf("%d failover times for %d trials", len(res.FailoverTimes), n)
	}
	// At least the values of the trials' durations: a log that is
	// contiguous because it is nearly empty proves nothing.
	if len(res.Values) < 10*n {
		t.Fatalf("only %d counter values over %d trials", len(res.Values), n)
	}
	if err := Contiguous(res.Values); err != nil {
		t.Fatal(err)
	}
	med, p99 := Percentiles(res.FailoverTimes)
	t.Logf("%d values from %d to %d, contiguous, each once; %d other notifications; failover time over %d trials: median %v, p99 %v",
		len(res.Values), res.Values[0].V, res.Values[len(res.Values)-1].V, len(res.Others), n, med, p99)
	for _, o := range res.Others {
		t.Logf("not a Good counter value: %s", o.Raw)
	}
}

// TestHotAOutlastsAFrozenPrimary: SIGSTOP of the node the client is on in
// hot-a: the client finds it silent after --lost-after (1 s here) and the
// survivor's Sampling queue, which holds 10 s of the counter, fills the
// whole gap: every value once.
func TestHotAOutlastsAFrozenPrimary(t *testing.T) {
	r := StartRig(t, RigOptions{})
	res := r.Trials(Drill{Mode: "hot-a", Trials: *trials, Symmetric: true, Signal: syscall.SIGSTOP, Args: []string{"--lost-after", "1s"}})
	check(t, res, *trials)
}
