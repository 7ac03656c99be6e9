package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua"
)

// These tests run the client against real otopcua OPC UA servers in this
// process (opcua.Server on loopback): real sockets, sessions and
// subscriptions. Process-level drills (SIGKILL of a host) are in
// tests/failover.

// pair starts servers with the given URIs and levels, each listing the
// others as peers (with their URLs when discoverable).
func startSet(t *testing.T, discoverable bool, levels map[string]byte, uris ...string) map[string]*opcua.Server {
	t.Helper()
	return startSetWith(t, discoverable, levels, nil, uris...)
}

// startSetWith is startSet with setup applied to each server's Config.
func startSetWith(t *testing.T, discoverable bool, levels map[string]byte, setup func(uri string, c *opcua.Config), uris ...string) map[string]*opcua.Server {
	t.Helper()
	ports := map[string]int{}
	for _, u := range uris {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[u] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	out := map[string]*opcua.Server{}
	for _, u := range uris {
		var peers, urls []string
		for _, o := range uris {
			if o != u {
				peers = append(peers, o)
				if discoverable {
					urls = append(urls, fmt.Sprintf("opc.tcp://127.0.0.1:%d", ports[o]))
				}
			}
		}
		cfg := opcua.Config{ListenHost: "127.0.0.1", PublicHostname: "127.0.0.1", Port: ports[u],
			ApplicationURI: u, PeerApplicationURIs: peers, PeerDiscoveryURLs: urls, Clock: clockwork.NewRealClock(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if setup != nil {
			setup(u, &cfg)
		}
		s, err := opcua.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		s.SetServiceLevel(levels[u])
		t.Cleanup(func() { s.Close() })
		out[u] = s
	}
	return out
}

// recorder collects a client's events.
type recorder struct {
	mu sync.Mutex
	ev []Event
}

func (r *recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, e)
}

func (r *recorder) events(kind EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.ev {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func dial(t *testing.T, rec *recorder, o Options) *Client {
	t.Helper()
	if rec != nil {
		o.OnEvent = rec.add
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, o)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var levelNode = ua.NewNumericNodeID(0, id.Server_ServiceLevel)

// nextFrom waits for a notification of level from server uri.
func nextFrom(t *testing.T, sub *Subscription, uri string, level byte, total time.Duration) Notification {
	t.Helper()
	timeout := time.After(total)
	for {
		select {
		case n, ok := <-sub.Notifications():
			if !ok {
				t.Fatal("notifications closed")
			}
			if b, ok := levelOf(n.Value); ok && b == level && n.Server.URI == uri {
				return n
			}
		case <-timeout:
			t.Fatalf("no notification %d from %s within %v", level, uri, total)
		}
	}
}

func TestDialPicksTheHighestLevel(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 240, "urn:b": 250}, "urn:a", "urn:b")
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}})
	if got := c.Active().URI; got != "urn:b" {
		t.Fatalf("active %q, want urn:b (250)", got)
	}
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("connected event", func() bool { return len(rec.events(EventConnected)) == 1 }))
	if e := rec.events(EventConnected)[0]; e.To.URI != "urn:b" || !strings.Contains(e.Reason, "250") {
		t.Fatalf("connected event %+v", e)
	}
	dv, err := c.Read(context.Background(), levelNode)
	if err != nil || dv[0].Value.Value() != byte(250) {
		t.Fatalf("Read ServiceLevel: %v %v", dv, err)
	}
	info, err := c.Redundancy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.RedundancySupport != "Warm" || len(info.ServerUriArray) != 2 || info.ServerUriArray[0] != "urn:b" {
		t.Fatalf("redundancy info %+v", info)
	}
	servers := c.Servers()
	if len(servers) != 2 || !servers[1].Active || servers[0].Level != 240 || !servers[0].Up {
		t.Fatalf("servers %+v", servers)
	}
}

func TestLossMovesAtOnceAndSubscriptionsResume(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, "urn:a", "urn:b")
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}})
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	set["urn:a"].Close()
	set["urn:b"].SetServiceLevel(250)
	nextFrom(t, sub, "urn:b", 250, 5*time.Second)
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	e := rec.events(EventFailover)[0]
	if e.From.URI != "urn:a" || e.To.URI != "urn:b" || !strings.Contains(e.Reason, "lost") {
		t.Fatalf("failover event %+v", e)
	}
	if e.FailoverTime <= 0 || e.FailoverTime > 3*time.Second || e.Resumed.Before(e.Interrupted) {
		t.Fatalf("failover time %v (interrupted %v, resumed %v)", e.FailoverTime, e.Interrupted, e.Resumed)
	}
	t.Logf("failover time %v", e.FailoverTime)
	// Reads follow too.
	if dv, err := c.Read(context.Background(), levelNode); err != nil || dv[0].Value.Value() != byte(250) {
		t.Fatalf("Read after failover: %v %v", dv, err)
	}
}

func TestLeavingTheHealthyBandMovesWithoutTheHold(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, "urn:a", "urn:b")
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, PreferHold: time.Hour})
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	set["urn:a"].SetServiceLevel(200) // still healthy: stays
	nextFrom(t, sub, "urn:a", 200, 3*time.Second)
	set["urn:a"].SetServiceLevel(100)
	nextFrom(t, sub, "urn:b", 240, 3*time.Second)
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) > 0 }))
	e := rec.events(EventFailover)
	if len(e) != 1 || !strings.Contains(e[0].Reason, "healthy band") || e[0].From.URI != "urn:a" || e[0].Transferred {
		t.Fatalf("failover events %+v", e)
	}
	// The subscription left urn:a: no more notifications from it.
	set["urn:a"].SetServiceLevel(101)
	deadline := time.After(500 * time.Millisecond)
	for {
		select {
		case n := <-sub.Notifications():
			if n.Server.URI == "urn:a" {
				t.Fatalf("notification from the server left behind: %+v", n)
			}
		case <-deadline:
			return
		}
	}
}

func TestOutrankedMovesAfterTheHoldOnce(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 240, "urn:b": 250}, "urn:a", "urn:b")
	// urn:b is reachable only later: the client starts on urn:a.
	gate := newGate(t, set["urn:b"].Addr().String())
	rec := &recorder{}
	const hold = 700 * time.Millisecond
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), gate.url()}, PreferHold: hold, MaxBackoff: 200 * time.Millisecond})
	if c.Active().URI != "urn:a" {
		t.Fatalf("active %+v, want urn:a", c.Active())
	}
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 240, 3*time.Second)
	opened := time.Now()
	gate.open()
	nextFrom(t, sub, "urn:b", 250, 5*time.Second)
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) > 0 }))
	e := rec.events(EventFailover)
	if len(e) != 1 || !strings.Contains(e[0].Reason, "held") {
		t.Fatalf("failover events %+v", e)
	}
	if e[0].Interrupted.Sub(opened) < hold {
		t.Fatalf("moved %v after urn:b became reachable, before the hold of %v", e[0].Interrupted.Sub(opened), hold)
	}
	poll.Holds(t, 3*hold, 10*time.Millisecond, func() error {
		if n := len(rec.events(EventFailover)); n != 1 {
			return fmt.Errorf("%d failovers, want exactly 1 (no flapping)", n)
		}
		return nil
	})
}

func TestReconnectToTheSameServerTransfersTheSubscription(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250}, "urn:a")
	gate := newGate(t, set["urn:a"].Addr().String())
	gate.open()
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{gate.url()}, MaxBackoff: 200 * time.Millisecond})
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	gate.cut()
	poll.CheckFor(t, 3*time.Second, 10*time.Millisecond, poll.True("lost event", func() bool { return len(rec.events(EventLost)) == 1 }))
	gate.open()
	set["urn:a"].SetServiceLevel(251)
	nextFrom(t, sub, "urn:a", 251, 5*time.Second)
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	e := rec.events(EventFailover)[0]
	if !e.Transferred || e.From.URI != "urn:a" || e.To.URI != "urn:a" || e.FailoverTime <= 0 {
		t.Fatalf("reconnect event %+v", e)
	}
}

func TestDiscoveryFindsTheRestOfTheSet(t *testing.T) {
	set := startSet(t, true, map[string]byte{"urn:a": 240, "urn:b": 250}, "urn:a", "urn:b")
	c := dial(t, nil, Options{URLs: []string{set["urn:a"].EndpointURL()}, PreferHold: 200 * time.Millisecond})
	info, err := c.Redundancy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Servers) != 2 || !info.Servers[1].Up || info.Servers[1].Level != 250 {
		t.Fatalf("Redundancy right after Dial does not show the discovered server with its level: %+v", info.Servers)
	}
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("the client to find urn:b and move to it", func() bool { return c.Active().URI == "urn:b" }))
	s := c.Servers()
	if len(s) != 2 || s[1].URI != "urn:b" || s[1].URL != set["urn:b"].EndpointURL() {
		t.Fatalf("servers %+v", s)
	}
}

func TestNoServerReachableNamesEveryURL(t *testing.T) {
	var urls []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "opc.tcp://"+l.Addr().String())
		l.Close()
	}
	start := time.Now()
	_, err := Dial(context.Background(), Options{URLs: urls, Timeout: 2 * time.Second})
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("Dial: %v, want ErrNoServer", err)
	}
	for _, u := range urls {
		if !strings.Contains(err.Error(), u) {
			t.Errorf("error %q does not name %s", err, u)
		}
	}
	t.Logf("%v after %v", err, time.Since(start))
}

// gate is a TCP relay to a server that can refuse connections (and cut
// the open ones) or pass them: a server the client cannot reach for a
// while, the server itself unaffected.
type gate struct {
	t      *testing.T
	l      net.Listener
	target string
	mu     sync.Mutex
	pass   bool
	frozen bool // relayed connections stay open but carry nothing
	conns  []net.Conn
}

// freeze makes the open connections silent without closing them: a hung
// server, a cut cable.
func (g *gate) freeze() { g.mu.Lock(); g.frozen = true; g.mu.Unlock() }

func (g *gate) isFrozen() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.frozen }

func newGate(t *testing.T, target string) *gate {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{t: t, l: l, target: target}
	t.Cleanup(func() { l.Close(); g.cut() })
	go g.serve()
	return g
}

func (g *gate) url() string { return "opc.tcp://" + g.l.Addr().String() }

func (g *gate) open() { g.mu.Lock(); g.pass = true; g.mu.Unlock() }

func (g *gate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pass = false
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

func (g *gate) serve() {
	for {
		in, err := g.l.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if !g.pass {
			g.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", g.target)
		if err != nil {
			g.mu.Unlock()
			in.Close()
			continue
		}
		g.conns = append(g.conns, in, out)
		g.mu.Unlock()
		go func() { g.relay(out, in) }()
		go func() { g.relay(in, out) }()
	}
}

func (g *gate) relay(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for g.isFrozen() {
			time.Sleep(5 * time.Millisecond)
			if src.SetReadDeadline(time.Time{}) != nil {
				return
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// Closing the client is not a loss: no event follows Close.
func TestCloseReportsNoLoss(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250}, "urn:a")
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL()}})
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	c.Close()
	for range sub.Notifications() {
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ev) != 1 || rec.ev[0].Kind != EventConnected {
		t.Fatalf("events %+v, want only the connected event", rec.ev)
	}
}

// A server that goes silent without closing the connection is lost after
// LostAfter (its Publish responses stop), and the client moves on.
func TestSilentServerIsLostAfterLostAfter(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, "urn:a", "urn:b")
	g := newGate(t, set["urn:a"].Addr().String())
	g.open()
	rec := &recorder{}
	const lostAfter = 600 * time.Millisecond
	c := dial(t, rec, Options{URLs: []string{g.url(), set["urn:b"].EndpointURL()}, LostAfter: lostAfter})
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	frozen := time.Now()
	g.freeze()
	nextFrom(t, sub, "urn:b", 240, 5*time.Second)
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	e := rec.events(EventFailover)[0]
	if e.From.URI != "urn:a" || e.To.URI != "urn:b" || !strings.Contains(e.Reason, "no Publish response") {
		t.Fatalf("failover event %+v", e)
	}
	if noticed := e.Interrupted.Sub(frozen); noticed < lostAfter-lostAfter/3 {
		// The last response can precede the freeze by up to one keep-alive
		// (LostAfter/3).
		t.Fatalf("loss noticed %v after the freeze, before LostAfter %v could pass", noticed, lostAfter)
	}
}

// When the backup dies during the move, before it delivered any data, the
// loss is reported from the server the application last had data from.
func TestBackupLostDuringTheMoveIsReportedFromTheFirstServer(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, "urn:a", "urn:b")
	g := newGate(t, set["urn:b"].Addr().String())
	g.open()
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), g.url()}, Timeout: time.Second, LostAfter: 600 * time.Millisecond})
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	g.freeze()
	set["urn:a"].Close()
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("lost event", func() bool { return len(rec.events(EventLost)) == 1 }))
	e := rec.events(EventLost)[0]
	if e.From.URI != "urn:a" || !strings.Contains(e.Reason, "urn:b was lost too") || len(rec.events(EventFailover)) != 0 {
		t.Fatalf("events %+v", rec.ev)
	}
}

// A given URL whose server is down at first and that another server names
// through FindServers is one server, not two: when it comes up the client
// has one session to it and moves there after the hold.
func TestGivenURLNamedByDiscoveryIsOneServer(t *testing.T) {
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	urlA, urlB := fmt.Sprintf("opc.tcp://127.0.0.1:%d", ports[0]), fmt.Sprintf("opc.tcp://127.0.0.1:%d", ports[1])
	start := func(uri string, port int, peer, peerURL string, level byte) *opcua.Server {
		s, err := opcua.New(opcua.Config{ListenHost: "127.0.0.1", PublicHostname: "127.0.0.1", Port: port, ApplicationURI: uri,
			PeerApplicationURIs: []string{peer}, PeerDiscoveryURLs: []string{peerURL}, Clock: clockwork.NewRealClock(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.SetServiceLevel(level)
		t.Cleanup(func() { s.Close() })
		return s
	}
	start("urn:b", ports[1], "urn:a", urlA, 240)
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{urlA, urlB}, PreferHold: 300 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if c.Active().URI != "urn:b" {
		t.Fatalf("active %+v, want urn:b", c.Active())
	}
	poll.CheckFor(t, 3*time.Second, 10*time.Millisecond, poll.True("discovery to name urn:a", func() bool { return c.Servers()[0].URI == "urn:a" }))
	start("urn:a", ports[0], "urn:b", urlB, 250)
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("the move to urn:a", func() bool { return c.Active().URI == "urn:a" }))
	if s := c.Servers(); len(s) != 2 || !s[0].Up || !s[0].Active || s[0].URL != urlA {
		t.Fatalf("servers %+v, want two with urn:a active at %s", s, urlA)
	}
}
