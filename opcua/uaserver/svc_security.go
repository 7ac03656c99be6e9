package uaserver

import (
	"bytes"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
)

// The security checks of the session services (Part 4 §5.6.2, §5.6.3):
// which channels a session may be created and activated on, the server's
// signature in CreateSession and the client's in ActivateSession.

// minClientNonce is the shortest ClientNonce of a CreateSession on a
// secured channel (Part 4 §5.6.2).
const minClientNonce = 32

// securityLevel ranks an endpoint for clients choosing one, higher for
// stronger policies and for encryption (uapolicy's ranking; None is 0).
func securityLevel(e EndpointSecurity) uint8 {
	if !e.secured() {
		return 0
	}
	return uapolicy.SecurityLevel(e.PolicyURI, e.Mode)
}

// sessionSecurity is the channel security a session was created on.
type sessionSecurity struct {
	policy     string
	mode       ua.MessageSecurityMode
	clientCert []byte // CreateSession's ClientCertificate; nil on None
}

// createSessionSecurity checks that a session may be created on c's
// channel and returns the server certificate and signature of the answer
// (Part 4 §5.6.2): the channel's policy and mode must be an offered
// endpoint (BadSecurityPolicyRejected; a None channel serves only
// discovery otherwise); on a secured channel the ClientCertificate must be
// the channel's, pass ValidateClientCertificate with the client's
// ApplicationUri, and the nonce be at least 32 bytes. The certificate and
// signature (over ClientCertificate and ClientNonce) are the channel's
// identity's.
func (s *Server) createSessionSecurity(c *call, req *ua.CreateSessionRequest) (sessionSecurity, []byte, *ua.SignatureData, ua.StatusCode) {
	sec := &c.ch.sec
	ss := sessionSecurity{policy: sec.policy, mode: sec.mode}
	cert := c.ch.ident.certificate()
	if !s.cfg.Security.offers(sec.policy, sec.mode) {
		s.log.Info("uaserver: session refused on a channel whose security is not offered", "policy", sec.policy, "mode", sec.mode, "client", c.ch.addr)
		return ss, nil, nil, ua.StatusBadSecurityPolicyRejected
	}
	if !sec.secured() {
		return ss, cert, &ua.SignatureData{}, ua.StatusOK
	}
	if !sameCertificate(req.ClientCertificate, sec.remoteCert) {
		return ss, nil, nil, ua.StatusBadCertificateInvalid
	}
	if len(req.ClientNonce) < minClientNonce {
		return ss, nil, nil, ua.StatusBadNonceInvalid
	}
	leaf, _, err := clientKey(req.ClientCertificate)
	if err != nil {
		return ss, nil, nil, ua.StatusBadCertificateInvalid
	}
	appURI := ""
	if req.ClientDescription != nil {
		appURI = req.ClientDescription.ApplicationURI
	}
	if err := s.cfg.Security.ValidateClientCertificate(leaf.Raw, appURI); err != nil {
		code := validationCode(err)
		s.log.Info("uaserver: session refused: client certificate", "status", code, "application_uri", appURI, "err", err)
		return ss, nil, nil, code
	}
	sig, err := serverSignature(c.ch.ident, sec, append(bytes.Clone(req.ClientCertificate), req.ClientNonce...))
	if err != nil {
		s.log.Error("uaserver: CreateSession signature", "err", err)
		return ss, nil, nil, ua.StatusBadInternalError
	}
	ss.clientCert = bytes.Clone(req.ClientCertificate)
	return ss, cert, sig, ua.StatusOK
}

// verifyClientSignature checks ActivateSession's channel and client
// signature (Part 4 §5.6.3): the channel must have the policy and mode of
// the one the session was created on (BadSecurityPolicyRejected), and on a
// secured channel the certificate must be the session's and
// ClientSignature its key's signature over the certificate of the
// channel's identity (the one the client connected to) and the
// session's last server nonce (BadApplicationSignatureInvalid). Call it
// before the session is activated: activation replaces the nonce.
func (s *Server) verifyClientSignature(c *call, sess *session, req *ua.ActivateSessionRequest) ua.StatusCode {
	sess.mu.Lock()
	ss, nonce := sess.sec, bytes.Clone(sess.nonce)
	sess.mu.Unlock()
	sec := &c.ch.sec
	if sec.policy != ss.policy || sec.mode != ss.mode {
		return ua.StatusBadSecurityPolicyRejected
	}
	if !sec.secured() {
		return ua.StatusOK
	}
	if !sameCertificate(sec.remoteCert, ss.clientCert) {
		return ua.StatusBadApplicationSignatureInvalid
	}
	// The signature covers the certificate of this channel's identity or
	// the one CreateSession answered with (a session created through the
	// floating address and activated again on the node's own address).
	if !s.signedOver(c, ss.clientCert, [][]byte{c.ch.ident.cert, sess.serverCert}, nonce, req.ClientSignature) {
		s.log.Info("uaserver: ActivateSession refused: client signature", "session", sess.sid)
		return ua.StatusBadApplicationSignatureInvalid
	}
	return ua.StatusOK
}

// setSecurity records the channel security sess was created on.
func (sess *session) setSecurity(ss sessionSecurity) {
	sess.mu.Lock()
	sess.sec = ss
	sess.mu.Unlock()
}
