package chaos

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/tests/chaos/check"
)

var allMutations = flag.Bool("chaos.mutations", false, "TestMutationsAreCaught runs every mutation (default: secondary-writes only, the CI variant)")

// mutationCases pairs each test-only product mutation (internal/mutation)
// with the invariant of the checker it breaks and a short run that shows
// it: one lease-majority pair on the Config DB, the faults the breach
// needs.
var mutationCases = []struct {
	mutation  string
	invariant string
	kinds     []Kind
	duration  time.Duration // 0: 75 s
}{
	// The second writer's writes on the Secondary are written there and
	// forwarded nowhere: two nodes write one device.
	{mutation.SecondaryWrites, check.TwoWriters, []Kind{Failover}, 0},
	// The Secondary shows 250 beside the Primary.
	{mutation.SecondaryClaimsPrimary, check.TwoPrimaries, []Kind{Failover}, 0},
	// Every fifth write is acknowledged and never reaches the device.
	{mutation.AckWithoutWrite, check.AckLandedOnce, []Kind{Failover}, 0},
	// Without alarm_history's key, the survivor of a failover drains the
	// transitions the old Primary stored already.
	{mutation.HistorianDuplicates, check.AlarmOnce, []Kind{Failover, Kill}, 0},
	// The Secondary shows 199 while its pair is healthy: the run needs
	// more than the stuck limit past a fault's settle time.
	{mutation.SecondaryStuckLow, check.StuckLevel, []Kind{Failover}, 150 * time.Second},
	// The Primary's historian stores nothing: a minute of toggles without
	// a row.
	{mutation.HistorianSilent, check.AlarmStored, []Kind{Failover}, 0},
	// A killed node is held back 45 s before it starts again.
	{mutation.RejoinLate, check.RestartBudget, []Kind{Kill}, 0},
}

// TestMutationsAreCaught: each guarantee the checker judges, broken on
// purpose in the product, makes the checker fail with that invariant and
// a timeline. CI runs secondary-writes (the breach a warm standby exists
// to prevent); -chaos.mutations runs them all.
func TestMutationsAreCaught(t *testing.T) {
	for _, c := range mutationCases {
		if !*allMutations && c.mutation != mutation.SecondaryWrites {
			continue
		}
		t.Run(c.mutation, func(t *testing.T) {
			d := c.duration
			if d == 0 {
				d = 75 * time.Second
			}
			vs := runChaos(t, options{Seed: mutationSeed(), Duration: d, Mutation: c.mutation,
				Clusters: []string{"lease-pg"}, Kinds: c.kinds})
			var hit *check.Violation
			for i := range vs {
				if vs[i].Invariant == c.invariant {
					hit = &vs[i]
					break
				}
			}
			if hit == nil {
				var got []string
				for _, v := range vs {
					got = append(got, v.Invariant)
				}
				t.Fatalf("mutation %s: the checker found %v, not %s", c.mutation, slices.Compact(got), c.invariant)
			}
			tl := hit.Timeline()
			if !strings.Contains(tl, "\n") {
				t.Fatalf("mutation %s: a timeline of one line:\n%s", c.mutation, tl)
			}
			t.Logf("mutation %s caught: %s\n%s", c.mutation, hit, tl)
		})
	}
}

// mutationSeed is -chaos.seed, or 1: a mutation run's faults need not
// vary to show a breach.
func mutationSeed() int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return 1
}
