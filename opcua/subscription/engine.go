package subscription

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	ualimits "github.com/otopcua/otopcua/opcua/limits"
)

// Defaults of Options whose value other layers may want to know.
const (
	// DefaultMaxNotificationsPerPublish is the default server cap on
	// notifications in one NotificationMessage.
	DefaultMaxNotificationsPerPublish = 10000
	// DefaultMaxRetransmitNotifications is the default bound on the
	// notifications held for Republish per subscription.
	DefaultMaxRetransmitNotifications = 200000
)

// Options tune the engine. Zero values take the documented defaults.
type Options struct {
	// Clock drives publishing, sampling, keep-alive and lifetime timers.
	// Default: the real clock.
	Clock clockwork.Clock
	// Logger receives warnings about dropped sessions and late publishes.
	// Default: slog.Default().
	Logger *slog.Logger

	// MinPublishingInterval is the fastest publishing interval granted.
	// Default: 10ms.
	MinPublishingInterval time.Duration
	// MaxPublishingInterval is the slowest publishing interval granted.
	// Default: 1h.
	MaxPublishingInterval time.Duration
	// MinSamplingInterval is the fastest non-zero sampling interval granted
	// (0 stays 0: every change of a watched Value is queued). Default: 10ms.
	MinSamplingInterval time.Duration
	// MaxSamplingInterval is the slowest sampling interval granted.
	// Default: 1h.
	MaxSamplingInterval time.Duration
	// MaxQueueSize caps a monitored item's queue, data or events.
	// Default: 10000.
	MaxQueueSize uint32
	// DefaultEventQueueSize is the queue size, in events, of an event item
	// that asks for 0 (Part 4 §7.16: the server's default). Capped at
	// MaxQueueSize. Default: 1000.
	DefaultEventQueueSize uint32
	// Events is the address space's event side: with it, monitored items
	// on the EventNotifier attribute with an EventFilter receive events.
	// Default: nil: such items fail with BadMonitoredItemFilterUnsupported.
	Events EventSource
	// DefaultKeepAliveCount replaces a requested MaxKeepAliveCount of 0.
	// Default: 10.
	DefaultKeepAliveCount uint32
	// MaxKeepAliveCount caps MaxKeepAliveCount. Default: 10000.
	MaxKeepAliveCount uint32
	// MaxLifetime caps LifetimeCount × publishing interval, i.e. how long a
	// subscription lives without Publish requests (an orphaned subscription
	// waiting for TransferSubscriptions included). The lifetime never drops
	// below 3 × the keep-alive count. Default: 1h.
	MaxLifetime time.Duration
	// MaxNotificationsPerPublish is the server's cap on notifications in one
	// NotificationMessage, applied on top of the client's value (the smaller
	// wins; the client's 0 means no cap of its own). A publishing cycle with
	// more notifications becomes several messages (MoreNotifications set on
	// all but the last), answered on the session's queued Publish requests
	// at once, so that a large cycle is built, encoded and sent in pieces
	// that overlap instead of one large message, and so that a message fits
	// the channel's maximum message size. About 22 bytes on the wire per
	// notification of a numeric value with both timestamps. Set
	// math.MaxUint32 for no server cap. Default: 10000.
	MaxNotificationsPerPublish uint32
	// MaxPublishRequestsPerSession bounds the queued Publish requests of a
	// session; the oldest beyond it is answered BadTooManyPublishRequests.
	// Default: 100.
	MaxPublishRequestsPerSession int
	// MaxRetransmitMessages bounds each subscription's Republish queue, in
	// messages. Default: 100.
	MaxRetransmitMessages int
	// MaxRetransmitNotifications bounds the notifications held in each
	// subscription's Republish queue (the newest message is always kept).
	// A client that acknowledges a message in the Publish request it sends
	// after receiving it, and keeps K requests in flight, finds its message
	// still held as long as K ≤ MaxRetransmitMessages and K ×
	// MaxNotificationsPerPublish ≤ MaxRetransmitNotifications: the server
	// can send at most K−1 newer messages before that request arrives. With
	// the defaults, K ≤ 20. A held notification costs about 170 bytes (its
	// slot in the message and the DataValue it keeps alive), so the default
	// bounds the queue at about 34 MB per subscription. Default: 200000.
	MaxRetransmitNotifications int
	// Limits are the OpcUa:Limits bounds, declared in opcua/limits; the
	// engine applies MaxSubscriptions (orphaned subscriptions included),
	// MaxSubscriptionsPerSession, MaxMonitoredItems and
	// MaxMonitoredItemsPerSubscription, each answered with the status named
	// there. A zero field takes its default there.
	ualimits.Limits
}

// Resolved returns o with every zero field set to its default, as New
// applies them (Clock and Logger included).
func (o Options) Resolved() Options {
	o.setDefaults()
	return o
}

func (o *Options) setDefaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	def(&o.MinPublishingInterval, 10*time.Millisecond)
	def(&o.MaxPublishingInterval, time.Hour)
	def(&o.MinSamplingInterval, 10*time.Millisecond)
	def(&o.MaxSamplingInterval, time.Hour)
	def(&o.MaxLifetime, time.Hour)
	o.MaxPublishingInterval = max(o.MaxPublishingInterval, o.MinPublishingInterval)
	o.MaxSamplingInterval = max(o.MaxSamplingInterval, o.MinSamplingInterval)
	if o.MaxQueueSize == 0 {
		o.MaxQueueSize = 10000
	}
	if o.DefaultEventQueueSize == 0 {
		o.DefaultEventQueueSize = 1000
	}
	o.DefaultEventQueueSize = min(o.DefaultEventQueueSize, o.MaxQueueSize)
	if o.DefaultKeepAliveCount == 0 {
		o.DefaultKeepAliveCount = 10
	}
	if o.MaxKeepAliveCount == 0 {
		o.MaxKeepAliveCount = 10000
	}
	o.DefaultKeepAliveCount = min(o.DefaultKeepAliveCount, o.MaxKeepAliveCount)
	if o.MaxPublishRequestsPerSession <= 0 {
		o.MaxPublishRequestsPerSession = 100
	}
	if o.MaxRetransmitMessages <= 0 {
		o.MaxRetransmitMessages = 100
	}
	if o.MaxRetransmitNotifications <= 0 {
		o.MaxRetransmitNotifications = DefaultMaxRetransmitNotifications
	}
	if o.MaxNotificationsPerPublish == 0 {
		o.MaxNotificationsPerPublish = DefaultMaxNotificationsPerPublish
	}
	o.Limits = o.Limits.WithDefaults()
}

// Engine owns every subscription and monitored item of one server. See the
// package documentation for its goroutines, locks and the duties of its
// caller.
type Engine struct {
	src    Source
	events EventSource // nil: no event items
	opts   Options
	lim    limits
	clock  clockwork.Clock
	log    *slog.Logger
	sched  *scheduler

	done     chan struct{}      // closed by Close
	exited   chan struct{}      // closed when run returns
	barrier  chan chan struct{} // tests: run a pass, then close the channel
	senders  sync.WaitGroup     // session sending goroutines
	retiring sync.WaitGroup     // goroutines retiring deleted items (retire)
	queued   atomic.Int64       // responses queued or being sent
	counts   counters

	// hookNoRequest, when set (tests only, before any subscription
	// exists), is called by the engine goroutine, with subscription.mu
	// held, when a subscription that has something to send finds no
	// queued Publish request.
	hookNoRequest func()

	// onExpire, set by OnExpire before any subscription exists, is called
	// with no engine lock held after a subscription's lifetime ran out.
	onExpire func(subID uint32)

	mu sync.Mutex
	// Everything below is guarded by mu.
	closed     bool
	sessions   map[SessionID]*session
	subs       map[uint32]*subscription
	nextSubID  uint32
	nextItemID uint32
	items      int // monitored items in subs
	reserved   int // items being created by CreateMonitoredItems calls in flight
}

// New returns an engine that reads values from src and starts its
// scheduling goroutine. Call Close to stop it.
func New(src Source, opts Options) *Engine {
	opts.setDefaults()
	e := &Engine{
		src:    src,
		events: opts.Events,
		opts:   opts,
		clock:  opts.Clock,
		log:    opts.Logger,
		lim: limits{
			minPublishing:    opts.MinPublishingInterval,
			maxPublishing:    opts.MaxPublishingInterval,
			minSampling:      opts.MinSamplingInterval,
			maxSampling:      opts.MaxSamplingInterval,
			maxQueueSize:     opts.MaxQueueSize,
			defaultEvQueue:   opts.DefaultEventQueueSize,
			defaultKeepAlive: opts.DefaultKeepAliveCount,
			maxKeepAlive:     opts.MaxKeepAliveCount,
			maxLifetime:      opts.MaxLifetime,
			maxNotifications: opts.MaxNotificationsPerPublish,
		},
		sched:    newScheduler(),
		done:     make(chan struct{}),
		exited:   make(chan struct{}),
		barrier:  make(chan chan struct{}),
		sessions: make(map[SessionID]*session),
		subs:     make(map[uint32]*subscription),
		// Subscription ids start at a random point so that ids a client
		// kept from another server of the redundant set, or from before a
		// restart, are unlikely to name a live subscription here.
		nextSubID:  1 + rand.Uint32N(1<<30),
		nextItemID: 1,
	}
	go e.run()
	return e
}

// Close stops the scheduling goroutine, deletes every subscription
// (cancelling its Source registrations) and drops queued Publish requests
// and unsent responses. It returns once every goroutine of the engine has
// ended, which includes any SendResponse call in flight: a Sender must
// return once its channel is closed. Calls after Close fail with
// BadShutdown; Publish requests are dropped.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.exited
		e.retiring.Wait()
		e.senders.Wait()
		return
	}
	e.closed = true
	var r retired
	for _, s := range e.subs {
		e.deleteSubLocked(s, &r)
	}
	for _, ss := range e.sessions {
		ss.mu.Lock()
		ss.closed = true
		ss.requests, ss.status = nil, nil
		ss.mu.Unlock()
	}
	e.mu.Unlock()
	close(e.done)
	<-e.exited
	r.run(false)
	e.retiring.Wait()
	e.senders.Wait()
}

// run is the engine goroutine: it works every subscription whose deadline
// has come (sampling, publishing, keep-alive, lifetime) and sleeps on the
// injected clock until the next one, or until a deadline moves earlier.
func (e *Engine) run() {
	defer close(e.exited)
	var timer clockwork.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var acks []chan struct{}
	for {
		e.runDue(e.clock.Now())
		for _, ch := range acks {
			close(ch)
		}
		acks = acks[:0]
		var timerC <-chan time.Time
		if next, ok := e.sched.next(); ok {
			d := max(next.Sub(e.clock.Now()), 0)
			if timer == nil {
				timer = e.clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			timerC = timer.Chan()
		} else if timer != nil {
			timer.Stop()
		}
		select {
		case <-timerC:
		case <-e.sched.kick:
		case ch := <-e.barrier:
			acks = append(acks, ch)
		case <-e.done:
			return
		}
	}
}

// runDue works the subscriptions due at now.
func (e *Engine) runDue(now time.Time) {
	for _, s := range e.sched.popDue(now) {
		next, expired := e.work(s, now)
		if expired {
			e.expire(s, now)
			continue
		}
		if !next.IsZero() {
			e.sched.at(s, next)
		}
	}
}

// sync runs scheduling passes at the clock's current time until nothing is
// due any more, and returns when they have finished (tests use it after
// advancing a fake clock). One pass is not enough: a message that leaves
// notifications behind schedules its successor for the next pass.
func (e *Engine) sync() {
	for {
		ch := make(chan struct{})
		select {
		case e.barrier <- ch:
			<-ch
		case <-e.exited:
			return
		}
		if next, ok := e.sched.next(); !ok || next.After(e.clock.Now()) {
			return
		}
	}
}

// session returns the state of id, creating it. e.mu must be held.
func (e *Engine) sessionLocked(id SessionID) *session {
	ss := e.sessions[id]
	if ss == nil {
		ss = &session{id: id, subs: make(map[uint32]*subscription)}
		e.sessions[id] = ss
	}
	return ss
}

// deliver queues resp for the session's sending goroutine. ss.mu must be
// held. Responses for a closed session are dropped: its channel is gone.
func (e *Engine) deliverLocked(ss *session, out Sender, reqID uint32, resp ua.Response) {
	if ss.closed || out == nil {
		return
	}
	if limit := 2*e.opts.MaxPublishRequestsPerSession + 16; len(ss.outbox) >= limit {
		// The client sends requests but does not read responses.
		e.log.Warn("subscription: dropping unsent response of a stalled session",
			"session", string(ss.id), "queued", len(ss.outbox))
		ss.outbox[0] = outMsg{}
		ss.outbox = ss.outbox[1:]
		e.queued.Add(-1)
	}
	ss.outbox = append(ss.outbox, outMsg{out: out, reqID: reqID, resp: resp})
	e.queued.Add(1)
	if !ss.sending {
		ss.sending = true
		e.senders.Add(1)
		go e.sendLoop(ss)
	}
}

func (e *Engine) deliver(ss *session, out Sender, reqID uint32, resp ua.Response) {
	ss.mu.Lock()
	e.deliverLocked(ss, out, reqID, resp)
	ss.mu.Unlock()
}

// sendLoop sends the session's responses in order until the outbox is
// empty or the session is closed.
func (e *Engine) sendLoop(ss *session) {
	defer e.senders.Done()
	for {
		ss.mu.Lock()
		if ss.closed || len(ss.outbox) == 0 {
			e.queued.Add(-int64(len(ss.outbox)))
			ss.outbox = nil
			ss.sending = false
			ss.mu.Unlock()
			return
		}
		m := ss.outbox[0]
		ss.outbox[0] = outMsg{}
		ss.outbox = ss.outbox[1:]
		ss.mu.Unlock()
		if err := m.out.SendResponse(m.reqID, m.resp); err != nil {
			e.log.Debug("subscription: response not sent", "session", string(ss.id), "err", err)
		}
		e.queued.Add(-1)
	}
}

// header builds a ResponseHeader. The diagnostics and additional header are
// set to empty values because gopcua's encoder cannot encode nil ones.
func (e *Engine) header(handle uint32, status ua.StatusCode) *ua.ResponseHeader {
	return &ua.ResponseHeader{
		Timestamp:          e.clock.Now(),
		RequestHandle:      handle,
		ServiceResult:      status,
		ServiceDiagnostics: &ua.DiagnosticInfo{},
		AdditionalHeader:   ua.NewExtensionObject(nil),
	}
}

func (e *Engine) fault(handle uint32, status ua.StatusCode) *ua.ServiceFault {
	return &ua.ServiceFault{ResponseHeader: e.header(handle, status)}
}

func requestHandle(h *ua.RequestHeader) uint32 {
	if h == nil {
		return 0
	}
	return h.RequestHandle
}

// ownedLocked returns subscription id if it belongs to ss. e.mu must be held.
func (e *Engine) ownedLocked(ss *session, id uint32) *subscription {
	s := e.subs[id]
	if s == nil || ss == nil || s.sess != ss {
		return nil
	}
	return s
}
