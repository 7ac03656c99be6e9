package uaserver

import (
	"bytes"
	"crypto/sha256"
	"log/slog"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"

	"github.com/otopcua/otopcua/opcua/subscription"
)

// Mirror keeps the sessions of this server on the other members of its
// redundant set and holds theirs (package mirror). The server calls it
// with no uaserver lock held; every method but Sent must return at once.
type Mirror interface {
	// Session is called after CreateSession and after every
	// ActivateSession that succeeded here, with the state a member needs
	// to take the session over.
	Session(MirroredSession)
	// SessionEnded is called once a session served here ended.
	SessionEnded(id *ua.NodeID, deleteSubscriptions bool)
	// Service is called after a subscription service of a session served
	// here succeeded (its response may still hold per-operation errors).
	Service(id *ua.NodeID, req ua.Request, resp ua.Response)
	// Acked is called with the acknowledgements of a Publish request
	// before the engine applies them.
	Acked(id *ua.NodeID, acks []*ua.SubscriptionAcknowledgement)
	// Sent is called with each PublishResponse that carries notifications,
	// before the client's copy is written. It may wait briefly (the
	// mirror's Sync mode), never longer than its own timeout.
	Sent(id *ua.NodeID, resp *ua.PublishResponse)
	// Lookup returns the mirrored session whose authentication token has
	// the hash tokenHash (TokenHash), held for another member.
	Lookup(tokenHash [32]byte) (MirroredSession, bool)
	// TakenOver is called once a mirrored session was activated here: its
	// subscriptions must become this server's (subscription.Engine
	// Promote) before it returns, and the other members be told.
	TakenOver(id *ua.NodeID)
}

// MirroredSession is a session as the members of a redundant set share it.
type MirroredSession struct {
	ID        *ua.NodeID
	TokenHash [32]byte // TokenHash of the authentication token; the token itself never leaves the server
	Name      string
	Timeout   time.Duration
	User      string // "" for anonymous
	Role      string
	// Policy and Mode are the channel security the session was created
	// on; a takeover must come on a channel with the same.
	Policy string
	Mode   ua.MessageSecurityMode
	// ClientThumbprint is the SHA-1 thumbprint of the client's
	// application certificate (nil on None).
	ClientThumbprint []byte
	// ServerCert is the certificate CreateSession answered with: the
	// client's signature covers it.
	ServerCert []byte
	// Nonce is the last server nonce the client got. It is used once:
	// a takeover issues a new one.
	Nonce []byte
	// Activated: the client activated it at least once.
	Activated bool
}

// TokenHash is the hash under which a session's authentication token is
// mirrored.
func TokenHash(token *ua.NodeID) [32]byte {
	return sha256.Sum256([]byte(token.String()))
}

// mirrorSender hands each PublishResponse with notifications to the
// mirror before the client's copy is written.
type mirrorSender struct {
	out subscription.Sender
	m   Mirror
	id  *ua.NodeID
}

func (ms mirrorSender) SendResponse(reqID uint32, resp ua.Response) error {
	if pr, ok := resp.(*ua.PublishResponse); ok && pr.NotificationMessage != nil && len(pr.NotificationMessage.NotificationData) > 0 {
		ms.m.Sent(ms.id, pr)
	}
	return ms.out.SendResponse(reqID, resp)
}

// mirrorSession describes sess to the mirror.
func (s *Server) mirrorSession(sess *session) {
	if s.cfg.Mirror == nil {
		return
	}
	sess.mu.Lock()
	ms := MirroredSession{
		ID:         sess.id,
		TokenHash:  TokenHash(sess.token),
		Name:       sess.name,
		Timeout:    sess.timeout,
		User:       sess.who.user,
		Role:       sess.who.role,
		Policy:     sess.sec.policy,
		Mode:       sess.sec.mode,
		ServerCert: bytes.Clone(sess.serverCert),
		Nonce:      bytes.Clone(sess.nonce),
		Activated:  sess.activated,
	}
	if sess.sec.clientCert != nil {
		ms.ClientThumbprint = uapolicy.Thumbprint(sess.sec.clientCert)
	}
	sess.mu.Unlock()
	s.cfg.Mirror.Session(ms)
}

// takeOver activates a session another member served and mirrored here
// (Part 4 §6.6.2.4.5.5, HotAndMirrored): the same checks as an
// ActivateSession of a session of this server — the channel's security
// the session's, the client's certificate the session's, its signature
// over the server certificate it was given and the mirrored nonce, the
// user token again (a password checked here) — and the same user. The
// nonce is used once: the answer carries a new one, mirrored on.
func (s *Server) takeOver(c *call, req *ua.ActivateSessionRequest, ms MirroredSession) (ua.Response, error) {
	refuse := func(code ua.StatusCode, why string) (ua.Response, error) {
		s.counters.rejectedSessions.Add(1)
		s.logs.Log(s.log, slog.LevelWarn, "takeover:"+c.ch.addr, s.cfg.Clock.Now(),
			"uaserver: takeover of a mirrored session refused", "session", ms.ID, "why", why,
			"status", code, "client", c.ch.addr)
		return nil, code
	}
	sec := &c.ch.sec
	if sec.policy != ms.Policy || sec.mode != ms.Mode {
		return refuse(ua.StatusBadSecurityPolicyRejected, "channel security differs from the session's")
	}
	if sec.secured() {
		if !bytes.Equal(uapolicy.Thumbprint(sec.remoteCert), ms.ClientThumbprint) {
			return refuse(ua.StatusBadApplicationSignatureInvalid, "another client certificate")
		}
		if !s.signedOver(c, sec.remoteCert, [][]byte{ms.ServerCert, c.ch.ident.cert}, ms.Nonce, req.ClientSignature) {
			return refuse(ua.StatusBadApplicationSignatureInvalid, "client signature")
		}
	}
	who, code := s.identify(c.ch.ctx, c.ch.ident, c.ch.addr, ms.Nonce, req)
	if code != ua.StatusOK {
		return refuse(code, "identity token")
	}
	if who.user != ms.User {
		return refuse(ua.StatusBadIdentityTokenRejected, "another user than the session's")
	}
	sess, nonce, limit, code := s.sessions.adopt(c.ch.id, c.ch.addr, c.hdr.AuthenticationToken, ms, who)
	if code != ua.StatusOK {
		if limit != "" {
			s.counters.refuse(limit)
		}
		return refuse(code, "session table")
	}
	sess.setSecurity(sessionSecurity{policy: ms.Policy, mode: ms.Mode, clientCert: sec.remoteCert})
	c.ch.hasSession.Store(true)
	s.cfg.Mirror.TakenOver(sess.id)
	s.mirrorSession(sess)
	s.log.Info("uaserver: mirrored session taken over", "session", sess.sid, "name", sess.name,
		"user", who.user, "channel", c.ch.id, "client", c.ch.addr)
	return &ua.ActivateSessionResponse{
		ServerNonce:     nonce,
		Results:         make([]ua.StatusCode, len(req.ClientSoftwareCertificates)),
		DiagnosticInfos: []*ua.DiagnosticInfo{},
	}, nil
}

// signedOver reports whether sig is clientCert's signature over one of
// the server certificates followed by nonce.
func (s *Server) signedOver(c *call, clientCert []byte, serverCerts [][]byte, nonce []byte, sig *ua.SignatureData) bool {
	for _, sc := range serverCerts {
		if len(sc) == 0 {
			continue
		}
		data := append(bytes.Clone(sc), nonce...)
		if verifyPeerSignature(c.ch.ident, c.ch.sec.policy, clientCert, data, sig) == nil {
			return true
		}
	}
	return false
}

// adopt adds a session taken over from another member: activated, bound
// to channel chID from address addr, with the mirrored id and the token
// the client presented. It answers BadTooManySessions, naming the limit,
// as create does, and BadSessionIdInvalid when the id is in use here.
func (t *sessionTable) adopt(chID uint32, addr string, token *ua.NodeID, ms MirroredSession, who identity) (*session, []byte, string, ua.StatusCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cfg := &t.srv.cfg
	switch {
	case t.closed:
		return nil, nil, "", ua.StatusBadServerHalted
	case len(t.byToken) >= cfg.MaxSessions:
		return nil, nil, LimitSessions, ua.StatusBadTooManySessions
	case t.byAddr[addr] != nil && t.byAddr[addr].sessions >= cfg.MaxSessionsPerAddress:
		return nil, nil, LimitSessionsPerAddress, ua.StatusBadTooManySessions
	}
	for _, other := range t.byToken {
		if other.id.String() == ms.ID.String() {
			return nil, nil, "", ua.StatusBadSessionIDInvalid
		}
	}
	t.nextSeq++
	clock := cfg.Clock
	now := clock.Now()
	sess := &session{
		id:         ms.ID,
		token:      token,
		name:       ms.Name,
		timeout:    ms.Timeout,
		created:    now,
		seq:        t.nextSeq,
		clock:      clock,
		addr:       addr,
		chID:       chID,
		nonce:      randBytes(sessionNonceLen),
		lastSeen:   now,
		activated:  true,
		who:        who,
		serverCert: ms.ServerCert,
	}
	sess.sid = SessionIDOf(sess.id)
	sess.mu.Lock()
	sess.timer = clock.AfterFunc(sess.timeout, func() { t.expire(sess) })
	sess.mu.Unlock()
	t.byToken[token.String()] = sess
	a := t.byAddr[addr]
	if a == nil {
		a = &addrSessions{}
		t.byAddr[addr] = a
	}
	a.sessions++
	return sess, sess.nonce, "", ua.StatusOK
}

// EndSession ends session id, deleting its subscriptions, and reports
// whether it existed: another member of the redundant set took it over
// (its client activated it there), so this copy must not be activated
// again here.
func (s *Server) EndSession(id *ua.NodeID, reason string) bool {
	s.sessions.mu.Lock()
	var sess *session
	for _, x := range s.sessions.byToken {
		if x.id.String() == id.String() {
			sess = x
			break
		}
	}
	s.sessions.mu.Unlock()
	if sess == nil {
		return false
	}
	return s.sessions.end(sess, true, reason)
}
