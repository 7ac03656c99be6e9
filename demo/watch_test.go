package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua"
)

// The watcher reports every level change and a loss once, and Read
// answers ErrNotConnected at once after the loss (the drills' sampler
// reads every node every 50 ms and must not wait for a dead one).
func TestWatcherReportsChangesAndLoss(t *testing.T) {
	s, err := opcua.New(opcua.Config{ListenHost: "127.0.0.1", PublicHostname: "127.0.0.1", Port: opcua.AnyPort,
		ApplicationURI: "urn:w", Clock: clockwork.NewRealClock(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetServiceLevel(240)
	var mu sync.Mutex
	var got []Reading
	w := Watch(context.Background(), s.EndpointURL(), WatchOptions{RetryEvery: 50 * time.Millisecond}, func(r Reading) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	})
	defer w.Close()
	waitLevel := func(want byte) {
		t.Helper()
		poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			if r := w.Current(); !r.Known || r.Level != want {
				return fmt.Errorf("watcher at %v, want %d", r, want)
			}
			return nil
		})
	}
	waitLevel(240)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if b, err := w.Read(ctx); err != nil || b != 240 {
		t.Fatalf("Read: %d %v", b, err)
	}
	s.SetServiceLevel(250)
	waitLevel(250)
	s.Close()
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("the loss is reported", func() bool { return !w.Current().Known }))
	if _, err := w.Read(ctx); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Read after the loss: %v, want ErrNotConnected at once", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0].Level != 240 || got[1].Level != 250 || got[2].Known {
		t.Fatalf("readings %v, want 240, 250, unknown", got)
	}
}
