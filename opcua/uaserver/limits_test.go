package uaserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
)

// The tests of this file each pin one finding of a hostile-client probe of
// the server: one anonymous client must not be able to take the server
// away from the others. Clients of different machines are simulated by
// dialling from different loopback addresses (127.0.0.2, 127.0.0.3, ...).

// tryCreateSession sends CreateSession and returns its ServiceResult.
func (c *rawClient) tryCreateSession(timeoutMS float64) ua.StatusCode {
	resp, err := c.do(&ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{
			ApplicationURI: "urn:test:client", ApplicationName: ua.NewLocalizedText("test client"), ApplicationType: ua.ApplicationTypeClient,
		},
		SessionName: c.t.Name(),
		ClientNonce: make([]byte, 32),

		RequestedSessionTimeout: timeoutMS,
	})
	if err != nil {
		var code ua.StatusCode
		if errors.As(err, &code) {
			return code
		}
		c.t.Fatalf("CreateSession: %v", err)
	}
	c.token = resp.(*ua.CreateSessionResponse).AuthenticationToken
	return ua.StatusOK
}

// TestUnactivatedSessionsOfOneClientDoNotLockOutAnother: one channel used
// to create 100 sessions without activating any, taking every session of
// the server until they timed out an hour later. Now the client's address
// gets MaxUnactivatedSessionsPerAddress of them, they are closed after
// UnactivatedSessionTimeout, and another client gets in at once.
func TestUnactivatedSessionsOfOneClientDoNotLockOutAnother(t *testing.T) {
	clock := clockwork.NewFakeClock()
	ts := startServer(t, func(c *Config) { c.Clock = clock })

	attacker := dialRawFrom(t, ts.url, "127.0.0.2")
	counts := map[ua.StatusCode]int{}
	for range 100 {
		counts[attacker.tryCreateSession(0)]++
	}
	if counts[ua.StatusOK] != limits.Defaults().MaxUnactivatedSessionsPerAddress || counts[ua.StatusBadTooManySessions] != 100-limits.Defaults().MaxUnactivatedSessionsPerAddress {
		t.Fatalf("100 unactivated sessions from one address: %v, want %d Good and the rest BadTooManySessions",
			counts, limits.Defaults().MaxUnactivatedSessionsPerAddress)
	}

	victim := dialRawFrom(t, ts.url, "127.0.0.1")
	victim.session(60000)
	victim.mustDo(readReq(nodeTemp))

	st := ts.Stats()
	if st.SessionsUnactivated != limits.Defaults().MaxUnactivatedSessionsPerAddress || st.SessionsActivated != 1 {
		t.Fatalf("Stats: %d unactivated, %d activated; want %d and 1", st.SessionsUnactivated, st.SessionsActivated, limits.Defaults().MaxUnactivatedSessionsPerAddress)
	}
	if n := st.Refusals[LimitUnactivatedSessionsPerAddress]; n != 95 {
		t.Fatalf("refusals[%s] = %d, want 95", LimitUnactivatedSessionsPerAddress, n)
	}

	// After UnactivatedSessionTimeout the attacker's sessions are gone; the
	// victim's activated one stays.
	clock.Advance(limits.Defaults().UnactivatedSessionTimeout)
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := ts.SessionCount(); n != 1 {
			return fmt.Errorf("%d sessions, want the victim's 1", n)
		}
		return nil
	})
	victim.mustDo(readReq(nodeTemp))
	if n := ts.Stats().Refusals[LimitUnactivatedSessionTimeout]; n != uint64(limits.Defaults().MaxUnactivatedSessionsPerAddress) {
		t.Fatalf("refusals[%s] = %d, want %d", LimitUnactivatedSessionTimeout, n, limits.Defaults().MaxUnactivatedSessionsPerAddress)
	}
	// The attacker's address has its budget back.
	if code := attacker.tryCreateSession(0); code != ua.StatusOK {
		t.Fatalf("CreateSession after the timeout: %v", code)
	}
}

// TestSessionBudgets covers the other session limits: activated sessions
// per address, the server-wide unactivated budget (a newcomer evicts the
// largest holder's oldest session; a largest holder is refused) and
// MaxSessions.
func TestSessionBudgets(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.MaxSessions = 6
		c.MaxSessionsPerAddress = 3
		c.MaxUnactivatedSessions = 2
		c.MaxUnactivatedSessionsPerAddress = 2
	})
	// Activated sessions: 3 per address.
	a := dialRawFrom(t, ts.url, "127.0.0.2")
	for i := range 4 {
		code := a.tryCreateSession(60000)
		if want := ua.StatusOK; i == 3 {
			if code != ua.StatusBadTooManySessions {
				t.Fatalf("4th session of one address: %v, want BadTooManySessions", code)
			}
			break
		} else if code != want {
			t.Fatalf("session %d: %v", i, code)
		}
		a.activate()
	}
	// Unactivated: 2 per address, 2 in all. b fills the budget; c evicts
	// b's older session (b's channel stays: its other session is on it);
	// c, now as large a holder as b, is refused.
	b := dialRawFrom(t, ts.url, "127.0.0.3")
	c := dialRawFrom(t, ts.url, "127.0.0.4")
	d := dialRawFrom(t, ts.url, "127.0.0.5")
	var bFirst *ua.NodeID
	for i, tc := range []struct {
		rc   *rawClient
		want ua.StatusCode
	}{
		{b, ua.StatusOK}, {b, ua.StatusOK}, {b, ua.StatusBadTooManySessions}, // per address
		{c, ua.StatusOK},                 // evicts b's first
		{c, ua.StatusBadTooManySessions}, // server-wide: c holds as many as b
	} {
		if code := tc.rc.tryCreateSession(60000); code != tc.want {
			t.Fatalf("CreateSession %d: %v, want %v", i, code, tc.want)
		}
		if i == 0 {
			bFirst = b.token
		}
	}
	bSecond := b.token
	b.token = bFirst
	b.wantStatus(activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID}), ua.StatusBadSessionIDInvalid)
	b.token = bSecond
	// Activating frees the unactivated budget; MaxSessions (6) still holds.
	b.activate()
	c.activate()
	if code := d.tryCreateSession(60000); code != ua.StatusOK {
		t.Fatalf("CreateSession once the budget is free: %v", code)
	}
	d.activate()
	e := dialRawFrom(t, ts.url, "127.0.0.6")
	if code := e.tryCreateSession(60000); code != ua.StatusBadTooManySessions {
		t.Fatalf("7th session: %v, want BadTooManySessions", code)
	}
	r := ts.Stats().Refusals
	for limit, want := range map[string]uint64{
		LimitSessionsPerAddress: 1, LimitUnactivatedSessionsPerAddress: 1, LimitUnactivatedSessions: 1, LimitSessions: 1,
		LimitUnactivatedSessionEvictions: 1,
	} {
		if r[limit] != want {
			t.Errorf("refusals[%s] = %d, want %d", limit, r[limit], want)
		}
	}
}

// TestRequestedSessionTimeoutZeroGetsTheDefault: a session timeout of 0
// was revised to the 1 h maximum.
func TestRequestedSessionTimeoutZeroGetsTheDefault(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.url)
	if got := rc.createSession(0).RevisedSessionTimeout; got != float64(limits.Defaults().DefaultSessionTimeout/time.Millisecond) {
		t.Fatalf("RevisedSessionTimeout %v ms, want %v", got, limits.Defaults().DefaultSessionTimeout.Milliseconds())
	}
}

// dialTCPFrom opens a plain TCP connection from ip.
func dialTCPFrom(t *testing.T, addr, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// helloAck sends a Hello on c and reads the answer's type and status.
func helloAck(t *testing.T, c net.Conn) (string, ua.StatusCode) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeUACP(c, "HELF", &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535}); err != nil {
		return "", 0
	}
	w := &wireClient{t: t, c: c}
	typ, b := w.frameOrEOF()
	if typ == "ERRF" {
		var e uacp.Error
		if _, err := e.Decode(b[8:]); err != nil {
			t.Fatal(err)
		}
		return typ, ua.StatusCode(e.ErrorCode)
	}
	return typ, ua.StatusOK
}

// frameOrEOF is frame that answers "" at the end of the stream.
func (w *wireClient) frameOrEOF() (string, []byte) {
	var hb [8]byte
	if _, err := io.ReadFull(w.c, hb[:]); err != nil {
		return "", nil
	}
	w.c = &prefixConn{Conn: w.c, prefix: hb[:]}
	return w.frame()
}

// prefixConn replays prefix before reading from Conn.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// TestConnectionLimits: connections were not capped at all; 385 silent
// ones exhausted the process's file descriptors.
func TestConnectionLimits(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.MaxConnections = 5
		c.MaxConnectionsPerAddress = 3
	})
	addr := ts.Addr().String()
	var held []net.Conn
	for range 3 {
		c := dialTCPFrom(t, addr, "127.0.0.2")
		if typ, _ := helloAck(t, c); typ != "ACKF" {
			t.Fatalf("connection within the limit: %q", typ)
		}
		held = append(held, c)
	}
	if typ, code := helloAck(t, dialTCPFrom(t, addr, "127.0.0.2")); typ != "ERRF" || code != ua.StatusBadTCPNotEnoughResources {
		t.Fatalf("4th connection of one address: %q %v, want ERR BadTcpNotEnoughResources", typ, code)
	}
	for range 2 {
		if typ, _ := helloAck(t, dialTCPFrom(t, addr, "127.0.0.3")); typ != "ACKF" {
			t.Fatalf("another address within the total: %q", typ)
		}
	}
	if typ, code := helloAck(t, dialTCPFrom(t, addr, "127.0.0.4")); typ != "ERRF" || code != ua.StatusBadTCPNotEnoughResources {
		t.Fatalf("6th connection: %q %v, want ERR BadTcpNotEnoughResources", typ, code)
	}
	for _, c := range held {
		_ = c.Close()
	}
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if typ, _ := helloAck(t, dialTCPFrom(t, addr, "127.0.0.4")); typ != "ACKF" {
			return fmt.Errorf("after closing three: %q", typ)
		}
		return nil
	})
	r := ts.Stats().Refusals
	if r[LimitConnectionsPerAddress] != 1 || r[LimitConnections] == 0 {
		t.Fatalf("refusals: %v", r)
	}
}

// closedWithin reads from c until it is closed, failing unless that
// happens within d; it returns how long it took and the ERR status sent
// before the close (0 when none).
func closedWithin(t *testing.T, c net.Conn, d time.Duration) (time.Duration, ua.StatusCode) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	var code ua.StatusCode
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n >= 16 && string(buf[:4]) == "ERRF" {
			var e uacp.Error
			if _, derr := e.Decode(buf[8:n]); derr == nil {
				code = ua.StatusCode(e.ErrorCode)
			}
		}
		if err != nil {
			if isTimeout(err) {
				t.Fatalf("connection still open after %s", d)
			}
			return time.Since(start), code
		}
	}
}

// TestSilentConnectionsAreClosedWithinTheirDeadlines: a connection that
// sent Hello (or Hello and OpenSecureChannel) and then nothing was held
// forever.
func TestSilentConnectionsAreClosedWithinTheirDeadlines(t *testing.T) {
	const (
		openTimeout    = 300 * time.Millisecond
		sessionTimeout = 400 * time.Millisecond
		idleTimeout    = 500 * time.Millisecond
		margin         = 2 * time.Second
	)
	ts := startServer(t, func(c *Config) {
		c.HelloTimeout = 300 * time.Millisecond
		c.OpenSecureChannelTimeout = openTimeout
		c.CreateSessionTimeout = sessionTimeout
		c.IdleChannelTimeout = idleTimeout
	})
	addr := ts.Addr().String()

	t.Run("connect then silence", func(t *testing.T) {
		c := dialTCPFrom(t, addr, "127.0.0.2")
		took, _ := closedWithin(t, c, 300*time.Millisecond+margin)
		t.Logf("closed %s after connect", took)
	})
	t.Run("hello then silence", func(t *testing.T) {
		c := dialTCPFrom(t, addr, "127.0.0.2")
		if typ, _ := helloAck(t, c); typ != "ACKF" {
			t.Fatalf("hello: %q", typ)
		}
		took, code := closedWithin(t, c, openTimeout+margin)
		if code != ua.StatusBadTimeout || took < openTimeout-50*time.Millisecond {
			t.Fatalf("closed after %s with ERR %v, want ERR BadTimeout after about %s", took, code, openTimeout)
		}
	})
	t.Run("open secure channel then silence", func(t *testing.T) {
		w := dialWire(t, addr, nil)
		took, code := closedWithin(t, w.c, sessionTimeout+margin)
		if code != ua.StatusBadTimeout || took < sessionTimeout-100*time.Millisecond {
			t.Fatalf("closed after %s with ERR %v, want ERR BadTimeout after about %s", took, code, sessionTimeout)
		}
	})
	t.Run("session then idle", func(t *testing.T) {
		rc := dialRawFrom(t, ts.url, "127.0.0.3")
		rc.session(60000)
		before := ts.SessionCount()
		poll.CheckFor(t, idleTimeout+margin, 5*time.Millisecond, func() error {
			if n := ts.Stats().Channels; n != 0 {
				return fmt.Errorf("%d channels open", n)
			}
			return nil
		})
		if n := ts.SessionCount(); n != before {
			t.Fatalf("the idle channel's session went with it: %d sessions, want %d", n, before)
		}
	})
	t.Run("a waiting Publish keeps an idle channel", func(t *testing.T) {
		rc := dialRawFrom(t, ts.url, "127.0.0.4")
		rc.session(60000)
		// The fake engine never answers the Publish: the channel waits
		// for it and is not idle.
		go func() { _, _ = rc.do(&ua.PublishRequest{}) }()
		poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
			if len(ts.engine.publish) == 0 {
				return errors.New("publish not handed to the engine")
			}
			return nil
		})
		poll.Holds(t, 3*idleTimeout, 20*time.Millisecond, func() error {
			if n := ts.Stats().Channels; n != 1 {
				return fmt.Errorf("%d channels open while a Publish waits, want 1", n)
			}
			return nil
		})
		rc.mustDo(readReq(nodeTemp))
	})
	r := ts.Stats().Refusals
	for _, l := range []string{LimitHelloTimeout, LimitOpenSecureChannelTimeout, LimitCreateSessionTimeout, LimitIdleChannelTimeout} {
		if r[l] == 0 {
			t.Errorf("refusals[%s] = 0", l)
		}
	}
}

// TestResponsesAboveMaxResponseSizeAreRefused: a client that announced
// MaxMessageSize 0 ("no limit") got a 12 MB Browse response for a 190 KB
// request.
func TestResponsesAboveMaxResponseSizeAreRefused(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxResponseSize = 64 << 10 })
	w := dialWire(t, ts.Addr().String(), &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535, MaxMessageSize: 0})
	tok := w.session()

	browse := &ua.BrowseRequest{RequestHeader: tok(), View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}}
	for range 10000 {
		browse.NodesToBrowse = append(browse.NodesToBrowse, &ua.BrowseDescription{
			NodeID: nodeObjects, BrowseDirection: ua.BrowseDirectionForward, IncludeSubtypes: true, ResultMask: 63,
			ReferenceTypeID: ua.NewNumericNodeID(0, 33), // HierarchicalReferences
		})
	}
	w.sendChunked(50, encodeRequest(t, browse))
	w.wantFault(50, ua.StatusBadResponseTooLarge)

	// A Read whose answer is too large is caught when it is encoded.
	read := readReq()
	read.RequestHeader = tok()
	for range 10000 {
		read.NodesToRead = append(read.NodesToRead, &ua.ReadValueID{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
	}
	w.sendChunked(51, encodeRequest(t, read))
	w.wantFault(51, ua.StatusBadResponseTooLarge)

	// The channel goes on; small answers pass.
	w.wantOK(52)
	if n := ts.Stats().Refusals[LimitResponseSize]; n != 2 {
		t.Fatalf("refusals[%s] = %d, want 2", LimitResponseSize, n)
	}
}

// session creates and activates a session over the wire and returns a
// maker of request headers carrying its authentication token.
func (w *wireClient) session() func() *ua.RequestHeader {
	w.t.Helper()
	w.send("MSGF", 1, encodeRequest(w.t, &ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{
			ApplicationURI: "urn:test:client", ApplicationName: ua.NewLocalizedText("test client"), ApplicationType: ua.ApplicationTypeClient,
		},
		SessionName: w.t.Name(), ClientNonce: make([]byte, 32), RequestedSessionTimeout: 60000,
	}))
	_, resp := w.recv()
	cs, ok := resp.(*ua.CreateSessionResponse)
	if !ok {
		w.t.Fatalf("CreateSession: %T %v", resp, resp.Header().ServiceResult)
	}
	hdr := func() *ua.RequestHeader {
		h := newRequestHeader()
		h.AuthenticationToken = cs.AuthenticationToken
		return h
	}
	act := activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID})
	act.RequestHeader = hdr()
	w.send("MSGF", 2, encodeRequest(w.t, act))
	if _, resp := w.recv(); resp.Header().ServiceResult != ua.StatusOK {
		w.t.Fatalf("ActivateSession: %v", resp.Header().ServiceResult)
	}
	return hdr
}

// sendChunked sends body as MSGC chunks and a final MSGF that fit the
// negotiated 64 KiB buffer.
func (w *wireClient) sendChunked(reqID uint32, body []byte) {
	w.t.Helper()
	const most = 65535 - symHeaderLen
	for len(body) > most {
		w.send("MSGC", reqID, body[:most])
		body = body[most:]
	}
	w.send("MSGF", reqID, body)
}

// TestByteBudget pins the per-channel request budget: a request that fits,
// or any request while nothing is held, is admitted; others wait for a
// release.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 500); err != nil { // alone: admitted whatever its size
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 10) }()
	select {
	case err := <-got:
		t.Fatalf("acquired past the budget: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.release(500)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, 90); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.acquire(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire on a closed channel: %v", err)
	}
}

// blockingSource is an engine Source whose Watch stops at call number
// stopAt until release is closed, and that counts live registrations.
type blockingSource struct {
	stopAt  int64
	calls   atomic.Int64
	live    atomic.Int64
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *blockingSource) Read(*ua.NodeID, ua.AttributeID) *ua.DataValue { return goodValue(1.0) }

func (s *blockingSource) Watch(*ua.NodeID, func(*ua.DataValue)) (func(), ua.StatusCode) {
	if s.calls.Add(1) == s.stopAt {
		s.once.Do(func() { close(s.reached) })
		<-s.release
	}
	s.live.Add(1)
	var once sync.Once
	return func() { once.Do(func() { s.live.Add(-1) }) }, ua.StatusOK
}

// TestCreateMonitoredItemsOfAClosedChannelIsAbandoned: a 90,000-item
// request kept both cores busy for two minutes after its client had gone.
func TestCreateMonitoredItemsOfAClosedChannelIsAbandoned(t *testing.T) {
	src := &blockingSource{stopAt: 100, reached: make(chan struct{}), release: make(chan struct{})}
	srv, eng := startEngineServer(t, src, Config{})
	rc := dialRaw(t, "opc.tcp://"+srv.Addr().String())
	rc.session(60000)
	sub := rc.mustDo(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, PublishingEnabled: true}).(*ua.CreateSubscriptionResponse)
	req := &ua.CreateMonitoredItemsRequest{SubscriptionID: sub.SubscriptionID, TimestampsToReturn: ua.TimestampsToReturnBoth}
	for i := range limits.Defaults().MaxMonitoredItemsPerCall {
		req.ItemsToCreate = append(req.ItemsToCreate, &ua.MonitoredItemCreateRequest{
			ItemToMonitor:       &ua.ReadValueID{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(i), QueueSize: 1, SamplingInterval: -1},
		})
	}
	go func() { _, _ = rc.do(req) }()
	<-src.reached
	srv.mu.Lock()
	var ch *channel
	for _, c := range srv.channels {
		ch = c
	}
	srv.mu.Unlock()
	rc.close() // the client goes away while its request is being served
	select {
	case <-ch.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not notice the closed channel")
	}
	close(src.release)
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := src.live.Load(); n != 0 {
			return fmt.Errorf("%d registrations left", n)
		}
		return nil
	})
	if n := src.calls.Load(); n >= int64(len(req.ItemsToCreate)) {
		t.Fatalf("%d Watch calls: the request ran to its end after its channel closed", n)
	}
	if n := eng.Stats().MonitoredItems; n != 0 {
		t.Fatalf("%d monitored items, want 0", n)
	}
}

// TestMonitoredItemsPerCall: OperationLimits MaxMonitoredItemsPerCall is
// enforced with BadTooManyOperations on every item service.
func TestMonitoredItemsPerCall(t *testing.T) {
	srv, _ := startEngineServer(t, engineSource{newFakeStore()}, Config{Limits: limits.Limits{MaxMonitoredItemsPerCall: 3}})
	rc := dialRaw(t, "opc.tcp://"+srv.Addr().String())
	rc.session(60000)
	sub := rc.mustDo(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, PublishingEnabled: true}).(*ua.CreateSubscriptionResponse)
	items := func(n int) []*ua.MonitoredItemCreateRequest {
		var out []*ua.MonitoredItemCreateRequest
		for i := range n {
			out = append(out, &ua.MonitoredItemCreateRequest{
				ItemToMonitor:       &ua.ReadValueID{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
				MonitoringMode:      ua.MonitoringModeReporting,
				RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(i), QueueSize: 1},
			})
		}
		return out
	}
	rc.wantStatus(&ua.CreateMonitoredItemsRequest{SubscriptionID: sub.SubscriptionID, ItemsToCreate: items(4)}, ua.StatusBadTooManyOperations)
	rc.mustDo(&ua.CreateMonitoredItemsRequest{SubscriptionID: sub.SubscriptionID, ItemsToCreate: items(3)})
	ids := []uint32{1, 2, 3, 4}
	rc.wantStatus(&ua.DeleteMonitoredItemsRequest{SubscriptionID: sub.SubscriptionID, MonitoredItemIDs: ids}, ua.StatusBadTooManyOperations)
	rc.wantStatus(&ua.SetMonitoringModeRequest{SubscriptionID: sub.SubscriptionID, MonitoredItemIDs: ids}, ua.StatusBadTooManyOperations)
	if n := srv.Stats().Refusals[LimitOperationsPerCall]; n != 3 {
		t.Fatalf("refusals[%s] = %d, want 3", LimitOperationsPerCall, n)
	}
}
