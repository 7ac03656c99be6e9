package pubsub_test

// A test over protoactor-go's real remote on loopback: one actor system
// per simulated process, each with its cluster daemon and mediator on
// their default (dial-gated) remote transports.

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/internal/poll"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type proc struct {
	sys *actors.System
	d   *daemon.Daemon
	med *pubsub.Mediator
	log *pubsubtest.LogSink
}

func startProc(t *testing.T, port, seed int) *proc {
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
	cfg.Roles = []string{"admin", "driver"}
	d, err := daemon.Start(daemon.Options{Node: cfg, System: sys, Logger: logger, Linger: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	med, err := pubsub.Start(pubsub.Options{System: sys, Membership: d, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{sys: sys, d: d, med: med, log: sink}
	t.Cleanup(func() {
		med.Stop()
		d.Stop()
		sys.Shutdown(false)
		if t.Failed() {
			t.Logf("--- log of %d ---\n%s", port, sink.String())
		}
	})
	return p
}

// TestOverProtoactorRemote: the registry spreads and a published message
// (a protobuf Any inside the mediator's message) reaches the subscribers
// of both nodes through protoactor's remote and the dial gate.
func TestOverProtoactorRemote(t *testing.T) {
	pa, pb := freePort(t), freePort(t)
	a := startProc(t, pa, pa)
	b := startProc(t, pb, pa)
	poll.CheckFor(t, 15*time.Second, 5*time.Millisecond, poll.True("both Up", func() bool {
		return len(a.d.Snapshot().Gossip.Members) == 2 && len(b.d.Snapshot().Gossip.Members) == 2 &&
			pubsubtest.StatusAtAddr(a.d.Snapshot(), b.d.Self().Address()) == membership.Up &&
			pubsubtest.StatusAtAddr(b.d.Snapshot(), b.d.Self().Address()) == membership.Up
	}))
	var onA, onB inbox
	a.med.Subscribe(pubsub.TopicAlerts, onA.handler)
	b.med.Subscribe(pubsub.TopicAlerts, onB.handler)
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, poll.True("registries spread", func() bool {
		return len(a.med.Registry().Nodes(pubsub.TopicAlerts)) == 2 && len(b.med.Registry().Nodes(pubsub.TopicAlerts)) == 2
	}))
	if err := a.med.Publish(pubsub.TopicAlerts, str("from a")); err != nil {
		t.Fatal(err)
	}
	if err := b.med.Publish(pubsub.TopicAlerts, str("from b")); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, poll.True("both got both", func() bool {
		return onA.has("from a")() && onA.has("from b")() && onB.has("from a")() && onB.has("from b")()
	}))
	if s := b.med.Stats(); s.Invalid != 0 || s.UnknownType != 0 || s.WrongIncarnation != 0 {
		t.Fatalf("b stats %+v", s)
	}
}
