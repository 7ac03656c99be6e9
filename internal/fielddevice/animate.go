package fielddevice

import (
	"context"
	"sync"
	"time"
)

// Load stores p's initial values.
func (d *Device) Load(p Profile) { d.Apply(p.Initial) }

// Animate stores p.Step(elapsed) at once and then every `every` until ctx
// ends, elapsed being the monotonic time since Animate was called, and runs
// p's Counters (RunCounter). It does not store p's initial values (Load
// does) and blocks until ctx ends.
func (d *Device) Animate(ctx context.Context, p Profile, every time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range p.Counters {
		wg.Go(func() { d.RunCounter(ctx, c.Address, c.Period) })
	}
	start := time.Now()
	d.Apply(p.Step(0))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.Apply(p.Step(now.Sub(start)))
		}
	}
}

// RunCounter stores 0 into input register addr and then adds exactly one
// (wrapping from 65535 to 0) every period until ctx ends: a late tick
// delays the next value, it never skips one. It blocks until ctx ends.
func (d *Device) RunCounter(ctx context.Context, addr uint16, period time.Duration) {
	var n uint16
	d.SetInput(addr, n)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n++
			d.SetInput(addr, n)
		}
	}
}

// Input reads back input register addr.
func (d *Device) Input(addr uint16) uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.input[addr]
}
