package client

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// set parses a fake server set: "a=250 b=240 c=down d=?" — order is the
// preference order, "down" is unreachable, "?" up with no level yet.
func set(t testing.TB, s string) []Candidate {
	t.Helper()
	var out []Candidate
	for i, f := range strings.Fields(s) {
		id, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("bad candidate %q", f)
		}
		c := Candidate{ID: id, Order: i, Up: true}
		switch v {
		case "down":
			c.Up = false
		case "?":
		default:
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("bad level %q", f)
			}
			c.Level, c.LevelKnown = byte(n), true
		}
		out = append(out, c)
	}
	return out
}

// step is one call to Decide: at seconds after t0, with the active server
// the Selector last moved to (or the scenario's start), want "stay",
// "stay wake=N" (N seconds after t0), "none", or "<reason> -> <id>".
type step struct {
	at   float64
	set  string
	want string
}

func describe(t0 time.Time, d Decision) string {
	switch {
	case d.Reason == NoneReachable:
		return "none"
	case d.Move():
		return fmt.Sprintf("%s -> %s", d.Reason, d.To)
	case !d.Wake.IsZero():
		return fmt.Sprintf("stay wake=%g", d.Wake.Sub(t0).Seconds())
	}
	return "stay"
}

func TestSelectorScenarios(t *testing.T) {
	const hold = 5 * time.Second
	for _, tc := range []struct {
		name   string
		active string
		steps  []step
	}{
		{"initial picks the highest level", "", []step{
			{0, "a=240 b=250", "initial -> b"},
			{1, "a=240 b=250", "stay"},
		}},
		{"initial ties go to the first URL", "", []step{{0, "a=240 b=240", "initial -> a"}}},
		{"initial avoids maintenance and prefers a known level", "", []step{
			{0, "a=0 b=? c=100", "initial -> c"},
		}},
		{"initial takes an unknown level before maintenance", "", []step{{0, "a=0 b=?", "initial -> b"}}},
		{"initial with nothing up", "", []step{{0, "a=down b=down", "none"}}},
		{"initial takes maintenance when it is all there is", "", []step{{0, "a=0 b=down", "initial -> a"}}},
		{"loss moves at once to the best other", "a", []step{
			{0, "a=250 b=240 c=200", "stay"},
			{1, "a=down b=240 c=200", "lost -> b"},
		}},
		{"loss moves even to a lower server and out of the band", "a", []step{
			{0, "a=down b=100", "lost -> b"},
		}},
		{"loss with no other server", "a", []step{{0, "a=down b=down", "none"}}},
		{"a lower healthy server never draws the client", "a", []step{
			{0, "a=250 b=240", "stay"},
			{60, "a=250 b=240", "stay"},
		}},
		{"healthy active: an outranking server must hold for the hold time", "b", []step{
			{0, "a=250 b=240", "stay wake=5"},
			{4.9, "a=250 b=240", "stay wake=5"},
			{5, "a=250 b=240", "outranked -> a"},
			{6, "a=250 b=240", "stay"},
		}},
		{"a blip shorter than the hold restarts it", "b", []step{
			{0, "a=250 b=240", "stay wake=5"},
			{3, "a=240 b=240", "stay"},
			{4, "a=250 b=240", "stay wake=9"},
			{8.9, "a=250 b=240", "stay wake=9"},
			{9, "a=250 b=240", "outranked -> a"},
		}},
		{"the outranking server going down resets its hold", "b", []step{
			{0, "a=250 b=240", "stay wake=5"},
			{2, "a=down b=240", "stay"},
			{3, "a=250 b=240", "stay wake=8"},
		}},
		{"a healthy active at 200 still waits for the hold", "a", []step{
			{0, "a=200 b=240", "stay wake=5"},
			{5, "a=200 b=240", "outranked -> b"},
		}},
		{"leaving the band moves at once to a higher server", "a", []step{
			{0, "a=250 b=240", "stay"},
			{1, "a=100 b=240", "left healthy band -> b"},
		}},
		{"maintenance moves at once", "a", []step{{0, "a=0 b=1", "left healthy band -> b"}}},
		{"out of the band but nobody higher: stay", "a", []step{
			{0, "a=100 b=100 c=down", "stay"},
			{1, "a=100 b=? c=down", "stay"},
		}},
		{"out of the band, the best of the higher ones", "a", []step{
			{0, "a=100 b=150 c=240 d=240", "left healthy band -> c"},
		}},
		{"hold picks the best of those that held", "c", []step{
			{0, "a=245 b=250 c=240", "stay wake=5"},
			{2, "a=250 b=250 c=240", "stay wake=5"},
			{5, "a=250 b=250 c=240", "outranked -> a"},
		}},
		{"unknown active level: stay until lost", "a", []step{
			{0, "a=? b=250", "stay"},
			{10, "a=? b=250", "stay"},
		}},
		{"an up server with no level is not a target", "a", []step{
			{0, "a=100 b=?", "stay"},
		}},
		{"the active one missing from the set counts as lost", "x", []step{
			{0, "a=200 b=250", "lost -> b"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Selector{Hold: hold}
			t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			active := tc.active
			for i, st := range tc.steps {
				now := t0.Add(time.Duration(st.at * float64(time.Second)))
				d := s.Decide(now, active, set(t, st.set))
				if got := describe(t0, d); got != st.want {
					t.Fatalf("step %d (t=%gs, %s, active %q): got %q, want %q", i, st.at, st.set, active, got, st.want)
				}
				if d.Move() {
					active = d.To
				} else if d.Reason == NoneReachable {
					active = ""
				}
			}
		})
	}
}

// TestSelectorProperties checks the rule against its definition on random
// server sets and random histories.
func TestSelectorProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		hold := time.Duration(rapid.IntRange(0, 10).Draw(rt, "hold")) * time.Second
		s := &Selector{Hold: hold}
		ids := []string{"a", "b", "c"}
		now := time.Unix(0, 0)
		active := ""
		for range rapid.IntRange(1, 30).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 4000).Draw(rt, "dt")) * time.Millisecond)
			var cands []Candidate
			for i, id := range ids {
				c := Candidate{ID: id, Order: i, Up: rapid.Bool().Draw(rt, id+".up")}
				if rapid.IntRange(0, 5).Draw(rt, id+".known") > 0 {
					c.LevelKnown = true
					c.Level = rapid.SampledFrom([]byte{0, 1, 100, 199, 200, 240, 250, 255}).Draw(rt, id+".level")
				}
				cands = append(cands, c)
			}
			d := s.Decide(now, active, cands)
			byID := map[string]Candidate{}
			anyUp := false
			for _, c := range cands {
				byID[c.ID] = c
				anyUp = anyUp || c.Up
			}
			cur, curOK := byID[active]
			curUp := curOK && cur.Up
			switch {
			case d.Reason == NoneReachable:
				if anyUp && !curUp {
					rt.Fatalf("none reachable with a server up: %+v", cands)
				}
			case d.Move():
				to := byID[d.To]
				if !to.Up || d.To == active {
					rt.Fatalf("moved to %q (up %v) from %q", d.To, to.Up, active)
				}
				if curUp && d.Reason != LeftBand && d.Reason != Outranked {
					rt.Fatalf("left an up server for reason %v", d.Reason)
				}
				if curUp && !(to.LevelKnown && cur.LevelKnown && to.Level > cur.Level) {
					rt.Fatalf("left up %+v for %+v, which is not higher", cur, to)
				}
				if d.Reason == LeftBand && cur.Level >= HealthyMin {
					rt.Fatalf("left-band move from a healthy level %d", cur.Level)
				}
				// No up server ranks strictly better than the chosen one among
				// those the rule could pick (for Lost and Initial: all).
				if !curUp {
					for _, c := range cands {
						if c.Up && c.ID != active && rank(c, to) < 0 {
							rt.Fatalf("picked %+v over better %+v", to, c)
						}
					}
				}
				active = d.To
			default:
				if !curUp {
					rt.Fatalf("stayed on a server that is not up: %+v", cur)
				}
			}
			if d.Reason == NoneReachable {
				active = ""
			}
		}
	})
}
