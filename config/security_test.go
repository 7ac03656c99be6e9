package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keyPair writes a self-signed certificate and its key with the given RSA
// size and returns their paths.
func keyPair(t *testing.T, bits int) (string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, kf := filepath.Join(dir, "server.der"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(cert, der, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, kf
}

func securityJSON(t *testing.T, s map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"OpcUa": map[string]any{"Security": s}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSecurityDefaults(t *testing.T) {
	s := Default().OpcUa.Security
	if s.PkiDir != "pki" || s.CertificateFile != "" || s.KeyFile != "" || s.AutoAcceptUntrusted {
		t.Fatalf("defaults %+v, want PkiDir pki, no files, AutoAcceptUntrusted false", s)
	}
}

func TestSecurityFiles(t *testing.T) {
	goodCert, goodKey := keyPair(t, 2048)
	weakCert, weakKey := keyPair(t, 1024)
	for _, tc := range []struct {
		name             string
		sec              map[string]any
		key, value, want string
	}{
		{"certificate without key", map[string]any{"CertificateFile": goodCert}, "OpcUa:Security:KeyFile", "", "required when OpcUa:Security:CertificateFile is set"},
		{"key without certificate", map[string]any{"KeyFile": goodKey}, "OpcUa:Security:CertificateFile", "", "required when OpcUa:Security:KeyFile is set"},
		{"weak key", map[string]any{"CertificateFile": weakCert, "KeyFile": weakKey}, "OpcUa:Security:CertificateFile", weakCert, "the RSA key has 1024 bits; at least 2048"},
		{"key of another certificate", map[string]any{"CertificateFile": goodCert, "KeyFile": weakKey}, "OpcUa:Security:CertificateFile", goodCert, "RSA key of at least 2048 bits"},
		{"missing file", map[string]any{"CertificateFile": goodCert + ".missing", "KeyFile": goodKey}, "OpcUa:Security:CertificateFile", goodCert + ".missing", "no such file"},
		{"empty PKI dir", map[string]any{"PkiDir": ""}, "OpcUa:Security:PkiDir", "", "directory paths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("a.json", securityJSON(t, tc.sec), nil)
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Items) != 1 {
				t.Fatalf("err = %v, want one problem", err)
			}
			it := ve.Items[0]
			if it.Key != tc.key || it.Value != tc.value || !strings.Contains(it.Accepted, tc.want) {
				t.Fatalf("item %s, want %s = %q: …%s…", it, tc.key, tc.value, tc.want)
			}
		})
	}
	c, err := LoadBytes("a.json", securityJSON(t, map[string]any{"CertificateFile": goodCert, "KeyFile": goodKey, "PkiDir": "/var/lib/otopcua/pki"}), nil)
	if err != nil {
		t.Fatalf("a valid pair: %v", err)
	}
	if c.OpcUa.Security.CertificateFile != goodCert || c.OpcUa.Security.PkiDir != "/var/lib/otopcua/pki" {
		t.Fatalf("decoded %+v", c.OpcUa.Security)
	}
}

func TestAutoAcceptUntrustedWarns(t *testing.T) {
	c, err := LoadBytes("a.json", securityJSON(t, map[string]any{"AutoAcceptUntrusted": true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "OpcUa:Security:AutoAcceptUntrusted is true") {
		t.Fatalf("warnings %q", w)
	}
	if w := Default().Warnings(); strings.Contains(strings.Join(w, "\n"), "AutoAccept") {
		t.Fatalf("default warns about AutoAcceptUntrusted: %q", w)
	}
}
