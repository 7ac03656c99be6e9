package singleton_test

import (
	"testing"

	"go.uber.org/goleak"
)

// noLeaks fails t when goroutines started during it outlive its cleanup
// (registered first, so it runs after every other cleanup).
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	// protoactor's dead-letter throttle keeps a timer goroutine for its
	// throttle period after a dead letter; it ends on its own.
	t.Cleanup(func() {
		goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	})
}
