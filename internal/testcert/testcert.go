// Package testcert makes certificates for tests: self-signed ECDSA TLS
// files for the HTTP endpoint's Http:Tls settings (Write), a CA with
// CA-signed node certificates for Cluster:Tls (NewCA), and RSA OPC UA
// application instance certificates (RSA).
package testcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Write creates a self-signed ECDSA P-256 certificate for 127.0.0.1, ::1
// and localhost, valid for a day, and writes it and its key as PEM files
// in a new temp dir. It returns the two paths.
func Write(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := leaf(t, "otopcua test", x509.ExtKeyUsageServerAuth)
	return writePair(t, t.TempDir(), "http", create(t, tmpl, tmpl, key, key), key)
}

// CA is a test certificate authority that signs node certificates, for
// tests of Cluster:Tls (mutual TLS between nodes).
type CA struct {
	// File is the PEM file with the CA certificate.
	File string

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// NewCA creates an ECDSA P-256 certificate authority valid for a day and
// writes its certificate to ca.crt in a new temp dir.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der := create(t, tmpl, tmpl, key, key)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &CA{File: filepath.Join(dir, "ca.crt"), cert: cert, key: key, dir: dir}
	writePEM(t, ca.File, "CERTIFICATE", der, 0o644)
	return ca
}

// Node issues a certificate for 127.0.0.1, ::1 and localhost with the
// extended key usages serverAuth and clientAuth (a cluster node is both),
// signed by the CA, and writes it and its key as name.crt and name.key. It
// returns the two paths.
func (ca *CA) Node(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := leaf(t, name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	return writePair(t, ca.dir, name, create(t, tmpl, ca.cert, key, ca.key), key)
}

// leaf is the template of an ECDSA leaf certificate for 127.0.0.1, ::1 and
// localhost, valid for a day.
func leaf(t testing.TB, name string, usage ...x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
}

// create signs tmpl for key's public half with parent and signer.
func create(t testing.TB, tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// writePair writes der and key as name.crt and name.key in dir and returns
// the two paths.
func writePair(t testing.TB, dir, name string, der []byte, key *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der, 0o644)
	writePEM(t, keyFile, "PRIVATE KEY", kder, 0o600)
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
}
