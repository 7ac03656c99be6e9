package clustertls

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/testcert"
)

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func load(t *testing.T, ca *testcert.CA, name string, logs *logBuf, clock *fakeNow) *Credentials {
	t.Helper()
	cert, key := ca.Node(t, name)
	c, err := Load(Files{CA: ca.File, Cert: cert, Key: key}, "cluster transport", slog.New(slog.NewTextHandler(logs, nil)), clock.now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handshake runs one TLS connection over loopback: the server side
// through srv's gRPC credentials, the client side with client (nil: the
// dialer's credentials of dialer). It returns both errors.
func handshake(t *testing.T, srv *Credentials, client *tls.Config, dialer *Credentials) (serverErr, clientErr error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		conn, _, err := srv.Server().ServerHandshake(c)
		if err == nil {
			conn.Close()
		}
		done <- err
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if dialer != nil {
		var conn net.Conn
		conn, _, clientErr = dialer.Client().ClientHandshake(context.Background(), l.Addr().String(), raw)
		if clientErr == nil {
			conn.Close()
		}
	} else {
		tc := tls.Client(raw, client)
		clientErr = tc.Handshake()
		if clientErr == nil {
			// TLS 1.3 reports the server's verdict on the client
			// certificate only on the first read.
			_, clientErr = tc.Read(make([]byte, 1))
		}
	}
	return <-done, clientErr
}

func TestMutualTLSAcceptsTheSameCAOnly(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1_700_000_000, 0)}
	ca, rogue := testcert.NewCA(t, "site ca"), testcert.NewCA(t, "rogue ca")
	srvLog, peerLog := &logBuf{}, &logBuf{}
	srv := load(t, ca, "a", srvLog, clock)
	if se, ce := handshake(t, srv, nil, load(t, ca, "b", peerLog, clock)); se != nil || ce != nil {
		t.Fatalf("same CA: server %v, client %v", se, ce)
	}
	if srvLog.String() != "" || peerLog.String() != "" {
		t.Fatalf("a good handshake was logged:\n%s%s", srvLog.String(), peerLog.String())
	}

	// Another CA: both sides refuse, both log.
	rogueLog := &logBuf{}
	if se, ce := handshake(t, srv, nil, load(t, rogue, "x", rogueLog, clock)); se == nil || ce == nil {
		t.Fatalf("other CA accepted: server %v, client %v", se, ce)
	}
	if !strings.Contains(srvLog.String(), LogRefused+" from 127.0.0.1:") || !strings.Contains(rogueLog.String(), LogFailed) {
		t.Fatalf("refusal not logged on both sides:\nserver: %s\nclient: %s", srvLog.String(), rogueLog.String())
	}

	// No client certificate at all (the server's own CA trusted): refused.
	noCert := &tls.Config{RootCAs: srv.ClientConfig().RootCAs, ServerName: "127.0.0.1"}
	if se, _ := handshake(t, srv, noCert, nil); se == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	// ... but within the minute not logged again for the same host.
	if n := strings.Count(srvLog.String(), LogRefused); n != 1 {
		t.Fatalf("%d refusal lines within a minute, want 1:\n%s", n, srvLog.String())
	}
	clock.add(LogEvery)
	if se, _ := handshake(t, srv, noCert, nil); se == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	if n := strings.Count(srvLog.String(), LogRefused); n != 2 {
		t.Fatalf("%d refusal lines after a minute, want 2:\n%s", n, srvLog.String())
	}
}

func TestLoadNamesTheKey(t *testing.T) {
	ca := testcert.NewCA(t, "site ca")
	cert, key := ca.Node(t, "a")
	for _, tc := range []struct {
		f    Files
		want string
	}{
		{Files{CA: ca.File, Cert: cert, Key: ca.File}, "Cluster:Tls:CertFile"},
		{Files{CA: key, Cert: cert, Key: key}, "Cluster:Tls:CaFile"},
		{Files{CA: "/nonexistent", Cert: cert, Key: key}, "Cluster:Tls:CaFile"},
	} {
		if _, err := Load(tc.f, "cluster transport", nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%+v) = %v, want an error naming %s", tc.f, err, tc.want)
		}
	}
}
