package singleton_test

// A hand-over over protoactor-go's real remote on loopback: one actor
// system per simulated process, each with its cluster daemon, mediator
// and singleton manager, on the wall clock.

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/internal/poll"
)

type remoteProc struct {
	d   *daemon.Daemon
	mgr *singleton.Manager
	log *pubsubtest.LogSink
}

// wallInstance counts running instances; its Stop takes real time.
type wallInstance struct {
	mu      *sync.Mutex
	running *int
	maxRun  *int
}

func (i wallInstance) Start(context.Context) {
	i.mu.Lock()
	defer i.mu.Unlock()
	*i.running++
	*i.maxRun = max(*i.maxRun, *i.running)
}

func (i wallInstance) Stop() {
	time.Sleep(50 * time.Millisecond)
	i.mu.Lock()
	defer i.mu.Unlock()
	*i.running--
}

func startRemote(t *testing.T, port, seed int, factory func() singleton.Instance) *remoteProc {
	t.Helper()
	if raceDetector {
		t.Skip("several protoactor remotes in one process race on gRPC's global logger; a real process starts one; scripts/test.sh runs this package again without -race")
	}
	sink := &pubsubtest.LogSink{}
	logger := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sys, err := actors.Start(actors.Config{BindHost: "127.0.0.1", Port: port, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := node.DefaultConfig(membership.UniqueAddress{Host: "127.0.0.1", Port: port, UID: daemon.NewUID()},
		[]membership.Address{{Host: "127.0.0.1", Port: seed}})
	cfg.Roles = []string{"admin"}
	var exits singleton.ExitGroup
	d, err := daemon.Start(daemon.Options{Node: cfg, System: sys, Logger: logger, Linger: 50 * time.Millisecond,
		ExitingTasks: []func(context.Context) error{exits.Task}})
	if err != nil {
		t.Fatal(err)
	}
	med, err := pubsub.Start(pubsub.Options{System: sys, Membership: d, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := singleton.Start(singleton.Options{Daemon: d, Mediator: med, Role: "admin", Name: "redundancy-state",
		Factory: factory, Exit: &exits, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mgr.Stop()
		med.Stop()
		d.Stop()
		sys.Shutdown(false)
		if t.Failed() {
			t.Logf("--- log of %d ---\n%s", port, sink.String())
		}
	})
	return &remoteProc{d: d, mgr: mgr, log: sink}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestHandOverOverProtoactorRemote: the oldest leaves; the singleton moves
// to the other node through HandOverToMe / HandOverDone over the real
// remote, never running on both.
func TestHandOverOverProtoactorRemote(t *testing.T) {
	var mu sync.Mutex
	running, maxRun := 0, 0
	factory := func() singleton.Instance { return wallInstance{&mu, &running, &maxRun} }
	pa, pb := freePort(t), freePort(t)
	a := startRemote(t, pa, pa, factory)
	poll.CheckFor(t, 10*time.Second, time.Millisecond, poll.True("a active", a.mgr.Active))
	b := startRemote(t, pb, pa, factory)
	poll.CheckFor(t, 15*time.Second, time.Millisecond, poll.True("b Up on a", func() bool {
		return pubsubtest.StatusAtAddr(a.d.Snapshot(), b.d.Self().Address()) == membership.Up
	}))
	both := 0
	a.d.Leave()
	poll.CheckFor(t, 15*time.Second, time.Millisecond, poll.True("b active", func() bool {
		if a.mgr.Active() && b.mgr.Active() {
			both++
		}
		return b.mgr.Active()
	}))
	<-a.d.Done()
	mu.Lock()
	defer mu.Unlock()
	if maxRun > 1 || both > 0 {
		t.Fatalf("both ran at once (instances %d, samples %d)", maxRun, both)
	}
	for _, want := range []string{singleton.LogHandedOver} {
		if a.log.Count(want) != 1 {
			t.Fatalf("a's log has %d %q", a.log.Count(want), want)
		}
	}
	if b.log.Count(`"reason":"hand-over"`) != 1 {
		t.Fatalf("b did not start by hand-over:\n%s", b.log.String())
	}
}
