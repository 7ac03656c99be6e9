package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
)

// bcryptTimeout bounds a password check (a cost-12 bcrypt on a busy
// machine) and the HTTP requests.
const bcryptTimeout = 30 * time.Second

// probe is one check of the well-behaved side, repeated every `every`
// during the abuse from 127.0.0.1: do returns the outcome, which must be
// want, within `within` when that is above 0.
type probe struct {
	name   string
	every  time.Duration
	want   string
	within time.Duration
	do     func(ctx context.Context) string
}

// ProbeFigures are how one probe of the well-behaved side went.
type ProbeFigures struct {
	Name     string         `json:"name"`
	Want     string         `json:"want"`
	WithinNS time.Duration  `json:"within_ns,omitempty"`
	Attempts int            `json:"attempts"`
	Passed   int            `json:"passed"` // want, and within when set
	Slow     int            `json:"slow"`   // want, but later than within
	Outcomes []OutcomeCount `json:"outcomes"`
	P50      time.Duration  `json:"p50_ns"`
	P99      time.Duration  `json:"p99_ns"`
	Max      time.Duration  `json:"max_ns"`
}

// String renders one probe on one line.
func (f ProbeFigures) String() string {
	limit := ""
	if f.WithinNS > 0 {
		limit = fmt.Sprintf(" within %s", msText(f.WithinNS))
	}
	return fmt.Sprintf("%-34s %4d attempts, %4d %s%s; p50 %.0f ms, p99 %.0f ms, max %.0f ms; %s",
		f.Name, f.Attempts, f.Passed, f.Want, limit, ms(f.P50), ms(f.P99), ms(f.Max), AbuserCount{Outcomes: f.Outcomes}.outcomes())
}

// runProbes runs every probe until ctx ends and returns their figures, in
// the order of ps.
func runProbes(ctx context.Context, ps []probe) []ProbeFigures {
	out := make([]ProbeFigures, len(ps))
	var wg sync.WaitGroup
	for k, p := range ps {
		wg.Go(func() { out[k] = p.run(ctx) })
	}
	wg.Wait()
	return out
}

// run repeats the probe every p.every until ctx ends; an attempt the end
// of ctx interrupted is not counted.
func (p probe) run(ctx context.Context) ProbeFigures {
	f := ProbeFigures{Name: p.name, Want: p.want, WithinNS: p.within}
	h := measure.NewHistogram(time.Millisecond, histogramLimit)
	t := NewTally()
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		start := time.Now()
		got := p.do(ctx)
		took := time.Since(start)
		if ended(ctx) {
			break
		}
		f.Attempts++
		h.Add(took)
		t.Saw(p.name, got)
		switch {
		case got != p.want:
		case p.within > 0 && took > p.within:
			f.Slow++
		default:
			f.Passed++
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
	if c := t.Counts(); len(c) == 1 {
		f.Outcomes = c[0].Outcomes
	}
	f.P50, f.P99, f.Max = h.Quantile(0.5), h.Quantile(0.99), h.Max()
	return f
}
