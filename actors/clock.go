package actors

import "github.com/jonboulle/clockwork"

// Clock is the time source every otopcua timer takes, so that tests can
// advance time instead of sleeping (clockwork.NewFakeClock).
type Clock = clockwork.Clock

// RealClock is the wall clock.
func RealClock() Clock { return clockwork.NewRealClock() }
