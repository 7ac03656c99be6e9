package uaserver

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/internal/testcert"
)

const (
	serverURI = "urn:otopcua:test:a"
	clientURI = "urn:otopcua:test:client"
)

// Test keys, made once: RSA key generation takes a while under -race.
var (
	keysOnce           sync.Once
	srvCert, cliCert   []byte
	srvKey, cliKey     *rsa.PrivateKey
	strangerCert       []byte // a client certificate nobody trusts
	strangerKey        *rsa.PrivateKey
	securedEndpointSet = []EndpointSecurity{
		{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSign},
		{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt},
		{ua.SecurityPolicyURIAes128Sha256RsaOaep, ua.MessageSecurityModeSign},
		{ua.SecurityPolicyURIAes128Sha256RsaOaep, ua.MessageSecurityModeSignAndEncrypt},
		{ua.SecurityPolicyURIAes256Sha256RsaPss, ua.MessageSecurityModeSign},
		{ua.SecurityPolicyURIAes256Sha256RsaPss, ua.MessageSecurityModeSignAndEncrypt},
	}
)

func testKeys(t testing.TB) {
	keysOnce.Do(func() {
		srvCert, srvKey = testcert.RSA(t, serverURI, 2048)
		cliCert, cliKey = testcert.RSA(t, clientURI, 2048)
		strangerCert, strangerKey = testcert.RSA(t, clientURI, 2048)
	})
}

// certRefused is a validator's refusal with a status, as the PKI's is.
type certRefused struct{ code ua.StatusCode }

func (e *certRefused) Error() string             { return "certificate refused: " + e.code.Error() }
func (e *certRefused) StatusCode() ua.StatusCode { return e.code }

// trustClient trusts cliCert only, and checks the ApplicationUri when one
// is given.
func trustClient(der []byte, appURI string) error {
	switch {
	case !bytes.Equal(der, cliCert):
		return &certRefused{ua.StatusBadCertificateUntrusted}
	case appURI != "" && appURI != clientURI:
		return &certRefused{ua.StatusBadCertificateURIInvalid}
	}
	return nil
}

// secure sets the server's certificate, the client validator and the
// endpoints offered.
func secure(eps ...EndpointSecurity) func(*Config) {
	return func(c *Config) {
		c.ApplicationURI = serverURI
		c.Security.Endpoints = eps
		c.Security.Certificate, c.Security.PrivateKey = srvCert, srvKey
		c.Security.ValidateClientCertificate = trustClient
	}
}

// tickSource feeds the real engine: every watched node changes every 20 ms.
type tickSource struct{ n atomic.Int64 }

func (s *tickSource) Read(*ua.NodeID, ua.AttributeID) *ua.DataValue {
	return goodValue(float64(s.n.Load()))
}

func (s *tickSource) Watch(_ *ua.NodeID, fn func(*ua.DataValue)) (func(), ua.StatusCode) {
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				fn(goodValue(float64(s.n.Add(1))))
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop) }) }, ua.StatusOK
}

// startSecureServer starts a server over the real engine with setup
// applied.
func startSecureServer(t *testing.T, setup func(*Config)) *Server {
	t.Helper()
	testKeys(t)
	var cfg Config
	setup(&cfg)
	srv, _ := startEngineServer(t, &tickSource{}, cfg)
	return srv
}

// dialSecure connects gopcua's client to the endpoint of url with policy
// and mode, as client cert/key, with an anonymous session.
func dialSecure(t *testing.T, url string, e EndpointSecurity, cert []byte, key *rsa.PrivateKey, opts ...opcua.Option) (*opcua.Client, error) {
	t.Helper()
	ctx := testCtx(t)
	eps, err := opcua.GetEndpoints(ctx, url)
	if err != nil {
		t.Fatalf("GetEndpoints: %v", err)
	}
	var ep *ua.EndpointDescription
	for _, d := range eps {
		if d.SecurityPolicyURI == e.PolicyURI && d.SecurityMode == e.Mode {
			ep = d
		}
	}
	if ep == nil {
		t.Fatalf("no endpoint %s %s among %d", e.PolicyURI, e.Mode, len(eps))
	}
	c, err := opcua.NewClient(url, append([]opcua.Option{
		opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeAnonymous),
		opcua.Certificate(cert), opcua.PrivateKey(key),
		opcua.ApplicationURI(clientURI),
		opcua.AutoReconnect(false),
		opcua.RequestTimeout(5 * time.Second),
	}, opts...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, nil
}

func readTemp(ctx context.Context, c *opcua.Client) (*ua.DataValue, error) {
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue}}})
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != 1 {
		return nil, fmt.Errorf("%d results", len(resp.Results))
	}
	return resp.Results[0], nil
}

// subscribeTemp subscribes to nodeTemp over c's secure channel and returns
// the values notified. It sends the Publish requests itself, each
// acknowledging the message before it, rather than through c.Subscribe:
// gopcua v0.9.0's publish loop starts paused (NewClient queues a pause)
// and Subscribe queues a resume; when the loop's goroutine first runs
// after both are queued, its select may take the resume first (ignored:
// not paused) and then the pause, and it never sends a Publish request.
// Without c.Subscribe the loop stays paused and only this helper
// publishes.
func subscribeTemp(t *testing.T, c *opcua.Client) <-chan float64 {
	t.Helper()
	ctx := testCtx(t)
	var sub *ua.CreateSubscriptionResponse
	err := c.Send(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 50,
		RequestedLifetimeCount:      300,
		RequestedMaxKeepAliveCount:  10,
		PublishingEnabled:           true,
	}, func(r ua.Response) error { return responseAs(r, &sub) })
	if err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	var mon *ua.CreateMonitoredItemsResponse
	err = c.Send(ctx, &ua.CreateMonitoredItemsRequest{
		SubscriptionID:     sub.SubscriptionID,
		TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate:      []*ua.MonitoredItemCreateRequest{opcua.NewMonitoredItemCreateRequestWithDefaults(nodeTemp, ua.AttributeIDValue, 1)},
	}, func(r ua.Response) error { return responseAs(r, &mon) })
	if err != nil || len(mon.Results) != 1 || mon.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("CreateMonitoredItems: %v %v", err, mon)
	}
	values := make(chan float64, 1024)
	// The loop stops between requests, never by cancelling one in flight:
	// gopcua gives a cancelled request a sequence number without sending
	// it, and the server closes a secured channel whose sequence numbers
	// skip one.
	var stop atomic.Bool
	done := make(chan struct{})
	t.Cleanup(func() { stop.Store(true); <-done })
	go func() {
		defer close(done)
		acks := []*ua.SubscriptionAcknowledgement{}
		for !stop.Load() {
			var pr *ua.PublishResponse
			err := c.Send(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks},
				func(r ua.Response) error { return responseAs(r, &pr) })
			if err != nil {
				return // the channel or the test ended; wantValues reports the gap
			}
			acks = []*ua.SubscriptionAcknowledgement{}
			for _, eo := range pr.NotificationMessage.NotificationData {
				dc, ok := eo.Value.(*ua.DataChangeNotification)
				if !ok {
					continue
				}
				acks = append(acks[:0], &ua.SubscriptionAcknowledgement{
					SubscriptionID: pr.SubscriptionID, SequenceNumber: pr.NotificationMessage.SequenceNumber,
				})
				for _, it := range dc.MonitoredItems {
					if f, ok := it.Value.Value.Value().(float64); ok {
						select {
						case values <- f:
						default:
						}
					}
				}
			}
		}
	}()
	return values
}

// responseAs stores r in *dst when it has dst's type, else returns the
// ServiceFault's status or a type error.
func responseAs[T ua.Response](r ua.Response, dst *T) error {
	if v, ok := r.(T); ok {
		*dst = v
		return nil
	}
	if f, ok := r.(*ua.ServiceFault); ok {
		return f.ResponseHeader.ServiceResult
	}
	return fmt.Errorf("unexpected response %T", r)
}

// wantValues waits for n increasing notified values.
func wantValues(t *testing.T, values <-chan float64, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	last := -1.0
	got := 0
	for got < n {
		select {
		case v := <-values:
			if v <= last {
				t.Fatalf("value %v after %v", v, last)
			}
			last = v
			got++
		case <-deadline:
			t.Fatalf("%d of %d notifications", got, n)
		}
	}
}

// TestSecurePolicies connects gopcua's client with every policy and mode,
// reads, subscribes and receives notifications.
func TestSecurePolicies(t *testing.T) {
	srv := startSecureServer(t, secure(securedEndpointSet...))
	url := "opc.tcp://" + srv.Addr().String()
	for _, e := range securedEndpointSet {
		t.Run(fmt.Sprintf("%s_%s", e.PolicyURI[len("http://opcfoundation.org/UA/SecurityPolicy#"):], e.Mode), func(t *testing.T) {
			c, err := dialSecure(t, url, e, cliCert, cliKey)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			dv, err := readTemp(testCtx(t), c)
			if err != nil || dv.Value.Value() != 21.5 {
				t.Fatalf("Read: %v %v", dv, err)
			}
			wantValues(t, subscribeTemp(t, c), 3)
		})
	}
	if n := srv.Stats().SecurityRefusals; n != 0 {
		t.Fatalf("%d security refusals", n)
	}
}

// TestEndpointsDescribeEverySecurity: GetEndpoints lists each offered
// endpoint with the certificate, a level that grows with the policy and
// the anonymous token policy.
func TestEndpointsDescribeEverySecurity(t *testing.T) {
	srv := startSecureServer(t, secure(securedEndpointSet...))
	eps, err := opcua.GetEndpoints(testCtx(t), "opc.tcp://"+srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != len(securedEndpointSet) {
		t.Fatalf("%d endpoints, want %d", len(eps), len(securedEndpointSet))
	}
	for i, ep := range eps {
		want := securedEndpointSet[i]
		if ep.SecurityPolicyURI != want.PolicyURI || ep.SecurityMode != want.Mode {
			t.Fatalf("endpoint %d: %s %s, want %v", i, ep.SecurityPolicyURI, ep.SecurityMode, want)
		}
		if !bytes.Equal(ep.ServerCertificate, srvCert) {
			t.Fatalf("endpoint %d without the server certificate", i)
		}
		if i > 0 && ep.SecurityLevel <= eps[i-1].SecurityLevel {
			t.Fatalf("endpoint %d: level %d not above %d", i, ep.SecurityLevel, eps[i-1].SecurityLevel)
		}
		if len(ep.UserIdentityTokens) != 1 || ep.UserIdentityTokens[0].TokenType != ua.UserTokenTypeAnonymous {
			t.Fatalf("endpoint %d tokens %v", i, ep.UserIdentityTokens)
		}
		if ep.TransportProfileURI != uaTCPProfile {
			t.Fatalf("profile %q", ep.TransportProfileURI)
		}
	}
}

// TestRenewalsKeepNotificationsFlowing: with a 2 s token lifetime the
// client renews every second; the subscription keeps delivering through
// several renewals, each with a new token and new keys.
func TestRenewalsKeepNotificationsFlowing(t *testing.T) {
	srv := startSecureServer(t, func(c *Config) {
		secure(EndpointSecurity{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt})(c)
		c.Security.MinTokenLifetime = 2 * time.Second
	})
	e := EndpointSecurity{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}
	c, err := dialSecure(t, "opc.tcp://"+srv.Addr().String(), e, cliCert, cliKey, opcua.Lifetime(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	values := subscribeTemp(t, c)
	tokens := map[uint32]bool{}
	for renewals := uint64(0); renewals < 4; renewals = srv.Stats().TokenRenewals {
		wantValues(t, values, 1)
		tokens[onlyChannelToken(t, srv)] = true
	}
	wantValues(t, values, 5)
	if _, err := readTemp(testCtx(t), c); err != nil {
		t.Fatalf("Read after renewals: %v", err)
	}
	if len(tokens) < 3 {
		t.Fatalf("messages used %d tokens over 4 renewals", len(tokens))
	}
	if n := srv.Stats().SecurityRefusals; n != 0 {
		t.Fatalf("%d security refusals", n)
	}
}

func onlyChannelToken(t *testing.T, srv *Server) uint32 {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, ch := range srv.channels {
		ch.tokMu.Lock()
		defer ch.tokMu.Unlock()
		return ch.cur.id
	}
	t.Fatal("no channel")
	return 0
}

// TestUntrustedClientCertificateIsRefused: the validator's status closes
// the channel in OpenSecureChannel; no session is created.
func TestUntrustedClientCertificateIsRefused(t *testing.T) {
	srv := startSecureServer(t, secure(securedEndpointSet[1]))
	p := newChunkProxy(t, srv.Addr().String())
	_, err := dialSecure(t, p.url(), securedEndpointSet[1], strangerCert, strangerKey)
	if err == nil {
		t.Fatal("a stranger's certificate was accepted")
	}
	if code := p.serverError(t); code != ua.StatusBadCertificateUntrusted {
		t.Fatalf("ERR %v, want BadCertificateUntrusted", code)
	}
	if n := srv.SessionCount(); n != 0 {
		t.Fatalf("%d sessions", n)
	}
}

// TestCreateSessionOnNoneRefusedWhenNotOffered: a None channel still
// answers GetEndpoints and FindServers, but no session is created on it.
func TestCreateSessionOnNoneRefusedWhenNotOffered(t *testing.T) {
	srv := startSecureServer(t, secure(securedEndpointSet[1]))
	rc := dialRaw(t, "opc.tcp://"+srv.Addr().String())
	eps := rc.mustDo(&ua.GetEndpointsRequest{}).(*ua.GetEndpointsResponse)
	if len(eps.Endpoints) != 1 || eps.Endpoints[0].SecurityMode != ua.MessageSecurityModeSignAndEncrypt {
		t.Fatalf("endpoints %v", eps.Endpoints)
	}
	if fs := rc.mustDo(&ua.FindServersRequest{}).(*ua.FindServersResponse); len(fs.Servers) != 1 {
		t.Fatalf("FindServers: %v", fs.Servers)
	}
	rc.wantStatus(&ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{
			ApplicationURI: clientURI, ApplicationName: ua.NewLocalizedText("test client"), ApplicationType: ua.ApplicationTypeClient,
		},
		SessionName: t.Name(), ClientNonce: make([]byte, 32), RequestedSessionTimeout: 60000,
	}, ua.StatusBadSecurityPolicyRejected)
	if n := srv.SessionCount(); n != 0 {
		t.Fatalf("%d sessions", n)
	}
}

// TestTamperedChunkClosesOnlyItsChannel flips one byte of a client's MSG
// chunk: its channel is closed with BadSecurityChecksFailed, another
// channel goes on.
func TestTamperedChunkClosesOnlyItsChannel(t *testing.T) {
	for _, e := range []EndpointSecurity{securedEndpointSet[0], securedEndpointSet[1]} {
		t.Run(e.Mode.String(), func(t *testing.T) {
			testBadChunk(t, e, func(p *chunkProxy) { p.tamper.Store(true) }, ua.StatusBadSecurityChecksFailed)
		})
	}
}

// TestReplayedChunkClosesOnlyItsChannel sends a client's MSG chunk twice:
// the copy, correctly signed, has an old sequence number.
func TestReplayedChunkClosesOnlyItsChannel(t *testing.T) {
	testBadChunk(t, securedEndpointSet[1], func(p *chunkProxy) { p.replay.Store(true) }, ua.StatusBadSequenceNumberInvalid)
}

func testBadChunk(t *testing.T, e EndpointSecurity, arm func(*chunkProxy), want ua.StatusCode) {
	srv := startSecureServer(t, secure(e))
	other, err := dialSecure(t, "opc.tcp://"+srv.Addr().String(), e, cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	otherValues := subscribeTemp(t, other)
	p := newChunkProxy(t, srv.Addr().String())
	victim, err := dialSecure(t, p.url(), e, cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readTemp(testCtx(t), victim); err != nil {
		t.Fatalf("Read through the proxy: %v", err)
	}
	arm(p)
	_, _ = readTemp(testCtx(t), victim)
	if code := p.serverError(t); code != want {
		t.Fatalf("ERR %v, want %v", code, want)
	}
	if _, err := readTemp(testCtx(t), victim); err == nil {
		t.Fatal("the victim's channel still answers")
	}
	if _, err := readTemp(testCtx(t), other); err != nil {
		t.Fatalf("the other channel: %v", err)
	}
	wantValues(t, otherValues, 3)
	if n := srv.Stats().SecurityRefusals; n != 1 {
		t.Fatalf("%d security refusals, want 1", n)
	}
}

// chunkProxy relays one client's TCP connection to the server chunk by
// chunk. Armed, it corrupts (tamper) or repeats (replay) the next MSG chunk
// of the client, and it reports the ERR messages of the server.
type chunkProxy struct {
	ln     net.Listener
	target string
	tamper atomic.Bool
	replay atomic.Bool
	errs   chan ua.StatusCode
}

func newChunkProxy(t *testing.T, target string) *chunkProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &chunkProxy{ln: ln, target: target, errs: make(chan ua.StatusCode, 4)}
	t.Cleanup(func() { _ = ln.Close() })
	go p.accept(t)
	return p
}

func (p *chunkProxy) url() string { return "opc.tcp://" + p.ln.Addr().String() }

func (p *chunkProxy) accept(t *testing.T) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
		go p.relay(c, s, p.toServer)
		go p.relay(s, c, p.toClient)
	}
}

// relay copies UACP messages from src to dst, each passed through edit.
func (p *chunkProxy) relay(src, dst net.Conn, edit func([]byte) [][]byte) {
	defer func() { _ = dst.Close() }()
	for {
		var hb [8]byte
		if _, err := io.ReadFull(src, hb[:]); err != nil {
			return
		}
		b := make([]byte, binary.LittleEndian.Uint32(hb[4:]))
		copy(b, hb[:])
		if _, err := io.ReadFull(src, b[8:]); err != nil {
			return
		}
		for _, out := range edit(b) {
			if _, err := dst.Write(out); err != nil {
				return
			}
		}
	}
}

func (p *chunkProxy) toServer(b []byte) [][]byte {
	if string(b[:3]) != "MSG" {
		return [][]byte{b}
	}
	if p.tamper.CompareAndSwap(true, false) {
		b[len(b)-5] ^= 0x40
	}
	if p.replay.CompareAndSwap(true, false) {
		return [][]byte{b, bytes.Clone(b)}
	}
	return [][]byte{b}
}

func (p *chunkProxy) toClient(b []byte) [][]byte {
	if string(b[:3]) == "ERR" {
		var e uacp.Error
		if _, err := e.Decode(b[8:]); err == nil {
			p.errs <- ua.StatusCode(e.ErrorCode)
		}
	}
	return [][]byte{b}
}

// serverError waits for the ERR the server sent through the proxy.
func (p *chunkProxy) serverError(t *testing.T) ua.StatusCode {
	t.Helper()
	select {
	case code := <-p.errs:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("no ERR from the server")
		return 0
	}
}

// TestSecurityConfigIsChecked: New refuses secured endpoints without what
// they need, naming the field.
func TestSecurityConfigIsChecked(t *testing.T) {
	testKeys(t)
	sec := EndpointSecurity{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSign}
	for _, tc := range []struct {
		name string
		s    Security
		want string
	}{
		{"no certificate", Security{Endpoints: []EndpointSecurity{sec}, ValidateClientCertificate: trustClient}, "Certificate and PrivateKey are required"},
		{"other key", Security{Endpoints: []EndpointSecurity{sec}, Certificate: srvCert, PrivateKey: cliKey, ValidateClientCertificate: trustClient}, "not the key of Certificate"},
		{"no validator", Security{Endpoints: []EndpointSecurity{sec}, Certificate: srvCert, PrivateKey: srvKey}, "ValidateClientCertificate is required"},
		{"None with Sign", Security{Endpoints: []EndpointSecurity{{ua.SecurityPolicyURINone, ua.MessageSecurityModeSign}}}, "policy None takes mode None"},
		{"Basic256Sha256 with None", Security{Endpoints: []EndpointSecurity{{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeNone}}}, "takes mode Sign or SignAndEncrypt"},
		{"Basic256", Security{Endpoints: []EndpointSecurity{{ua.SecurityPolicyURIBasic256, ua.MessageSecurityModeSign}}}, "accepted values are"},
		{"twice", Security{Endpoints: []EndpointSecurity{sec, sec}, Certificate: srvCert, PrivateKey: srvKey, ValidateClientCertificate: trustClient}, "listed twice"},
	} {
		_, err := New(Config{ListenAddr: "127.0.0.1:0", Security: tc.s}, newFakeStore(), nil)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(Config{ListenAddr: "127.0.0.1:0", Security: Security{Endpoints: []EndpointSecurity{sec}, Certificate: srvCert, PrivateKey: srvKey, ValidateClientCertificate: trustClient}}, newFakeStore(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestValidationCode maps a validator's error to the status answered.
func TestValidationCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want ua.StatusCode
	}{
		{&certRefused{ua.StatusBadCertificateRevoked}, ua.StatusBadCertificateRevoked},
		{fmt.Errorf("pki: %w", &certRefused{ua.StatusBadCertificateTimeInvalid}), ua.StatusBadCertificateTimeInvalid},
		{ua.StatusBadCertificateUntrusted, ua.StatusBadCertificateUntrusted},
		{errors.New("disk full"), ua.StatusBadSecurityChecksFailed},
	} {
		if got := validationCode(tc.err); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestParseEndpointReadsEveryConfiguredPolicy: each accepted
// OpcUa:Security:Policies entry names a valid endpoint; others do not.
func TestParseEndpointReadsEveryConfiguredPolicy(t *testing.T) {
	want := append([]EndpointSecurity{{ua.SecurityPolicyURINone, ua.MessageSecurityModeNone}}, securedEndpointSet...)
	for i, s := range config.SecurityPolicies {
		e, err := ParseEndpoint(s)
		if err != nil || e != want[i] {
			t.Errorf("ParseEndpoint(%q) = %v, %v, want %v", s, e, err, want[i])
		}
	}
	for _, s := range []string{"None", "None:Sign", "Basic256Sha256:None", "Basic256:Sign", "basic256sha256:Sign", "Basic256Sha256:"} {
		if _, err := ParseEndpoint(s); err == nil {
			t.Errorf("ParseEndpoint(%q) accepted", s)
		}
	}
}

// TestSuccessiveClientsReceiveNotifications: six clients in turn, on
// security None, each subscribe and receive three notifications. It used
// to fail about once in 35 runs with "0 of 3 notifications": gopcua's
// publish loop had not started (see subscribeTemp) and the server never
// received a Publish request of that session.
func TestSuccessiveClientsReceiveNotifications(t *testing.T) {
	none := EndpointSecurity{ua.SecurityPolicyURINone, ua.MessageSecurityModeNone}
	srv := startSecureServer(t, secure(none))
	url := "opc.tcp://" + srv.Addr().String()
	for range 6 {
		c, err := dialSecure(t, url, none, cliCert, cliKey)
		if err != nil {
			t.Fatal(err)
		}
		wantValues(t, subscribeTemp(t, c), 3)
	}
}
