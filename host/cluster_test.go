package host

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/node"
)

func TestWatchdogExitsWhenShutdownHangs(t *testing.T) {
	codes := make(chan int, 1)
	startWatchdog(10*time.Millisecond, ExitRestart, slog.New(slog.DiscardHandler), func(c int) { codes <- c })
	select {
	case c := <-codes:
		if c != ExitRestart {
			t.Fatalf("exit code %d", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watchdog did not fire")
	}
	stop := startWatchdog(time.Hour, ExitRestart, slog.New(slog.DiscardHandler), func(int) { t.Error("fired after stop") })
	if !stop() {
		t.Fatal("stop must prevent the exit")
	}
}

func TestEndedMapsResultToExitCode(t *testing.T) {
	for _, r := range []node.ShutdownReason{node.ReasonDowned, node.ReasonRemoved, node.ReasonLeft} {
		err := ended(daemon.Result{Reason: r})
		var coded interface{ ExitCode() int }
		if !errors.As(err, &coded) || coded.ExitCode() != ExitRestart || !strings.Contains(err.Error(), r.String()) {
			t.Fatalf("%v: %v", r, err)
		}
	}
	crash := errors.New("boom")
	err := ended(daemon.Result{Err: crash})
	var coded interface{ ExitCode() int }
	if !errors.Is(err, crash) || errors.As(err, &coded) {
		t.Fatalf("a crash is a plain error (exit 1): %v", err)
	}
}
