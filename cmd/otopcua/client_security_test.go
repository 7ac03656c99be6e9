package main

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"

	"github.com/otopcua/otopcua/internal/testcert"
)

// Without --cert the client makes its certificate once in the user cache
// directory, with its ApplicationUri in the SubjectAltName, and reuses it.
func TestClientSecurityGeneratesItsCertificateOnce(t *testing.T) {
	cache := t.TempDir()
	var stderr bytes.Buffer
	s := &securityFlags{security: "Aes256_Sha256_RsaPss:Sign", trustServer: true, environ: []string{"XDG_CACHE_HOME=" + cache}, stderr: &stderr}
	first, err := s.options()
	if err != nil {
		t.Fatal(err)
	}
	if first.PolicyURI != ua.SecurityPolicyURIAes256Sha256RsaPss || first.Mode != ua.MessageSecurityModeSign {
		t.Fatalf("security %s %s", first.PolicyURI, first.Mode)
	}
	c, err := x509.ParseCertificate(first.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.URIs) != 1 || c.URIs[0].String() != clientApplicationURI() || first.PrivateKey.N.BitLen() < 2048 {
		t.Fatalf("generated certificate URIs %v, key of %d bits", c.URIs, first.PrivateKey.N.BitLen())
	}
	if _, err := os.Stat(filepath.Join(cache, "otopcua", "client-pki", "own", "certs", "otopcua.der")); err != nil {
		t.Fatalf("no certificate in the cache directory: %v", err)
	}
	again, err := s.options()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Certificate, first.Certificate) {
		t.Fatal("a second run generated another certificate")
	}
	thumb := fmt.Sprintf("%X", uapolicy.Thumbprint(first.Certificate))
	if !strings.Contains(stderr.String(), "otopcua pki trust "+thumb) {
		t.Fatalf("stderr does not say how to trust %s:\n%s", thumb, stderr.String())
	}
}

// --trust-dir trusts the certificates in it and refuses another one with
// a message naming its thumbprint and the flags to use; --trust-server
// accepts it and prints its thumbprint once.
func TestClientSecurityTrust(t *testing.T) {
	known, _ := testcert.RSA(t, "urn:a:otopcua", 2048)
	stranger, _ := testcert.RSA(t, "urn:b:otopcua", 2048)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.der"), known, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	s := &securityFlags{trustDir: dir, stderr: &stderr}
	trust, err := s.trustFunc()
	if err != nil {
		t.Fatal(err)
	}
	if err := trust("opc.tcp://a:4840", known); err != nil {
		t.Fatalf("a certificate of --trust-dir refused: %v", err)
	}
	thumb := fmt.Sprintf("%X", uapolicy.Thumbprint(stranger))
	err = trust("opc.tcp://b:4840", stranger)
	if err == nil || !strings.Contains(err.Error(), thumb) || !strings.Contains(err.Error(), "--trust-server") {
		t.Fatalf("untrusted certificate: %v; want a refusal naming %s and --trust-server", err, thumb)
	}
	s.trustServer = true
	if trust, err = s.trustFunc(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := trust("opc.tcp://b:4840", stranger); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(stderr.String(), thumb); n != 1 {
		t.Fatalf("thumbprint printed %d times, want once:\n%s", n, stderr.String())
	}
}
