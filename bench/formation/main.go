// Command formation simulates a cluster of N nodes started at once on the
// membership core's in-memory network (cluster/node, production defaults,
// seeds: the first two) and prints, per N, the rounds until every node sees
// N Up members and a converged view: a Markdown table for
// docs/benchmarks-cluster.md. A round is one simulation step of 100 ms: one
// gossip round at the default SpreadGossipInterval and one message latency.
// Each seed gives other incarnation uids, which seed the nodes' gossip
// target generators; the same seed gives the same rounds.
//
// Usage:
//
//	go run ./bench/formation -seeds 5
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/otopcua/otopcua/cluster/node"
)

func main() {
	seeds := flag.Int("seeds", 5, "runs per size, seeds 1..seeds")
	sizes := flag.String("n", "6,12,24,50,100,200", "cluster sizes")
	flag.Parse()
	fmt.Println("| N | log2 N | joined (rounds, median) | leader has all Up | all converged: median | max | max ÷ log2 N | gossip messages per node |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			fmt.Fprintf(os.Stderr, "-n: %q is not a size ≥ 2\n", s)
			os.Exit(2)
		}
		var joined, up, conv []int
		var gossips float64
		for seed := 1; seed <= *seeds; seed++ {
			f, ok := node.FormationRounds(n, uint64(seed), 1000)
			if !ok {
				fmt.Fprintf(os.Stderr, "N=%d seed %d: not converged after 1000 rounds\n", n, seed)
				os.Exit(1)
			}
			joined, up, conv = append(joined, f.Joined), append(up, f.Up), append(conv, f.Converged)
			gossips += f.GossipsPerNode
		}
		lg := math.Log2(float64(n))
		fmt.Printf("| %d | %.2f | %d | %d | %d (%.1f s) | %d | %.2f | %.1f |\n", n, lg, median(joined), median(up),
			median(conv), float64(median(conv))/10, slices.Max(conv), float64(slices.Max(conv))/lg, gossips/float64(*seeds))
	}
}

func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
