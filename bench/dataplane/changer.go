package main

import (
	"context"
	"time"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/internal/fielddevice"
)

// Rotation is the order in which the changer visits the handles: register
// by register across every device (so each tick touches every device),
// leaving out the write part's tag. Every handle but writeTag appears once.
func Rotation(l fieldrig.Layout) []int {
	out := make([]int, 0, l.Tags())
	for r := range l.PerDevice {
		for d := range l.Devices {
			if h := d*l.PerDevice + r; h != writeTag {
				out = append(out, h)
			}
		}
	}
	return out
}

// changer changes `per` registers of the rotation every `every`: for each
// it asks the Tracker for the value (stamping the time) and writes it into
// the device's register.
type changer struct {
	l     fieldrig.Layout
	devs  []*fielddevice.Device
	k     *Tracker
	order []int
	per   int
	every time.Duration
	next  int // position in order; the changer's goroutine only
}

// run changes registers until ctx ends.
func (c *changer) run(ctx context.Context) { fieldrig.Tick(ctx, c.every, c.step) }

// step makes one tick's changes.
func (c *changer) step() {
	for range c.per {
		h := c.order[c.next]
		c.next = (c.next + 1) % len(c.order)
		d, reg := c.l.Of(h)
		v := c.k.Change(h, time.Now())
		c.devs[d].SetHolding(reg, uint16(v))
	}
}
