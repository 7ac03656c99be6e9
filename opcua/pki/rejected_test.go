package pki

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// distinctCerts are n self-signed client certificates, all different.
func distinctCerts(t *testing.T, n int) []*x509.Certificate {
	t.Helper()
	out := make([]*x509.Certificate, n)
	for i := range out {
		out[i] = mkCert(t, spec{cn: fmt.Sprintf("intruder-%d", i), serial: int64(i + 1), uri: clientURI})
	}
	return out
}

// TestRejectedDirectoryNeverAboveCap: 20 writers refusing 200 distinct
// untrusted certificates at once never leave more than MaxRejected files
// in rejected/certs (temporary files included), as a reader listing the
// directory all along sees; it ends with exactly MaxRejected.
func TestRejectedDirectoryNeverAboveCap(t *testing.T) {
	const maxRejected, writers, each = 50, 20, 10
	f := newFixture(t, Options{MaxRejected: maxRejected})
	dir := filepath.Join(f.dir, DirRejectedCerts)
	certs := distinctCerts(t, writers*each)

	var most atomic.Int64
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if es, err := os.ReadDir(dir); err == nil && int64(len(es)) > most.Load() {
				most.Store(int64(len(es)))
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, c := range certs[w*each : (w+1)*each] {
				if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateUntrusted {
					t.Errorf("untrusted certificate: %v", got)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	<-watched
	t.Logf("%d writers × %d certificates: at most %d entries seen in rejected/certs (cap %d)", writers, each, most.Load(), maxRejected)
	if most.Load() > maxRejected {
		t.Fatalf("rejected/certs held %d entries at one moment, cap %d", most.Load(), maxRejected)
	}
	if got := files(t, dir); len(got) != maxRejected || f.s.rejected.count() != maxRejected {
		t.Fatalf("%d files, %d in the index; want %d", len(got), f.s.rejected.count(), maxRejected)
	}
}

// TestTrustAndRemoveFreeASlot: a certificate trusted or removed leaves
// the index, so the next rejected one evicts nothing; the oldest goes
// first once the directory is full again.
func TestTrustAndRemoveFreeASlot(t *testing.T) {
	f := newFixture(t, Options{MaxRejected: 3})
	dir := filepath.Join(f.dir, DirRejectedCerts)
	cs := distinctCerts(t, 6)
	for _, c := range cs[:3] {
		f.clock.Advance(time.Second)
		code(t, f.s.Validate(c.Raw, clientURI))
	}
	if err := f.s.Trust(thumbHex(sha1Of(cs[1]))); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Remove(thumbHex(sha1Of(cs[2]))); err != nil {
		t.Fatal(err)
	}
	code(t, f.s.Validate(cs[3].Raw, clientURI))
	code(t, f.s.Validate(cs[4].Raw, clientURI))
	want := []string{certName(cs[0]), certName(cs[3]), certName(cs[4])}
	if got := files(t, dir); !sameSet(got, want) {
		t.Fatalf("rejected/certs = %v, want %v", got, want)
	}
	code(t, f.s.Validate(cs[5].Raw, clientURI))
	want = []string{certName(cs[3]), certName(cs[4]), certName(cs[5])}
	if got := files(t, dir); !sameSet(got, want) {
		t.Fatalf("rejected/certs = %v, want the oldest gone: %v", got, want)
	}
}

// TestOpenTrimsAnOverfullDirectory: a directory above the cap (an older
// version, an operator's copy) is cut to it, oldest first, at Open.
func TestOpenTrimsAnOverfullDirectory(t *testing.T) {
	f := newFixture(t, Options{MaxRejected: 3})
	dir := filepath.Join(f.dir, DirRejectedCerts)
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("old-%d.der", i))
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		mod := time.Now().Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	f.reopen(t, Options{MaxRejected: 3})
	if got, want := files(t, dir), []string{"old-2.der", "old-3.der", "old-4.der"}; !sameSet(got, want) {
		t.Fatalf("rejected/certs = %v, want %v", got, want)
	}
}

// TestRefusalWarningsAreRateLimited: 100 new untrusted certificates
// within a minute write one WARN; the next a minute later writes one
// that counts the 99 not written.
func TestRefusalWarningsAreRateLimited(t *testing.T) {
	f := newFixture(t, Options{})
	cs := distinctCerts(t, 101)
	for _, c := range cs[:100] {
		f.clock.Advance(100 * time.Millisecond)
		code(t, f.s.Validate(c.Raw, clientURI))
	}
	if n := f.logs.count("pki: client certificate refused"); n != 1 {
		t.Fatalf("%d WARN lines for 100 refusals within a minute, want 1", n)
	}
	f.clock.Advance(time.Minute)
	code(t, f.s.Validate(cs[100].Raw, clientURI))
	if n := f.logs.count("pki: client certificate refused"); n != 2 || f.logs.count("suppressed=99") != 1 {
		t.Fatalf("%d WARN lines after a minute, %d with suppressed=99; want 2 and 1:\n%s", n, f.logs.count("suppressed=99"), f.logs.b.String())
	}
}

func sha1Of(c *x509.Certificate) [20]byte {
	t, _ := ParseThumbprint(strings.TrimSuffix(certName(c), ".der"))
	return t
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}
