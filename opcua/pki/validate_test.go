package pki

import (
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// code is the status Validate answered, or StatusGood.
func code(t testing.TB, err error) ua.StatusCode {
	t.Helper()
	if err == nil {
		return ua.StatusGood
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate returned %T %v, want *ValidationError", err, err)
	}
	return ve.Code
}

func TestValidateStatusCodes(t *testing.T) {
	keys(t)
	ca := mkCert(t, spec{cn: "Plant CA", ca: true})
	caSigned := func(s spec) *x509.Certificate {
		s.parent, s.parentKey = ca, caKey
		if s.uri == "" {
			s.uri = clientURI
		}
		return mkCert(t, s)
	}
	expiredCA := mkCert(t, spec{cn: "Old CA", ca: true, notAfter: t0.Add(-time.Hour)})
	unknownCA := mkCert(t, spec{cn: "Unknown CA", ca: true, key: otherKey})
	revoked := caSigned(spec{cn: "revoked", serial: 4242})
	inter := mkCert(t, spec{cn: "Line 3 CA", ca: true, key: otherKey, parent: ca, parentKey: caKey})
	notCA := mkCert(t, spec{cn: "Not a CA", key: otherKey})
	garbage := client(t).Raw

	cases := []struct {
		name    string
		trusted []*x509.Certificate
		issuers []*x509.Certificate
		der     []byte
		uri     string
		want    ua.StatusCode
	}{
		{"trusted self-signed", nil, nil, nil, clientURI, ua.StatusGood},
		{"no URI check when appURI is empty", nil, nil, mkCert(t, spec{}).Raw, "", ua.StatusGood},
		{"garbage DER", nil, nil, garbage[:len(garbage)/2], "", ua.StatusBadCertificateInvalid},
		{"expired", nil, nil, mkCert(t, spec{uri: clientURI, notAfter: t0.Add(-time.Second)}).Raw, clientURI, ua.StatusBadCertificateTimeInvalid},
		{"not yet valid", nil, nil, mkCert(t, spec{uri: clientURI, notBefore: t0.Add(time.Minute)}).Raw, clientURI, ua.StatusBadCertificateTimeInvalid},
		{"wrong ApplicationUri", nil, nil, mkCert(t, spec{uri: "urn:other:client"}).Raw, clientURI, ua.StatusBadCertificateURIInvalid},
		{"no keyEncipherment nor dataEncipherment", nil, nil, mkCert(t, spec{uri: clientURI, ku: x509.KeyUsageDigitalSignature}).Raw, clientURI, ua.StatusBadCertificateUseNotAllowed},
		{"serverAuth only", nil, nil, mkCert(t, spec{uri: clientURI, eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).Raw, clientURI, ua.StatusBadCertificateUseNotAllowed},
		{"signed by a trusted CA", []*x509.Certificate{ca}, nil, caSigned(spec{}).Raw, clientURI, ua.StatusGood},
		{"revoked by the CA's CRL", []*x509.Certificate{ca}, nil, revoked.Raw, clientURI, ua.StatusBadCertificateRevoked},
		{"issuer expired", []*x509.Certificate{expiredCA}, nil, mkCert(t, spec{uri: clientURI, parent: expiredCA, parentKey: caKey}).Raw, clientURI, ua.StatusBadCertificateIssuerTimeInvalid},
		{"issuer unknown", []*x509.Certificate{ca}, nil, mkCert(t, spec{uri: clientURI, parent: unknownCA, parentKey: otherKey}).Raw, clientURI, ua.StatusBadCertificateChainIncomplete},
		{"intermediate in issuers, root trusted", []*x509.Certificate{ca}, []*x509.Certificate{inter}, mkCert(t, spec{uri: clientURI, parent: inter, parentKey: otherKey}).Raw, clientURI, ua.StatusGood},
		{"intermediate sent with the leaf", []*x509.Certificate{ca}, nil, append(mkCert(t, spec{uri: clientURI, parent: inter, parentKey: otherKey}).Raw, inter.Raw...), clientURI, ua.StatusGood},
		{"intermediate missing", []*x509.Certificate{ca}, nil, mkCert(t, spec{uri: clientURI, parent: inter, parentKey: otherKey}).Raw, clientURI, ua.StatusBadCertificateChainIncomplete},
		{"CA only in issuers is not trust", nil, []*x509.Certificate{ca}, caSigned(spec{}).Raw, clientURI, ua.StatusBadCertificateUntrusted},
		{"issuer is not a CA", []*x509.Certificate{notCA}, nil, mkCert(t, spec{uri: clientURI, parent: notCA, parentKey: otherKey}).Raw, clientURI, ua.StatusBadCertificateIssuerUseNotAllowed},
		{"untrusted self-signed", nil, nil, client(t).Raw, clientURI, ua.StatusBadCertificateUntrusted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			der := tc.der
			if der == nil {
				c := client(t)
				put(t, f.dir, DirTrustedCerts, c)
				der = c.Raw
			} else if tc.trusted == nil && tc.want != ua.StatusBadCertificateUntrusted && tc.issuers == nil {
				// Self-signed cases: trust the certificate itself so that the
				// check under test is the one that answers.
				if c, err := x509.ParseCertificate(der); err == nil {
					put(t, f.dir, DirTrustedCerts, c)
				}
			}
			for _, c := range tc.trusted {
				put(t, f.dir, DirTrustedCerts, c)
			}
			for _, c := range tc.issuers {
				put(t, f.dir, DirIssuersCerts, c)
			}
			crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
				Number: big.NewInt(1), ThisUpdate: t0.Add(-time.Hour), NextUpdate: t0.Add(time.Hour),
				RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: big.NewInt(4242), RevocationTime: t0.Add(-time.Hour)}},
			}, ca, caKey)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.dir, DirTrustedCRL, "plant.crl"), crl, 0o644); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(ReloadInterval)
			if got := code(t, f.s.Validate(der, tc.uri)); got != tc.want {
				t.Fatalf("Validate = %v, want %v (%v)", got, tc.want, f.s.Validate(der, tc.uri))
			}
			// A second call (cached when accepted) answers the same.
			if got := code(t, f.s.Validate(der, tc.uri)); got != tc.want {
				t.Fatalf("second Validate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCachedCertificateExpiresWithTheClock(t *testing.T) {
	f := newFixture(t, Options{})
	c := mkCert(t, spec{uri: clientURI, notAfter: t0.Add(time.Hour)})
	put(t, f.dir, DirTrustedCerts, c)
	f.clock.Advance(ReloadInterval)
	if err := f.s.Validate(c.Raw, clientURI); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateTimeInvalid {
		t.Fatalf("after expiry: %v, want BadCertificateTimeInvalid", got)
	}
	if got := code(t, f.s.Validate(c.Raw, "urn:someone-else")); got != ua.StatusBadCertificateTimeInvalid {
		t.Fatalf("cached entry skipped the time check: %v", got)
	}
}

func TestUntrustedGoesToRejectedUntilTrusted(t *testing.T) {
	f := newFixture(t, Options{})
	c := client(t)
	thumb := thumbHex(sha1.Sum(c.Raw))
	for range 3 {
		if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateUntrusted {
			t.Fatalf("Validate = %v, want BadCertificateUntrusted", got)
		}
	}
	if got := files(t, filepath.Join(f.dir, DirRejectedCerts)); len(got) != 1 || got[0] != thumb+".der" {
		t.Fatalf("rejected/certs = %v, want [%s.der]", got, thumb)
	}
	if n := f.logs.count("client certificate refused"); n != 1 {
		t.Fatalf("refusal logged %d times for 3 attempts, want once", n)
	}
	if err := f.s.Trust(strings.ToLower(thumb)); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Validate(c.Raw, clientURI); err != nil {
		t.Fatalf("after Trust: %v", err)
	}
	if got := files(t, filepath.Join(f.dir, DirRejectedCerts)); len(got) != 0 {
		t.Fatalf("rejected/certs after Trust = %v, want empty", got)
	}
	if err := f.s.Trust(thumb); err != nil {
		t.Fatalf("trusting a trusted certificate again: %v", err)
	}
}

// An operator's `otopcua pki trust` runs in another process: the running
// store sees it within ReloadInterval, without a restart.
func TestTrustFromAnotherProcessReloads(t *testing.T) {
	f := newFixture(t, Options{})
	c := client(t)
	if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateUntrusted {
		t.Fatalf("Validate = %v", got)
	}
	cli := f.reopen(t, Options{})
	if err := cli.Trust(thumbHex(sha1.Sum(c.Raw))); err != nil {
		t.Fatal(err)
	}
	if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateUntrusted {
		t.Fatalf("re-read before ReloadInterval passed: %v", got)
	}
	f.clock.Advance(ReloadInterval)
	if err := f.s.Validate(c.Raw, clientURI); err != nil {
		t.Fatalf("after ReloadInterval: %v", err)
	}
	// And back: a reject in the other process revokes the trust.
	if err := cli.Reject(thumbHex(sha1.Sum(c.Raw))); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(ReloadInterval)
	if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateUntrusted {
		t.Fatalf("after Reject: %v, want BadCertificateUntrusted", got)
	}
}

func TestAutoAcceptUntrusted(t *testing.T) {
	f := newFixture(t, Options{AutoAcceptUntrusted: true})
	c := client(t)
	if err := f.s.Validate(c.Raw, clientURI); err != nil {
		t.Fatalf("auto-accept refused: %v", err)
	}
	if got := files(t, filepath.Join(f.dir, DirTrustedCerts)); len(got) != 1 || got[0] != thumbHex(sha1.Sum(c.Raw))+".der" {
		t.Fatalf("trusted/certs = %v", got)
	}
	if f.logs.count("level=WARN") != 1 || f.logs.count("AutoAcceptUntrusted") != 1 {
		t.Fatalf("want one warning naming AutoAcceptUntrusted, logs:\n%s", f.logs.b.String())
	}
	// A store without auto-accept now trusts it too.
	if err := f.reopen(t, Options{}).Validate(c.Raw, clientURI); err != nil {
		t.Fatalf("auto-accepted certificate not trusted after reopen: %v", err)
	}
	// Auto-accept is not a bypass of the other checks.
	old := mkCert(t, spec{uri: clientURI, notAfter: t0.Add(-time.Hour)})
	if got := code(t, f.s.Validate(old.Raw, clientURI)); got != ua.StatusBadCertificateTimeInvalid {
		t.Fatalf("expired with auto-accept: %v", got)
	}
}

func TestRejectedDirectoryBounded(t *testing.T) {
	f := newFixture(t, Options{})
	dir := filepath.Join(f.dir, DirRejectedCerts)
	for i := range DefaultMaxRejected {
		p := filepath.Join(dir, "old-"+strings.Repeat("0", 4-len(itoa(i)))+itoa(i)+".der")
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		mod := time.Now().Add(-time.Hour).Add(time.Duration(i) * time.Millisecond)
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	// Files written behind the store's back are learned at its next
	// listing of the directory.
	f.clock.Advance(RejectedRescanInterval)
	c := client(t)
	code(t, f.s.Validate(c.Raw, clientURI))
	got := files(t, dir)
	if len(got) != DefaultMaxRejected {
		t.Fatalf("%d files in rejected/certs, want %d", len(got), DefaultMaxRejected)
	}
	has := map[string]bool{}
	for _, n := range got {
		has[n] = true
	}
	if has["old-0000.der"] || !has["old-0001.der"] || !has[thumbHex(sha1.Sum(c.Raw))+".der"] {
		t.Fatal("want the oldest dropped, the next oldest kept and the new one stored")
	}
	code(t, f.s.Validate(c.Raw, clientURI))
	if got := files(t, dir); len(got) != DefaultMaxRejected || !has["old-0001.der"] {
		t.Fatalf("a repeat attempt changed rejected/certs (%d files)", len(got))
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

func TestRemoveAndUnknownThumbprint(t *testing.T) {
	f := newFixture(t, Options{})
	c := client(t)
	put(t, f.dir, DirTrustedCerts, c)
	thumb := thumbHex(sha1.Sum(c.Raw))
	if err := f.s.Validate(c.Raw, clientURI); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Remove(thumb); err != nil {
		t.Fatal(err)
	}
	if got := code(t, f.s.Validate(c.Raw, clientURI)); got != ua.StatusBadCertificateUntrusted {
		t.Fatalf("after Remove: %v (the cache outlived the trust)", got)
	}
	unknown := strings.Repeat("AB", 20)
	for name, op := range map[string]func(string) error{"Trust": f.s.Trust, "Reject": f.s.Reject, "Remove": f.s.Remove} {
		if err := op(unknown); !errors.Is(err, ErrUnknownThumbprint) {
			t.Errorf("%s(unknown) = %v, want ErrUnknownThumbprint", name, err)
		}
		if err := op("not-hex"); err == nil || errors.Is(err, ErrUnknownThumbprint) {
			t.Errorf("%s(not-hex) = %v, want a format error", name, err)
		}
	}
}

func TestList(t *testing.T) {
	f := newFixture(t, Options{})
	if _, err := f.s.ApplicationIdentity(serverURI, []string{"node-a"}, "", ""); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	code(t, f.s.Validate(c.Raw, clientURI))
	es := f.s.List()
	if len(es) != 2 || es[0].Dir != "own" || es[0].ApplicationURI != serverURI || es[1].Dir != "rejected" ||
		es[1].ApplicationURI != clientURI || es[1].Thumbprint != thumbHex(sha1.Sum(c.Raw)) || !es[1].NotAfter.Equal(c.NotAfter) {
		t.Fatalf("List = %+v", es)
	}
}
