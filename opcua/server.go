package opcua

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// InitialServiceLevel is Server.ServiceLevel from New until the first
// SetServiceLevel: the value OPC UA SDKs start with. The redundancy layer
// publishes its first computed value at once, so a node never lingers here.
const InitialServiceLevel byte = 255

// currentTimeTick is how often Server.ServerStatus.CurrentTime and the
// ServerDiagnostics counts are pushed to subscribers. Reads always return
// the values at the time of the read.
const currentTimeTick = time.Second

// Server is otopcua's OPC UA server: an address space with the Server object
// filled in (ServiceLevel, ServerArray, ServerStatus, ServerCapabilities,
// ServerDiagnostics, ServerRedundancy as NonTransparentRedundancyType), the
// subscription engine and the opc.tcp service layer. Create it with New,
// fill the address space, Start it, Close it. All methods are safe for
// concurrent use.
type Server struct {
	cfg    Config
	log    *slog.Logger
	clock  clockwork.Clock
	space  *addrspace.AddressSpace
	engine *subscription.Engine
	ua     *uaserver.Server
	nodes  serverNodes
	diag   diagnostics

	mu      sync.Mutex            // orders ServiceLevel and RedundantServerArray updates
	level   byte                  // mu must be held.
	peers   map[string]peerStatus // by ApplicationURI; mu must be held.
	start   time.Time             // StartTime; mu must be held.
	state   ua.ServerState        // mu must be held.
	started bool                  // mu must be held.
	closed  bool                  // mu must be held.
	stop    chan struct{}         // closed by Close to end the ticker; mu must be held.
	done    chan struct{}         // closed when the ticker goroutine returns
	once    sync.Once             // Close
}

// peerStatus is what SetPeerStatus last said about a peer.
type peerStatus struct {
	level byte
	state ua.ServerState
}

// serverNodes are the handles of the Server object's variables this package
// keeps current.
type serverNodes struct {
	serviceLevel     *addrspace.Variable
	serverStatus     *addrspace.Variable
	startTime        *addrspace.Variable
	currentTime      *addrspace.Variable
	state            *addrspace.Variable
	redundantServers *addrspace.Variable
}

// New builds the address space, the subscription engine and the service
// layer. It does not touch the network; Start does.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	space := addrspace.New(addrspace.Options{Clock: cfg.Clock})
	if ns := space.AddNamespace(cfg.ApplicationURI); ns != 1 {
		panic(fmt.Sprintf("opcua: the server's namespace got index %d, want 1", ns))
	}
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger.With("component", "opcua"),
		clock: cfg.Clock,
		space: space,
		level: InitialServiceLevel,
		peers: make(map[string]peerStatus),
		start: cfg.Clock.Now(),
		state: ua.ServerStateRunning,
	}
	if err := s.initServerObject(); err != nil {
		return nil, err
	}
	opts := cfg.Subscriptions
	if opts.Events == nil {
		opts.Events = space.Source() // event items on Server (i=2253) and the owner's notifiers
	}
	s.engine = subscription.New(diagSource{src: space.Source(), diag: &s.diag}, opts)
	if cfg.Mirror != nil {
		cfg.Mirror.Attach(s.engine, func(id *ua.NodeID) { s.ua.EndSession(id, "taken over by another member") })
	}
	s.ua, err = uaserver.New(cfg.uaserverConfig(), space, s.engine)
	if err != nil {
		s.engine.Close()
		return nil, err
	}
	if err := s.initDiagnostics(); err != nil {
		s.engine.Close()
		return nil, fmt.Errorf("opcua: ServerDiagnostics: %w", err)
	}
	return s, nil
}

// Start binds the endpoint and starts serving. ctx bounds only the bind.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return uaserver.ErrClosed
	case s.started:
		return uaserver.ErrStarted
	}
	if err := s.ua.Start(ctx); err != nil {
		return err
	}
	s.started = true
	s.start = s.clock.Now()
	if err := s.nodes.startTime.Set(s.start, ua.StatusOK, s.start); err != nil {
		return err
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.tick(s.stop, s.done)
	s.log.Info("opcua: server started", "endpoint", s.ua.EndpointURL(), "applicationUri", s.cfg.ApplicationURI,
		"peers", s.cfg.PeerApplicationURIs, "redundancySupport", s.cfg.RedundancySupport.String())
	return nil
}

// tick pushes CurrentTime, ServerStatus and the changed ServerDiagnostics
// counts to subscribers every second.
func (s *Server) tick(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := s.clock.NewTicker(currentTimeTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.Chan():
			s.publishStatus(now)
			s.publishDiagnostics(now)
		}
	}
}

// Close stops the service layer (ending every session), then the engine.
// It is safe to call more than once and before Start.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		stop, done := s.stop, s.done
		s.mu.Unlock()
		err = s.ua.Close()
		if stop != nil {
			close(stop)
			<-done
		}
		s.engine.Close()
	})
	return err
}

// EndpointURL returns the advertised endpoint URL with the real port, or ""
// before Start.
func (s *Server) EndpointURL() string { return s.ua.EndpointURL() }

// Addr returns the bound address, or nil before Start.
func (s *Server) Addr() net.Addr { return s.ua.Addr() }

// Listening reports whether the server accepts connections.
func (s *Server) Listening() bool { return s.ua.Listening() }

// AddressSpace returns the address space, for the owner to add its
// namespaces and nodes (namespace 1 is the server's ApplicationURI).
func (s *Server) AddressSpace() *addrspace.AddressSpace { return s.space }

// ApplicationURI returns the server's effective ApplicationURI.
func (s *Server) ApplicationURI() string { return s.cfg.ApplicationURI }

// SetServiceLevel publishes level as Server.ServiceLevel (subscribed
// clients get a data change) and as this server's entry of
// RedundantServerArray.
func (s *Server) SetServiceLevel(level byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.level = level
	if err := s.nodes.serviceLevel.Set(level, ua.StatusOK, time.Time{}); err != nil {
		panic("opcua: a byte must make a Variant: " + err.Error())
	}
	s.publishRedundantServers()
}

// SetServiceLevelCeiling makes every read of Server.ServiceLevel answer at
// most ceiling while on reports true, whatever was last published: a
// process woken from a freeze serves the requests that waited in its
// sockets before its own loops have run, and a read among them must not
// show the level it had before the freeze. on is called on the reader's
// goroutine and must be quick; nil removes the ceiling. Subscribers see
// the published level (the publisher recomputes on its next tick).
func (s *Server) SetServiceLevelCeiling(ceiling byte, on func() bool) {
	if on == nil {
		s.nodes.serviceLevel.SetGetter(nil)
		return
	}
	capped := &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(ceiling)}
	v := s.nodes.serviceLevel
	v.SetGetter(func() *ua.DataValue {
		if !on() {
			return nil
		}
		if cur, ok := v.Stored().Value.Value().(byte); ok && cur <= ceiling {
			return nil
		}
		return capped
	})
}

// SetEstimatedReturnTime publishes t as Server.EstimatedReturnTime
// (ns=0;i=12885, DateTime): when this server expects to be back in service
// after a planned shutdown, so that clients leaving it know when to look
// again. The zero time means unknown (OPC UA's MinDateTime), the value the
// server starts with. The host sets it before a manual failover takes the
// node out of the cluster.
func (s *Server) SetEstimatedReturnTime(t time.Time) {
	if err := s.space.SetValue(nsid(id.Server_EstimatedReturnTime), t.UTC(), ua.StatusOK, s.clock.Now()); err != nil {
		panic("opcua: Server.EstimatedReturnTime must take a DateTime: " + err.Error())
	}
}

// ServiceLevel returns the published Server.ServiceLevel.
func (s *Server) ServiceLevel() byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// SetPeerStatus records what is known of peer applicationURI (one of
// Config.PeerApplicationURIs) for RedundantServerArray. A URI that is not a
// configured peer is ignored with a warning.
func (s *Server) SetPeerStatus(applicationURI string, serviceLevel byte, state ua.ServerState) {
	if !s.isPeer(applicationURI) {
		s.log.Warn("opcua: SetPeerStatus for a server that is not a configured peer; ignored",
			"applicationUri", applicationURI, "peers", s.cfg.PeerApplicationURIs)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers[applicationURI] = peerStatus{level: serviceLevel, state: state}
	s.publishRedundantServers()
}

func (s *Server) isPeer(uri string) bool {
	for _, p := range s.cfg.PeerApplicationURIs {
		if p == uri {
			return true
		}
	}
	return false
}
