package client

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
)

// A server that drops every connection is retried with a doubling
// back-off capped at MaxBackoff, on the client's clock.
func TestReconnectBackoffDoublesUpToTheCap(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250}, "urn:a")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var attempts atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			attempts.Add(1)
			c.Close()
		}
	}()
	clock := clockwork.NewFakeClock()
	c := dial(t, nil, Options{URLs: []string{set["urn:a"].EndpointURL(), "opc.tcp://" + l.Addr().String()},
		Clock: clock, MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	if c.Active().URI != "urn:a" {
		t.Fatalf("active %+v", c.Active())
	}
	// attemptsAfter advances the clock by d once the failing loop waits
	// on it, and returns the attempts counted once things settle.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want := int32(1)
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("the first attempt", func() bool { return attempts.Load() == want }))
	// Waits before attempt 2, 3, 4, 5, 6: 100, 200, 400, 400, 400 ms.
	for i, wait := range []time.Duration{100, 200, 400, 400, 400} {
		wait *= time.Millisecond
		// The loop sleeps on the clock (the watchdog ticker of urn:a's conn
		// is the other sleeper).
		if err := clock.BlockUntilContext(ctx, 2); err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait - time.Millisecond)
		// The barrier: a retry this advance fired leaves one sleeper (the
		// watchdog) until the loop has made its attempt and sleeps again,
		// so once there are two sleepers again an early retry is counted.
		if err := clock.BlockUntilContext(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if got := attempts.Load(); got != want {
			t.Fatalf("wait %d: %d attempts %v into a %v back-off, want %d", i, got, wait-time.Millisecond, wait, want)
		}
		clock.Advance(time.Millisecond)
		want++
		poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("the next attempt", func() bool { return attempts.Load() == want }))
	}
}
