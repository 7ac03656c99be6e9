package chaos

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/chaos/check"
)

// Environment variables that set the flags' defaults (scripts/test.sh sets
// the duration for CI).
const (
	EnvDuration = "OTOPCUA_CHAOS_DURATION"
	EnvMutation = "OTOPCUA_CHAOS_MUTATION"
	EnvFaults   = "OTOPCUA_CHAOS_FAULTS"
)

// DefaultDuration is the schedule's length when neither -chaos.duration
// nor $OTOPCUA_CHAOS_DURATION sets it.
const DefaultDuration = 10 * time.Minute

var (
	seedFlag     = flag.Int64("chaos.seed", 0, "seed of the fault schedule (0: drawn from the clock); the run prints it first")
	durationFlag = flag.Duration("chaos.duration", 0, "length of the fault schedule (default $"+EnvDuration+", else 10m); setup comes on top")
	mutationFlag = flag.String("chaos.mutation", "", "test-only product mutation every node runs with, as OTOPCUA_TEST_MUTATION (default $"+EnvMutation+")")
	faultsFlag   = flag.String("chaos.faults", "", "fault kinds drawn, comma-separated (default $"+EnvFaults+", else all): "+kindList(AllKinds))
	clustersFlag = flag.String("chaos.clusters", "all", "pairs run, comma-separated ClusterIds: "+strings.Join(pairIDs(pairSpecs), ","))
)

// options are one run's settings. Zero fields take the defaults of
// withDefaults.
type options struct {
	Seed     int64         // 0: drawn from the clock
	Duration time.Duration // the schedule's length; 0: DefaultDuration
	Mutation string        // passed to every node as OTOPCUA_TEST_MUTATION
	Clusters []string      // ClusterIds of pairSpecs; nil: all
	Kinds    []Kind        // nil: AllKinds
	// Gap is the range of the settle gap after each fault (default 42–55 s:
	// more than the checker's 30 s settle margin and 10 s stuck limit).
	Gap [2]time.Duration
	// First is the range of each ClusterId's first fault after the pairs
	// are whole (default 5–25 s).
	First [2]time.Duration
	// Tail is the quiet end of the schedule (default 40 s).
	Tail time.Duration
	// RigShare is the chance that a fault drawn is a Config DB stop
	// (default 0.08).
	RigShare float64
}

func (o options) withDefaults() options {
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Clusters == nil {
		o.Clusters = pairIDs(pairSpecs)
	}
	if o.Kinds == nil {
		o.Kinds = slices.Clone(AllKinds)
	}
	if o.Gap == [2]time.Duration{} {
		o.Gap = [2]time.Duration{42 * time.Second, 55 * time.Second}
	}
	if o.First == [2]time.Duration{} {
		o.First = [2]time.Duration{5 * time.Second, 25 * time.Second}
	}
	if o.Tail == 0 {
		o.Tail = 40 * time.Second
	}
	if o.RigShare == 0 {
		o.RigShare = 0.08
	}
	return o
}

func (o options) plan() PlanOptions {
	return PlanOptions{Clusters: len(o.Clusters), Duration: o.Duration, Kinds: o.Kinds, Gap: o.Gap, First: o.First, Tail: o.Tail, RigShare: o.RigShare}
}

// flagOptions are the options the flags and the environment give.
func flagOptions(t *testing.T) options {
	t.Helper()
	o := options{Seed: *seedFlag, Duration: *durationFlag, Mutation: *mutationFlag}
	if o.Duration == 0 {
		if env := os.Getenv(EnvDuration); env != "" {
			d, err := time.ParseDuration(env)
			if err != nil || d <= 0 {
				t.Fatalf("$%s=%q: accepted values are Go durations such as 3m or 10m", EnvDuration, env)
			}
			o.Duration = d
		}
	}
	if o.Mutation == "" {
		o.Mutation = os.Getenv(EnvMutation)
	}
	faults := *faultsFlag
	if faults == "" {
		faults = os.Getenv(EnvFaults)
	}
	kinds, err := ParseKinds(faults)
	if err != nil {
		t.Fatalf("-chaos.faults (or $%s): %v", EnvFaults, err)
	}
	o.Kinds = kinds
	if s := strings.TrimSpace(*clustersFlag); s != "" && s != "all" {
		for _, id := range strings.Split(s, ",") {
			id = strings.TrimSpace(id)
			if !slices.Contains(pairIDs(pairSpecs), id) {
				t.Fatalf("-chaos.clusters: %q: accepted values are %s (or all)", id, strings.Join(pairIDs(pairSpecs), ","))
			}
			o.Clusters = append(o.Clusters, id)
		}
	}
	return o
}

// TestChaos is the seeded chaos run (doc.go): six nodes in three pairs
// under faults drawn from the seed for -chaos.duration, judged by the
// independent checker. It fails on every violation, printing the seed and
// the violation's timeline.
func TestChaos(t *testing.T) {
	o := flagOptions(t).withDefaults()
	vs := runChaos(t, o)
	for _, v := range vs {
		t.Errorf("%s\n%s", v, v.Timeline())
	}
	if len(vs) > 0 {
		t.Errorf("chaos seed %d: %d violations; rerun with: go test -count=1 -v -timeout %s -run 'TestChaos$' ./tests/chaos/ -chaos.seed %d -chaos.duration %s -chaos.faults %s -chaos.clusters %s",
			o.Seed, len(vs), (o.Duration + 10*time.Minute).Round(time.Minute), o.Seed, o.Duration, kindList(o.Kinds), strings.Join(o.Clusters, ","))
	}
}

// invariants lists the invariants of vs, for a log line.
func invariants(vs []check.Violation) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant+"@"+v.ClusterID)
	}
	return strings.Join(out, " ")
}
