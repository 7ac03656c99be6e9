package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	cmap "github.com/orcaman/concurrent-map"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// registryShards is the number of shards of each of the 1,024 buckets of
// protoactor's process registry. concurrent-map's default, 32, makes
// NewActorSystem allocate 32,768 shards (≈ 2.8 MB of heap that every node
// keeps for life); one shard per bucket keeps 1,024 independent locks,
// far more than the few dozen actors of a node ever contend on.
const registryShards = 1

// init sets the shard count before any actor system exists: the library
// reads the package variable on every registry lookup, so it is set once,
// before main, and never again.
func init() { cmap.SHARD_COUNT = registryShards }

// streamWindow is the gRPC flow-control window of the cluster transport,
// per stream and per connection: fixed (see Start), and large enough that
// a burst of cluster messages between two nodes on a LAN never waits for a
// window update (gRPC's estimator grows its window up to 16 MB for
// long-haul bulk transfers, which the cluster transport does not carry).
const streamWindow = 1 << 20

// ErrPortInUse is wrapped by Start when another process holds the cluster
// port.
var ErrPortInUse = errors.New("address already in use")

// Defaults of Config.
const (
	DefaultSendQueueSize   = 64
	DefaultConnectAttempts = 1
	// DefaultGracefulTimeout bounds Shutdown(true); protoactor's own bound
	// is 10 s.
	DefaultGracefulTimeout = 3 * time.Second
)

// Config describes the actor system of one process.
type Config struct {
	// BindHost is the address the remote listens on (Cluster:Hostname),
	// e.g. "0.0.0.0". Required.
	BindHost string
	// Port is the TCP port the remote listens on (Cluster:Port), 1..65535.
	// Required.
	Port int
	// AdvertiseHost is the host peers use to reach this process
	// (Cluster:PublicHostname). Default BindHost.
	AdvertiseHost string
	// AdvertisePort is the port peers use. Default Port; differs only
	// behind a port-forwarding proxy.
	AdvertisePort int
	// Logger receives protoactor's logs. Default: discard.
	Logger *slog.Logger
	// SendQueueSize is the initial number of slots of each peer's send
	// queue (it grows when needed). Default 64.
	SendQueueSize int
	// ConnectAttempts is how often a connection to a peer is tried before
	// protoactor gives up on it (2 s apart). Default 1.
	ConnectAttempts int
	// GracefulTimeout bounds Shutdown(true). Default 3 s.
	GracefulTimeout time.Duration
	// ServerCredentials secure the remote's gRPC server (Cluster:Tls, see
	// package clustertls). Default nil: clear text.
	ServerCredentials credentials.TransportCredentials
	// DialCredentials secure the connections to peers; set both or
	// neither. Default nil: clear text.
	DialCredentials credentials.TransportCredentials
}

func (c Config) withDefaults() Config {
	if c.AdvertiseHost == "" {
		c.AdvertiseHost = c.BindHost
	}
	if c.AdvertisePort == 0 {
		c.AdvertisePort = c.Port
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SendQueueSize <= 0 {
		c.SendQueueSize = DefaultSendQueueSize
	}
	if c.ConnectAttempts <= 0 {
		c.ConnectAttempts = DefaultConnectAttempts
	}
	if c.GracefulTimeout <= 0 {
		c.GracefulTimeout = DefaultGracefulTimeout
	}
	return c
}

// System is a started actor system with its remote.
type System struct {
	// Actor is the protoactor actor system.
	Actor *actor.ActorSystem
	// Remote is its started remote transport.
	Remote *remote.Remote
	// Address is the advertised host:port other processes send to.
	Address string

	cfg  Config
	once sync.Once

	pingOnce sync.Once  // spawns ping
	ping     *actor.PID // Alive's actor
}

// Start creates the actor system and starts the remote on BindHost:Port,
// advertising AdvertiseHost:AdvertisePort. A port held by another process
// returns an error naming Cluster:Port and wrapping ErrPortInUse.
func Start(cfg Config) (*System, error) {
	cfg = cfg.withDefaults()
	if (cfg.ServerCredentials == nil) != (cfg.DialCredentials == nil) {
		return nil, errors.New("actors: ServerCredentials and DialCredentials must be set together")
	}
	if cfg.BindHost == "" || cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("actors: cluster transport needs a bind host and a port 1..65535 (Cluster:Hostname %q, Cluster:Port %d)", cfg.BindHost, cfg.Port)
	}
	if err := CheckPortFree(cfg.BindHost, cfg.Port); err != nil {
		return nil, err
	}
	logger := slog.New(demote{cfg.Logger.Handler()}).With("lib", "protoactor")
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	adv := net.JoinHostPort(cfg.AdvertiseHost, strconv.Itoa(cfg.AdvertisePort))
	rcfg := remote.Configure(cfg.BindHost, cfg.Port,
		remote.WithAdvertisedHost(adv),
		remote.WithEndpointWriterQueueSize(cfg.SendQueueSize),
		remote.WithEndpointManagerQueueSize(cfg.SendQueueSize),
		func(c *remote.Config) { c.MaxRetryCount = cfg.ConnectAttempts },
	)
	if cfg.ServerCredentials != nil {
		rcfg.ServerOptions = append(rcfg.ServerOptions, grpc.Creds(cfg.ServerCredentials))
	}
	if cfg.DialCredentials != nil {
		rcfg.DialOptions = []grpc.DialOption{grpc.WithTransportCredentials(cfg.DialCredentials)}
	}
	// A fixed flow-control window turns off gRPC's bandwidth-delay
	// estimator, which answers each message that arrives on a quiet stream
	// with a PING and its ACK: on an idle pair that doubled the frames
	// between the nodes, each a wake-up of both processes.
	rcfg.ServerOptions = append(rcfg.ServerOptions,
		grpc.InitialWindowSize(streamWindow), grpc.InitialConnWindowSize(streamWindow))
	rcfg.DialOptions = append(rcfg.DialOptions,
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(streamWindow))
	r := remote.NewRemote(sys, rcfg)
	if err := startRemote(r, cfg); err != nil {
		sys.Shutdown()
		return nil, err
	}
	return &System{Actor: sys, Remote: r, Address: adv, cfg: cfg}, nil
}

// NewLocal returns an actor system without a remote, for tests and tools
// that run every actor in one process. Shutdown only stops the actor
// system.
func NewLocal(logger *slog.Logger) *System {
	cfg := Config{Logger: logger}.withDefaults()
	l := slog.New(demote{cfg.Logger.Handler()}).With("lib", "protoactor")
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return l }))
	return &System{Actor: sys, Address: sys.Address(), cfg: cfg}
}

// startRemote turns protoactor's panic on a failed listen (the port was
// taken between the check and the start) into an error.
func startRemote(r *remote.Remote, cfg Config) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = portError(cfg.BindHost, cfg.Port, fmt.Errorf("%v", p))
		}
	}()
	r.Start()
	return nil
}

// CheckPortFree reports whether host:port can be listened on, with an
// error naming Cluster:Port otherwise.
func CheckPortFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return portError(host, port, err)
	}
	return l.Close()
}

func portError(host string, port int, err error) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
		return fmt.Errorf("cluster transport cannot listen on %s (Cluster:Port %d): another process holds the port: %w", addr, port, ErrPortInUse)
	}
	return fmt.Errorf("cluster transport cannot listen on %s (Cluster:Hostname / Cluster:Port %d): %w", addr, port, err)
}

// Root is the actor system's root context.
func (s *System) Root() *actor.RootContext { return s.Actor.Root }

// PID names the actor called name in the process at address (host:port).
func PID(address, name string) *actor.PID { return actor.NewPID(address, name) }

// Shutdown stops the remote and the actor system; later calls do nothing.
// graceful tells peers this process is leaving and waits (at most
// GracefulTimeout) for the transport to drain; pass false when a peer is
// known dead, because protoactor then waits while it retries that peer.
func (s *System) Shutdown(graceful bool) {
	s.once.Do(func() {
		if s.Remote == nil {
			s.Actor.Shutdown()
			return
		}
		if graceful {
			done := make(chan struct{})
			go func() {
				s.Remote.Shutdown(true)
				close(done)
			}()
			t := time.NewTimer(s.cfg.GracefulTimeout)
			select {
			case <-done:
			case <-t.C:
				s.Remote.Shutdown(false)
			}
			t.Stop()
		} else {
			s.Remote.Shutdown(false)
		}
		s.Actor.Shutdown()
	})
}

// demote logs protoactor's Debug and Info records at Debug, and Warn and
// Error as they are: its Info lines (every connection opened) are noise in
// an operator's log.
type demote struct{ h slog.Handler }

func level(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (d demote) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, level(l)) }

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	r.Level = level(r.Level)
	return d.h.Handle(ctx, r)
}

func (d demote) WithAttrs(as []slog.Attr) slog.Handler { return demote{d.h.WithAttrs(as)} }
func (d demote) WithGroup(name string) slog.Handler    { return demote{d.h.WithGroup(name)} }

// livenessPing is the message of Alive's round trip.
type livenessPing struct{}

// Alive reports whether the actor system still dispatches messages: nil
// when a round trip to a small local actor answers within timeout, else
// why not. The actor is spawned on first use and lives as long as the
// system. Safe for concurrent use.
func (s *System) Alive(timeout time.Duration) error {
	if s.Actor.IsStopped() {
		return errors.New("actor system stopped")
	}
	s.pingOnce.Do(func() {
		s.ping = s.Actor.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if _, ok := c.Message().(livenessPing); ok {
				c.Respond(livenessPing{})
			}
		}))
	})
	if _, err := Ask[livenessPing](s.Actor.Root, s.ping, livenessPing{}, timeout); err != nil {
		return fmt.Errorf("actor system did not answer a ping within %v: %w", timeout, err)
	}
	return nil
}
