package pki

import (
	"bytes"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const serverURI = "urn:node-a:otopcua"

func TestGeneratedIdentity(t *testing.T) {
	f := newFixture(t, Options{})
	id, err := f.s.ApplicationIdentity(serverURI, []string{"node-a", "10.0.0.5", "0.0.0.0", "node-a", ""}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(id.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if id.Thumbprint != sha1.Sum(c.Raw) || len(id.Chain) != 1 || !bytes.Equal(id.Chain[0], id.Certificate) {
		t.Fatalf("thumbprint or chain do not describe the leaf")
	}
	if got := ApplicationURIs(c); len(got) != 1 || got[0] != serverURI {
		t.Errorf("SAN URIs %q, want [%s]", got, serverURI)
	}
	if len(c.DNSNames) != 1 || c.DNSNames[0] != "node-a" {
		t.Errorf("DNS names %q, want [node-a] (duplicates and empty names dropped)", c.DNSNames)
	}
	if len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) {
		t.Errorf("IP addresses %v, want [10.0.0.5] (the wildcard dropped)", c.IPAddresses)
	}
	wantKU := x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign
	if c.KeyUsage != wantKU {
		t.Errorf("key usage %b, want %b", c.KeyUsage, wantKU)
	}
	if len(c.ExtKeyUsage) != 2 || c.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || c.ExtKeyUsage[1] != x509.ExtKeyUsageClientAuth {
		t.Errorf("extended key usage %v, want serverAuth, clientAuth", c.ExtKeyUsage)
	}
	if pub := c.PublicKey.(*rsa.PublicKey); pub.N.BitLen() != 2048 || !pub.Equal(&id.Key.PublicKey) {
		t.Errorf("key: %d bits or not the identity's key", pub.N.BitLen())
	}
	if c.SignatureAlgorithm != x509.SHA256WithRSA {
		t.Errorf("signature %v, want SHA256-RSA", c.SignatureAlgorithm)
	}
	if !c.NotAfter.Equal(t0.Add(DefaultValidity)) || c.NotBefore.After(t0) {
		t.Errorf("validity %s..%s, want ..%s from the injected clock", c.NotBefore, c.NotAfter, t0.Add(DefaultValidity))
	}
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		t.Errorf("self-signature: %v", err)
	}
	info, err := os.Stat(filepath.Join(f.dir, OwnKeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, info.Mode())
	}
	// The server's own certificate passes the server's own client checks.
	put(t, f.dir, DirTrustedCerts, c)
	f.clock.Advance(ReloadInterval)
	if err := f.s.Validate(id.Certificate, serverURI); err != nil {
		t.Errorf("own certificate refused by Validate: %v", err)
	}
}

func TestIdentityStableAcrossReopenAndHostChange(t *testing.T) {
	f := newFixture(t, Options{})
	first, err := f.s.ApplicationIdentity(serverURI, []string{"node-a"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(48 * time.Hour)
	for _, hosts := range [][]string{{"node-a"}, {"container-7f3a", "172.18.0.9"}, nil} {
		id, err := f.reopen(t, Options{}).ApplicationIdentity(serverURI, hosts, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if id.Thumbprint != first.Thumbprint || !id.Key.Equal(first.Key) {
			t.Fatalf("hosts %v: thumbprint %X, want %X (regenerated)", hosts, id.Thumbprint, first.Thumbprint)
		}
	}
}

func TestIdentityURIMismatchRefused(t *testing.T) {
	f := newFixture(t, Options{})
	if _, err := f.s.ApplicationIdentity(serverURI, nil, "", ""); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(f.dir, OwnCertFile))
	_, err := f.reopen(t, Options{}).ApplicationIdentity("urn:node-b:otopcua", nil, "", "")
	if !errors.Is(err, ErrApplicationURIMismatch) || !strings.Contains(err.Error(), serverURI) || !strings.Contains(err.Error(), "urn:node-b:otopcua") {
		t.Fatalf("err = %v; want ErrApplicationURIMismatch naming both URIs", err)
	}
	after, _ := os.ReadFile(filepath.Join(f.dir, OwnCertFile))
	if !bytes.Equal(before, after) {
		t.Fatal("the stored certificate was replaced")
	}
}

func TestIdentityFromFilesWins(t *testing.T) {
	f := newFixture(t, Options{})
	c := mkCert(t, spec{uri: serverURI, cn: "from-file"})
	certPath, keyPath := filepath.Join(t.TempDir(), "server.pem"), filepath.Join(t.TempDir(), "server.key")
	writePEM(t, certPath, "CERTIFICATE", c.Raw)
	writePEM(t, keyPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(leafKey))
	id, err := f.s.ApplicationIdentity(serverURI, []string{"node-a"}, certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if id.Thumbprint != sha1.Sum(c.Raw) || !id.Key.Equal(leafKey) {
		t.Fatalf("identity is not the configured files' certificate")
	}
	if got := files(t, filepath.Join(f.dir, DirOwnCerts)); len(got) != 0 {
		t.Fatalf("own/certs = %v; nothing should be generated when files are configured", got)
	}

	// A key that is not the certificate's, a weak key, one file alone.
	writePEM(t, keyPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(otherKey))
	if _, err := f.s.ApplicationIdentity(serverURI, nil, certPath, keyPath); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("mismatched key: err = %v", err)
	}
	weak := mkCert(t, spec{uri: serverURI, key: weakKy})
	writePEM(t, certPath, "CERTIFICATE", weak.Raw)
	writePEM(t, keyPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(weakKy))
	if _, err := f.s.ApplicationIdentity(serverURI, nil, certPath, keyPath); err == nil || !strings.Contains(err.Error(), "1024 bits") {
		t.Errorf("1024-bit key: err = %v", err)
	}
	if _, err := f.s.ApplicationIdentity(serverURI, nil, certPath, ""); err == nil {
		t.Error("CertificateFile without KeyFile accepted")
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
