package uaserver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/loglimit"
	"github.com/otopcua/otopcua/opcua/subscription"
)

// ErrClosed is returned by Start after Close, and by a response send on a
// channel that is gone.
var ErrClosed = errors.New("uaserver: closed")

// ErrStarted is returned by a second Start.
var ErrStarted = errors.New("uaserver: already started")

// subscriptionService is the part of *subscription.Engine the server calls.
// Tests substitute a recording fake.
type subscriptionService interface {
	CreateSubscription(subscription.SessionID, *ua.CreateSubscriptionRequest) (*ua.CreateSubscriptionResponse, error)
	ModifySubscription(subscription.SessionID, *ua.ModifySubscriptionRequest) (*ua.ModifySubscriptionResponse, error)
	SetPublishingMode(subscription.SessionID, *ua.SetPublishingModeRequest) (*ua.SetPublishingModeResponse, error)
	DeleteSubscriptions(subscription.SessionID, *ua.DeleteSubscriptionsRequest) (*ua.DeleteSubscriptionsResponse, error)
	CreateMonitoredItemsContext(context.Context, subscription.SessionID, *ua.CreateMonitoredItemsRequest) (*ua.CreateMonitoredItemsResponse, error)
	ModifyMonitoredItems(subscription.SessionID, *ua.ModifyMonitoredItemsRequest) (*ua.ModifyMonitoredItemsResponse, error)
	SetMonitoringMode(subscription.SessionID, *ua.SetMonitoringModeRequest) (*ua.SetMonitoringModeResponse, error)
	SetTriggering(subscription.SessionID, *ua.SetTriggeringRequest) (*ua.SetTriggeringResponse, error)
	DeleteMonitoredItems(subscription.SessionID, *ua.DeleteMonitoredItemsRequest) (*ua.DeleteMonitoredItemsResponse, error)
	Republish(subscription.SessionID, *ua.RepublishRequest) (*ua.RepublishResponse, error)
	TransferSubscriptionsAs(subscription.SessionID, string, *ua.TransferSubscriptionsRequest) (*ua.TransferSubscriptionsResponse, error)
	SetOwner(id uint32, owner string)
	Publish(subscription.SessionID, subscription.Sender, uint32, *ua.PublishRequest)
	SessionClosed(subscription.SessionID, bool)
}

var _ subscriptionService = (*subscription.Engine)(nil)

// Server is one OPC UA server endpoint (security None) over a NodeStore and
// a subscription engine. Create it with New, then Start; Close stops it.
type Server struct {
	cfg   Config
	nodes NodeStore
	subs  subscriptionService // nil: subscription services unsupported
	log   *slog.Logger

	// handlers is filled by New and Handle, read-only after Start.
	handlers map[uint16]serviceFunc

	sessions *sessionTable
	counters *counters
	methods  methodTable   // RegisterMethod
	history  historyConfig // SetEventHistory

	activations *activationLimiter // refused ActivateSessions per address
	guard       *handshakeGuard    // replays and rates of secured OpenSecureChannel
	logs        *loglimit.Limiter  // repeated refusal lines, per address and kind

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop, handshakes, channels

	mu       sync.Mutex
	started  bool                // mu must be held.
	closed   bool                // mu must be held.
	ln       net.Listener        // set by Start; mu must be held.
	endpoint string              // advertised URL, set by Start; mu must be held.
	channels map[uint32]*channel // open secure channels; mu must be held.
	conns    connTable           // TCP connections held; mu must be held.
	nextChID uint32              // last secure channel id issued; mu must be held.
	nextTok  uint32              // last security token id issued; mu must be held.

	ids *identities // own and per-address application identities
}

// New returns a server that answers from nodes and delegates subscription
// services to engine. engine may be nil: subscription services then answer
// BadServiceUnsupported. New does not touch the network.
func New(cfg Config, nodes NodeStore, engine *subscription.Engine) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if nodes == nil {
		return nil, errors.New("uaserver: New: NodeStore is nil")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:      cfg,
		nodes:    nodes,
		log:      cfg.Logger.With("component", "uaserver"),
		ctx:      ctx,
		cancel:   cancel,
		channels: make(map[uint32]*channel),
		conns:    connTable{byAddr: make(map[string]int)},
		counters: newCounters(),
		nextChID: randUint32(),
		nextTok:  randUint32(),
	}
	s.ids = newIdentities(&cfg)
	if engine != nil {
		s.subs = engine
	}
	s.activations = newActivationLimiter(cfg.MaxActivationFailuresPerAddress, cfg.ActivationLockout, cfg.MaxActivationAddresses)
	s.guard = newHandshakeGuard(cfg.SecureChannelReplayWindow, cfg.MaxSecureChannelOpensPerAddress, cfg.MaxTokenRenewalsPerAddress)
	s.logs = loglimit.New(loglimit.DefaultInterval, loglimit.DefaultMaxKeys)
	s.sessions = newSessionTable(s)
	s.handlers = s.defaultHandlers()
	return s, nil
}

// Handler answers one service request. ctx is cancelled when the request's
// secure channel closes. A returned ua.StatusCode error becomes a
// ServiceFault with that status; any other error or a panic becomes
// BadInternalError. The server stamps RequestHandle and Timestamp on the
// returned response's header. Session checks run before the handler as for
// the built-in service of the same type.
type Handler func(ctx context.Context, req ua.Request) (ua.Response, error)

// Handle replaces the handler of the service whose binary encoding id is
// typeID (e.g. id.ReadRequest_Encoding_DefaultBinary). It must be called
// before Start; it panics afterwards.
func (s *Server) Handle(typeID uint16, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("uaserver: Handle called after Start: the handler table is read-only once serving")
	}
	s.handlers[typeID] = func(c *call) (ua.Response, error) {
		return h(c.ch.ctx, c.req)
	}
}

// Start binds Config.ListenAddr and starts accepting clients. It returns an
// error (wrapping the net error, e.g. syscall.EADDRINUSE) when the address
// cannot be bound. ctx bounds only the bind; Close stops the server.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.started:
		return ErrStarted
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("uaserver: listen on %s (Config.ListenAddr): %w", s.cfg.ListenAddr, err)
	}
	s.started = true
	s.ln = ln
	port := ln.Addr().(*net.TCPAddr).Port
	s.endpoint = advertisedURL(s.cfg.EndpointURL, s.cfg.ListenAddr, port)
	s.wg.Add(1)
	go s.acceptLoop(ln)
	s.log.Info("uaserver: listening", "addr", ln.Addr().String(), "endpoint", s.endpoint)
	return nil
}

// Addr returns the bound address, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// EndpointURL returns the advertised endpoint URL with the real port, or
// "" before Start.
func (s *Server) EndpointURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint
}

// Listening reports whether the server accepts connections (started and
// not closed).
func (s *Server) Listening() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started && !s.closed
}

// SessionCount returns the number of sessions, activated or not.
func (s *Server) SessionCount() int {
	return s.sessions.count()
}

// Close stops accepting, closes every secure channel, ends every session
// (telling the engine, deleting its subscriptions) and waits for every
// goroutine of the server to return. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ln := s.ln
	chans := make([]*channel, 0, len(s.channels))
	for _, ch := range s.channels {
		chans = append(chans, ch)
	}
	s.mu.Unlock()

	s.cancel()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	for _, ch := range chans {
		ch.close()
	}
	s.wg.Wait()
	s.sessions.closeAll()
	return err
}

// addChannel registers ch and assigns its secure channel id.
// It returns false when the server is closing.
func (s *Server) addChannel(ch *channel) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.nextChID++
	if s.nextChID == 0 {
		s.nextChID = 1
	}
	s.nextTok++
	if s.nextTok == 0 {
		s.nextTok = 1
	}
	ch.id = s.nextChID
	s.channels[ch.id] = ch
	return true
}

// newTokenID returns a security token id not issued before by this server.
func (s *Server) newTokenID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextTok++
	if s.nextTok == 0 {
		s.nextTok = 1
	}
	return s.nextTok
}

// shutChannel closes channel id, if it is still open, with an ERR of code
// and reason (channel.shut). It does not wait.
func (s *Server) shutChannel(id uint32, code ua.StatusCode, reason string) {
	s.mu.Lock()
	ch := s.channels[id]
	s.mu.Unlock()
	if ch != nil {
		ch.shut(code, reason)
	}
}

func (s *Server) removeChannel(ch *channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.channels, ch.id)
}

// connTable counts the TCP connections held, in total and by client IP
// address.
type connTable struct {
	total  int
	byAddr map[string]int
}

// admitConn counts a new connection from addr, or names the limit it
// would exceed.
func (s *Server) admitConn(addr string) (limit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conns.total >= s.cfg.MaxConnections:
		return LimitConnections
	case s.conns.byAddr[addr] >= s.cfg.MaxConnectionsPerAddress:
		return LimitConnectionsPerAddress
	}
	s.conns.total++
	s.conns.byAddr[addr]++
	return ""
}

// releaseConn uncounts a connection admitted by admitConn.
func (s *Server) releaseConn(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns.total--
	if s.conns.byAddr[addr]--; s.conns.byAddr[addr] <= 0 {
		delete(s.conns.byAddr, addr)
	}
}

// clientAddr is the IP address of a connection's peer: the key of the
// per-address limits.
func clientAddr(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

func randUint32() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("uaserver: crypto/rand failed: " + err.Error())
	}
	return binary.LittleEndian.Uint32(b[:]) & 0x7fffffff
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("uaserver: crypto/rand failed: " + err.Error())
	}
	return b
}
