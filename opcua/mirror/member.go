package mirror

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/loglimit"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Timings of the streams between members.
const (
	// resyncAfter: a peer that acknowledged nothing of a batch for this
	// long gets a new stream (epoch) and a new snapshot once it answers.
	resyncAfter = 5 * time.Second
	// housekeeping is the period of the member's timer work: replica
	// session expiry and stale streams.
	housekeeping = 250 * time.Millisecond
	// settleWait bounds how long a takeover waits for the records
	// received before it to be applied.
	settleWait = 2 * time.Second
	// inboxSize bounds the received batches waiting to be applied; a
	// batch beyond is dropped and the gap repaired by a resync (a new
	// stream with a copy of every session of that origin). The bytes
	// waiting are bounded already: a batch is acknowledged once applied,
	// and its sender holds at most MaxLagBytes unacknowledged. This bound
	// is on the count, and must not bite first when the batches are
	// small: the serving member sends one per wake-up, about one per
	// NotificationMessage under many small sessions. At 1,000 sessions ×
	// 100 items (10,000 messages/s, bench/mirror) a standby on 2 shared
	// cores fell 1,100–3,900 batches behind in the first seconds of the
	// load, and a bound of 1,024 made it resync in every run. 16,384
	// slots of 40 bytes are 640 KiB, allocated once per Member.
	inboxSize = 16384
	// maxStrangers bounds the names remembered of members that sent
	// batches before they were peers.
	maxStrangers = 64
)

// Member mirrors the sessions served here to the peers and holds the
// peers' sessions, ready to take them over. Create it with New, give it to
// opcua.Config.Mirror (which attaches the subscription engine), keep its
// peer list current with SetPeers and feed it the batches the Transport
// receives with Receive. All methods are safe for concurrent use.
//
// Goroutines: one writer sends every batch (records are queued by the
// hooks, which never wait for the network), one reader applies received
// batches to the engine in order. Sent waits (Sync) on the
// acknowledgements, never longer than AckTimeout.
type Member struct {
	opts  Options
	log   *slog.Logger
	lines *loglimit.Limiter // lines a client can repeat: one a minute per kind
	clock clockwork.Clock

	wake  chan struct{}
	inbox chan inbound
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once

	mu         sync.Mutex
	engine     *subscription.Engine      // set by Attach; mu must be held.
	endSession func(id *ua.NodeID)       // set by Attach; mu must be held.
	peers      map[string]*peer          // streams to the peers; mu must be held.
	served     map[string]*served        // sessions served here, by NodeId string; mu must be held.
	origins    map[string]*origin        // the peers whose sessions are held here; mu must be held.
	byHash     map[[32]byte]*replicaSess // replica sessions by token hash; mu must be held.
	// strangers are members whose batches were dropped because they were
	// not peers yet; mu must be held.
	strangers map[string]bool
	acked     chan struct{} // closed and replaced when acknowledgements arrive; mu must be held.
	stats     Stats         // counters; mu must be held.
	started   bool          // mu must be held.
	closed    bool          // mu must be held.
}

// peer is the stream of records from this member to one peer.
type peer struct {
	name     string
	epoch    uint64
	seq      uint64   // last batch sent
	recNext  uint64   // index of the next record
	acked    uint64   // records acknowledged
	pending  [][]byte // records not yet sent
	pendIdx  []uint64 // their indexes
	unacked  []sentBatch
	lag      int      // bytes pending and unacknowledged
	snapshot []string // sessions whose snapshot is still to be queued
	snapEnd  uint64   // record index of the snapshot's end; 0 once acknowledged
	// snapWaited: the snapshot's next session was put off behind live
	// records once; it is not put off again.
	snapWaited bool
	ready      bool   // the snapshot was acknowledged
	stalled    bool   // missed AckTimeout; not waited for until it catches up
	resync     bool   // ask the peer for a new stream of its records
	ackTo      header // what to acknowledge of the peer's stream
	// recvEpoch and recvSeq are the last batch of the peer's stream queued
	// here in order (Receive acknowledges it); recvGap: one was dropped,
	// nothing more is acknowledged until a new epoch.
	recvEpoch, recvSeq uint64
	recvGap            bool
	needAck            bool      // a batch of the peer was applied and not yet acknowledged
	started            time.Time // the epoch's start
}

type sentBatch struct {
	seq     uint64
	lastRec uint64
	bytes   int
	at      time.Time
}

// served is a session served here.
type served struct {
	ms   uaserver.MirroredSession
	warm bool // dropped to Warm: no longer mirrored
	why  string
}

// origin is what this member holds of one peer's sessions.
type origin struct {
	name     string
	epoch    uint64
	seq      uint64 // last batch applied
	ready    bool   // the snapshot of the epoch arrived whole
	broken   bool   // a gap: records are ignored until a new epoch
	lost     time.Time
	sessions map[string]*replicaSess
	// orphans are replica subscriptions whose session ended without
	// deleting them, with their lifetime.
	orphans map[uint32]time.Duration
}

type replicaSess struct {
	id     string
	node   *ua.NodeID
	ms     uaserver.MirroredSession
	origin *origin
}

type inbound struct {
	from  string
	batch []byte
	// barrier, when set, is closed by the reader once every batch queued
	// before it was applied (settle).
	barrier chan struct{}
}

// New returns a Member. Its goroutines start with Attach.
func New(o Options) *Member {
	o.setDefaults()
	return &Member{
		opts:      o,
		log:       o.Logger.With("component", "mirror"),
		lines:     loglimit.New(time.Minute, 64),
		clock:     o.Clock,
		wake:      make(chan struct{}, 1),
		inbox:     make(chan inbound, inboxSize),
		done:      make(chan struct{}),
		peers:     make(map[string]*peer),
		served:    make(map[string]*served),
		origins:   make(map[string]*origin),
		byHash:    make(map[[32]byte]*replicaSess),
		strangers: make(map[string]bool),
		acked:     make(chan struct{}),
		stats: Stats{Peers: map[string]PeerStats{}, Origins: map[string]OriginStats{},
			Dropped: map[string]uint64{}, Takeovers: map[string]uint64{}},
	}
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

// Attach gives the member the server's subscription engine and starts its
// goroutines. opcua.New calls it once, before the server starts.
//
// endSession ends a session served here without deleting anything on the
// peers; the member calls it when a peer took one of them over.
func (m *Member) Attach(e *subscription.Engine, endSession func(id *ua.NodeID)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.engine = e
	m.endSession = endSession
	m.started = true
	e.OnExpire(m.expired)
	m.wg.Add(2)
	go m.writer()
	go m.reader()
}

// Close stops the member's goroutines. The sessions held for peers are
// forgotten; those served here are not touched.
func (m *Member) Close() {
	m.once.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		close(m.done)
		m.wg.Wait()
	})
}

// SetPeers names the other driver members of this member's ClusterId that
// are Up (their incarnations). A peer new to the list gets a snapshot of
// every session served here; one that left is forgotten, and the sessions
// it served start their session timeout here.
func (m *Member) SetPeers(names []string) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || n == m.opts.Self {
			continue
		}
		want[n] = true
		if m.peers[n] == nil {
			m.peers[n] = &peer{name: n}
			m.restartLocked(m.peers[n], now)
			// It streamed to this member before this member knew it: what
			// it sent was dropped; it starts again at once rather than
			// after resyncAfter without acknowledgements.
			m.peers[n].resync = m.strangers[n]
		}
		if o := m.origins[n]; o != nil {
			o.lost = time.Time{}
		}
	}
	for n := range m.peers {
		if !want[n] {
			delete(m.peers, n)
		}
	}
	clear(m.strangers)
	for n, o := range m.origins {
		if !want[n] && o.lost.IsZero() {
			o.lost = now
			m.log.Info("mirror: member left; its sessions wait here for their clients",
				"origin", n, "sessions", len(o.sessions))
		}
	}
	m.signal()
}

// restartLocked starts a new stream to p: a new epoch whose first records
// are a snapshot of every session served here. m.mu must be held.
func (m *Member) restartLocked(p *peer, now time.Time) {
	p.epoch = rand.Uint64() | 1
	p.seq, p.recNext, p.acked = 0, 1, 0
	p.pending, p.pendIdx, p.unacked, p.lag = nil, nil, nil, 0
	p.ready, p.stalled, p.snapEnd, p.snapWaited = false, false, 0, false
	p.started = now
	p.snapshot = p.snapshot[:0]
	for id, s := range m.served {
		if !s.warm {
			p.snapshot = append(p.snapshot, id)
		}
	}
	sort.Strings(p.snapshot)
	if len(p.snapshot) == 0 {
		m.snapEndLocked(p)
	}
	m.signal()
}

// Receive takes one batch the Transport received from the member named
// from. It does not block: a batch that finds the queue full is dropped,
// and the stream repaired by a new snapshot.
//
// A batch is acknowledged as soon as it is queued here, in order, before
// the reader decodes and applies it: with Sync, the serving member's
// client waits for the network and not for this member's work. The
// acknowledgement means "held here": every batch queued is applied before
// a takeover looks a session up (Lookup settles first).
func (m *Member) Receive(from string, batch []byte) {
	h, ok := headerOf(batch)
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.peers[from]
	if ok && p != nil {
		m.ackedLocked(p, h.ackEpoch, h.ackSeq, now) // the peer's acknowledgement of this member's stream, at once
	}
	select {
	case m.inbox <- inbound{from: from, batch: batch}:
	default:
		m.stats.Dropped["inbox-full"]++
		if p != nil {
			p.recvGap = true // nothing after it is acknowledged until the stream starts again
		}
		return
	}
	if !ok || p == nil || h.seq == 0 {
		return
	}
	switch {
	case h.seq == 1 && h.epoch != p.recvEpoch:
		p.recvEpoch, p.recvSeq, p.recvGap = h.epoch, 1, false
	case h.epoch == p.recvEpoch && h.seq == p.recvSeq+1 && !p.recvGap:
		p.recvSeq = h.seq
	default:
		return // out of order: the reader asks for a new stream
	}
	p.ackTo = header{epoch: h.epoch, seq: h.seq}
	p.needAck = true
	m.signal()
}

// settle waits until the reader applied every batch received so far, for
// at most settleWait: a takeover sees every record this member
// acknowledged.
func (m *Member) settle() {
	b := make(chan struct{})
	t := m.clock.NewTimer(settleWait)
	defer t.Stop()
	select {
	case m.inbox <- inbound{barrier: b}:
	case <-t.Chan():
		return
	case <-m.done:
		return
	}
	select {
	case <-b:
	case <-t.Chan():
		m.log.Warn("mirror: records received from a peer are still being applied; a takeover goes on without them", "waited", settleWait)
	case <-m.done:
	}
}

// signal wakes the writer.
func (m *Member) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Stats returns the member's counters and the state of every peer.
func (m *Member) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stats
	st.Peers = make(map[string]PeerStats, len(m.peers))
	for n, p := range m.peers {
		st.Peers[n] = PeerStats{Ready: p.ready, LagBytes: p.lag}
	}
	st.Origins = make(map[string]OriginStats, len(m.origins))
	for n, o := range m.origins {
		st.Origins[n] = OriginStats{Ready: o.ready && !o.broken, Sessions: len(o.sessions)}
	}
	st.Dropped = clone(m.stats.Dropped)
	st.Takeovers = clone(m.stats.Takeovers)
	st.Served = 0
	for _, s := range m.served {
		if !s.warm {
			st.Served++
		}
	}
	return st
}

func clone(in map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
