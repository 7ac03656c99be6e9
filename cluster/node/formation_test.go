package node

import (
	"flag"
	"math"
	"testing"
)

var formationSeeds = flag.Int("formation-seeds", 1, "seeds per size for TestFormationRoundsGrowWithLogN (5 for the table in docs/benchmarks-cluster.md)")

// FormationBound is the stated bound of the formation simulation: n nodes
// started at once all see n Up and converged within
// FormationBaseRounds + FormationLogFactor·log2(n) rounds. The base covers
// the seed handshake (InitJoin, Nack, the first seed forming, the others'
// next InitJoin, Join, Welcome); what grows with n is the gossip spreading
// the joins, the Up and the seen sets.
const (
	FormationBaseRounds = 10
	FormationLogFactor  = 1.5
)

// TestFormationRoundsGrowWithLogN simulates n = 6, 24 and 200 nodes started
// at once (every size of the table and five seeds each with
// -formation-seeds 5, which takes a minute under the race detector), and
// holds the
// rounds to full convergence under the bound: rounds(200) ≤ 10 +
// 1.5·log2(200) ≈ 21.5 (< 3·log2(200)). Measured: 11–13 rounds for 6 nodes,
// 15 for 24, 17–18 for 200. A gossip that spread one member per round
// would need well over 200.
func TestFormationRoundsGrowWithLogN(t *testing.T) {
	sizes := []int{6, 24, 200}
	if *formationSeeds > 1 {
		sizes = []int{6, 12, 24, 50, 100, 200}
	}
	for _, n := range sizes {
		bound := FormationBaseRounds + FormationLogFactor*math.Log2(float64(n))
		for seed := uint64(1); seed <= uint64(*formationSeeds); seed++ {
			f, ok := FormationRounds(n, seed, 300)
			if !ok {
				t.Fatalf("n=%d seed=%d: not converged after 300 rounds: %+v", n, seed, f)
			}
			if float64(f.Converged) > bound {
				t.Errorf("n=%d seed=%d: converged after %d rounds, over the bound %.1f (%+v)", n, seed, f.Converged, bound, f)
			}
			if f.Joined > f.Up || f.Up > f.Converged {
				t.Errorf("n=%d seed=%d: phases out of order: %+v", n, seed, f)
			}
		}
	}
}

// TestFormationRoundsReplay: the same seed gives the same run.
func TestFormationRoundsReplay(t *testing.T) {
	a, _ := FormationRounds(50, 7, 300)
	b, _ := FormationRounds(50, 7, 300)
	if a != b {
		t.Fatalf("seed 7 ran twice differently: %+v and %+v", a, b)
	}
}

func TestJoinRetryAfter(t *testing.T) {
	for _, c := range []struct {
		attempt int
		want    Instant
	}{{1, 100}, {2, 200}, {3, 400}, {4, 500}, {5, 500}, {100, 500}} {
		if got := joinRetryAfter(c.attempt); got != c.want {
			t.Errorf("joinRetryAfter(%d) = %d, want %d", c.attempt, got, c.want)
		}
	}
}
