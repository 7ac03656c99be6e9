// Package clustertls builds the mutual-TLS credentials that the cluster
// transport (protoactor's remote over gRPC) and the LocalDb replication
// port use when Cluster:Tls is set, and logs every refused handshake.
//
// Both ends authenticate: the server requires a client certificate and
// verifies it against the CA; the client presents its own certificate and
// verifies the server's against the same CA and the name it dialled. A
// refused handshake is only a peer that does not answer: it is logged
// (once per remote host and side per minute), never fatal.
//
// The caller's duties: (1) Load once at start-up, after config validation;
// (2) hand Server() to the gRPC server and Client() to the dialer of the
// same process; (3) give the same Logger the node logs with.
package clustertls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// LogEvery is how often a refused handshake with the same remote host is
// logged on each side.
const LogEvery = time.Minute

// maxRemembered bounds the remote hosts remembered for rate limiting; a
// scan of many addresses forgets the oldest.
const maxRemembered = 1024

// Files are the PEM files of Cluster:Tls.
type Files struct {
	// CA is Cluster:Tls:CaFile: the authority every node's certificate
	// chains to.
	CA string
	// Cert is Cluster:Tls:CertFile: this node's certificate (and chain).
	Cert string
	// Key is Cluster:Tls:KeyFile: Cert's private key.
	Key string
}

// Credentials are one node's TLS settings for both directions.
type Credentials struct {
	server *tls.Config
	client *tls.Config
	log    *slog.Logger
	limit  *limiter
	// purpose names the port in log lines, e.g. "cluster transport".
	purpose string
	// rejected is told of a peer whose certificate this node refused.
	rejected atomic.Pointer[func(authority string)]
}

// OnPeerRejected sets fn to be told, with the dialled host:port, of every
// outgoing handshake in which this node refused the peer's certificate (not
// signed by Cluster:Tls:CaFile, expired, or not naming the peer): the peer
// answers but is not of this cluster. The membership daemon takes it as a
// refusal, so that a node never forms a cluster of its own beside peers it
// cannot trust. fn must not block; it may be called concurrently.
func (c *Credentials) OnPeerRejected(fn func(authority string)) { c.rejected.Store(&fn) }

// peerCertificateRefused reports whether err is this side's verification
// of the peer's certificate failing.
func peerCertificateRefused(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname)
}

// Load reads the three files. purpose names the port in log lines
// ("cluster transport", "LocalDb replication"); logger receives refusals
// (nil: discarded); now is the clock of the rate limit (nil: time.Now).
func Load(f Files, purpose string, logger *slog.Logger, now func() time.Time) (*Credentials, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("Cluster:Tls:CertFile %s with Cluster:Tls:KeyFile %s: %w", f.Cert, f.Key, err)
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("Cluster:Tls:CaFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("Cluster:Tls:CaFile %s: no PEM certificate found", f.CA)
	}
	return New(cert, pool, purpose, logger, now), nil
}

// New is Load with the certificate and the CA pool already parsed.
func New(cert tls.Certificate, ca *x509.CertPool, purpose string, logger *slog.Logger, now func() time.Time) *Credentials {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Credentials{
		server: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    ca,
		},
		client: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			RootCAs:      ca,
		},
		log:     logger,
		limit:   &limiter{now: now, last: map[string]time.Time{}},
		purpose: purpose,
	}
}

// ServerConfig returns a copy of the server side's tls.Config.
func (c *Credentials) ServerConfig() *tls.Config { return c.server.Clone() }

// ClientConfig returns a copy of the client side's tls.Config.
func (c *Credentials) ClientConfig() *tls.Config { return c.client.Clone() }

// Server returns gRPC server credentials that log each refused handshake
// with the remote address.
func (c *Credentials) Server() credentials.TransportCredentials {
	return &logged{TransportCredentials: credentials.NewTLS(c.ServerConfig()), c: c}
}

// Client returns gRPC dial credentials that log each failed handshake with
// the peer's address.
func (c *Credentials) Client() credentials.TransportCredentials {
	return &logged{TransportCredentials: credentials.NewTLS(c.ClientConfig()), c: c}
}

// logged wraps TLS transport credentials with a log line per refusal.
type logged struct {
	credentials.TransportCredentials
	c *Credentials
}

func (l *logged) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := l.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		l.c.refusedFrom(raw.RemoteAddr().String(), err)
	}
	return conn, info, err
}

func (l *logged) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := l.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil && !errors.Is(err, context.Canceled) {
		l.c.failedTo(authority, err)
		if fn := l.c.rejected.Load(); fn != nil && peerCertificateRefused(err) {
			(*fn)(authority)
		}
	}
	return conn, info, err
}

func (l *logged) Clone() credentials.TransportCredentials {
	return &logged{TransportCredentials: l.TransportCredentials.Clone(), c: l.c}
}

// LogRefused is the message of a refused incoming handshake.
const LogRefused = "refused a TLS connection"

// LogFailed is the message of a failed outgoing handshake.
const LogFailed = "TLS handshake with a peer failed"

func (c *Credentials) refusedFrom(remote string, err error) {
	host := remote
	if h, _, e := net.SplitHostPort(remote); e == nil {
		host = h
	}
	if !c.limit.allow("in " + host) {
		return
	}
	c.log.Warn(c.purpose+": "+LogRefused+" from "+remote, "remote", remote, "err", err.Error(),
		"hint", "the peer needs Cluster:Tls with a certificate signed by this node's Cluster:Tls:CaFile")
}

func (c *Credentials) failedTo(authority string, err error) {
	if !c.limit.allow("out " + authority) {
		return
	}
	c.log.Warn(c.purpose+": "+LogFailed+" ("+authority+")", "peer", authority, "err", err.Error(),
		"hint", "both nodes need Cluster:Tls certificates signed by the same Cluster:Tls:CaFile, each naming its Cluster:PublicHostname")
}

// limiter lets one event per key through per LogEvery. mu guards last.
type limiter struct {
	now  func() time.Time
	mu   sync.Mutex
	last map[string]time.Time
}

func (l *limiter) allow(key string) bool {
	t := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.last[key]; ok && t.Sub(prev) < LogEvery {
		return false
	}
	if len(l.last) >= maxRemembered {
		for k, v := range l.last {
			if t.Sub(v) >= LogEvery {
				delete(l.last, k)
			}
		}
		if len(l.last) >= maxRemembered {
			clear(l.last)
		}
	}
	l.last[key] = t
	return true
}
