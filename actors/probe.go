package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Probe is a test actor that records every user message it receives, for
// tests that check what an actor sent, including over the remote.
type Probe struct {
	// PID of the probe actor.
	PID *actor.PID
	ch  chan any
}

// NewProbe spawns a probe called name in root's system; it buffers up to
// 1024 messages (more are dropped).
func NewProbe(root *actor.RootContext, name string) (*Probe, error) {
	p := &Probe{ch: make(chan any, 1024)}
	pid, err := root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage:
			return
		}
		select {
		case p.ch <- ctx.Message():
		default:
		}
	}), name)
	if err != nil {
		return nil, fmt.Errorf("actors: probe %q: %w", name, err)
	}
	p.PID = pid
	return p, nil
}

// Receive waits at most timeout for the next message.
func (p *Probe) Receive(timeout time.Duration) (any, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case msg := <-p.ch:
		return msg, nil
	case <-t.C:
		return nil, fmt.Errorf("actors: probe %v: no message within %v", p.PID, timeout)
	}
}

// ExpectType waits at most timeout for a message of type T, skipping others.
func ExpectType[T any](p *Probe, timeout time.Duration) (T, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			var zero T
			return zero, fmt.Errorf("actors: probe %v: no %T within %v", p.PID, zero, timeout)
		}
		msg, err := p.Receive(left)
		if err != nil {
			var zero T
			return zero, fmt.Errorf("actors: probe %v: no %T within %v", p.PID, zero, timeout)
		}
		if v, ok := msg.(T); ok {
			return v, nil
		}
	}
}
