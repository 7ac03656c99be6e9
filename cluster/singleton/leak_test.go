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
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}
