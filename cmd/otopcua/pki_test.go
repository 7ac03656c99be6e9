package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/opcua/pki"
)

// TestBinaryPKI drives `otopcua pki` against a PKI directory in which the
// server refused one client certificate.
func TestBinaryPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	cfg := filepath.Join(t.TempDir(), "appsettings.json")
	if err := os.WriteFile(cfg, []byte(`{"OpcUa": {"Security": {"PkiDir": "`+dir+`"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := pki.Open(dir, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := s.ApplicationIdentity("urn:node-a:otopcua", []string{"node-a"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	clientDER := selfSigned(t, "urn:scada-1:client")
	if err := s.Validate(clientDER, ""); err == nil {
		t.Fatal("an unknown client certificate was accepted")
	}
	sum := sha1.Sum(clientDER)
	thumb := strings.ToUpper(hex.EncodeToString(sum[:]))
	ownThumb := strings.ToUpper(hex.EncodeToString(own.Thumbprint[:]))
	pkiRun := func(args ...string) binaryRun {
		return runCommand(t, cleanEnv(), "", append([]string{"pki"}, append(args, "--config", cfg)...)...)
	}
	row := func(out, store, thumb string) bool {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, store+" ") && strings.Contains(l, thumb) {
				return true
			}
		}
		return false
	}

	r := pkiRun("list")
	if r.code != 0 || !row(r.stdout, "own", ownThumb) || !row(r.stdout, "rejected", thumb) ||
		!strings.Contains(r.stdout, "urn:scada-1:client") || !strings.Contains(r.stdout, "urn:node-a:otopcua") {
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := pkiRun("trust", strings.ToLower(thumb)); r.code != 0 {
		t.Fatalf("trust: exit %d %s", r.code, r.stderr)
	}
	if r := pkiRun("list"); !row(r.stdout, "trusted", thumb) || row(r.stdout, "rejected", thumb) {
		t.Fatalf("after trust:\n%s", r.stdout)
	}
	if err := reopen(t, dir).Validate(clientDER, "urn:scada-1:client"); err != nil {
		t.Fatalf("trusted by the CLI but refused: %v", err)
	}
	if r := pkiRun("reject", thumb); r.code != 0 {
		t.Fatalf("reject: exit %d %s", r.code, r.stderr)
	}
	if r := pkiRun("list"); !row(r.stdout, "rejected", thumb) || row(r.stdout, "trusted", thumb) {
		t.Fatalf("after reject:\n%s", r.stdout)
	}
	if r := pkiRun("remove", thumb); r.code != 0 {
		t.Fatalf("remove: exit %d %s", r.code, r.stderr)
	}
	if r := pkiRun("list"); strings.Contains(r.stdout, thumb) || !row(r.stdout, "own", ownThumb) {
		t.Fatalf("after remove:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"trust", thumb}, {"reject", thumb}, {"remove", thumb}, {"trust", "xyz"}, {"remove", ownThumb}} {
		if r := pkiRun(args...); r.code != 2 || !strings.Contains(r.stderr, "pki list") {
			t.Errorf("pki %v: exit %d, stderr %q; want 2 pointing at pki list", args, r.code, r.stderr)
		}
	}
}

func reopen(t *testing.T, dir string) *pki.Store {
	t.Helper()
	s, err := pki.Open(dir, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func selfSigned(t *testing.T, uri string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(uri)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "SCADA 1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), URIs: []*url.URL{u},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
