package actors_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/wire"
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

// needRemotes skips a test that starts several remotes in this process
// under the race detector: protoactor's remote.Start sets gRPC's global
// logger, a write that races with the gRPC goroutines of remotes already
// running. A real process starts one remote, before any gRPC traffic.
func needRemotes(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("several protoactor remotes in one process race on gRPC's global logger; scripts/test.sh runs this package again without -race")
	}
}

func start(t *testing.T, cfg actors.Config) *actors.System {
	t.Helper()
	needRemotes(t)
	if cfg.BindHost == "" {
		cfg.BindHost = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = freePort(t)
	}
	s, err := actors.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(false) })
	return s
}

// syncBuffer is a log sink safe for protoactor's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUsedPortIsAnErrorNamingClusterPort pins protoactor behaviour (6): a
// port in use panics inside remote.Start; Start returns an error naming
// the key instead, whether the port is taken before the check or between
// the check and protoactor's listen.
func TestUsedPortIsAnErrorNamingClusterPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	_, err = actors.Start(actors.Config{BindHost: "127.0.0.1", Port: port})
	if !errors.Is(err, actors.ErrPortInUse) || !strings.Contains(err.Error(), "Cluster:Port") || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Fatalf("Start on a used port = %v; want ErrPortInUse naming Cluster:Port %d", err, port)
	}

	// protoactor itself panics: the guard is needed
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", port))
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		r.Start()
		return false
	}()
	if !panicked {
		t.Fatal("protoactor's remote.Start no longer panics on a used port; revisit actors.startRemote")
	}
}

// TestSendQueueIsSmall pins protoactor behaviour (4): every peer gets a
// send queue when the first message is sent to it; protoactor's default
// reserves 1,000,000 slots (≈ 16 MB) per peer, ours 64.
func TestSendQueueIsSmall(t *testing.T) {
	heapGrowth := func(cfg actors.Config, peers int) uint64 {
		s := start(t, cfg)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range peers {
			// nothing listens there: the writer keeps its queue while it
			// retries the connection
			s.Root().Send(actors.PID(fmt.Sprintf("127.0.0.1:%d", freePort(t)), "x"), &wire.Heartbeat{})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	}
	small := heapGrowth(actors.Config{}, 8)
	if small > 4<<20 {
		t.Fatalf("8 peers grew the heap by %d bytes; the send queue is not small", small)
	}
	// control: protoactor's default queue is measurable by the same method
	big := heapGrowth(actors.Config{SendQueueSize: 1_000_000}, 1)
	if big < 12<<20 {
		t.Fatalf("control failed: one peer with the default queue grew the heap by only %d bytes", big)
	}
	t.Logf("heap growth: 8 peers with the small queue %d KiB; 1 peer with protoactor's default %d KiB", small>>10, big>>10)
}

func TestRemoteDeliversToProbeAndLogsJSON(t *testing.T) {
	var logs syncBuffer
	debug := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := start(t, actors.Config{Logger: debug})
	b := start(t, actors.Config{})
	p, err := actors.NewProbe(b.Root(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	a.Root().Send(actors.PID(b.Address, "probe"), &wire.Heartbeat{Seq: 42})
	hb, err := actors.ExpectType[*wire.Heartbeat](p, 5*time.Second)
	if err != nil || hb.GetSeq() != 42 {
		t.Fatalf("heartbeat over the remote: %v %v", hb, err)
	}
	var sawProtoactor bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["lib"] == "protoactor" {
			sawProtoactor = true
			if rec["level"] == "INFO" {
				t.Fatalf("protoactor Info line not demoted: %q", line)
			}
		}
	}
	if !sawProtoactor {
		t.Fatalf("no protoactor line reached the handler:\n%s", logs.String())
	}

	// at Info, protoactor's chatter is gone
	var quiet syncBuffer
	start(t, actors.Config{Logger: slog.New(slog.NewJSONHandler(&quiet, nil))})
	if strings.Contains(quiet.String(), "protoactor") {
		t.Fatalf("protoactor Info lines logged at Info:\n%s", quiet.String())
	}
}

func TestAsk(t *testing.T) {
	s := start(t, actors.Config{})
	echo := s.Root().Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if v, ok := ctx.Message().(string); ok && v != "silent" {
			ctx.Respond(v + "!")
		}
	}))
	got, err := actors.Ask[string](s.Root(), echo, "hi", time.Second)
	if err != nil || got != "hi!" {
		t.Fatalf("Ask = %q, %v", got, err)
	}
	if _, err := actors.Ask[string](s.Root(), echo, "silent", 50*time.Millisecond); !errors.Is(err, actors.ErrAskTimeout) {
		t.Fatalf("unanswered ask = %v, want ErrAskTimeout", err)
	}
	if _, err := actors.Ask[int](s.Root(), echo, "hi", time.Second); err == nil || !strings.Contains(err.Error(), "want int") {
		t.Fatalf("wrong answer type = %v", err)
	}
}

// TestShutdownWithDeadPeerIsQuick pins part of protoactor behaviour (3): a
// send to a dead peer leaves a writer sleeping between connection attempts;
// Shutdown(false) does not wait for it, and Shutdown(true) is bounded.
func TestShutdownWithDeadPeerIsQuick(t *testing.T) {
	needRemotes(t)
	for _, graceful := range []bool{false, true} {
		s, err := actors.Start(actors.Config{BindHost: "127.0.0.1", Port: freePort(t), GracefulTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s.Root().Send(actors.PID(fmt.Sprintf("127.0.0.1:%d", freePort(t)), "x"), &wire.Heartbeat{})
		t0 := time.Now()
		s.Shutdown(graceful)
		s.Shutdown(graceful) // idempotent
		limit := 300 * time.Millisecond
		if graceful {
			limit = 1500 * time.Millisecond
		}
		if d := time.Since(t0); d > limit {
			t.Fatalf("Shutdown(%v) with a dead peer took %v, want < %v", graceful, d, limit)
		}
	}
}

func TestSupervisionStrategies(t *testing.T) {
	s := start(t, actors.Config{})
	spawn := func(name string, strategy actor.SupervisorStrategy) *actor.PID {
		pid, err := s.Root().SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
			switch ctx.Message().(type) {
			case int:
				ctx.Respond("alive")
			case string:
				panic("boom")
			}
		}, actor.WithGuardian(strategy)), name)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	restarting := spawn("restarting", actors.DefaultSupervisor())
	stopping := spawn("stopping", actors.StopOnFailure())
	s.Root().Send(restarting, "fail")
	s.Root().Send(stopping, "fail")
	if got, err := actors.Ask[string](s.Root(), restarting, 1, 2*time.Second); err != nil || got != "alive" {
		t.Fatalf("DefaultSupervisor: the failed actor does not answer after its restart: %q %v", got, err)
	}
	poll.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		_, err := actors.Ask[string](s.Root(), stopping, 1, 200*time.Millisecond)
		if errors.Is(err, actor.ErrDeadLetter) {
			return nil // stopped for good
		}
		return fmt.Errorf("StopOnFailure: the failed actor still answers or hangs: %v", err)
	})
}

func TestAliveAnswersUntilShutdown(t *testing.T) {
	sys := actors.NewLocal(nil)
	for range 3 { // the ping actor is spawned once and reused
		if err := sys.Alive(time.Second); err != nil {
			t.Fatalf("Alive on a running system: %v", err)
		}
	}
	sys.Shutdown(false)
	if err := sys.Alive(100 * time.Millisecond); err == nil {
		t.Fatal("Alive after Shutdown returned nil")
	}
}
