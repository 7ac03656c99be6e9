package node

import (
	"fmt"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// Formation is what FormationRounds measured, in rounds: simulation steps
// of Network.StepMs (100 ms), each one gossip round at the default
// SpreadGossipInterval and one message latency.
type Formation struct {
	// N is the number of nodes started at once.
	N int
	// Joined: every node is a member (has been welcomed).
	Joined int
	// Up: the leader's view has every node Up.
	Up int
	// Converged: every node's view has all N Up and has converged (every
	// member has seen it) — what an operator's member list shows.
	Converged int
	// GossipsPerNode is the gossip messages (full gossip and status) sent
	// until Converged, per node.
	GossipsPerNode float64
}

// FormationRounds starts n nodes at once on an in-memory network (seeds:
// the first two, production defaults) and counts the rounds until every
// node sees n Up members and a converged view. seed picks the incarnation
// uids, which seed each node's gossip target generator: the same seed gives
// the same run. It gives up after limit rounds (ok false).
func FormationRounds(n int, seed uint64, limit int) (f Formation, ok bool) {
	nw := NewNetwork()
	nw.uidSeq = seed << 32
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%03d", i)
	}
	seeds := []m.Address{Address(names[0]), Address(names[min(1, n-1)])}
	for _, name := range names {
		nw.AddNode(name, func(c *Config) { c.Seeds = seeds })
	}
	for _, name := range names {
		nw.Start(name)
	}
	f.N = n
	for round := 1; round <= limit; round++ {
		nw.StepOnce()
		nw.TakeLog()
		if f.Joined == 0 && allJoined(nw) {
			f.Joined = round
		}
		if f.Up == 0 && leaderSeesAllUp(nw, n) {
			f.Up = round
		}
		if allConverged(nw, n) {
			f.Converged = round
			f.GossipsPerNode = float64(nw.gossips) / float64(n)
			return f, true
		}
	}
	return f, false
}

func allJoined(nw *Network) bool {
	for _, h := range nw.Running() {
		if h.Node.Phase() != Initialized {
			return false
		}
	}
	return true
}

func leaderSeesAllUp(nw *Network, n int) bool {
	for _, h := range nw.Running() {
		st := h.Node.State()
		if !st.IsLeader(h.Node.Self()) {
			continue
		}
		return countUp(st) == n
	}
	return false
}

// allConverged: every running node is a member whose view has n Up
// members and has converged.
func allConverged(nw *Network, n int) bool {
	for _, h := range nw.Running() {
		st := h.Node.State()
		if h.Node.Phase() != Initialized || countUp(st) != n || len(st.Gossip.Members) != n || !st.Convergence(nil) {
			return false
		}
	}
	return true
}

func countUp(st m.State) int {
	up := 0
	for _, mb := range st.Gossip.Members {
		if mb.Status == m.Up {
			up++
		}
	}
	return up
}
