package uaclient

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
)

// mirroredServer is the server side of the reactivation contract, as a
// fake: a server B of a mirrored set that knows the session created on
// server A (A's certificate, the last nonce it handed out, the user) and
// accepts an ActivateSession on its own channel only when the client
// signed A's certificate and that nonce and encrypted the password for
// B's certificate with that nonce.
type mirroredServer struct {
	policy    string
	key       *rsa.PrivateKey // B's
	origCert  []byte          // A's, from CreateSession
	nonce     []byte          // the last server nonce the client received
	clientPub *rsa.PublicKey
	user      UserName
}

func (m *mirroredServer) activate(req *ua.ActivateSessionRequest) error {
	asym, err := uapolicy.Asymmetric(m.policy, m.key, m.clientPub)
	if err != nil {
		return err
	}
	if req.ClientSignature == nil || req.ClientSignature.Algorithm != asym.SignatureURI() {
		return errors.New("BadApplicationSignatureInvalid: algorithm")
	}
	if err := asym.VerifySignature(append(bytes.Clone(m.origCert), m.nonce...), req.ClientSignature.Signature); err != nil {
		return errors.New("BadApplicationSignatureInvalid: " + err.Error())
	}
	tok, ok := req.UserIdentityToken.Value.(*ua.UserNameIdentityToken)
	if !ok {
		return errors.New("BadIdentityTokenInvalid: not a UserName token")
	}
	dec, err := uapolicy.Asymmetric(m.policy, m.key, nil)
	if err != nil {
		return err
	}
	plain, err := dec.Decrypt(tok.Password)
	if err != nil {
		return errors.New("BadIdentityTokenInvalid: " + err.Error())
	}
	want := m.user.Password + string(m.nonce)
	if n := binary.LittleEndian.Uint32(plain); tok.UserName != m.user.Name || int(n) != len(want) || string(plain[4:4+n]) != want {
		return errors.New("BadUserAccessDenied")
	}
	return nil
}

// TestReactivateSignsTheOriginalCertificateAndLastNonce: the request
// Reactivate sends on a channel to server B passes B's checks of the
// mirrored session; one signed the way a fresh session on B would be
// (B's own certificate), or with an older nonce, or with the password
// encrypted for A, does not.
func TestReactivateSignsTheOriginalCertificateAndLastNonce(t *testing.T) {
	certA, _ := selfSigned(t)
	certB, keyB := selfSigned(t)
	certC, keyC := selfSigned(t)
	policy := ua.SecurityPolicyURIBasic256Sha256
	sec, err := newChanSec(&Security{PolicyURI: policy, Mode: ua.MessageSecurityModeSignAndEncrypt,
		Certificate: certC, PrivateKey: keyC, ServerCertificate: certB})
	if err != nil {
		t.Fatal(err)
	}
	chB := &Channel{sec: sec}
	user := UserName{Name: "otto", Password: "pässword"}
	first, last := []byte("nonce-from-CreateSession-on-A..."), []byte("nonce-from-the-last-Activate...!")
	eps := []*ua.EndpointDescription{{SecurityPolicyURI: policy, SecurityMode: ua.MessageSecurityModeSignAndEncrypt,
		UserIdentityTokens: []*ua.UserTokenPolicy{{PolicyID: "un", TokenType: ua.UserTokenTypeUserName}}}}
	s := &Session{auth: ua.NewByteStringNodeID(0, []byte("token")), origCert: certA, nonce: last, endpoints: eps, user: &user}
	clientCert, _ := x509.ParseCertificate(certC)
	b := &mirroredServer{policy: policy, key: keyB, origCert: certA, nonce: last, clientPub: clientCert.PublicKey.(*rsa.PublicKey), user: user}

	req, err := s.reactivateRequest(chB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.activate(req); err != nil {
		t.Fatalf("server B refused the reactivation: %v", err)
	}

	// A fresh session's signature covers B's certificate: refused.
	fresh, err := chB.clientSignature(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.activate(&ua.ActivateSessionRequest{ClientSignature: fresh, UserIdentityToken: req.UserIdentityToken}); err == nil {
		t.Fatal("server B accepted a signature over its own certificate")
	}
	// The first nonce instead of the last: refused (signature and password).
	old := &Session{auth: s.auth, origCert: certA, nonce: first, endpoints: eps, user: &user}
	oreq, err := old.reactivateRequest(chB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.activate(oreq); err == nil {
		t.Fatal("server B accepted a reactivation over an older nonce")
	}
	// The password encrypted for A's certificate: B cannot open it.
	areq, err := s.reactivateRequest(chB, certA)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.activate(areq); err == nil {
		t.Fatal("server B accepted a password encrypted for server A")
	}
}

// TestReactivateOnNoneSendsNoSignature: on a None channel the signature
// is empty and an anonymous session stays anonymous.
func TestReactivateOnNoneSendsNoSignature(t *testing.T) {
	s := &Session{auth: ua.NewNumericNodeID(0, 1), nonce: []byte("n"),
		endpoints: []*ua.EndpointDescription{noneEndpoint(&ua.UserTokenPolicy{PolicyID: "anon-b", TokenType: ua.UserTokenTypeAnonymous})}}
	req, err := s.reactivateRequest(&Channel{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := req.UserIdentityToken.Value.(*ua.AnonymousIdentityToken)
	if len(req.ClientSignature.Signature) != 0 || !ok || tok.PolicyID != "anon-b" {
		t.Fatalf("request %+v, token %+v", req, req.UserIdentityToken.Value)
	}
}
