// Package actorstest holds test helpers for code built on the actors
// package.
package actorstest

import (
	"testing"

	"go.uber.org/goleak"
)

// NoLeaks fails t when goroutines started during it outlive its cleanup.
// Call it first in the test, so that its cleanup runs after every other.
func NoLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	// protoactor's dead-letter throttle keeps a timer goroutine for its
	// throttle period after a dead letter; it ends on its own.
	t.Cleanup(func() {
		goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	})
}
