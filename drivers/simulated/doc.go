// Package simulated is the simulated driver (drivers.Driver) of the demo and
// the tests: each tag follows a signal computed from the injected clock —
// ramp, sine, square, random walk or constant, shaped by the tag's period,
// min and max (Signal, Walk) — so its values are deterministic given the
// clock and a seed. A writable tag, once written, holds the written value.
//
// Periodic signals take their phase from the Unix epoch, so both nodes of a
// pair serve the same value at the same instant; a random walk starts when
// its driver is made, so two nodes' walks differ unless they start together.
package simulated
