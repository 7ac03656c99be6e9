package uaclient_test

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// These tests run the secured channel against otopcua's own server in this
// process: every policy and mode offered, real sockets.

const (
	testServerURI = "urn:otopcua:test:secure"
	testClientURI = "urn:otopcua:test:client"
)

var (
	keysOnce         sync.Once
	srvCert, cliCert []byte
	srvKey, cliKey   *rsa.PrivateKey
	allEndpoints     = []uaserver.EndpointSecurity{
		{PolicyURI: ua.SecurityPolicyURIBasic256Sha256, Mode: ua.MessageSecurityModeSign},
		{PolicyURI: ua.SecurityPolicyURIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt},
		{PolicyURI: ua.SecurityPolicyURIAes128Sha256RsaOaep, Mode: ua.MessageSecurityModeSign},
		{PolicyURI: ua.SecurityPolicyURIAes128Sha256RsaOaep, Mode: ua.MessageSecurityModeSignAndEncrypt},
		{PolicyURI: ua.SecurityPolicyURIAes256Sha256RsaPss, Mode: ua.MessageSecurityModeSign},
		{PolicyURI: ua.SecurityPolicyURIAes256Sha256RsaPss, Mode: ua.MessageSecurityModeSignAndEncrypt},
	}
)

func testKeys(t testing.TB) {
	keysOnce.Do(func() {
		srvCert, srvKey = testcert.RSA(t, testServerURI, 2048)
		cliCert, cliKey = testcert.RSA(t, testClientURI, 2048)
	})
}

// startServer starts an otopcua server offering every secured endpoint
// (and no None endpoint), trusting cliCert only, with security tokens of
// at least minLifetime.
func startServer(t *testing.T, minLifetime time.Duration) (*opcua.Server, string) {
	t.Helper()
	testKeys(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s, err := opcua.New(opcua.Config{
		ListenHost: "127.0.0.1", PublicHostname: "127.0.0.1", Port: port,
		ApplicationURI: testServerURI, Clock: clockwork.NewRealClock(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Security: uaserver.Security{
			Endpoints:   allEndpoints,
			Certificate: srvCert, PrivateKey: srvKey,
			ValidateClientCertificate: func(der []byte, _ string) error {
				if !bytes.Equal(der, cliCert) {
					return ua.StatusBadCertificateUntrusted
				}
				return nil
			},
			MinTokenLifetime: minLifetime,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fmt.Sprintf("opc.tcp://127.0.0.1:%d", port)
}

// serverCertificate is the certificate the endpoint of e presents, from
// GetEndpoints on a None channel.
func serverCertificate(t *testing.T, url string, e uaserver.EndpointSecurity) []byte {
	t.Helper()
	eps, err := uaclient.GetEndpoints(testCtx(t), url, uaclient.Options{DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range eps {
		if d.SecurityPolicyURI == e.PolicyURI && d.SecurityMode == e.Mode {
			return d.ServerCertificate
		}
	}
	t.Fatalf("GetEndpoints lists no %s %s among %d endpoints", e.PolicyURI, e.Mode, len(eps))
	return nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// secureSession dials url (or via, a proxy in front of it) with e and
// opens an anonymous session.
func secureSession(t *testing.T, url, via string, e uaserver.EndpointSecurity, lifetime time.Duration) *uaclient.Session {
	t.Helper()
	ctx := testCtx(t)
	if via == "" {
		via = url
	}
	ch, err := uaclient.Dial(ctx, via, uaclient.Options{DialTimeout: 5 * time.Second, Security: &uaclient.Security{
		PolicyURI: e.PolicyURI, Mode: e.Mode,
		Certificate: cliCert, PrivateKey: cliKey,
		ServerCertificate: serverCertificate(t, url, e),
		RequestedLifetime: lifetime,
	}})
	if err != nil {
		t.Fatalf("Dial %s %s: %v", e.PolicyURI, e.Mode, err)
	}
	t.Cleanup(func() { ch.Close() })
	if ch.Policy() != e.PolicyURI || ch.Mode() != e.Mode {
		t.Fatalf("channel reports %s %s", ch.Policy(), ch.Mode())
	}
	ses, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{
		Name: "secure test", Timeout: time.Minute, CallTimeout: 5 * time.Second,
		Application: &ua.ApplicationDescription{ApplicationURI: testClientURI, ApplicationName: ua.NewLocalizedText("secure test"), ApplicationType: ua.ApplicationTypeClient},
	})
	if err != nil {
		t.Fatalf("OpenSession %s %s: %v", e.PolicyURI, e.Mode, err)
	}
	return ses
}

func readLevel(ctx context.Context, ses *uaclient.Session) (byte, error) {
	resp, err := ses.Call(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{
		NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}, 5*time.Second)
	if err != nil {
		return 0, err
	}
	r := resp.(*ua.ReadResponse).Results
	if len(r) != 1 || r[0].Status != ua.StatusOK {
		return 0, fmt.Errorf("read results %v", r)
	}
	v, ok := r[0].Value.Value().(byte)
	if !ok {
		return 0, fmt.Errorf("ServiceLevel is a %T", r[0].Value.Value())
	}
	return v, nil
}

// watchLevel subscribes to ServiceLevel with a 20 ms publishing interval.
func watchLevel(t *testing.T, ses *uaclient.Session) {
	t.Helper()
	ctx := testCtx(t)
	resp, err := ses.Call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 20, RequestedLifetimeCount: 300, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true,
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	subID := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	_, err = ses.Call(ctx, &ua.CreateMonitoredItemsRequest{
		SubscriptionID: subID, TimestampsToReturn: ua.TimestampsToReturnNeither,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{{
			ItemToMonitor:       &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 1, QueueSize: 1, DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
		}},
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
}

// nextLevels publishes once and returns the ServiceLevel values notified
// (none on a keep-alive).
func nextLevels(ctx context.Context, ses *uaclient.Session) ([]byte, error) {
	resp, err := ses.Call(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{}}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, eo := range resp.(*ua.PublishResponse).NotificationMessage.NotificationData {
		if dc, ok := eo.Value.(*ua.DataChangeNotification); ok {
			for _, it := range dc.MonitoredItems {
				if v, ok := it.Value.Value.Value().(byte); ok {
					out = append(out, v)
				}
			}
		}
	}
	return out, nil
}

// awaitLevel publishes until level is notified.
func awaitLevel(t *testing.T, ses *uaclient.Session, level byte) {
	t.Helper()
	ctx := testCtx(t)
	for {
		got, err := nextLevels(ctx, ses)
		if err != nil {
			t.Fatalf("Publish waiting for ServiceLevel %d: %v", level, err)
		}
		for _, v := range got {
			if v == level {
				return
			}
		}
	}
}

func shortName(e uaserver.EndpointSecurity) string {
	return e.PolicyURI[len("http://opcfoundation.org/UA/SecurityPolicy#"):] + ":" + e.Mode.String()
}

// Every policy and mode: Read and a subscription's notifications come
// back through the secured channel (signed, and encrypted when asked),
// and the session's signatures are accepted both ways.
func TestSecuredReadAndSubscribe(t *testing.T) {
	srv, url := startServer(t, 0)
	for i, e := range allEndpoints {
		t.Run(shortName(e), func(t *testing.T) {
			level := byte(100 + i)
			srv.SetServiceLevel(level)
			ses := secureSession(t, url, "", e, 0)
			got, err := readLevel(testCtx(t), ses)
			if err != nil || got != level {
				t.Fatalf("Read ServiceLevel = %d, %v; want %d", got, err, level)
			}
			watchLevel(t, ses)
			awaitLevel(t, ses, level)
			srv.SetServiceLevel(level + 50)
			awaitLevel(t, ses, level+50)
			if err := ses.Close(testCtx(t), 5*time.Second); err != nil {
				t.Fatalf("CloseSession: %v", err)
			}
		})
	}
}

// With a 500 ms token lifetime the channel renews its token several times
// during a subscription; every old token expires 625 ms after its issue,
// so notifications that keep arriving after three renewals prove that
// both sides switched to the new keys.
func TestSecuredRenewalKeepsTheSubscription(t *testing.T) {
	srv, url := startServer(t, 500*time.Millisecond)
	for _, e := range []uaserver.EndpointSecurity{allEndpoints[1], allEndpoints[4]} {
		t.Run(shortName(e), func(t *testing.T) {
			ses := secureSession(t, url, "", e, 500*time.Millisecond)
			watchLevel(t, ses)
			ctx := testCtx(t)
			level := byte(10)
			for ses.Channel().Renewals() < 3 {
				level++
				srv.SetServiceLevel(level)
				awaitLevel(t, ses, level)
				if ctx.Err() != nil {
					t.Fatalf("only %d renewals before the deadline", ses.Channel().Renewals())
				}
			}
			srv.SetServiceLevel(level + 1)
			awaitLevel(t, ses, level+1)
			if got, err := readLevel(ctx, ses); err != nil || got != level+1 {
				t.Fatalf("Read after renewals = %d, %v", got, err)
			}
		})
	}
}

// tamperProxy relays one connection and, once armed, flips the last byte
// of the next MSG chunk the server sends.
type tamperProxy struct {
	l     net.Listener
	armed atomic.Bool
	hit   atomic.Bool
}

func newTamperProxy(t *testing.T, target string) *tamperProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tamperProxy{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			go func() { _, _ = io.Copy(s, c) }()
			go p.relay(c, s)
		}
	}()
	return p
}

func (p *tamperProxy) url() string { return "opc.tcp://" + p.l.Addr().String() }

// relay copies chunks from src (the server) to dst, tampering when armed.
func (p *tamperProxy) relay(dst, src net.Conn) {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			dst.Close()
			return
		}
		b := make([]byte, binary.LittleEndian.Uint32(hdr[4:]))
		copy(b, hdr[:])
		if _, err := io.ReadFull(src, b[8:]); err != nil {
			dst.Close()
			return
		}
		if string(b[:3]) == "MSG" && p.armed.Load() && p.hit.CompareAndSwap(false, true) {
			b[len(b)-1] ^= 0x40
		}
		if _, err := dst.Write(b); err != nil {
			return
		}
	}
}

// A response altered on the way is refused: the request fails with
// ErrSecurity, the channel is closed, and later requests fail with
// ErrClosed instead of trusting the connection.
func TestSecuredTamperedResponseClosesTheChannel(t *testing.T) {
	_, url := startServer(t, 0)
	for _, e := range []uaserver.EndpointSecurity{allEndpoints[0], allEndpoints[1], allEndpoints[5]} {
		t.Run(shortName(e), func(t *testing.T) {
			p := newTamperProxy(t, url[len("opc.tcp://"):])
			ses := secureSession(t, url, p.url(), e, 0)
			ctx := testCtx(t)
			if _, err := readLevel(ctx, ses); err != nil {
				t.Fatalf("Read before tampering: %v", err)
			}
			p.armed.Store(true)
			_, err := readLevel(ctx, ses)
			if !p.hit.Load() {
				t.Fatal("the proxy tampered with nothing")
			}
			if !errors.Is(err, uaclient.ErrClosed) || !errors.Is(err, uaclient.ErrSecurity) {
				t.Fatalf("Read of a tampered response: %v; want ErrClosed wrapping ErrSecurity", err)
			}
			if _, err := readLevel(ctx, ses); !errors.Is(err, uaclient.ErrClosed) {
				t.Fatalf("Read after the tampering: %v; want ErrClosed", err)
			}
		})
	}
}

// A certificate that is not the endpoint's (a server that swapped keys, or
// a man in the middle) cannot open the channel.
func TestSecuredWrongServerCertificateIsRefused(t *testing.T) {
	_, url := startServer(t, 0)
	other, _ := testcert.RSA(t, testServerURI, 2048)
	e := allEndpoints[1]
	_, err := uaclient.Dial(testCtx(t), url, uaclient.Options{DialTimeout: 5 * time.Second, Security: &uaclient.Security{
		PolicyURI: e.PolicyURI, Mode: e.Mode, Certificate: cliCert, PrivateKey: cliKey, ServerCertificate: other,
	}})
	if err == nil {
		t.Fatal("Dial with another certificate than the server's succeeded")
	}
}
