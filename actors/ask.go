package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrAskTimeout is wrapped by Ask when no answer came in time.
var ErrAskTimeout = errors.New("actors: ask timed out")

// Ask sends msg to pid and waits at most timeout for an answer of type T.
// It blocks the calling goroutine: never call it from inside an actor's
// Receive (use ctx.RequestFuture with PipeTo, or a message, there).
func Ask[T any](root *actor.RootContext, pid *actor.PID, msg any, timeout time.Duration) (T, error) {
	var zero T
	res, err := root.RequestFuture(pid, msg, timeout).Result()
	if errors.Is(err, actor.ErrTimeout) {
		return zero, fmt.Errorf("%w: %v after %v", ErrAskTimeout, pid, timeout)
	}
	if err != nil {
		return zero, fmt.Errorf("actors: ask %v: %w", pid, err)
	}
	v, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("actors: ask %v: answer is %T, want %T", pid, res, zero)
	}
	return v, nil
}
