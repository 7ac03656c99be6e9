package health_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/health"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/pg"
)

// slack covers scheduling and the refused connection on a loaded 2-core
// machine; the bounds themselves come from the probe's timings.
const slack = 500 * time.Millisecond

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// pgProbe starts PostgreSQL, opens it as the Config DB and starts a DbProbe
// with cfg (real clock) whose changes arrive on the returned channel.
func pgProbe(t *testing.T, cfg health.DbProbeConfig) (*pg.Server, *health.DbProbe, <-chan health.DbProbeResult) {
	t.Helper()
	srv := pg.Start(t)
	ctx := context.Background()
	db, err := configdb.Open(ctx, configdb.ProviderPostgres, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	changes := make(chan health.DbProbeResult, 16)
	cfg.OnChange = func(r health.DbProbeResult) { changes <- r }
	cfg.Logger = slog.New(slog.NewTextHandler(tWriter{t}, nil))
	probe, err := health.NewDbProbe(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(probe.Stop) // before db.Close and the server's cleanup
	return srv, probe, changes
}

func nextChange(t *testing.T, changes <-chan health.DbProbeResult, within time.Duration) health.DbProbeResult {
	t.Helper()
	select {
	case r := <-changes:
		return r
	case <-time.After(within):
		t.Fatalf("no change of reachability within %v", within)
		return health.DbProbeResult{}
	}
}

// freshResult waits for a probe result newer than after and returns it.
func freshResult(t *testing.T, probe *health.DbProbe, after time.Time, within time.Duration) health.DbProbeResult {
	t.Helper()
	var r health.DbProbeResult
	poll.CheckFor(t, within, 5*time.Millisecond, poll.True("a probe result", func() bool {
		var ok bool
		r, ok = probe.Last()
		return ok && r.AsOf.After(after)
	}))
	return r
}

// TestDbProbeSeesAPostgresOutage runs the probe with its production timings
// (5 s interval, 2 s timeout) against a real PostgreSQL: reachable → server
// stopped (fast shutdown) → unreachable within interval + timeout →
// restarted → reachable again. The server is stopped right after a
// successful probe, the worst moment, so the detection time shows the bound.
func TestDbProbeSeesAPostgresOutage(t *testing.T) {
	t.Parallel()
	srv, probe, changes := pgProbe(t, health.DbProbeConfig{})
	cfg := probe.Config()
	bound := cfg.Interval + cfg.Timeout

	if r := nextChange(t, changes, 10*time.Second); !r.Reachable {
		t.Fatalf("first result = %+v, want reachable", r)
	}
	// Wait for the next regular probe, then stop the server at once.
	first, _ := probe.Last()
	ok := freshResult(t, probe, first.AsOf, cfg.Interval+slack)
	if !ok.Reachable {
		t.Fatalf("probe on a running server = %+v", ok)
	}
	stoppedAt := time.Now()
	srv.Stop()
	down := nextChange(t, changes, bound+2*slack)
	detected := down.AsOf.Sub(stoppedAt)
	if down.Reachable || down.Err == "" {
		t.Fatalf("change after the stop = %+v, want unreachable with a reason", down)
	}
	if detected > bound+slack {
		t.Fatalf("outage detected after %v, want within interval + timeout = %v", detected, bound)
	}
	if last, _ := probe.Last(); last.Reachable {
		t.Fatalf("Last() = %+v after the outage was reported", last)
	}
	t.Logf("outage detected %v after the server stopped (stopped %v after a successful probe; bound %v): %s",
		detected.Round(time.Millisecond), stoppedAt.Sub(ok.AsOf).Round(time.Millisecond), bound, down.Err)

	srv.Start() // returns once the server answers
	backAt := time.Now()
	up := nextChange(t, changes, bound+2*slack)
	if !up.Reachable || up.Err != "" {
		t.Fatalf("change after the restart = %+v, want reachable", up)
	}
	recovered := up.AsOf.Sub(backAt)
	if recovered > cfg.Interval+slack {
		t.Fatalf("recovery seen after %v, want within the interval %v", recovered, cfg.Interval)
	}
	t.Logf("recovery seen %v after the server answered again (bound %v)", recovered.Round(time.Millisecond), cfg.Interval)
}

// TestDbProbeSeesAHungPostgres freezes the server (SIGSTOP: connections stay
// open, nothing answers): the probe's timeout, not a refused connection, must
// report the outage, and the probe must pick the server up after a thaw.
// Shorter timings keep the test quick; the bounds scale with them.
func TestDbProbeSeesAHungPostgres(t *testing.T) {
	t.Parallel()
	srv, probe, changes := pgProbe(t, health.DbProbeConfig{Interval: time.Second, Timeout: 500 * time.Millisecond})
	cfg := probe.Config()
	if r := nextChange(t, changes, 10*time.Second); !r.Reachable {
		t.Fatalf("first result = %+v, want reachable", r)
	}
	frozenAt := time.Now()
	srv.Freeze()
	down := nextChange(t, changes, cfg.Interval+cfg.Timeout+2*slack)
	detected := down.AsOf.Sub(frozenAt)
	if down.Reachable || !strings.Contains(down.Err, "no answer within 500ms") {
		t.Fatalf("change after the freeze = %+v, want unreachable by timeout", down)
	}
	if detected < cfg.Timeout || detected > cfg.Interval+cfg.Timeout+slack {
		t.Fatalf("hang detected after %v, want between the timeout %v and interval + timeout %v",
			detected, cfg.Timeout, cfg.Interval+cfg.Timeout)
	}
	t.Logf("hung server detected %v after the freeze (bound %v)", detected.Round(time.Millisecond), cfg.Interval+cfg.Timeout)

	srv.Thaw()
	thawedAt := time.Now()
	up := nextChange(t, changes, 2*cfg.Interval+cfg.Timeout+2*slack)
	if !up.Reachable {
		t.Fatalf("change after the thaw = %+v, want reachable", up)
	}
	t.Logf("recovery seen %v after the thaw", up.AsOf.Sub(thawedAt).Round(time.Millisecond))
}
