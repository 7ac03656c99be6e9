package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// settleGrace: once one server is up with a known level, Dial waits at
// most this long for the other given URLs before choosing.
const settleGrace = time.Second

// control is the controller: the one goroutine that changes the set and
// the active server. It applies the selection rule after every message.
func (c *Client) control(ready chan<- error) {
	defer c.wg.Done()
	sel := &Selector{Hold: c.opts.PreferHold}
	start := time.Now()
	settle := c.clock.NewTicker(50 * time.Millisecond)
	defer settle.Stop()
	settled := false
	var wake <-chan time.Time
	for {
		select {
		case m := <-c.inbox:
			c.handle(m)
		case <-settle.Chan():
		case <-wake:
			wake = nil
		case <-c.ctx.Done():
			if !settled {
				ready <- ErrClosed
			}
			return
		}
		if !settled {
			if !c.settledSince(start) {
				continue
			}
			settled = true
			settle.Stop()
			d := c.decide(sel)
			if d.Reason == NoneReachable {
				ready <- c.noServerError()
				return
			}
			ready <- nil
			if !d.Wake.IsZero() {
				wake = c.clock.After(d.Wake.Sub(c.clock.Now()))
			}
			continue
		}
		if d := c.decide(sel); !d.Wake.IsZero() {
			wake = c.clock.After(max(d.Wake.Sub(c.clock.Now()), 0))
		}
	}
}

// settledSince reports whether Dial has waited long enough: every given
// URL has answered or failed once, or one server is up with its level
// and the others had settleGrace, or the Timeout is over.
func (c *Client) settledSince(start time.Time) bool {
	waited := time.Since(start)
	if waited > c.opts.Timeout+settleGrace {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	all, anyLevel := true, false
	for _, s := range c.servers {
		if s.dropped || !s.given {
			continue
		}
		if s.conn != nil && s.levelKnown {
			anyLevel = true
		}
		if !s.failed() && !(s.conn != nil && (s.levelKnown || waited > settleGrace)) {
			all = false
		}
	}
	return all || (anyLevel && waited > settleGrace)
}

// noServerError names every URL tried and why it failed.
func (c *Client) noServerError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var why []string
	causes := []error{ErrNoServer}
	for _, s := range c.servers {
		if s.dropped || len(s.urls) == 0 {
			continue
		}
		e := s.err
		if e == "" {
			e = strings.Join(s.urls, ", ") + ": no answer within " + c.opts.Timeout.String()
		}
		why = append(why, e)
		if s.lastErr != nil {
			causes = append(causes, s.lastErr)
		}
	}
	return &noServerError{text: fmt.Sprintf("%v: %s", ErrNoServer, strings.Join(why, "; ")), causes: causes}
}

// noServerError is ErrNoServer with every server's reason; it unwraps to
// ErrNoServer and each server's last error.
type noServerError struct {
	text   string
	causes []error
}

func (e *noServerError) Error() string   { return e.text }
func (e *noServerError) Unwrap() []error { return e.causes }

// handle applies one message to the set.
func (c *Client) handle(m any) {
	switch m := m.(type) {
	case msgUp:
		c.up(m.cn)
	case msgDown:
		c.mu.Lock()
		if s := m.cn.srv; s.conn == m.cn {
			s.conn, s.levelKnown = nil, false
			s.err, s.lastErr = fmt.Sprintf("%s: %v", m.cn.url, m.cn.lostErr), m.cn.lostErr
			if c.active == s {
				c.lastLost = m.cn
			}
		}
		subs := c.subs
		c.mu.Unlock()
		for _, sub := range subs {
			sub.forget(m.cn)
		}
	case msgFailed:
		c.mu.Lock()
		m.srv.err, m.srv.lastErr = m.err.Error(), m.err
		c.mu.Unlock()
	case msgDiscovered:
		c.discovered(m)
	case msgSubscribe:
		c.mu.Lock()
		c.subs = append(c.subs, m.sub)
		var cn *conn
		if c.active != nil {
			cn = c.active.conn
		}
		c.mu.Unlock()
		if cn == nil {
			m.reply <- nil // placed at the next move
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
		m.sub.opMu.Lock()
		_, err := m.sub.placeOn(ctx, cn)
		m.sub.opMu.Unlock()
		cancel()
		if err == nil && c.mode().hot() {
			c.mu.Lock()
			for _, s := range c.servers {
				if s.conn != nil && s.conn != cn && !s.dropped {
					c.goPlaceHot(m.sub, s.conn)
				}
			}
			c.mu.Unlock()
		}
		m.reply <- err
	case msgLevel:
		// state already updated; the caller re-decides
	}
}

// up records a new conn, merging records that turn out to be one server.
func (c *Client) up(cn *conn) {
	c.mu.Lock()
	s := cn.srv
	if s.dropped || c.closed || (s.conn != nil && s.conn != cn) {
		c.mu.Unlock()
		go cn.close(time.Second)
		return
	}
	if cn.uri != "" {
		for _, o := range c.servers {
			if o == s || o.dropped || o.uri != cn.uri {
				continue
			}
			keep, drop := o, s
			if s.order < o.order {
				keep, drop = s, o
			}
			if c.active == drop && drop.conn != nil {
				// Never cut the active server's session (it holds the
				// subscriptions): the record in use wins.
				keep, drop = drop, keep
			}
			for _, u := range drop.urls {
				if !slices.Contains(keep.urls, u) {
					keep.urls = append(keep.urls, u)
				}
			}
			keep.given = keep.given || drop.given
			drop.dropped = true
			if drop.conn != nil {
				go drop.conn.close(time.Second)
				drop.conn = nil
			}
			if c.active == drop {
				c.active = keep
			}
			c.startLocked(keep)
			if keep != s {
				c.mu.Unlock()
				go cn.close(time.Second)
				return
			}
		}
	}
	s.uri = cn.uri
	s.conn, s.err, s.lastErr = cn, "", nil
	if c.mode().hot() {
		for _, sub := range c.subs {
			c.goPlaceHot(sub, cn)
		}
	}
	c.mu.Unlock()
	if !c.opts.NoDiscovery {
		go c.discover(cn)
	}
}

// Well-known nodes of the redundancy surface.
var (
	serverArrayNode       = ua.NewNumericNodeID(0, id.Server_ServerArray)
	serverURIArrayNode    = ua.NewNumericNodeID(0, id.Server_ServerRedundancy_ServerURIArray)
	redundancySupportNode = ua.NewNumericNodeID(0, id.Server_ServerRedundancy_RedundancySupport)
)

// discover asks the server on cn for its set and posts what it learned.
func (c *Client) discover(cn *conn) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	var uris []string
	resp, err := cn.call(ctx, &ua.ReadRequest{
		NodesToRead: []*ua.ReadValueID{
			{NodeID: serverArrayNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			{NodeID: serverURIArrayNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
		},
		TimestampsToReturn: ua.TimestampsToReturnNeither,
	})
	if err == nil {
		for _, r := range resp.(*ua.ReadResponse).Results {
			uris = append(uris, stringsOf(r)...)
		}
	}
	urls := map[string][]string{}
	fr, err := cn.ch.Call(ctx, &ua.FindServersRequest{EndpointURL: cn.url}, nil, c.opts.Timeout)
	if err == nil {
		for _, app := range fr.(*ua.FindServersResponse).Servers {
			if app == nil || app.ApplicationURI == "" || (app.ApplicationURI != cn.uri && !slices.Contains(uris, app.ApplicationURI)) {
				continue
			}
			for _, u := range app.DiscoveryURLs {
				if strings.HasPrefix(u, "opc.tcp://") {
					urls[app.ApplicationURI] = append(urls[app.ApplicationURI], u)
				}
			}
		}
	}
	c.post(msgDiscovered{uris: uris, urls: urls})
}

func stringsOf(dv *ua.DataValue) []string {
	if dv == nil || dv.Status != ua.StatusOK || dv.Value == nil {
		return nil
	}
	ss, _ := dv.Value.Value().([]string)
	return ss
}

// discovered adds the servers and URLs a server named.
func (c *Client) discovered(m msgDiscovered) {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := slices.Clone(m.uris)
	for uri := range m.urls {
		all = append(all, uri)
	}
	for _, uri := range all {
		if uri == "" {
			continue
		}
		var rec *server
		for _, s := range c.servers {
			if !s.dropped && s.uri == uri {
				rec = s
			}
		}
		if rec == nil {
			// A record not reached yet with one of these URLs is this server.
			for _, s := range c.servers {
				if !s.dropped && s.uri == "" && slices.ContainsFunc(m.urls[uri], func(u string) bool { return slices.Contains(s.urls, u) }) {
					rec, s.uri = s, uri
					break
				}
			}
		}
		if rec == nil {
			rec = c.addServerLocked(uri, nil, false)
		}
		for _, u := range m.urls[uri] {
			if !slices.Contains(rec.urls, u) {
				rec.urls = append(rec.urls, u)
			}
		}
		c.startLocked(rec)
	}
}

// decide runs the selection rule and carries out its decision.
func (c *Client) decide(sel *Selector) Decision {
	c.mu.Lock()
	if c.closed {
		// Closing ends sessions; their answers (BadSessionClosed) are not
		// losses.
		c.mu.Unlock()
		return Decision{Reason: Stay}
	}
	var cands []Candidate
	byKey := map[string]*server{}
	for _, s := range c.servers {
		if s.dropped {
			continue
		}
		byKey[s.key] = s
		cands = append(cands, Candidate{ID: s.key, Order: s.order, Up: s.conn != nil && !s.conn.isLost(), Level: s.level, LevelKnown: s.levelKnown})
	}
	active := ""
	if c.active != nil {
		active = c.active.key
	}
	now := c.clock.Now()
	d := sel.Decide(now, active, cands)
	c.mu.Unlock()
	switch {
	case d.Move():
		c.moveTo(byKey[d.To], d)
	case d.Reason == NoneReachable && active != "":
		c.mu.Lock()
		from := c.active
		ev := Event{Kind: EventLost, At: time.Now(), From: from.ref(), Reason: "connection lost: " + from.err + "; no other server of the set is reachable", Mode: c.mode()}
		if p := c.pending; p != nil && p.From.URI != "" && p.From.URI != from.uri {
			// The move to from never delivered data: report the loss from
			// the server the application last had data from.
			ev.From = p.From
			ev.Reason = fmt.Sprintf("%s; then %s was lost too before it delivered data (%s); no other server of the set is reachable", p.Reason, from.ref().URI, from.err)
		}
		if from.conn != nil && from.conn.isLost() {
			c.lastLost = from.conn // before its msgDown, which no longer finds it active
		}
		if from.conn == nil && c.pending == nil {
			c.pending = &Event{Kind: EventFailover, From: from.ref(), Interrupted: c.lostAt(from), Reason: "connection lost: " + from.err}
		}
		c.active = nil
		c.bumpLocked()
		c.mu.Unlock()
		c.emit(ev)
	}
	return d
}

// lostAt is when from's connection was found lost (now when unknown).
// mu must be held.
func (c *Client) lostAt(from *server) time.Time {
	if cn := from.conn; cn != nil && cn.isLost() {
		return cn.lostAt // the decision came before its msgDown
	}
	if c.lastLost != nil && c.lastLost.srv == from {
		return c.lastLost.lostAt
	}
	return time.Now()
}

// bumpLocked wakes everyone waiting for the active server to change.
// mu must be held.
func (c *Client) bumpLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// moveTo makes to the active server and moves the subscriptions there.
func (c *Client) moveTo(to *server, d Decision) {
	if c.mode() == ModeAuto {
		c.chooseMode(to)
	}
	c.mu.Lock()
	from := c.active
	cn := to.conn
	if cn == nil {
		c.mu.Unlock()
		return // cannot happen: the rule only picks servers that are up
	}
	ev := c.moveEvent(from, to, cn, d)
	subs := slices.Clone(c.subs)
	var lost *conn // the conn that held the subscriptions, for a Mirrored failover
	planned := false
	switch {
	case d.Reason == Lost && from != nil && from.conn != nil:
		lost = from.conn // the decision came before its msgDown
	case d.Reason == Lost || d.Reason == Initial && c.pending != nil:
		lost = c.lastLost
	case (d.Reason == LeftBand || d.Reason == Outranked) && from != nil && from.conn != nil && c.mode() == ModeMirrored:
		// A planned move in Mirrored mode takes the session along, as a
		// failover does: a new subscription on `to` would deliver the
		// current values a second time.
		lost, planned = from.conn, true
	}
	c.active = to
	c.pending = nil
	if len(subs) > 0 && ev.Kind != EventConnected {
		p := ev
		c.pending = &p
	}
	c.bumpLocked()
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	if len(subs) > 0 && ev.Kind == EventFailover && c.mode() == ModeMirrored {
		if planned && hosts(lost, subs) {
			// The old server still serves: its channel closes first (the
			// session stays), so that nothing it publishes from now on
			// reaches the application; the next server republishes what
			// it sent and the client did not receive.
			lost.fail(fmt.Errorf("the session moved to %s (%s)", to.ref().URI, d.Reason))
		}
		done, fallback := c.mirrorTo(ctx, to, lost, subs)
		if done {
			return // the republished messages or the next Publish response complete the event
		}
		if fallback != "" {
			c.setFallback(fallback)
			ev.Fallback = fallback
		}
	}
	tr, ok := c.moveSubs(ctx, subs, cn)
	if !ok {
		return // msgDown follows; the next decision moves on
	}
	ev.Transferred = ev.Transferred || tr
	if c.mode().hot() {
		c.placeHotEverywhere(subs, to)
	}
	switch {
	case len(subs) == 0 || ev.Kind == EventConnected:
		ev.Resumed = time.Now()
		ev.At = ev.Resumed
		if !ev.Interrupted.IsZero() {
			ev.FailoverTime = ev.Resumed.Sub(ev.Interrupted)
		}
		c.emit(ev)
	case c.mode().hot():
		// The backup may have answered since the loss: then that answer
		// ended the interruption.
		if at := cn.lastUser.Load(); at > ev.Interrupted.UnixNano() {
			c.publishSeen(cn, time.Unix(0, at))
		}
	}
}

// moveEvent describes the move to `to` (its conn cn) that d decided.
// mu must be held.
func (c *Client) moveEvent(from, to *server, cn *conn, d Decision) Event {
	now := time.Now()
	ev := Event{Kind: EventFailover, At: now, To: ServerRef{URI: cn.uri, URL: cn.url}, Interrupted: now,
		Security: SecurityName(cn.ch.Policy(), cn.ch.Mode()), Mode: c.mode()}
	switch {
	case d.Reason == Initial && c.pending != nil:
		// Back after every server was lost: a failover from the old one.
		p := c.pending
		ev.From, ev.Interrupted = p.From, p.Interrupted
		ev.Reason = p.Reason + "; " + to.ref().String() + " reachable again"
	case d.Reason == Initial:
		ev.Kind = EventConnected
		ev.Interrupted = time.Time{}
		ev.Reason = "initial: " + levelText(to) + ", the highest of the set"
	case d.Reason == Lost:
		ev.From = from.ref()
		if from.conn != nil {
			ev.From.URL = from.conn.url
		}
		ev.Interrupted = c.lostAt(from)
		if p := c.pending; p != nil && !p.Interrupted.IsZero() {
			// An earlier move had not completed: measure from the first loss.
			ev.From, ev.Interrupted = p.From, p.Interrupted
		}
		ev.Reason = fmt.Sprintf("connection lost: %s; %s is the best server reachable", from.err, levelText(to))
	case d.Reason == LeftBand:
		ev.From = from.ref()
		ev.Reason = fmt.Sprintf("ServiceLevel %d left the healthy band (%d–255); %s is at %d", from.level, HealthyMin, to.ref().URI, to.level)
	case d.Reason == Outranked:
		ev.From = from.ref()
		ev.Reason = fmt.Sprintf("%s held ServiceLevel %d > %d for the prefer-hold of %v", to.ref().URI, to.level, from.level, c.opts.PreferHold)
	}
	return ev
}

// moveSubs makes every subscription report from cn: a Hot placement is
// promoted, otherwise it is transferred or re-created; the old server's,
// when it still serves, is demoted (Hot modes) or deleted. It reports
// whether any was transferred, and false when cn failed under it.
func (c *Client) moveSubs(ctx context.Context, subs []*userSub, cn *conn) (transferred, ok bool) {
	for _, s := range subs {
		s.opMu.Lock()
		s.mu.Lock()
		oldHost, oldID, oldItems := s.host, s.id, s.items
		s.mu.Unlock()
		tr, err := s.placeOn(ctx, cn)
		if err != nil {
			s.opMu.Unlock()
			c.log.Warn("moving a subscription failed", "to", cn.url, "err", err)
			if !cn.isLost() {
				cn.fail(fmt.Errorf("moving a subscription here failed: %w", err))
			}
			return transferred, false
		}
		transferred = transferred || tr
		if oldHost != nil && oldHost != cn && !oldHost.isLost() {
			if c.mode().hot() {
				s.demote(ctx, oldHost, oldID, oldItems)
			} else {
				s.leave(oldHost, oldID)
			}
		}
		s.opMu.Unlock()
	}
	return transferred, true
}

// placeHotEverywhere places subs on every up server but active that does
// not hold them yet (a subscription made while no server was active).
func (c *Client) placeHotEverywhere(subs []*userSub, active *server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		if s != active && s.conn != nil && !s.dropped && !s.conn.isLost() {
			for _, sub := range subs {
				c.goPlaceHot(sub, s.conn)
			}
		}
	}
}

// goPlaceHot places sub on cn (not the active server) in the background.
// mu must be held.
func (c *Client) goPlaceHot(sub *userSub, cn *conn) {
	c.goLocked(func() {
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
		defer cancel()
		sub.opMu.Lock()
		defer sub.opMu.Unlock()
		sub.placeHot(ctx, cn)
	})
}

// goLocked runs f in a goroutine Close waits for, unless the client is
// closing (Close must not find the WaitGroup growing after its Wait).
// mu must be held.
func (c *Client) goLocked(f func()) {
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// goAfter runs f in such a goroutine after d, unless cn is lost or the
// client closes first.
func (c *Client) goAfter(d time.Duration, cn *conn, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.goLocked(func() {
		select {
		case <-c.clock.After(d):
			f()
		case <-cn.lost:
		case <-c.ctx.Done():
		}
	})
}

// chooseMode sets the mode ModeAuto stands for from the RedundancySupport
// of to, the first server to become active (ModeFor); warm when it cannot
// be read.
func (c *Client) chooseMode(to *server) {
	c.mu.Lock()
	cn := to.conn
	c.mu.Unlock()
	mode, why := ModeWarm, ""
	if cn != nil {
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
		resp, err := cn.call(ctx, &ua.ReadRequest{
			NodesToRead:        []*ua.ReadValueID{{NodeID: redundancySupportNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}},
			TimestampsToReturn: ua.TimestampsToReturnNeither,
		})
		cancel()
		switch {
		case err != nil:
			why = err.Error()
		case len(resp.(*ua.ReadResponse).Results) != 1:
			why = "no result"
		default:
			dv := resp.(*ua.ReadResponse).Results[0]
			why = "RedundancySupport " + redundancySupportName(dv)
			if dv == nil || dv.Value == nil {
				break
			}
			if v, ok := dv.Value.Value().(int32); ok && dv.Status == ua.StatusOK {
				mode = ModeFor(ua.RedundancySupport(v))
			}
		}
	}
	c.modeV.Store(mode)
	c.log.Info("client mode chosen", "mode", mode, "server", to.ref().String(), "why", why)
}

// setFallback records on the pending move's event why a Mirrored failover
// fell back to the Warm path.
func (c *Client) setFallback(why string) {
	c.mu.Lock()
	if c.pending != nil {
		c.pending.Fallback = why
	}
	c.mu.Unlock()
}

func levelText(s *server) string {
	if !s.levelKnown {
		return s.ref().URI + " (ServiceLevel unknown)"
	}
	return fmt.Sprintf("%s at ServiceLevel %d", s.ref().URI, s.level)
}

// errNoActive is returned by requests while no server is active.
var errNoActive = errors.New("no active server")

// markTransferred records on the pending move's event whether its
// subscriptions were transferred (set before the request, so the first
// Publish response cannot overtake it).
func (c *Client) markTransferred(v bool) {
	c.mu.Lock()
	if c.pending != nil {
		c.pending.Transferred = v
	}
	c.mu.Unlock()
}
