package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// t0 is "now" for every test's fake clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	keysOnce         sync.Once
	caKey, leafKey   *rsa.PrivateKey
	otherKey, weakKy *rsa.PrivateKey
)

// keys are generated once per test binary: RSA key generation dominates
// otherwise.
func keys(tb testing.TB) {
	tb.Helper()
	keysOnce.Do(func() {
		var err error
		for _, k := range []**rsa.PrivateKey{&caKey, &leafKey, &otherKey} {
			if *k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
				panic(err)
			}
		}
		if weakKy, err = rsa.GenerateKey(rand.Reader, 1024); err != nil {
			panic(err)
		}
	})
}

// spec describes a test certificate; zero fields get usable defaults.
type spec struct {
	cn        string
	uri       string
	notBefore time.Time
	notAfter  time.Time
	ku        x509.KeyUsage
	eku       []x509.ExtKeyUsage
	ca        bool
	serial    int64
	key       *rsa.PrivateKey
	parent    *x509.Certificate // nil: self-signed
	parentKey *rsa.PrivateKey
}

const clientURI = "urn:scada-1:client"

func mkCert(tb testing.TB, s spec) *x509.Certificate {
	tb.Helper()
	keys(tb)
	if s.cn == "" {
		s.cn = "client"
	}
	if s.notBefore.IsZero() {
		s.notBefore = t0.Add(-24 * time.Hour)
	}
	if s.notAfter.IsZero() {
		s.notAfter = t0.Add(365 * 24 * time.Hour)
	}
	if s.key == nil {
		s.key = leafKey
		if s.ca {
			s.key = caKey
		}
	}
	if s.ku == 0 {
		s.ku = x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment
		if s.ca {
			s.ku = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
		}
	}
	if s.serial == 0 {
		s.serial = time.Now().UnixNano()
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(s.serial),
		Subject:               pkix.Name{CommonName: s.cn},
		NotBefore:             s.notBefore,
		NotAfter:              s.notAfter,
		KeyUsage:              s.ku,
		ExtKeyUsage:           s.eku,
		BasicConstraintsValid: true,
		IsCA:                  s.ca,
	}
	if s.uri != "" {
		u, err := url.Parse(s.uri)
		if err != nil {
			tb.Fatal(err)
		}
		tmpl.URIs = []*url.URL{u}
	}
	parent, pkey := tmpl, s.key
	if s.parent != nil {
		parent, pkey = s.parent, s.parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &s.key.PublicKey, pkey)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// client is a self-signed client certificate with clientURI.
func client(tb testing.TB) *x509.Certificate {
	return mkCert(tb, spec{uri: clientURI, eku: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// put writes c into a store directory.
func put(tb testing.TB, root, dir string, c *x509.Certificate) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(root, dir, thumbHex(sha1.Sum(c.Raw))+".der"), c.Raw, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

type fixture struct {
	dir   string
	clock *clockwork.FakeClock
	logs  *logBuffer
	s     *Store
}

func newFixture(tb testing.TB, o Options) *fixture {
	tb.Helper()
	f := &fixture{dir: tb.TempDir(), clock: clockwork.NewFakeClockAt(t0), logs: &logBuffer{}}
	o.Clock, o.Logger = f.clock, slog.New(slog.NewTextHandler(f.logs, nil))
	s, err := Open(f.dir, o)
	if err != nil {
		tb.Fatal(err)
	}
	f.s = s
	return f
}

// reopen is a second Store on the same directory, as another process
// (the CLI) would have.
func (f *fixture) reopen(tb testing.TB, o Options) *Store {
	tb.Helper()
	o.Clock, o.Logger = f.clock, slog.New(slog.NewTextHandler(f.logs, nil))
	s, err := Open(f.dir, o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func files(tb testing.TB, dir string) []string {
	tb.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
