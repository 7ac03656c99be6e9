package uaserver

import (
	"math"
	"time"

	"github.com/gopcua/opcua/ua"
)

// reqAs returns c's request as T, or BadRequestTypeInvalid when a handler
// is registered for the wrong type.
func reqAs[T ua.Request](c *call) (T, error) {
	r, ok := c.req.(T)
	if !ok {
		return r, ua.StatusBadRequestTypeInvalid
	}
	return r, nil
}

// reviseTimeout maps a requested session timeout in milliseconds into
// [MinSessionTimeout, MaxSessionTimeout]; 0, negative and NaN get
// DefaultSessionTimeout.
func (s *Server) reviseTimeout(ms float64) time.Duration {
	lo, hi := s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout
	switch {
	case math.IsNaN(ms) || ms <= 0:
		return s.cfg.DefaultSessionTimeout
	case ms >= float64(hi/time.Millisecond):
		return hi
	case ms <= float64(lo/time.Millisecond):
		return lo
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// createSession implements CreateSession (Part 4 §5.6.2).
func (s *Server) createSession(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.CreateSessionRequest](c)
	if err != nil {
		return nil, err
	}
	ss, cert, sig, code := s.createSessionSecurity(c, req)
	if code != ua.StatusOK {
		s.counters.rejectedSessions.Add(1)
		return nil, code
	}
	timeout := s.reviseTimeout(req.RequestedSessionTimeout)
	sess, limit, code := s.sessions.create(c.ch.id, c.ch.addr, req.SessionName, timeout)
	if code != ua.StatusOK {
		s.counters.rejectedSessions.Add(1)
		if limit != "" {
			s.counters.refuse(limit)
		}
		s.log.Warn("uaserver: session refused", "name", req.SessionName, "status", code, "limit", limit, "client", c.ch.addr)
		return nil, code
	}
	s.counters.cumulatedSessions.Add(1)
	c.ch.hasSession.Store(true)
	nonce := sess.nonce // set by create, written again only by activate on this channel's worker
	sess.setSecurity(ss)
	sess.serverCert = cert // before anyone else can see the session: only this channel's worker knows its token
	s.mirrorSession(sess)
	s.log.Info("uaserver: session created", "session", sess.sid, "name", sess.name, "timeout", timeout,
		"channel", c.ch.id)
	return &ua.CreateSessionResponse{
		SessionID:                  sess.id,
		AuthenticationToken:        sess.token,
		RevisedSessionTimeout:      float64(timeout / time.Millisecond),
		ServerNonce:                nonce,
		ServerEndpoints:            s.endpointsFor(c.ch.ident, req.EndpointURL),
		ServerSoftwareCertificates: []*ua.SignedSoftwareCertificate{},
		ServerCertificate:          cert,
		ServerSignature:            sig,
		MaxRequestMessageSize:      maxMessageSize,
	}, nil
}

// activateSession implements ActivateSession (Part 4 §5.6.3): the
// identity token is checked by identify (identity.go) and the session
// keeps its user, role and rights until the next activation.
func (s *Server) activateSession(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.ActivateSessionRequest](c)
	if err != nil {
		return nil, err
	}
	sess := s.sessions.lookup(c.hdr.AuthenticationToken)
	if sess == nil && s.cfg.Mirror != nil && c.hdr.AuthenticationToken != nil {
		if ms, ok := s.cfg.Mirror.Lookup(TokenHash(c.hdr.AuthenticationToken)); ok {
			return s.takeOver(c, req, ms)
		}
	}
	if sess == nil {
		return nil, ua.StatusBadSessionIDInvalid
	}
	if code := s.verifyClientSignature(c, sess, req); code != ua.StatusOK {
		return nil, code
	}
	password := s.checksPassword(c.ch.ident, req)
	if limit, code := s.sessions.beginCheck(sess, c.ch.addr, password); code != ua.StatusOK {
		if limit != "" {
			s.counters.rejectedSessions.Add(1)
			s.counters.refuse(limit)
			s.log.Warn("uaserver: password check refused", "session", sess.sid, "status", code, "limit", limit, "client", c.ch.addr)
		}
		return nil, code
	}
	defer s.sessions.endCheck(sess, c.ch.addr, password)
	who, code := s.identify(c.ch.ctx, c.ch.ident, c.ch.addr, sess.serverNonce(), req)
	if code != ua.StatusOK {
		s.counters.rejectedSessions.Add(1)
		s.log.Warn("uaserver: identity token refused", "session", sess.sid, "status", code, "client", c.ch.addr)
		return nil, code
	}
	nonce, code := s.sessions.activate(sess, c.ch.id, c.ch.addr, who)
	if code != ua.StatusOK {
		return nil, code
	}
	c.ch.hasSession.Store(true)
	s.mirrorSession(sess)
	s.log.Debug("uaserver: session activated", "session", sess.sid, "channel", c.ch.id, "user", who.user, "role", who.role)
	return &ua.ActivateSessionResponse{
		ServerNonce:     nonce,
		Results:         make([]ua.StatusCode, len(req.ClientSoftwareCertificates)),
		DiagnosticInfos: []*ua.DiagnosticInfo{},
	}, nil
}

// checksPassword reports whether req's identity token is a user name and
// password that the server checks (the UserName policy is offered): such a
// check decrypts the password and asks Users (a bcrypt), so it takes one
// of the client address's MaxPasswordChecksPerAddress slots. id is the
// channel's identity, whose key decrypts the password.
func (s *Server) checksPassword(id *appIdentity, req *ua.ActivateSessionRequest) bool {
	if req.UserIdentityToken == nil || id.key == nil || s.cfg.Users == nil {
		return false
	}
	_, ok := req.UserIdentityToken.Value.(*ua.UserNameIdentityToken)
	return ok
}

// closeSession implements CloseSession (Part 4 §5.6.4).
func (s *Server) closeSession(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.CloseSessionRequest](c)
	if err != nil {
		return nil, err
	}
	if !s.sessions.end(c.sess, req.DeleteSubscriptions, "closed by client") {
		return nil, ua.StatusBadSessionIDInvalid
	}
	return &ua.CloseSessionResponse{}, nil
}

// cancelRequests implements Cancel (Part 4 §5.6.5): requests are never cancelled
// once queued, so the count is 0.
func (s *Server) cancelRequests(c *call) (ua.Response, error) {
	if _, err := reqAs[*ua.CancelRequest](c); err != nil {
		return nil, err
	}
	return &ua.CancelResponse{CancelCount: 0}, nil
}
