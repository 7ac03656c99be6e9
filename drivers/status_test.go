package drivers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gopcua/opcua/ua"
)

func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ua.StatusCode
	}{
		{nil, ua.StatusGood},
		{fmt.Errorf("x: %w", ErrUnknownTag), ua.StatusBadNodeIDUnknown},
		{fmt.Errorf("x: %w", ErrNotWritable), ua.StatusBadNotWritable},
		{fmt.Errorf("x: %w", ErrTypeMismatch), ua.StatusBadTypeMismatch},
		{fmt.Errorf("x: %w", ErrOutOfRange), ua.StatusBadOutOfRange},
		{fmt.Errorf("x: %w", ErrNotConnected), ua.StatusBadCommunicationError},
		{fmt.Errorf("x: %w", ErrCommunication), ua.StatusBadCommunicationError},
		{ErrClosed, ua.StatusBadShutdown},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), ua.StatusBadTimeout},
		{context.Canceled, ua.StatusBadRequestCancelledByClient},
		{fmt.Errorf("w: %w", &StatusError{Code: ua.StatusBadDeviceFailure, Err: errors.New("busy")}), ua.StatusBadDeviceFailure},
		{errors.New("something else"), ua.StatusBadInternalError},
	} {
		if got := StatusOf(c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
