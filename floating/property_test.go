package floating

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropertyOneTakerPerEpoch drives random interleavings of the scenario
// world (stream time passing, freezes, kills, drains, health, the licence
// moving with a new epoch, members' views naming any Primary, the stream
// stalling, any member deciding and acting) under lease-majority
// (LicenceRequired, at most one member licensed at a time, and the epoch
// moves whenever the licence does). It checks:
//
//  1. for any epoch, at most one member ever decides seize or reassign;
//  2. while the stream is stalled, no member that was fresh on it when it
//     stalled is taken from for staleness (no failure declared without
//     observation): a reassign during a stall takes only from a holder
//     that is Gone, released, or was already stale;
//  3. the same run with every member's clock off by a random ±10 s makes
//     exactly the same decisions.
func TestPropertyOneTakerPerEpoch(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 3).Draw(rt, "members")
		p := Params{
			AutoFailover:    rapid.Bool().Draw(rt, "auto"),
			HeartbeatTTL:    time.Duration(rapid.IntRange(1, 4).Draw(rt, "ttl")) * time.Second,
			PromotionHold:   time.Duration(rapid.IntRange(0, 3).Draw(rt, "hold")) * time.Second,
			LicenceRequired: true,
		}
		skews := make([]time.Duration, n)
		for i := range skews {
			skews[i] = time.Duration(rapid.IntRange(-10000, 10000).Draw(rt, fmt.Sprintf("skew%d", i))) * time.Millisecond
		}
		steps := rapid.SliceOfN(stepGen(n), 1, 80).Draw(rt, "steps")
		plain := runSteps(rt, n, p, nil, steps)
		skewed := runSteps(rt, n, p, skews, steps)
		if !slices.Equal(plain, skewed) {
			rt.Fatalf("members' clocks changed the decisions:\nunskewed:\n%s\nskewed %v:\n%s",
				strings.Join(plain, "\n"), skews, strings.Join(skewed, "\n"))
		}
	})
}

// step is one event of the world: what, to which member, and a value.
type step struct {
	Op     string
	Member int
	Arg    int
}

var stepOps = []string{"tick", "tick", "decide", "decide", "decide", "decide", "freeze", "thaw", "kill",
	"drain", "health", "licence", "view", "view", "stall", "resume"}

func stepGen(n int) *rapid.Generator[step] {
	return rapid.Custom(func(rt *rapid.T) step {
		return step{
			Op:     rapid.SampledFrom(stepOps).Draw(rt, "op"),
			Member: rapid.IntRange(0, n-1).Draw(rt, "member"),
			Arg:    rapid.IntRange(0, n).Draw(rt, "arg"),
		}
	})
}

var propNames = []string{"a", "b", "c"}

// runSteps plays steps and returns the decisions made, one line each,
// failing rt on a broken invariant (1 or 2).
func runSteps(rt *rapid.T, n int, p Params, skews []time.Duration, steps []step) []string {
	e := &env{p: p, out: &strings.Builder{}}
	var skew func(int) time.Duration
	if skews != nil {
		skew = func(i int) time.Duration { return skews[i] }
	}
	e.start(propNames[:n], time.Second, skew)
	for _, m := range e.members {
		m.unlicence = true
	}
	w := &world{e: e, takers: map[uint64]string{}}
	w.moveLicence(0) // a starts licensed and Primary, every member heartbeating
	e.tick(1500*time.Millisecond, false)
	for _, s := range steps {
		w.play(rt, s)
		for _, m := range e.members { // what every live member would decide now
			if e.live(m) {
				w.check(rt, m, e.view(m))
			}
		}
	}
	return w.log
}

type world struct {
	e            *env
	takers       map[uint64]string // epoch → the member that seized or reassigned in it
	freshAtStall map[string]bool
	log          []string
}

func (w *world) play(rt *rapid.T, s step) {
	e, m := w.e, w.e.members[s.Member]
	switch s.Op {
	case "tick":
		e.tick(time.Duration(s.Arg+1)*700*time.Millisecond, false)
	case "decide":
		if e.live(m) {
			w.decide(rt, m)
		}
	case "freeze", "thaw":
		m.frozen = s.Op == "freeze"
	case "kill":
		m.gone = true
	case "drain":
		m.draining = !m.draining
	case "health":
		m.unhealthy = !m.unhealthy
	case "licence":
		w.moveLicence(s.Arg)
	case "view":
		m.views, m.viewSet = w.name(s.Arg), true
	case "stall":
		w.stall()
	case "resume":
		e.stalled, w.freshAtStall = false, nil
	}
}

// name is member i's name, or "" for i == n (nobody).
func (w *world) name(i int) string {
	if i >= len(w.e.members) {
		return ""
	}
	return w.e.members[i].name
}

// moveLicence gives the licence to member i (nobody for i == n): the lease
// store's holder becomes Primary under a new redundancy epoch.
func (w *world) moveLicence(i int) {
	e := w.e
	for j, m := range e.members {
		m.unlicence = j != i
	}
	if name := w.name(i); name != e.primary {
		e.primary = name
		e.epoch++
	}
}

func (w *world) stall() {
	e := w.e
	if e.stalled {
		return
	}
	e.stalled, w.freshAtStall = true, map[string]bool{}
	v := e.view(e.members[0])
	for _, m := range v.Members {
		w.freshAtStall[m.Node] = fresh(m, v.StreamMax, e.p)
	}
}

// decide: m decides and its executor acts.
func (w *world) decide(rt *rapid.T, m *simMember) {
	w.e.apply(m, w.check(rt, m, w.e.view(m)))
}

// check is m's decision on v, logged and held against invariants 1 and 2.
func (w *world) check(rt *rapid.T, m *simMember, v View) Decision {
	e := w.e
	d := Decide(v, e.p)
	w.log = append(w.log, fmt.Sprintf("%s@%s: %s %s from=%s epoch=%d", m.name, e.at().Format("15:04:05.000"), d.Owner, d.Verb, d.From, d.Epoch))
	if d.Verb == VerbSeize || d.Verb == VerbReassign {
		if other, ok := w.takers[d.Epoch]; ok && other != m.name {
			rt.Fatalf("epoch %d: %s and %s both decided to take the address (%s: %s)", d.Epoch, other, m.name, d.Verb, d.Reason)
		}
		w.takers[d.Epoch] = m.name
	}
	if d.Verb == VerbReassign && e.stalled && w.freshAtStall[d.From] {
		h := member(v, d.From)
		if !h.Gone && h.Claims {
			rt.Fatalf("stream stalled: %s reassigned from %s, fresh when the stream stalled and still claiming (%s)", m.name, d.From, d.Reason)
		}
	}
	return d
}
