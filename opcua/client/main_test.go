package client

import (
	"testing"

	"go.uber.org/goleak"
)

// Close must leave no goroutine of the client behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
