package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Tally counts the abusers' operations and what the server answered them.
// It is safe for concurrent use.
type Tally struct {
	mu       sync.Mutex
	ops      map[string]uint64            // by abuser; mu must be held.
	outcomes map[string]map[string]uint64 // abuser → outcome → count; mu must be held.
}

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{ops: map[string]uint64{}, outcomes: map[string]map[string]uint64{}}
}

// Op counts one operation of abuser.
func (t *Tally) Op(abuser string) {
	t.mu.Lock()
	t.ops[abuser]++
	t.mu.Unlock()
}

// Saw counts one answer of the server (outcome: a status name, "ERR …",
// "closed", "no answer", …) to abuser.
func (t *Tally) Saw(abuser, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.outcomes[abuser]
	if m == nil {
		m = map[string]uint64{}
		t.outcomes[abuser] = m
	}
	m[outcome]++
}

// AbuserCount is one abuser's line of the summary.
type AbuserCount struct {
	Abuser   string         `json:"abuser"`
	Ops      uint64         `json:"ops"`
	Outcomes []OutcomeCount `json:"outcomes"`
}

// OutcomeCount is one bar of an abuser's status histogram.
type OutcomeCount struct {
	Outcome string `json:"outcome"`
	Count   uint64 `json:"count"`
}

// Counts returns every abuser's counts, abusers by name, outcomes most
// frequent first.
func (t *Tally) Counts() []AbuserCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := map[string]bool{}
	for n := range t.ops {
		names[n] = true
	}
	for n := range t.outcomes {
		names[n] = true
	}
	var out []AbuserCount
	for n := range names {
		a := AbuserCount{Abuser: n, Ops: t.ops[n]}
		for o, c := range t.outcomes[n] {
			a.Outcomes = append(a.Outcomes, OutcomeCount{o, c})
		}
		slices.SortFunc(a.Outcomes, func(x, y OutcomeCount) int {
			return cmp.Or(cmp.Compare(y.Count, x.Count), strings.Compare(x.Outcome, y.Outcome))
		})
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y AbuserCount) int { return strings.Compare(x.Abuser, y.Abuser) })
	return out
}

// String renders one abuser's counts on one line.
func (a AbuserCount) String() string {
	return fmt.Sprintf("%-30s %7d ops: %s", a.Abuser, a.Ops, a.outcomes())
}

// outcomes renders the status histogram, most frequent first.
func (a AbuserCount) outcomes() string {
	var parts []string
	for _, o := range a.Outcomes {
		parts = append(parts, fmt.Sprintf("%s ×%d", o.Outcome, o.Count))
	}
	return strings.Join(parts, ", ")
}

// Count is how often a saw outcome.
func (a AbuserCount) Count(outcome string) uint64 {
	for _, o := range a.Outcomes {
		if o.Outcome == outcome {
			return o.Count
		}
	}
	return 0
}

// abuserNamed returns the counts of the abuser named name (zero when absent).
func abuserNamed(all []AbuserCount, name string) AbuserCount {
	for _, a := range all {
		if a.Abuser == name {
			return a
		}
	}
	return AbuserCount{Abuser: name}
}
