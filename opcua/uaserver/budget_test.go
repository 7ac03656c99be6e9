package uaserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
)

// The tests of this file pin the unactivated-session budget against
// clients that hold it from a few addresses, and the password checks'
// own budget against a sign-in flood from many.

// fromAddr makes gopcua's client dial from the local address ip.
func fromAddr(ip string) opcua.Option {
	d := opcua.DefaultDialer()
	d.Dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	return opcua.Dialer(d)
}

// createOnly sends CreateSession as request reqID and returns the
// session's authentication token; the session is not activated.
func (w *wireClient) createOnly(reqID uint32) *ua.NodeID {
	w.t.Helper()
	w.send("MSGF", reqID, encodeRequest(w.t, &ua.CreateSessionRequest{
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
	return cs.AuthenticationToken
}

// readWith returns a Read request in the session of token.
func readWith(token *ua.NodeID) *ua.ReadRequest {
	req := readReq(nodeTemp)
	req.RequestHeader = newRequestHeader()
	req.RequestHeader.AuthenticationToken = token
	return req
}

// TestEvictedSessionsChannelIsClosedWithTooManySessions: 127.0.0.2 fills
// the unactivated budget with one session on each of two channels; a
// client from 127.0.0.3 gets a session, the older of the two is evicted,
// its channel is told ERR BadTooManySessions and closed, and the other
// channel and its session stay.
func TestEvictedSessionsChannelIsClosedWithTooManySessions(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.MaxUnactivatedSessions = 2
		c.MaxUnactivatedSessionsPerAddress = 2
	})
	older := dialWireFrom(t, ts.Addr().String(), "127.0.0.2", nil)
	older.createOnly(1)
	newer := dialWireFrom(t, ts.Addr().String(), "127.0.0.2", nil)
	kept := newer.createOnly(1)

	newcomer := dialRawFrom(t, ts.url, "127.0.0.3")
	newcomer.session(60000)
	newcomer.mustDo(readReq(nodeTemp))

	if code := older.errCode(); code != ua.StatusBadTooManySessions {
		t.Fatalf("the evicted session's channel got ERR %v, want BadTooManySessions", code)
	}
	if typ, _ := older.frameOrEOF(); typ != "" {
		t.Fatalf("after the ERR the channel sent %s, want the end of the stream", typ)
	}
	newer.wantOK(2)
	newer.send("MSGF", 3, encodeRequest(t, readWith(kept)))
	newer.wantFault(3, ua.StatusBadSessionNotActivated) // alive, still unactivated

	st := ts.Stats()
	if st.Refusals[LimitUnactivatedSessionEvictions] != 1 || st.SessionsUnactivated != 1 || st.SessionsActivated != 1 {
		t.Fatalf("evictions %d, %d unactivated, %d activated; want 1, 1, 1",
			st.Refusals[LimitUnactivatedSessionEvictions], st.SessionsUnactivated, st.SessionsActivated)
	}
	if err := contains(ts.logs.String(), "evicted: the unactivated session budget is full"); err != nil {
		t.Fatalf("log: %v", err)
	}
}

// TestPasswordChecksHaveTheirOwnBudget: four addresses hold a password
// check each (the directory does not answer them) while the unactivated
// budget is 2. Their sessions are outside that budget, so an anonymous
// client and a real user from a fifth address sign in at once; a second
// check from a flooding address is refused BadTooManySessions without its
// password reaching the directory. When the checks are refused their
// sessions go back into the budget where there is room, evicting no one.
func TestPasswordChecksHaveTheirOwnBudget(t *testing.T) {
	r := newIdentityRig(t, func(c *Config) {
		c.MaxUnactivatedSessions = 2
		c.MaxUnactivatedSessionsPerAddress = 2
		c.MaxPasswordChecksPerAddress = 1
	})
	entered := make(chan string, 16)
	release := make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	defer let()
	r.users.mu.Lock()
	r.users.gate = func(_, password string) {
		if password == "flood" {
			entered <- password
			<-release
		}
	}
	r.users.mu.Unlock()

	// One after the other: started together, their sessions would evict
	// each other from the budget of 2 before their ActivateSession came.
	flooders := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	flood := make(chan error, len(flooders))
	for _, ip := range flooders {
		go func() {
			_, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "flood"), fromAddr(ip))
			flood <- err
		}()
		select {
		case <-entered:
		case err := <-flood:
			t.Fatalf("a flooding sign-in from %s ended before its password check: %v", ip, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("the password check of %s did not start", ip)
		}
	}
	if n := r.Stats().SessionsUnactivated; n != len(flooders) {
		t.Fatalf("%d unactivated sessions, want the %d in a password check", n, len(flooders))
	}

	if _, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "flood"), fromAddr("127.0.0.2")); !errors.Is(err, ua.StatusBadTooManySessions) {
		t.Fatalf("a second password check from a flooding address: %v, want BadTooManySessions", err)
	}
	select {
	case <-entered:
		t.Fatal("the refused check reached the directory")
	default:
	}
	if _, err := r.connect(t, ua.UserTokenTypeAnonymous, fromAddr("127.0.0.1")); err != nil {
		t.Fatalf("anonymous during the flood: %v", err)
	}
	if _, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("vera", "vera-password"), fromAddr("127.0.0.6")); err != nil {
		t.Fatalf("a real user from another address during the flood: %v", err)
	}
	st := r.Stats()
	if st.Refusals[LimitPasswordChecksPerAddress] != 1 || st.Refusals[LimitUnactivatedSessions] != 0 {
		t.Fatalf("refusals: %s %d, %s %d; want 1 and 0", LimitPasswordChecksPerAddress, st.Refusals[LimitPasswordChecksPerAddress],
			LimitUnactivatedSessions, st.Refusals[LimitUnactivatedSessions])
	}
	if st.Refusals[LimitActivationFailures] != 0 || st.SessionsActivated != 2 {
		t.Fatalf("activation-failure refusals %d, %d activated; want 0 and 2", st.Refusals[LimitActivationFailures], st.SessionsActivated)
	}

	let()
	for range flooders {
		if err := <-flood; !errors.Is(err, ua.StatusBadUserAccessDenied) {
			t.Fatalf("a flooding sign-in: %v, want BadUserAccessDenied", err)
		}
	}
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := r.Stats().SessionsUnactivated; n > 2 {
			return fmt.Errorf("%d unactivated sessions after the refused checks, want at most MaxUnactivatedSessions (2)", n)
		}
		return nil
	})
	// A session back from a refused password never evicts: the four came
	// back into a budget of 2, two of them found no room and ended.
	if n := r.Stats().Refusals[LimitUnactivatedSessionEvictions]; n != 0 {
		t.Fatalf("%d evictions by sessions back from a refused password, want 0", n)
	}
}

// holder is a hostile client that holds one unactivated session from
// address ip and recreates it whenever it is dropped (evicted or timed
// out), redialling when its channel is closed. It never activates.
type holder struct {
	url, ip string
	conn    *uacp.Conn
	sc      *uasc.SecureChannel
	errs    chan error
	token   *ua.NodeID

	created, refused, dropped *atomic.Int64
}

func (h *holder) run(ctx context.Context) {
	defer h.hangUp()
	for ctx.Err() == nil {
		pause := time.Duration(0)
		switch {
		case h.sc == nil:
			if h.dial(ctx) != nil {
				pause = 100 * time.Millisecond
			}
		case h.token == nil:
			pause = h.create(ctx)
		default:
			h.probe(ctx)
			pause = 150 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause): // the attacker's pace, not a wait for the server
		}
	}
}

func (h *holder) dial(ctx context.Context) error {
	d := &uacp.Dialer{Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(h.ip)}, Timeout: 2 * time.Second}}
	conn, err := d.Dial(ctx, h.url)
	if err != nil {
		return err
	}
	h.errs = make(chan error, 64) // drained before every request
	sc, err := uasc.NewSecureChannel(h.url, conn, &uasc.Config{
		SecurityPolicyURI: ua.SecurityPolicyURINone, SecurityMode: ua.MessageSecurityModeNone,
		Lifetime: uint32(time.Hour / time.Millisecond), RequestTimeout: 2 * time.Second,
	}, h.errs)
	if err == nil {
		err = sc.Open(ctx)
	}
	if err != nil {
		_ = conn.Close()
		return err
	}
	h.conn, h.sc = conn, sc
	return nil
}

// do sends req in the held session; a channel error hangs up.
func (h *holder) do(ctx context.Context, req ua.Request) (ua.StatusCode, bool) {
	if h.channelGone() {
		h.hangUp()
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := h.sc.SendRequest(ctx, req, h.token, func(ua.Response) error { return nil })
	var code ua.StatusCode
	switch {
	case err == nil:
		return ua.StatusOK, true
	case errors.As(err, &code): // the ServiceResult
		return code, true
	}
	h.hangUp()
	return 0, false
}

// channelGone drains the errors the secure channel reported: a status
// is a refused request's (the channel goes on); an ERR message or the end
// of the stream means it is gone.
func (h *holder) channelGone() bool {
	for {
		select {
		case err := <-h.errs:
			var code ua.StatusCode
			if !errors.As(err, &code) {
				return true
			}
		default:
			return false
		}
	}
}

func (h *holder) create(ctx context.Context) time.Duration {
	h.token = nil
	if h.channelGone() {
		h.hangUp()
		return 0
	}
	var resp *ua.CreateSessionResponse
	req := &ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{ApplicationURI: "urn:test:holder", ApplicationName: ua.NewLocalizedText("holder"), ApplicationType: ua.ApplicationTypeClient},
		SessionName:       "holder " + h.ip, ClientNonce: make([]byte, 32), RequestedSessionTimeout: 60000,
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := h.sc.SendRequest(tctx, req, nil, func(r ua.Response) error {
		resp, _ = r.(*ua.CreateSessionResponse)
		return nil
	})
	switch {
	case err == nil && resp != nil:
		h.token = resp.AuthenticationToken
		h.created.Add(1)
		return 0
	case errors.Is(err, ua.StatusBadTooManySessions):
		h.refused.Add(1)
		return 100 * time.Millisecond
	}
	h.hangUp()
	return 100 * time.Millisecond
}

// probe reads in the held session: BadSessionNotActivated means it is
// still held; anything else means it was dropped.
func (h *holder) probe(ctx context.Context) {
	code, ok := h.do(ctx, readWith(h.token))
	if ok && code == ua.StatusBadSessionNotActivated {
		return
	}
	h.dropped.Add(1)
	h.token = nil
}

func (h *holder) hangUp() {
	if h.sc != nil {
		_ = h.sc.Close()
		_ = h.conn.Close()
	}
	h.sc, h.conn, h.token = nil, nil, nil
}

// timedConnect connects an anonymous gopcua client from ip, reads a value
// in its session and closes it; it returns how long Connect took.
func timedConnect(url, ip string) (time.Duration, error) {
	c, err := opcua.NewClient(url, opcua.SecurityMode(ua.MessageSecurityModeNone), opcua.AutoReconnect(false),
		opcua.RequestTimeout(5*time.Second), fromAddr(ip))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err = c.Connect(ctx)
	took := time.Since(start)
	defer func() { _ = c.Close(context.Background()) }()
	if err != nil {
		return took, err
	}
	if _, err := c.Read(ctx, readReq(nodeTemp)); err != nil {
		return took, fmt.Errorf("read in the new session: %w", err)
	}
	return took, nil
}

// TestUnactivatedBudgetCannotBeHeldFromFiveAddresses: five addresses
// (127.0.0.2 … 127.0.0.6) run five holders each, every one keeping a
// never-activated session and recreating it whenever it is dropped, for
// 60 s, with the default limits (20 unactivated sessions, 5 per address,
// dropped after 10 s). Every 2 s a legitimate anonymous client from
// 127.0.0.1 gets a session (Create and Activate) within 1 s, and reads in
// it. Before the fix the four addresses at their limit held the budget
// and the legitimate client got BadTooManySessions for seconds.
func TestUnactivatedBudgetCannotBeHeldFromFiveAddresses(t *testing.T) {
	t.Parallel()
	const (
		run       = 60 * time.Second
		every     = 2 * time.Second
		mostTaken = time.Second
	)
	ts := startServer(t, func(c *Config) { c.Logger = discardLogger() })
	budget := limits.Defaults().MaxUnactivatedSessions

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var created, refused, dropped atomic.Int64
	for a := 2; a <= 6; a++ {
		for range 5 {
			h := &holder{url: ts.url, ip: fmt.Sprintf("127.0.0.%d", a), created: &created, refused: &refused, dropped: &dropped}
			wg.Go(func() { h.run(ctx) })
		}
	}
	poll.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if n := ts.Stats().SessionsUnactivated; n < budget {
			return fmt.Errorf("the holders hold %d unactivated sessions, want the whole budget of %d", n, budget)
		}
		return nil
	})

	var worst time.Duration
	attempts, full := 0, 0
	for start := time.Now(); time.Since(start) < run; {
		next := time.Now().Add(every)
		if ts.Stats().SessionsUnactivated >= budget {
			full++
		}
		took, err := timedConnect(ts.url, "127.0.0.1")
		attempts++
		if err != nil {
			t.Fatalf("attempt %d: the legitimate client got %v after %v", attempts, err, took)
		}
		if took > mostTaken {
			t.Fatalf("attempt %d: the legitimate client's session took %v, want within %v", attempts, took, mostTaken)
		}
		worst = max(worst, took)
		select {
		case <-time.After(time.Until(next)): // the legitimate client's pace
		case <-ctx.Done():
		}
	}
	st := ts.Stats()
	t.Logf("%d attempts in %v, slowest session %v; the budget was full before %d of them; holders created %d sessions, were refused %d times and saw %d dropped; evictions %d, unactivated timeouts %d",
		attempts, run, worst, full, created.Load(), refused.Load(), dropped.Load(),
		st.Refusals[LimitUnactivatedSessionEvictions], st.Refusals[LimitUnactivatedSessionTimeout])
	// The attack was on: the budget was full before at least half the
	// attempts (it dips for a moment after each 10 s expiry, until the
	// holder notices and recreates), and the holders' sessions were
	// dropped after 10 s and recreated.
	if full < attempts/2 {
		t.Fatalf("the budget was full before only %d of %d attempts: the holders did not hold it", full, attempts)
	}
	if st.Refusals[LimitUnactivatedSessionTimeout] < uint64(budget) || created.Load() < int64(2*budget) {
		t.Fatalf("%d unactivated timeouts and %d sessions created: the holders did not renew their sessions",
			st.Refusals[LimitUnactivatedSessionTimeout], created.Load())
	}
	if st.Refusals[LimitUnactivatedSessionEvictions] < uint64(full) {
		t.Fatalf("%d evictions for %d attempts on a full budget", st.Refusals[LimitUnactivatedSessionEvictions], full)
	}
}
