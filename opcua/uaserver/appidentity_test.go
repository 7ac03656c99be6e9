package uaserver

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/testcert"
)

const floatingURI = "urn:otopcua:floating:test"

var (
	floatingOnce sync.Once
	floatingCert []byte
	floatingKey  *rsa.PrivateKey
)

// floatingKeys makes the shared identity's certificate once.
func floatingKeys(t testing.TB) {
	testKeys(t)
	floatingOnce.Do(func() { floatingCert, floatingKey = testcert.RSA(t, floatingURI, 2048) })
}

// TestAddressIdentityConfig: New accepts alternate identities with a
// distinct valid address, an ApplicationUri and, when a secured endpoint
// is offered, a certificate that matches its key; anything else is refused
// with the field named.
func TestAddressIdentityConfig(t *testing.T) {
	floatingKeys(t)
	at := func(a string) AddressIdentity {
		return AddressIdentity{Addr: netip.MustParseAddr(a), ApplicationURI: floatingURI, Certificate: floatingCert, PrivateKey: floatingKey}
	}
	noCert := func(a string) AddressIdentity {
		return AddressIdentity{Addr: netip.MustParseAddr(a), ApplicationURI: floatingURI}
	}
	cases := []struct {
		name    string
		secured bool
		ids     []AddressIdentity
		want    string // "" accepted
	}{
		{"none", true, nil, ""},
		{"one secured", true, []AddressIdentity{at("10.0.0.100")}, ""},
		{"ipv4 and ipv6", true, []AddressIdentity{at("10.0.0.100"), at("fd00::100")}, ""},
		{"uri only on a None server", false, []AddressIdentity{noCert("10.0.0.100")}, ""},
		{"no address", true, []AddressIdentity{{ApplicationURI: floatingURI, Certificate: floatingCert, PrivateKey: floatingKey}}, "Config.Identities[0].Addr"},
		{"unspecified", true, []AddressIdentity{at("0.0.0.0")}, "Config.Identities[0].Addr"},
		{"twice", true, []AddressIdentity{at("10.0.0.100"), at("10.0.0.100")}, "Config.Identities[1].Addr 10.0.0.100: already Config.Identities[0]"},
		{"twice, once mapped", true, []AddressIdentity{at("10.0.0.100"), at("::ffff:10.0.0.100")}, "Config.Identities[1].Addr"},
		{"no uri", true, []AddressIdentity{{Addr: netip.MustParseAddr("10.0.0.100"), Certificate: floatingCert, PrivateKey: floatingKey}}, "Config.Identities[0].ApplicationURI is required"},
		{"cert without key", false, []AddressIdentity{{Addr: netip.MustParseAddr("10.0.0.100"), ApplicationURI: floatingURI, Certificate: floatingCert}}, "Config.Identities[0]: Certificate and PrivateKey go together"},
		{"secured without cert", true, []AddressIdentity{noCert("10.0.0.100")}, "Config.Identities[0].Certificate and PrivateKey are required"},
		{"key of another cert", true, []AddressIdentity{{Addr: netip.MustParseAddr("10.0.0.100"), ApplicationURI: floatingURI, Certificate: floatingCert, PrivateKey: srvKey}}, "Config.Identities[0].PrivateKey is not the key of Certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{ListenAddr: "127.0.0.1:0", ApplicationURI: serverURI, Identities: tc.ids}
			if tc.secured {
				secure(securedEndpointSet[1])(&c)
			}
			_, err := New(c, newFakeStore(), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want an error naming %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

// TestIdentityForLocal: a connection's identity is chosen by its local
// address: the AddressIdentity of that address (an IPv4-mapped address
// counting as its IPv4 address, a zone ignored), the server's own
// otherwise.
func TestIdentityForLocal(t *testing.T) {
	c := Config{ApplicationURI: serverURI, Identities: []AddressIdentity{
		{Addr: netip.MustParseAddr("127.0.0.2"), ApplicationURI: floatingURI},
		{Addr: netip.MustParseAddr("fe80::1"), ApplicationURI: "urn:v6"},
	}}
	ids := newIdentities(&c)
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 4840} }
	cases := []struct {
		name  string
		local net.Addr
		want  string
	}{
		{"floating address", tcp("127.0.0.2"), floatingURI},
		{"floating address, IPv4-mapped", &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.2"), Port: 4840}, floatingURI},
		{"ipv6 with a zone", &net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0", Port: 4840}, "urn:v6"},
		{"own address", tcp("127.0.0.1"), serverURI},
		{"another address", tcp("10.1.2.3"), serverURI},
		{"not TCP", &net.UnixAddr{Name: "/tmp/x", Net: "unix"}, serverURI},
		{"nil", (*net.TCPAddr)(nil), serverURI},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids.forLocal(tc.local).uri; got != tc.want {
				t.Fatalf("identity %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFloatingIdentityOnItsAddress: one server listening on every address
// with the shared identity on 127.0.0.2 (standing for the floating
// address). Through 127.0.0.2 a client sees the shared certificate and
// ApplicationUri (GetEndpoints, FindServers, CreateSession and its
// signature) and opens a Basic256Sha256 SignAndEncrypt session; through
// 127.0.0.1 the node's own; a channel encrypted for the other address's
// certificate is refused on each.
func TestFloatingIdentityOnItsAddress(t *testing.T) {
	floatingKeys(t)
	e := EndpointSecurity{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}
	srv := startServer(t, func(c *Config) {
		secure(e)(c)
		c.ListenAddr = "0.0.0.0:0"
		c.Identities = []AddressIdentity{{
			Addr: netip.MustParseAddr("127.0.0.2"), ApplicationURI: floatingURI,
			Certificate: floatingCert, PrivateKey: floatingKey,
		}}
	})
	port := srv.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		host        string
		uri         string
		cert, other []byte
	}{
		{"127.0.0.2", floatingURI, floatingCert, srvCert},
		{"127.0.0.1", serverURI, srvCert, floatingCert},
	} {
		t.Run(tc.host, func(t *testing.T) {
			url := "opc.tcp://" + net.JoinHostPort(tc.host, strconv.Itoa(port))
			checkDescribedAs(t, url, tc.uri, tc.cert)
			checkSessionAs(t, url, e, tc.cert)
			if _, err := dialRawSecureTo(t, url, e, tc.other); err == nil {
				t.Fatal("a channel encrypted for the other identity's certificate was opened")
			}
			c, err := dialSecure(t, url, e, cliCert, cliKey)
			if err != nil {
				t.Fatalf("secured session through %s: %v", tc.host, err)
			}
			if _, err := readTemp(testCtx(t), c); err != nil {
				t.Fatalf("Read through %s: %v", tc.host, err)
			}
		})
	}
}

// checkDescribedAs checks that GetEndpoints and FindServers through url
// describe the server with uri and cert.
func checkDescribedAs(t *testing.T, url, uri string, cert []byte) {
	t.Helper()
	ctx := testCtx(t)
	eps, err := opcua.GetEndpoints(ctx, url)
	if err != nil || len(eps) == 0 {
		t.Fatalf("GetEndpoints %s: %v (%d endpoints)", url, err, len(eps))
	}
	for _, ep := range eps {
		if ep.Server.ApplicationURI != uri || !bytes.Equal(ep.ServerCertificate, cert) {
			t.Errorf("GetEndpoints %s: ApplicationUri %q and a certificate %v the expected one; want %q", url, ep.Server.ApplicationURI,
				map[bool]string{true: "equal to", false: "other than"}[bytes.Equal(ep.ServerCertificate, cert)], uri)
		}
	}
	servers, err := opcua.FindServers(ctx, url)
	if err != nil || len(servers) == 0 || servers[0].ApplicationURI != uri {
		t.Fatalf("FindServers %s: %v %v, want %q first", url, err, servers, uri)
	}
}

// checkSessionAs checks that CreateSession through url carries cert and a
// signature made with its key.
func checkSessionAs(t *testing.T, url string, e EndpointSecurity, cert []byte) {
	t.Helper()
	rc, err := dialRawSecureTo(t, url, e, cert)
	if err != nil {
		t.Fatalf("OpenSecureChannel to %s: %v", url, err)
	}
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce)
	res := rc.mustDo(&ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{
			ApplicationURI: clientURI, ApplicationName: ua.NewLocalizedText("c"), ApplicationType: ua.ApplicationTypeClient,
		},
		EndpointURL: url, SessionName: t.Name(), ClientNonce: nonce, ClientCertificate: cliCert, RequestedSessionTimeout: 60000,
	}).(*ua.CreateSessionResponse)
	if !bytes.Equal(res.ServerCertificate, cert) {
		t.Fatalf("CreateSession through %s: another server certificate", url)
	}
	if len(res.ServerEndpoints) == 0 || !bytes.Equal(res.ServerEndpoints[0].ServerCertificate, cert) {
		t.Fatalf("CreateSession through %s: ServerEndpoints without the certificate", url)
	}
	if err := rc.sc.VerifySessionSignature(cert, nonce, res.ServerSignature.Signature); err != nil {
		t.Fatalf("CreateSession through %s: signature: %v", url, err)
	}
	rc.token = res.AuthenticationToken
	sig, alg, err := rc.sc.NewSessionSignature(cert, res.ServerNonce)
	if err != nil {
		t.Fatal(err)
	}
	req := activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID})
	req.ClientSignature = &ua.SignatureData{Algorithm: alg, Signature: sig}
	rc.mustDo(req)
}
