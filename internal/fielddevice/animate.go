package fielddevice

import (
	"context"
	"time"
)

// Load stores p's initial values.
func (d *Device) Load(p Profile) { d.Apply(p.Initial) }

// Animate stores p.Step(elapsed) at once and then every `every` until ctx
// ends, elapsed being the monotonic time since Animate was called. It does
// not store p's initial values (Load does) and blocks until ctx ends.
func (d *Device) Animate(ctx context.Context, p Profile, every time.Duration) {
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
