package uaserver

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// budgetOf builds a budget from "addr" strings in creation order: the
// i-th entry gets seq i+1.
func budgetOf(addrs ...string) []pendingSession {
	out := make([]pendingSession, len(addrs))
	for i, a := range addrs {
		out[i] = pendingSession{addr: a, seq: uint64(i + 1)}
	}
	return out
}

func TestEvictionVictim(t *testing.T) {
	var four []string
	for range 5 {
		four = append(four, "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
	}
	shuffled := budgetOf("a", "b", "b", "a", "c")
	slices.Reverse(shuffled)
	for _, tc := range []struct {
		name     string
		budget   []pendingSession
		newcomer string
		want     uint64 // seq of the victim, 0 = refused
	}{
		{"empty budget: nothing to evict", nil, "a", 0},
		{"one address holds it all: its oldest goes", budgetOf("a", "a", "a"), "b", 1},
		{"the newcomer is the only holder", budgetOf("a", "a", "a"), "a", 0},
		{"the newcomer holds less than the largest", budgetOf("b", "a", "a", "a"), "b", 2},
		{"the newcomer holds as much as the largest", budgetOf("a", "b", "b", "a"), "a", 0},
		{"the newcomer holds one less than the largest", budgetOf("a", "a", "a", "b", "b"), "b", 0},
		{"the newcomer holds two less than the largest", budgetOf("a", "a", "a", "b"), "b", 1},
		{"the newcomer is one of two largest", budgetOf("a", "a", "b", "b", "c"), "b", 0},
		{"tie between largest: the oldest of both", budgetOf("c", "b", "a", "b", "a"), "d", 2},
		{"input order does not matter", shuffled, "d", 1},
		{"singletons: the oldest of all goes", budgetOf("a", "b", "c", "d"), "e", 1},
		{"singletons: a holder of one is refused", budgetOf("a", "b", "c", "d"), "c", 0},
		{"a smaller holder's sessions are never taken", budgetOf("c", "c", "a", "a", "a"), "b", 3},
		{"the issue's four addresses at five each", budgetOf(four...), "127.0.0.1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.budget)
			i := evictionVictim(tc.budget, tc.newcomer)
			var got uint64
			if i >= 0 {
				got = tc.budget[i].seq
			}
			if got != tc.want {
				t.Fatalf("victim seq %d (index %d), want %d", got, i, tc.want)
			}
			if !slices.Equal(before, tc.budget) {
				t.Fatal("the budget was modified")
			}
		})
	}
}

// TestEvictionVictimProperties checks the rule against its statement on
// random budgets: refused exactly when nothing is held or the newcomer's
// address holds something and at least the largest holding less one;
// otherwise the victim's address holds the most and no session of a
// largest holder is older. Applying the eviction and the newcomer's
// session never raises the largest holding and lowers the sum of the
// squares of the holdings unless the newcomer held nothing (so holders
// that keep asking cannot evict each other for ever).
func TestEvictionVictimProperties(t *testing.T) {
	addrs := []string{"a", "b", "c", "d", "e"}
	rapid.Check(t, func(t *rapid.T) {
		picks := rapid.SliceOfN(rapid.SampledFrom(addrs), 0, 30).Draw(t, "budget")
		budget := rapid.Permutation(budgetOf(picks...)).Draw(t, "order")
		newcomer := rapid.SampledFrom(addrs).Draw(t, "newcomer")

		held := map[string]int{}
		top := 0
		for _, p := range budget {
			held[p.addr]++
			top = max(top, held[p.addr])
		}
		mine := held[newcomer]
		i := evictionVictim(budget, newcomer)
		if refuse := top == 0 || (mine > 0 && mine >= top-1); refuse != (i < 0) {
			t.Fatalf("held %v, newcomer %s: index %d", held, newcomer, i)
		}
		if i < 0 {
			return
		}
		v := budget[i]
		if held[v.addr] != top {
			t.Fatalf("victim of %s holding %d, the largest holds %d", v.addr, held[v.addr], top)
		}
		for _, p := range budget {
			if held[p.addr] == top && p.seq < v.seq {
				t.Fatalf("victim seq %d, but %s's session %d is older", v.seq, p.addr, p.seq)
			}
		}
		squares := func() (n int) {
			for _, h := range held {
				n += h * h
			}
			return n
		}
		before := squares()
		held[v.addr]--
		held[newcomer]++
		for a, n := range held {
			if n > top {
				t.Fatalf("%s holds %d after the eviction, more than the largest before (%d)", a, n, top)
			}
		}
		if after := squares(); after > before || (mine > 0 && after >= before) {
			t.Fatalf("sum of squares %d → %d (newcomer held %d)", before, after, mine)
		}
	})
}
