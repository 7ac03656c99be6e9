package uaserver

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
)

func TestConnectReadWrite(t *testing.T) {
	ts := startServer(t, nil)
	if !ts.Listening() {
		t.Fatal("Listening() = false after Start")
	}
	if got, want := ts.EndpointURL(), "opc.tcp://127.0.0.1:"+portOf(t, ts.Addr()); got != want {
		t.Fatalf("EndpointURL() = %q, want %q", got, want)
	}
	c := connectClient(t, ts.url)
	ctx := testCtx(t)

	resp, err := c.Read(ctx, readReq(nodeTemp, ua.NewStringNodeID(1, "Nope")))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if got := resp.Results[0].Value.Value(); got != 21.5 {
		t.Errorf("Temp = %v, want 21.5", got)
	}
	if got := resp.Results[1].Status; got != ua.StatusBadNodeIDUnknown {
		t.Errorf("unknown node status = %v, want BadNodeIdUnknown", got)
	}

	w, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
		NodeID: nodeTemp, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(42.0)},
	}}})
	if err != nil || w.Results[0] != ua.StatusOK {
		t.Fatalf("Write: %v %v", err, w)
	}
	resp, err = c.Read(ctx, readReq(nodeTemp))
	if err != nil || resp.Results[0].Value.Value() != 42.0 {
		t.Fatalf("Read after write: %v %v", err, resp)
	}
	if n := ts.SessionCount(); n != 1 {
		t.Errorf("SessionCount = %d, want 1", n)
	}
}

func TestReadValidation(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxNodesPerRead = 3 })
	rc := dialRaw(t, ts.url)
	rc.session(60000)

	rc.wantStatus(readReq(), ua.StatusBadNothingToDo)
	rc.wantStatus(readReq(nodeTemp, nodeTemp, nodeTemp, nodeTemp), ua.StatusBadTooManyOperations)
	r := readReq(nodeTemp)
	r.MaxAge = -1
	rc.wantStatus(r, ua.StatusBadMaxAgeInvalid)
	r = readReq(nodeTemp)
	r.TimestampsToReturn = ua.TimestampsToReturnInvalid
	rc.wantStatus(r, ua.StatusBadTimestampsToReturnInvalid)
	// Still serving the same session.
	resp := rc.mustDo(readReq(nodeTemp, nodeTemp, nodeTemp)).(*ua.ReadResponse)
	if len(resp.Results) != 3 {
		t.Fatalf("got %d results, want 3", len(resp.Results))
	}
}

func TestGetEndpointsUsesClientHostName(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.EndpointURL = "opc.tcp://plant-a.example:0/ua" })
	port := portOf(t, ts.Addr())
	if got, want := ts.EndpointURL(), "opc.tcp://plant-a.example:"+port+"/ua"; got != want {
		t.Fatalf("EndpointURL() = %q, want %q", got, want)
	}
	ctx := testCtx(t)
	for _, host := range []string{"localhost", "127.0.0.1"} {
		eps, err := opcua.GetEndpoints(ctx, "opc.tcp://"+host+":"+port)
		if err != nil {
			t.Fatalf("GetEndpoints via %s: %v", host, err)
		}
		if len(eps) != 1 {
			t.Fatalf("via %s: %d endpoints, want 1", host, len(eps))
		}
		ep := eps[0]
		if want := "opc.tcp://" + host + ":" + port + "/ua"; ep.EndpointURL != want {
			t.Errorf("via %s: EndpointURL %q, want %q", host, ep.EndpointURL, want)
		}
		if ep.SecurityPolicyURI != ua.SecurityPolicyURINone || ep.SecurityMode != ua.MessageSecurityModeNone {
			t.Errorf("via %s: security %s/%v, want None/None", host, ep.SecurityPolicyURI, ep.SecurityMode)
		}
		if len(ep.UserIdentityTokens) != 1 || ep.UserIdentityTokens[0].PolicyID != "anonymous" ||
			ep.UserIdentityTokens[0].TokenType != ua.UserTokenTypeAnonymous {
			t.Errorf("via %s: user tokens %+v, want one anonymous", host, ep.UserIdentityTokens)
		}
		if ep.Server.ApplicationURI != "urn:otopcua:test:a" {
			t.Errorf("via %s: ApplicationURI %q", host, ep.Server.ApplicationURI)
		}
	}

	// An empty URL gets the configured endpoint.
	rc := dialRaw(t, ts.url)
	resp := rc.mustDo(&ua.GetEndpointsRequest{}).(*ua.GetEndpointsResponse)
	if want := "opc.tcp://plant-a.example:" + port + "/ua"; len(resp.Endpoints) != 1 || resp.Endpoints[0].EndpointURL != want {
		t.Fatalf("empty URL: endpoints %+v, want %s", resp.Endpoints, want)
	}
	// A profile filter without opc.tcp yields nothing.
	resp = rc.mustDo(&ua.GetEndpointsRequest{ProfileURIs: []string{"http://opcfoundation.org/UA-Profile/Transport/https-uabinary"}}).(*ua.GetEndpointsResponse)
	if len(resp.Endpoints) != 0 {
		t.Fatalf("https profile: %d endpoints, want 0", len(resp.Endpoints))
	}
	// A client connecting by name can create its session against it.
	c := connectClient(t, "opc.tcp://localhost:"+port+"/ua")
	if _, err := c.Read(ctx, readReq(nodeTemp)); err != nil {
		t.Fatalf("Read via localhost: %v", err)
	}
}

func TestFindServersSelfThenPeers(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.ApplicationName = "node A"
		c.Peers = []Peer{
			{ApplicationURI: "urn:otopcua:test:b", ApplicationName: "node B", DiscoveryURL: "opc.tcp://node-b:4840"},
			{ApplicationURI: "urn:otopcua:test:c"},
		}
	})
	ctx := testCtx(t)
	servers, err := opcua.FindServers(ctx, ts.url)
	if err != nil {
		t.Fatalf("FindServers: %v", err)
	}
	var uris []string
	for _, s := range servers {
		uris = append(uris, s.ApplicationURI)
		if s.ApplicationType != ua.ApplicationTypeServer {
			t.Errorf("%s: type %v, want Server", s.ApplicationURI, s.ApplicationType)
		}
	}
	if got, want := strings.Join(uris, ","), "urn:otopcua:test:a,urn:otopcua:test:b,urn:otopcua:test:c"; got != want {
		t.Fatalf("servers %s, want %s", got, want)
	}
	if got := servers[0].DiscoveryURLs; len(got) != 1 || got[0] != ts.url {
		t.Errorf("self DiscoveryURLs %v, want [%s]", got, ts.url)
	}
	if got := servers[1].DiscoveryURLs; len(got) != 1 || got[0] != "opc.tcp://node-b:4840" {
		t.Errorf("peer b DiscoveryURLs %v", got)
	}
	if servers[1].ApplicationName.Text != "node B" || servers[2].ApplicationName.Text != "urn:otopcua:test:c" {
		t.Errorf("peer names %q, %q", servers[1].ApplicationName.Text, servers[2].ApplicationName.Text)
	}
	if len(servers[2].DiscoveryURLs) != 0 {
		t.Errorf("peer c DiscoveryURLs %v, want none", servers[2].DiscoveryURLs)
	}

	rc := dialRaw(t, ts.url)
	resp := rc.mustDo(&ua.FindServersRequest{ServerURIs: []string{"urn:otopcua:test:c", "urn:unknown"}}).(*ua.FindServersResponse)
	if len(resp.Servers) != 1 || resp.Servers[0].ApplicationURI != "urn:otopcua:test:c" {
		t.Fatalf("filtered: %+v, want only urn:otopcua:test:c", resp.Servers)
	}
	rc.wantStatus(&ua.FindServersOnNetworkRequest{}, ua.StatusBadServiceUnsupported)
	rc.wantStatus(&ua.RegisterServerRequest{Server: &ua.RegisteredServer{ServerNames: []*ua.LocalizedText{}}}, ua.StatusBadServiceUnsupported)
}

func TestPanickingHandlerAnswersBadAndServerKeepsServing(t *testing.T) {
	ts := startServer(t, nil, func(s *Server) {
		s.Handle(id.CancelRequest_Encoding_DefaultBinary, func(context.Context, ua.Request) (ua.Response, error) {
			panic("injected handler panic")
		})
	})
	ctx := testCtx(t)
	a := connectClient(t, ts.url)

	// A panic inside the built-in Read (the store panics on this node).
	if _, err := a.Read(ctx, readReq(nodePanic)); !errors.Is(err, ua.StatusBadInternalError) {
		t.Fatalf("Read of panic node: %v, want BadInternalError", err)
	}
	if _, err := a.Read(ctx, readReq(nodeTemp)); err != nil {
		t.Fatalf("same client after panic: %v", err)
	}
	b := connectClient(t, ts.url)
	if _, err := b.Read(ctx, readReq(nodeTemp)); err != nil {
		t.Fatalf("second client after panic: %v", err)
	}

	// A panic inside an overridden handler.
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	rc.wantStatus(&ua.CancelRequest{}, ua.StatusBadInternalError)
	rc.mustDo(readReq(nodeTemp))

	poll.CheckFor(t, 2*time.Second, 5*time.Millisecond, func() error {
		logs := ts.logs.String()
		for _, s := range []string{"injected handler panic", "fake store: read of the panic node", "goroutine", "serve"} {
			if err := contains(logs, s); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestSlowSessionDoesNotDelayAnother(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	ts := startServer(t, nil, func(s *Server) {
		s.Handle(id.ReadRequest_Encoding_DefaultBinary, func(ctx context.Context, r ua.Request) (ua.Response, error) {
			req := r.(*ua.ReadRequest)
			if req.NodesToRead[0].NodeID.Equal(nodeBlock) {
				close(entered)
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ua.StatusBadShutdown
				}
			}
			return &ua.ReadResponse{Results: []*ua.DataValue{goodValue(1.0)}, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
		})
	})
	slow := dialRaw(t, ts.url)
	slow.session(60000)
	fast := dialRaw(t, ts.url)
	fast.session(60000)

	slowDone := make(chan error, 1)
	go func() {
		_, err := slow.do(readReq(nodeBlock))
		slowDone <- err
	}()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("blocking handler never entered")
	}

	start := time.Now()
	resp := fast.mustDo(readReq(nodeTemp)).(*ua.ReadResponse)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("fast Read took %s while another session was blocked", d)
	}
	if resp.Results[0].Value.Value() != 1.0 {
		t.Fatalf("fast Read result %v", resp.Results[0].Value.Value())
	}
	select {
	case err := <-slowDone:
		t.Fatalf("slow Read finished before release: %v", err)
	default:
	}
	close(release)
	select {
	case err := <-slowDone:
		if err != nil {
			t.Fatalf("slow Read: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("slow Read not answered after release")
	}
}

func TestSilentTCPClientDoesNotBlockOthers(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.HelloTimeout = time.Minute })
	silent, err := net.Dial("tcp", ts.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	start := time.Now()
	c := connectClient(t, ts.url)
	if _, err := c.Read(testCtx(t), readReq(nodeTemp)); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("connect+read took %s with a silent client open", d)
	}
}

func TestSilentTCPClientIsDropped(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.HelloTimeout = 200 * time.Millisecond })
	silent, err := net.Dial("tcp", ts.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent client read: %v, want EOF (dropped by the server)", err)
	}
}

func TestGarbageHandshakeGetsErr(t *testing.T) {
	ts := startServer(t, nil)
	conn, err := net.Dial("tcp", ts.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var h uacp.Header
	if _, err := h.Decode(b); err != nil || h.MessageType != "ERR" {
		t.Fatalf("got %q, want an ERR message", b)
	}
	var e uacp.Error
	if _, err := e.Decode(b[8:]); err != nil || ua.StatusCode(e.ErrorCode) != ua.StatusBadTCPMessageTypeInvalid {
		t.Fatalf("ERR code %v (%v), want BadTcpMessageTypeInvalid", ua.StatusCode(e.ErrorCode), err)
	}
	// The server still serves.
	rc := dialRaw(t, ts.url)
	rc.mustDo(&ua.GetEndpointsRequest{})
}

func TestPortInUse(t *testing.T) {
	ts := startServer(t, nil)
	addr := ts.Addr().String()
	srv, err := New(Config{ListenAddr: addr}, newFakeStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	err = srv.Start(context.Background())
	if err == nil {
		t.Fatal("Start on a used port succeeded")
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Start: %v, want EADDRINUSE naming %s", err, addr)
	}
	if srv.Listening() {
		t.Fatal("Listening() after failed Start")
	}
	if err := ts.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no listen addr", Config{}, "ListenAddr"},
		{"bad listen addr", Config{ListenAddr: "nohostport"}, "ListenAddr"},
		{"bad endpoint", Config{ListenAddr: ":0", EndpointURL: "http://x:1"}, "EndpointURL"},
		{"peer without uri", Config{ListenAddr: ":0", Peers: []Peer{{DiscoveryURL: "opc.tcp://b:1"}}}, "Peers[0].ApplicationURI"},
		{"min above max", Config{ListenAddr: ":0", Limits: limits.Limits{MinSessionTimeout: time.Hour, MaxSessionTimeout: time.Minute}}, "MinSessionTimeout"},
	} {
		_, err := New(tc.cfg, newFakeStore(), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want mention of %s", tc.name, err, tc.want)
		}
	}
	if _, err := New(Config{ListenAddr: ":0"}, nil, nil); err == nil {
		t.Error("nil NodeStore accepted")
	}
}

func TestReviseTimeout(t *testing.T) {
	s, err := New(Config{ListenAddr: ":0", Limits: limits.Limits{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour}}, newFakeStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ms   float64
		want time.Duration
	}{
		// 0, negative and NaN: the default, not the maximum (a client that
		// asks for nothing must not hold a session for an hour).
		{0, time.Minute}, {-5, time.Minute}, {math.NaN(), time.Minute}, {math.Inf(-1), time.Minute},
		{10, time.Second}, {1000, time.Second},
		{2500, 2500 * time.Millisecond}, {3.6e6, time.Hour}, {1e300, time.Hour}, {math.Inf(1), time.Hour},
	} {
		if got := s.reviseTimeout(tc.ms); got != tc.want {
			t.Errorf("reviseTimeout(%v) = %s, want %s", tc.ms, got, tc.want)
		}
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	srv, err := New(Config{ListenAddr: "127.0.0.1:0", Logger: discardLogger()}, newFakeStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	eng := newFakeEngine()
	srv.subs = eng
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := "opc.tcp://" + srv.Addr().String()
	rc := dialRaw(t, url)
	rc.session(60000)
	silent, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// A Publish the engine holds when the server closes.
	go func() {
		_, _ = rc.do(&ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{}})
	}()
	var pending pendingPublish
	select {
	case pending = <-eng.publish:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish never reached the engine")
	}

	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close blocked (a silent handshake or open channel held it)")
	}
	if srv.Listening() || srv.SessionCount() != 0 {
		t.Fatalf("after Close: listening %v, sessions %d", srv.Listening(), srv.SessionCount())
	}
	if got := eng.closedSessions(); len(got) != 1 || !got[0].del {
		t.Fatalf("engine told %+v, want one session closed with its subscriptions", got)
	}
	if err := pending.out.SendResponse(pending.reqID, &ua.PublishResponse{}); err == nil {
		t.Fatal("Sender.SendResponse succeeded on a closed channel")
	}
	if err := srv.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
	rc.close()
	_ = silent.Close()
	goleak.VerifyNone(t, before)
}

func portOf(t *testing.T, a net.Addr) string {
	t.Helper()
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
