package client

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The selection rule is a pure function of what the client knows of each
// server at one instant, plus the times other servers started to outrank
// the active one (Selector keeps those). It imports time only for the
// values it is given; it reads no clock.

// HealthyMin is the lowest ServiceLevel of the Healthy band (Part 5
// §6.3.34: 0 Maintenance, 1 NoData, 2–199 Degraded, 200–255 Healthy).
const HealthyMin = 200

// Candidate is one server as the selection rule sees it.
type Candidate struct {
	// ID tells servers apart (the client uses the ApplicationUri, or the
	// URL before the first contact).
	ID string
	// Order is the preference order: on equal rank the lower one wins.
	Order int
	// Up: the client holds a working session to it.
	Up bool
	// Level is its last ServiceLevel; LevelKnown is false until one came.
	Level      byte
	LevelKnown bool
}

// Reason says why a Decision moves the client.
type Reason int

const (
	// Stay: keep the active server.
	Stay Reason = iota
	// Initial: no server was active yet.
	Initial
	// Lost: the active server's connection is gone.
	Lost
	// LeftBand: the active server's level is below the Healthy band (or 0,
	// Maintenance) and another server is higher.
	LeftBand
	// Outranked: another server held a strictly higher level for the hold.
	Outranked
	// NoneReachable: no server is up; the client has nowhere to go.
	NoneReachable
)

func (r Reason) String() string {
	switch r {
	case Stay:
		return "stay"
	case Initial:
		return "initial"
	case Lost:
		return "lost"
	case LeftBand:
		return "left healthy band"
	case Outranked:
		return "outranked"
	case NoneReachable:
		return "none reachable"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Decision is what the client should do now.
type Decision struct {
	Reason Reason
	// To is the server to make active (Initial, Lost, LeftBand,
	// Outranked); "" otherwise.
	To string
	// Wake is the earliest instant at which the decision can change with
	// no new input (a hold running out); zero when none is running.
	Wake time.Time
}

// Move reports whether the decision changes the active server.
func (d Decision) Move() bool { return d.To != "" }

// Selector applies the selection rule. It remembers, per other server,
// since when it has held a strictly higher level than the active one.
// Not safe for concurrent use.
type Selector struct {
	// Hold is how long another server must outrank a healthy active
	// server before the client moves (PreferHold).
	Hold time.Duration

	active      string
	higherSince map[string]time.Time
}

// rank orders candidates best first: a known level above 0 by level, then
// servers whose level is not known yet, then level 0 (Maintenance); then
// by Order.
func rank(a, b Candidate) int {
	tier := func(c Candidate) int {
		switch {
		case !c.LevelKnown:
			return 1
		case c.Level == 0:
			return 2
		}
		return 0
	}
	if ta, tb := tier(a), tier(b); ta != tb {
		return cmp.Compare(ta, tb)
	}
	if a.Level != b.Level {
		return cmp.Compare(b.Level, a.Level)
	}
	return cmp.Compare(a.Order, b.Order)
}

// best is the best up candidate for which ok holds, or false.
func best(cands []Candidate, ok func(Candidate) bool) (Candidate, bool) {
	var up []Candidate
	for _, c := range cands {
		if c.Up && ok(c) {
			up = append(up, c)
		}
	}
	if len(up) == 0 {
		return Candidate{}, false
	}
	return slices.MinFunc(up, rank), true
}

// Decide returns what to do at now, given that active ("" for none) is
// the active server and cands every server of the set. A decision that
// moves makes To the active server for the following calls.
func (s *Selector) Decide(now time.Time, active string, cands []Candidate) Decision {
	if active != s.active {
		s.active = active
		clear(s.higherSince)
	}
	if s.higherSince == nil {
		s.higherSince = make(map[string]time.Time)
	}
	cur, found := Candidate{}, false
	for _, c := range cands {
		if c.ID == active {
			cur, found = c, true
		}
	}
	others := func(c Candidate) bool { return c.ID != active }
	if active == "" || !found || !cur.Up {
		reason := Lost
		if active == "" {
			reason = Initial
		}
		b, ok := best(cands, others)
		if !ok {
			s.moveTo("")
			return Decision{Reason: NoneReachable}
		}
		s.moveTo(b.ID)
		return Decision{Reason: reason, To: b.ID}
	}
	if !cur.LevelKnown {
		// Nothing to compare with: the active server stays until lost.
		clear(s.higherSince)
		return Decision{Reason: Stay}
	}
	higher := func(c Candidate) bool { return others(c) && c.LevelKnown && c.Level > cur.Level }
	if cur.Level < HealthyMin {
		if b, ok := best(cands, higher); ok {
			s.moveTo(b.ID)
			return Decision{Reason: LeftBand, To: b.ID}
		}
	}
	// Track since when each other server has outranked the active one.
	for _, c := range cands {
		if c.Up && higher(c) {
			if _, ok := s.higherSince[c.ID]; !ok {
				s.higherSince[c.ID] = now
			}
		} else {
			delete(s.higherSince, c.ID)
		}
	}
	held := func(c Candidate) bool {
		since, ok := s.higherSince[c.ID]
		return ok && higher(c) && now.Sub(since) >= s.Hold
	}
	if b, ok := best(cands, held); ok {
		s.moveTo(b.ID)
		return Decision{Reason: Outranked, To: b.ID}
	}
	var wake time.Time
	for _, since := range s.higherSince {
		if w := since.Add(s.Hold); wake.IsZero() || w.Before(wake) {
			wake = w
		}
	}
	return Decision{Reason: Stay, Wake: wake}
}

func (s *Selector) moveTo(id string) {
	s.active = id
	clear(s.higherSince)
}
