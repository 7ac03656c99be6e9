package host

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/pki"
)

// TestClientCertificateRefusalKeepsItsStatusCode: the trust store's
// refusal of an unknown client certificate reaches uaserver as an error
// with StatusCode() BadCertificateUntrusted (what uaserver sends in the
// ERR of OpenSecureChannel), not a bare error that it would answer with
// BadSecurityChecksFailed.
func TestClientCertificateRefusalKeepsItsStatusCode(t *testing.T) {
	store, err := pki.Open(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	uri, _ := url.Parse("urn:client:test")
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, URIs: []*url.URL{uri},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}

	err = store.Validate(der, "")
	var withCode interface{ StatusCode() ua.StatusCode }
	if !errors.As(err, &withCode) || withCode.StatusCode() != ua.StatusBadCertificateUntrusted {
		t.Fatalf("untrusted client certificate: %v (%T), want an error with StatusCode() BadCertificateUntrusted", err, err)
	}
	var verr *pki.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("%v does not unwrap to the store's *pki.ValidationError", err)
	}
}
