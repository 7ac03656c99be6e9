package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Client is a redundancy-aware OPC UA client. Safe for concurrent use.
type Client struct {
	opts  Options
	clock clockwork.Clock
	log   *slog.Logger
	app   *ua.ApplicationDescription

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	inbox  chan any   // to the controller
	emitMu sync.Mutex // serialises OnEvent
	wg     sync.WaitGroup

	mu        sync.Mutex
	servers   []*server // in preference order; mu must be held.
	active    *server   // mu must be held.
	subs      []*userSub
	changed   chan struct{} // closed and replaced when active changes; mu must be held.
	pending   *Event        // a move waiting for its first Publish response; mu must be held.
	closed    bool          // mu must be held.
	lastLost  *conn         // the active server's conn that was lost last; mu must be held.
	nextOrder int           // mu must be held.

	modeV atomic.Value // Mode: Options.Mode, or once auto has chosen, the mode chosen
}

// mode is the client's mode; ModeAuto until the first server is active.
func (c *Client) mode() Mode {
	m, _ := c.modeV.Load().(Mode)
	return m
}

// Mode is the client's mode: the one given, or the one ModeAuto chose
// when the first server became active.
func (c *Client) Mode() Mode { return c.mode() }

// server is one server of the set as the client knows it.
type server struct {
	key   string // Candidate.ID
	order int
	given bool // from Options.URLs

	// All below: Client.mu must be held.
	uri        string
	urls       []string
	next       int // next URL to try
	conn       *conn
	level      byte
	levelKnown bool
	err        string // why the last attempt or session failed; "" while none has
	lastErr    error  // the error err describes
	dropped    bool   // merged into another record; its loop ends
	running    bool
}

// failed: the server is down and an attempt to reach it has ended. mu
// must be held.
func (s *server) failed() bool { return s.conn == nil && s.err != "" }

func (s *server) ref() ServerRef {
	ref := ServerRef{URI: s.uri}
	if s.conn != nil {
		ref.URL = s.conn.url
	} else if len(s.urls) > 0 {
		ref.URL = s.urls[0]
	}
	return ref
}

// Messages to the controller.
type (
	msgUp     struct{ cn *conn }
	msgDown   struct{ cn *conn }
	msgFailed struct {
		srv *server
		err error
	}
	msgLevel      struct{ cn *conn }
	msgDiscovered struct {
		uris []string
		urls map[string][]string
	}
	msgSubscribe struct {
		sub   *userSub
		reply chan error
	}
)

func (o Options) withDefaults() Options {
	if o.PreferHold <= 0 {
		o.PreferHold = DefaultPreferHold
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PublishRequests <= 0 {
		o.PublishRequests = publishesInFlight
	}
	if o.LostAfter <= 0 {
		o.LostAfter = DefaultLostAfter
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.HotQueueSize == 0 {
		o.HotQueueSize = DefaultHotQueueSize
	}
	if o.DedupWindow <= 0 {
		o.DedupWindow = DefaultDedupWindow
	}
	if o.Mode == "" {
		o.Mode = ModeAuto
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.ApplicationName == "" {
		o.ApplicationName = "otopcua client"
	}
	return o
}

// Dial discovers the set from opts.URLs, watches every server it reaches
// and makes the one with the highest ServiceLevel active. It fails with
// an error wrapping ErrNoServer when no URL answers within opts.Timeout.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, fmt.Errorf("client: Options.Mode: %w", err)
	}
	var urls []string
	for _, u := range opts.URLs {
		if u = strings.TrimSpace(u); u != "" && !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, errors.New("client: no server URL given")
	}
	c := &Client{
		opts:  opts,
		clock: opts.Clock,
		log:   opts.Logger,
		app: &ua.ApplicationDescription{
			ApplicationURI:  "urn:otopcua:client",
			ProductURI:      "urn:otopcua",
			ApplicationName: ua.NewLocalizedText(opts.ApplicationName),
			ApplicationType: ua.ApplicationTypeClient,
		},
		inbox:   make(chan any, 64),
		changed: make(chan struct{}),
	}
	c.modeV.Store(opts.Mode)
	if uri := opts.Security.applicationURI(); uri != "" {
		c.app.ApplicationURI = uri
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, u := range urls {
		c.addServerLocked("", []string{u}, true) // no goroutine runs yet
	}
	ready := make(chan error, 1)
	c.wg.Add(1)
	go c.control(ready)
	c.mu.Lock()
	for _, s := range c.servers {
		c.startLocked(s)
	}
	c.mu.Unlock()
	select {
	case err := <-ready:
		if err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
}

// addServerLocked adds a record. mu must be held (or the client not
// started yet).
func (c *Client) addServerLocked(uri string, urls []string, given bool) *server {
	s := &server{key: fmt.Sprintf("#%d", c.nextOrder), order: c.nextOrder, given: given, uri: uri, urls: urls}
	c.nextOrder++
	c.servers = append(c.servers, s)
	return s
}

// startLocked starts s's connection loop unless it runs or has no URL.
func (c *Client) startLocked(s *server) {
	if s.running || s.dropped || len(s.urls) == 0 {
		return
	}
	s.running = true
	c.wg.Add(1)
	go c.serverLoop(s)
}

// post hands m to the controller unless the client is closing.
func (c *Client) post(m any) {
	select {
	case c.inbox <- m:
	case <-c.ctx.Done():
	}
}

// serverLoop keeps a conn open to s: connect, wait for the loss, back
// off, again — until the client closes or s is merged away.
func (c *Client) serverLoop(s *server) {
	defer c.wg.Done()
	backoff := c.opts.MinBackoff
	for {
		c.mu.Lock()
		if s.dropped || c.closed {
			s.running = false
			c.mu.Unlock()
			return
		}
		url := s.urls[s.next%len(s.urls)]
		s.next++
		c.mu.Unlock()

		cn, err := openConn(c.ctx, c, s, url)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.log.Debug("connect failed", "url", url, "err", err)
			if !strings.Contains(err.Error(), url) {
				err = fmt.Errorf("%s: %w", url, err)
			}
			c.post(msgFailed{srv: s, err: err})
			if refusedIdentity(err) {
				// Asking again at once would only count against the
				// client's address at the server (its lockout).
				backoff = c.opts.MaxBackoff
			}
			select {
			case <-c.clock.After(backoff):
			case <-c.ctx.Done():
				return
			}
			backoff = min(2*backoff, c.opts.MaxBackoff)
			continue
		}
		backoff = c.opts.MinBackoff
		c.post(msgUp{cn: cn})
		if !c.awaitLoss(s, cn) {
			return
		}
	}
}

// awaitLoss waits until s's connection is lost and reports it; false when
// the client closes first. A Mirrored failover may replace s's conn (the
// mirrored session activated on a new channel to s): then it waits for
// that one.
func (c *Client) awaitLoss(s *server, cn *conn) bool {
	for {
		select {
		case <-cn.lost:
		case <-c.ctx.Done():
			return false
		}
		c.mu.Lock()
		next := s.conn
		c.mu.Unlock()
		if next != nil && next != cn && !next.isLost() {
			cn = next
			continue
		}
		if next != nil {
			cn = next // lost as well: it is the one s still holds
		}
		c.post(msgDown{cn: cn})
		return true
	}
}

// levelSeen is called by a Publish loop with a ServiceLevel value.
func (c *Client) levelSeen(cn *conn, v *ua.DataValue) {
	c.mu.Lock()
	s := cn.srv
	if s.conn == cn || s.conn == nil {
		if b, ok := levelOf(v); ok {
			s.level, s.levelKnown = b, true
		} else {
			s.levelKnown = false
		}
	}
	c.mu.Unlock()
	c.post(msgLevel{cn: cn})
}

// levelOf reads a ServiceLevel value: a Byte, or from a lenient server
// any integer in 0–255.
func levelOf(v *ua.DataValue) (byte, bool) {
	if v == nil || v.Value == nil || v.Status != ua.StatusOK {
		return 0, false
	}
	var n int64
	switch x := v.Value.Value().(type) {
	case byte:
		return x, true
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case uint16:
		n = int64(x)
	case int32:
		n = int64(x)
	case uint32:
		n = int64(x)
	case int64:
		n = x
	default:
		return 0, false
	}
	if n < 0 || n > 255 {
		return 0, false
	}
	return byte(n), true
}

// publishSeen is called by a Publish loop for every response of a user
// subscription: the first one after a move completes its event.
func (c *Client) publishSeen(cn *conn, at time.Time) {
	c.mu.Lock()
	ev := c.pending
	if ev == nil || c.active == nil || c.active.conn != cn {
		c.mu.Unlock()
		return
	}
	c.pending = nil
	c.mu.Unlock()
	if at.Before(ev.Interrupted) {
		// In a Hot mode the backup's response can arrive in the moment
		// between the old server's loss and the client noticing it: the
		// application had data throughout, a failover time of zero.
		at = ev.Interrupted
	}
	ev.Resumed, ev.At = at, at
	ev.FailoverTime = at.Sub(ev.Interrupted)
	c.emit(*ev)
}

// emit reports ev: logs it and calls OnEvent, one event at a time. For a
// move it runs before the first notification from the new server is
// delivered, so a caller printing both sees the event first.
func (c *Client) emit(ev Event) {
	c.emitMu.Lock()
	defer c.emitMu.Unlock()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	c.log.Info("client "+string(ev.Kind), "from", ev.From.String(), "to", ev.To.String(), "reason", ev.Reason, "failover_time", ev.FailoverTime)
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(ev)
	}
}

// refusedIdentity reports whether err is a server refusing the client's
// identity, or unable to take it: not fixed by retrying soon.
func refusedIdentity(err error) bool {
	var ae *uaclient.ActivationError
	return errors.As(err, &ae) || errors.Is(err, uaclient.ErrNoUserNameToken)
}
