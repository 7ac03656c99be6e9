package uaclient

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Reactivation of a session on another secure channel (Part 4 §5.6.3:
// ActivateSession on a new channel), the client's side of a mirrored set
// (HotAndMirrored, Transparent): the servers share the session, so after
// the server that created it is lost the client activates the same
// session, by its authentication token, on a channel to another server of
// the set (or to the same floating address, now served by another node).
//
// The contract with the servers, exactly:
//   - ClientSignature = sign(original server certificate, from the
//     CreateSession response || last server nonce received, from
//     CreateSession or the latest ActivateSession response), with the
//     client's key under the new channel's policy; empty on None.
//   - A UserName password is encrypted for the certificate of the server
//     the new channel talks to (its endpoint's), with the last server
//     nonce appended (Part 4 §7.41).
//   - X509 user tokens are not used by this client.

// Reactivate activates s on ch, a new channel to a server that shares the
// session, and returns the session on ch (same token and id; s is left as
// it was). serverCert is the certificate of the server ch talks to, used
// to encrypt a UserName password: on a secured channel pass nil (the
// channel's endpoint certificate is used); on None pass the endpoint's
// certificate from GetEndpoints. A refusal (BadSessionIdInvalid,
// BadSessionClosed, BadIdentityTokenInvalid, BadSecurityChecksFailed …)
// is an *ActivationError.
func (s *Session) Reactivate(ctx context.Context, ch *Channel, serverCert []byte, timeout time.Duration) (*Session, error) {
	req, err := s.reactivateRequest(ch, serverCert)
	if err != nil {
		return nil, err
	}
	ns := &Session{ch: ch, auth: s.auth, ID: s.ID, Timeout: s.Timeout, ServerURI: s.ServerURI,
		origCert: s.origCert, nonce: s.nonce, endpoints: s.endpoints, user: s.user}
	name := ""
	if s.user != nil {
		name = s.user.Name
	}
	if err := ns.sendActivate(ctx, req, name, timeout); err != nil {
		return nil, err
	}
	return ns, nil
}

// reactivateRequest is the ActivateSession request that activates s on
// ch, signed and with the user token as the contract above says.
func (s *Session) reactivateRequest(ch *Channel, serverCert []byte) (*ua.ActivateSessionRequest, error) {
	sig := &ua.SignatureData{}
	if sec := ch.sec; sec != nil {
		b, err := sec.asym.Signature(append(bytes.Clone(s.origCert), s.nonce...))
		if err != nil {
			return nil, fmt.Errorf("uaclient: sign ActivateSession: %w", err)
		}
		sig = &ua.SignatureData{Algorithm: sec.asym.SignatureURI(), Signature: b}
		if serverCert == nil {
			serverCert = sec.serverCert
		}
	}
	var tok any = &ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID(s.endpoints)}
	if s.user != nil {
		t, err := userNameToken(s.user, &ua.CreateSessionResponse{ServerEndpoints: s.endpoints, ServerCertificate: serverCert, ServerNonce: s.nonce})
		if err != nil {
			return nil, fmt.Errorf("user %q: %w", s.user.Name, err)
		}
		tok = t
	}
	return &ua.ActivateSessionRequest{
		ClientSignature:    sig,
		LocaleIDs:          []string{},
		UserIdentityToken:  ua.NewExtensionObject(tok),
		UserTokenSignature: &ua.SignatureData{},
	}, nil
}

// As returns a copy of s that Reactivate activates as user u (nil:
// anonymous) instead of s's own user: the same session, its token and its
// last nonce. A server refuses another user than the session's on a
// takeover; a wrong password is refused as at any activation.
func (s *Session) As(u *UserName) *Session {
	c := *s
	c.user = u
	return &c
}

// ServerCertificate is the certificate the server answered CreateSession
// with (nil on None when it sent none).
func (s *Session) ServerCertificate() []byte { return s.origCert }
