package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// StallBounds are the limits of the injected scheduling stalls.
type StallBounds struct {
	// MinStall and MaxStall bound one SIGSTOP…SIGCONT burst. Defaults 10 ms
	// and 200 ms.
	MinStall, MaxStall time.Duration
	// MinGap and MaxGap bound the running time between two stalls.
	// Defaults 250 ms and 2.5 s.
	MinGap, MaxGap time.Duration
}

// DefaultStallBounds are the 10–200 ms stalls at random intervals.
var DefaultStallBounds = StallBounds{
	MinStall: 10 * time.Millisecond, MaxStall: 200 * time.Millisecond,
	MinGap: 250 * time.Millisecond, MaxGap: 2500 * time.Millisecond,
}

// Capped returns b with MaxStall lowered, when needed, to half of the
// node's acceptable heartbeat pause (and MinStall to at most MaxStall): an
// injected stall plus the harness's own lateness under load stays shorter
// than the pause, so a stall alone never justifies a suspicion.
func (b StallBounds) Capped(pause time.Duration) StallBounds {
	if limit := pause / 2; b.MaxStall > limit {
		b.MaxStall = limit
	}
	b.MinStall = min(b.MinStall, b.MaxStall)
	return b
}

// Validate names the first bound that is out of order.
func (b StallBounds) Validate() error {
	switch {
	case b.MinStall <= 0 || b.MaxStall < b.MinStall:
		return fmt.Errorf("stalls %v…%v: want 0 < min ≤ max", b.MinStall, b.MaxStall)
	case b.MinGap <= 0 || b.MaxGap < b.MinGap:
		return fmt.Errorf("gaps %v…%v: want 0 < min ≤ max", b.MinGap, b.MaxGap)
	}
	return nil
}

// Stall is one planned burst: run for Gap, then stop the node for Stop.
type Stall struct {
	Gap, Stop time.Duration
}

// Plan is the seeded sequence of stalls: the same seed and bounds give the
// same sequence, so a run is reproducible from its printed seed. Not safe
// for concurrent use.
type Plan struct {
	b   StallBounds
	rng *rand.Rand
}

// NewPlan returns the plan of seed within b.
func NewPlan(seed uint64, b StallBounds) *Plan {
	return &Plan{b: b, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Next is the next stall of the plan, each duration drawn uniformly within
// its bounds at millisecond resolution.
func (p *Plan) Next() Stall {
	return Stall{Gap: p.between(p.b.MinGap, p.b.MaxGap), Stop: p.between(p.b.MinStall, p.b.MaxStall)}
}

func (p *Plan) between(lo, hi time.Duration) time.Duration {
	span := int64((hi - lo) / time.Millisecond)
	if span <= 0 {
		return lo
	}
	return lo + time.Duration(p.rng.Int64N(span+1))*time.Millisecond
}
