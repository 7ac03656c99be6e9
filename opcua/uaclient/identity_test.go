package uaclient

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
)

func selfSigned(t *testing.T) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func noneEndpoint(tokens ...*ua.UserTokenPolicy) *ua.EndpointDescription {
	return &ua.EndpointDescription{SecurityPolicyURI: ua.SecurityPolicyURINone, SecurityMode: ua.MessageSecurityModeNone,
		UserIdentityTokens: tokens}
}

// TestUserNameTokenIsPart4Secret: the password opens, with the server's
// private key under the token policy's algorithm, to a little-endian
// length, the password and the server nonce (Part 4 §7.41).
func TestUserNameTokenIsPart4Secret(t *testing.T) {
	der, key := selfSigned(t)
	nonce := []byte("0123456789abcdef0123456789abcdef")
	cs := &ua.CreateSessionResponse{ServerCertificate: der, ServerNonce: nonce, ServerEndpoints: []*ua.EndpointDescription{
		{SecurityPolicyURI: ua.SecurityPolicyURIBasic256Sha256, SecurityMode: ua.MessageSecurityModeSignAndEncrypt,
			UserIdentityTokens: []*ua.UserTokenPolicy{{PolicyID: "wrong-endpoint", TokenType: ua.UserTokenTypeUserName}}},
		noneEndpoint(&ua.UserTokenPolicy{PolicyID: "anon", TokenType: ua.UserTokenTypeAnonymous},
			&ua.UserTokenPolicy{PolicyID: "un", TokenType: ua.UserTokenTypeUserName, SecurityPolicyURI: ua.SecurityPolicyURIBasic256Sha256}),
	}}
	tok, err := userNameToken(&UserName{Name: "otto", Password: "pässword"}, cs)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := uapolicy.Asymmetric(ua.SecurityPolicyURIBasic256Sha256, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.PolicyID != "un" || tok.UserName != "otto" || tok.EncryptionAlgorithm != dec.EncryptionURI() {
		t.Fatalf("token %+v, want PolicyId un, user otto, algorithm %s", tok, dec.EncryptionURI())
	}
	if strings.Contains(string(tok.Password), "pässword") {
		t.Fatal("the password is in the token in clear text")
	}
	plain, err := dec.Decrypt(tok.Password)
	if err != nil {
		t.Fatal(err)
	}
	want := "pässword" + string(nonce)
	if n := binary.LittleEndian.Uint32(plain); int(n) != len(want) || string(plain[4:4+n]) != want {
		t.Fatalf("secret %q, want length %d then %q", plain, len(want), want)
	}
}

// TestUserNameTokenRefusesClearText: no UserName policy, or one that
// would send the password unencrypted, fails before any token is built.
func TestUserNameTokenRefusesClearText(t *testing.T) {
	der, _ := selfSigned(t)
	for name, tc := range map[string]struct {
		eps  []*ua.EndpointDescription
		want string
	}{
		"anonymous only": {[]*ua.EndpointDescription{noneEndpoint(&ua.UserTokenPolicy{PolicyID: "a", TokenType: ua.UserTokenTypeAnonymous})},
			"needs an application instance certificate"},
		"policy None": {[]*ua.EndpointDescription{noneEndpoint(&ua.UserTokenPolicy{PolicyID: "u", TokenType: ua.UserTokenTypeUserName,
			SecurityPolicyURI: ua.SecurityPolicyURINone})}, "clear text"},
		"policy from the None endpoint": {[]*ua.EndpointDescription{noneEndpoint(&ua.UserTokenPolicy{PolicyID: "u", TokenType: ua.UserTokenTypeUserName})},
			"clear text"},
		"no endpoints": {nil, "needs an application instance certificate"},
	} {
		cs := &ua.CreateSessionResponse{ServerCertificate: der, ServerNonce: make([]byte, 32), ServerEndpoints: tc.eps}
		tok, err := userNameToken(&UserName{Name: "otto", Password: "secret"}, cs)
		if !errors.Is(err, ErrNoUserNameToken) || !strings.Contains(err.Error(), tc.want) || tok != nil {
			t.Errorf("%s: %v, %v; want ErrNoUserNameToken mentioning %q", name, tok, err, tc.want)
		}
	}
	cs := &ua.CreateSessionResponse{ServerNonce: make([]byte, 32), ServerEndpoints: []*ua.EndpointDescription{noneEndpoint(
		&ua.UserTokenPolicy{PolicyID: "u", TokenType: ua.UserTokenTypeUserName, SecurityPolicyURI: ua.SecurityPolicyURIBasic256Sha256})}}
	if _, err := userNameToken(&UserName{Name: "otto", Password: "secret"}, cs); !errors.Is(err, ErrNoUserNameToken) {
		t.Errorf("no server certificate: %v, want ErrNoUserNameToken", err)
	}
}

func TestActivationErrorNamesTheStatus(t *testing.T) {
	err := error(&ActivationError{User: "vera", Code: ua.StatusBadUserAccessDenied})
	if !errors.Is(err, ua.StatusBadUserAccessDenied) || !strings.Contains(err.Error(), `user "vera"`) ||
		!strings.Contains(err.Error(), "BadUserAccessDenied (0x801F0000)") {
		t.Fatalf("%v", err)
	}
}
