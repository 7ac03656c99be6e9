package client

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// directory is a user directory that records every password it was asked
// to check, per server.
type directory struct {
	server  string
	mu      *sync.Mutex // guards checked
	checked *[]string
}

func (d directory) Verify(_ context.Context, name, password, _ string) (string, ua.StatusCode) {
	d.mu.Lock()
	*d.checked = append(*d.checked, d.server+" "+name+"/"+password)
	d.mu.Unlock()
	if name != "otto" || password != "otto-password" {
		return "", ua.StatusBadUserAccessDenied
	}
	return "Operator", ua.StatusOK
}

func (directory) Role(context.Context, string) (string, ua.StatusCode) {
	return "", ua.StatusBadUserAccessDenied
}

// userSet starts servers a (250) and b (240), each with its own
// certificate, that check UserName tokens against one directory; checks
// returns the "server user/password" of every check so far.
func userSet(t *testing.T) (set map[string]*opcua.Server, checks func() []string) {
	t.Helper()
	var mu sync.Mutex
	var checked []string
	set = startSetWith(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, func(uri string, c *opcua.Config) {
		c.Security.Certificate, c.Security.PrivateKey = certificate(t, uri)
		c.Users = directory{server: uri, checked: &checked, mu: &mu}
		c.Authorization = map[string]uaserver.Rights{"Operator": uaserver.AllRights, uaserver.AnonymousRole: uaserver.RightRead}
	}, "urn:a", "urn:b")
	return set, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(checked) }
}

func certificate(t *testing.T, uri string) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: uri},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// TestUserSessionsOnEveryServerAndAfterFailover: every server of the set
// decrypts the same password with its own key and nonce, at Dial and
// again when the client reconnects after a failover.
func TestUserSessionsOnEveryServerAndAfterFailover(t *testing.T) {
	set, checks := userSet(t)
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()},
		User: &uaclient.UserName{Name: "otto", Password: "otto-password"}})
	got := checks()
	slices.Sort(got)
	if !slices.Equal(got, []string{"urn:a otto/otto-password", "urn:b otto/otto-password"}) {
		t.Fatalf("the servers checked %q, want otto's password once on each", got)
	}
	sub, err := c.Subscribe(context.Background(), []*ua.NodeID{levelNode}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	nextFrom(t, sub, "urn:a", 250, 3*time.Second)
	set["urn:a"].Close()
	set["urn:b"].SetServiceLevel(250)
	nextFrom(t, sub, "urn:b", 250, 5*time.Second)
	if dv, err := c.Read(context.Background(), levelNode); err != nil || dv[0].Value.Value() != byte(250) {
		t.Fatalf("Read after failover: %v %v", dv, err)
	}
}

func TestRefusedUserNamesTheStatus(t *testing.T) {
	set, checks := userSet(t)
	_, err := Dial(context.Background(), Options{URLs: []string{set["urn:a"].EndpointURL()}, NoDiscovery: true, Timeout: 3 * time.Second,
		User: &uaclient.UserName{Name: "otto", Password: "wrong-password"}})
	var ae *uaclient.ActivationError
	if !errors.Is(err, ErrNoServer) || !errors.As(err, &ae) || ae.Code != ua.StatusBadUserAccessDenied || ae.User != "otto" ||
		!strings.Contains(err.Error(), "BadUserAccessDenied") {
		t.Fatalf("Dial: %v; want ErrNoServer wrapping an ActivationError BadUserAccessDenied", err)
	}
	if got := checks(); len(got) != 1 || got[0] != "urn:a otto/wrong-password" {
		t.Fatalf("checks %q: want one, with the password as typed", got)
	}
}

// TestNoCertificateNoPassword: a server without a certificate offers no
// UserName token; the client refuses before sending anything about the
// user.
func TestNoCertificateNoPassword(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250}, "urn:a")
	_, err := Dial(context.Background(), Options{URLs: []string{set["urn:a"].EndpointURL()}, NoDiscovery: true, Timeout: 3 * time.Second,
		User: &uaclient.UserName{Name: "otto", Password: "otto-password"}})
	if !errors.Is(err, ErrNoServer) || !errors.Is(err, uaclient.ErrNoUserNameToken) ||
		!strings.Contains(err.Error(), "needs an application instance certificate") {
		t.Fatalf("Dial: %v; want ErrNoUserNameToken", err)
	}
}
