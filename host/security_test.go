package host

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/opcua/pki"
	"github.com/otopcua/otopcua/telemetry"
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

// TestUserCodes: a throttled UserName attempt is BadUserAccessDenied, as a
// wrong password is (Part 4: the user could not be authenticated), not a
// code that tells the client the name exists or that the node is busy.
func TestUserCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want ua.StatusCode
	}{
		{nil, ua.StatusOK},
		{admin.ErrBadCredentials, ua.StatusBadUserAccessDenied},
		{&admin.ThrottledError{Until: time.Now(), Who: "user op from address 127.0.0.2"}, ua.StatusBadUserAccessDenied},
		{fmt.Errorf("wrapped: %w", &admin.ThrottledError{Who: "address 127.0.0.2"}), ua.StatusBadUserAccessDenied},
		{admin.ErrBusy, ua.StatusBadResourceUnavailable},
		{errors.New("config db down"), ua.StatusBadResourceUnavailable},
	} {
		if got := userCode(tc.err); got != tc.want {
			t.Errorf("userCode(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestThrottledSurfacesAreTheMetricsSurfaces: the surfaces admin/auth
// reports are the label values the metric records at zero on start-up.
func TestThrottledSurfacesAreTheMetricsSurfaces(t *testing.T) {
	if auth.SurfaceAdmin != telemetry.AuthSurfaceAdmin || auth.SurfaceOpcUa != telemetry.AuthSurfaceOpcUa {
		t.Fatalf("admin/auth surfaces %q %q, telemetry %q %q", auth.SurfaceAdmin, auth.SurfaceOpcUa,
			telemetry.AuthSurfaceAdmin, telemetry.AuthSurfaceOpcUa)
	}
}
