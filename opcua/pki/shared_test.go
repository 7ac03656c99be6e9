package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

const floatingURI = "urn:otopcua:floating:plant-a"

// TestNewSharedIdentity: the shared identity is RSA 2048, self-signed, and
// its SubjectAltName holds the ApplicationUri, the floating IP and the DNS
// names given; a URI that cannot go into a certificate is refused.
func TestNewSharedIdentity(t *testing.T) {
	id, err := NewSharedIdentity(floatingURI, []string{"10.0.0.100", "opcua.plant-a.example"}, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(id.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if got := ApplicationURIs(c); !slices.Equal(got, []string{floatingURI}) {
		t.Errorf("ApplicationUris %v", got)
	}
	if len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(net.ParseIP("10.0.0.100")) || !slices.Equal(c.DNSNames, []string{"opcua.plant-a.example"}) {
		t.Errorf("SAN: IPs %v, DNS %v", c.IPAddresses, c.DNSNames)
	}
	if id.Key.N.BitLen() != 2048 || c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) != nil || !c.NotAfter.Equal(t0.Add(DefaultValidity).Truncate(time.Second)) {
		t.Errorf("key %d bits, self-signed %v, NotAfter %v", id.Key.N.BitLen(), c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature), c.NotAfter)
	}
	if _, err := NewSharedIdentity("not a uri", nil, t0, 0); err == nil {
		t.Error("a relative ApplicationUri was accepted")
	}
}

// TestSealKey: a sealed key opens with the same secret, cluster and
// certificate only; without a secret nothing is sealed or opened.
func TestSealKey(t *testing.T) {
	id, err := NewSharedIdentity(floatingURI, []string{"10.0.0.100"}, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSharedIdentity(floatingURI, nil, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "0123456789abcdef-cluster"
	sealed, err := SealKey(id.Key, secret, "plant-a", id.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SealKey(id.Key, "", "plant-a", id.Certificate); !errors.Is(err, ErrNoClusterSecret) {
		t.Fatalf("sealed without a secret: %v", err)
	}
	key, err := OpenKey(sealed, secret, "plant-a", id.Certificate)
	if err != nil || !key.Equal(id.Key) {
		t.Fatalf("open: %v (same key %v)", err, key != nil && key.Equal(id.Key))
	}
	flipped := append([]byte{}, sealed...)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name    string
		sealed  []byte
		secret  string
		cluster string
		cert    []byte
		want    error
	}{
		{"no secret", sealed, "", "plant-a", id.Certificate, ErrNoClusterSecret},
		{"another secret", sealed, secret + "x", "plant-a", id.Certificate, ErrSealedKey},
		{"another cluster", sealed, secret, "plant-b", id.Certificate, ErrSealedKey},
		{"another certificate", sealed, secret, "plant-a", other.Certificate, ErrSealedKey},
		{"altered", flipped, secret, "plant-a", id.Certificate, ErrSealedKey},
		{"truncated", sealed[:20], secret, "plant-a", id.Certificate, ErrSealedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := OpenKey(tc.sealed, tc.secret, tc.cluster, tc.cert); !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
		})
	}
}

// TestSharedIdentityFiles: without files the store has no shared
// identity; with the pair it loads it; half a pair or a certificate for
// another ApplicationUri is an error.
func TestSharedIdentityFiles(t *testing.T) {
	f := newFixture(t, Options{})
	if id, err := f.s.SharedIdentity(floatingURI); id != nil || err != nil {
		t.Fatalf("empty directory: %v %v", id, err)
	}
	id, err := NewSharedIdentity(floatingURI, nil, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp := filepath.Join(f.dir, SharedCertFile), filepath.Join(f.dir, SharedKeyFile)
	for _, d := range []string{filepath.Dir(cp), filepath.Dir(kp)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cp, id.Certificate, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.SharedIdentity(floatingURI); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
	kpem := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(id.Key)})
	if err := os.WriteFile(kp, kpem, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.SharedIdentity(floatingURI)
	if err != nil || got == nil || got.Thumbprint != id.Thumbprint || !got.Key.Equal(id.Key) {
		t.Fatalf("load: %v %v", got, err)
	}
	if _, err := f.s.SharedIdentity("urn:otopcua:floating:other"); !errors.Is(err, ErrApplicationURIMismatch) {
		t.Fatalf("another ApplicationUri: %v", err)
	}
}
