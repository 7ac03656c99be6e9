package uaserver

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/subscription"
)

// sessionNonceLen is the length of the server nonces of CreateSession and
// ActivateSession.
const sessionNonceLen = 32

// sessionTable holds the server's sessions by authentication token.
//
// A session lives until CloseSession or until no request arrived for its
// revised timeout (measured on Config.Clock). Closing its secure channel
// does not end it: the client may re-activate it on a new channel.
type sessionTable struct {
	srv *Server

	mu      sync.Mutex
	byToken map[string]*session // key: authentication token NodeId string; mu must be held.
	nextID  uint32              // last numeric session id issued; mu must be held.
	closed  bool                // set by closeAll; mu must be held.
}

func newSessionTable(s *Server) *sessionTable {
	return &sessionTable{srv: s, byToken: make(map[string]*session), nextID: randUint32()}
}

// session is one OPC UA session.
type session struct {
	id      *ua.NodeID // SessionId, public
	sid     subscription.SessionID
	token   *ua.NodeID // AuthenticationToken, secret
	name    string
	timeout time.Duration // revised session timeout
	clock   clockwork.Clock

	mu        sync.Mutex
	closed    bool            // mu must be held.
	activated bool            // mu must be held.
	chID      uint32          // channel bound to (the creating one until activated); mu must be held.
	nonce     []byte          // last server nonce; mu must be held.
	lastSeen  time.Time       // time of the last admitted request; mu must be held.
	timer     clockwork.Timer // fires at the earliest possible expiry; mu must be held.
	cps       []*browseCP     // continuation points, oldest first; mu must be held.
}

// browseCP is the rest of one Browse result not yet returned.
type browseCP struct {
	id   []byte
	refs []*ua.ReferenceDescription
	max  uint32 // references per page, 0 = all
}

// create adds a session bound to channel chID. It answers
// BadTooManySessions when MaxSessions sessions exist.
func (t *sessionTable) create(chID uint32, name string, timeout time.Duration) (*session, ua.StatusCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ua.StatusBadServerHalted
	}
	if len(t.byToken) >= t.srv.cfg.MaxSessions {
		return nil, ua.StatusBadTooManySessions
	}
	t.nextID++
	clock := t.srv.cfg.Clock
	sess := &session{
		id:       ua.NewNumericNodeID(1, t.nextID),
		token:    ua.NewByteStringNodeID(0, randBytes(32)),
		name:     name,
		timeout:  timeout,
		clock:    clock,
		chID:     chID,
		nonce:    randBytes(sessionNonceLen),
		lastSeen: clock.Now(),
	}
	sess.sid = subscription.SessionID(sess.id.String())
	sess.mu.Lock()
	sess.timer = clock.AfterFunc(timeout, func() { t.expire(sess) })
	sess.mu.Unlock()
	t.byToken[sess.token.String()] = sess
	return sess, ua.StatusOK
}

// lookup returns the session of an authentication token, or nil.
func (t *sessionTable) lookup(token *ua.NodeID) *session {
	if token == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byToken[token.String()]
}

func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken)
}

// expire runs when sess's timer fires: it ends the session if no request
// arrived for its timeout and re-arms the timer otherwise.
func (t *sessionTable) expire(sess *session) {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return
	}
	idle := sess.clock.Since(sess.lastSeen)
	if idle < sess.timeout {
		sess.timer.Reset(sess.timeout - idle)
		sess.mu.Unlock()
		return
	}
	sess.mu.Unlock()
	// Part 4 §5.13.7: the subscriptions of a timed-out session outlive it
	// until their own lifetime ends, so a returning client can transfer them.
	t.end(sess, false, "timeout")
}

// end removes sess and tells the engine. It reports whether this call
// ended it (false when it had already ended).
func (t *sessionTable) end(sess *session, deleteSubscriptions bool, reason string) bool {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return false
	}
	sess.closed = true
	sess.timer.Stop()
	sess.cps = nil
	sess.mu.Unlock()

	t.mu.Lock()
	delete(t.byToken, sess.token.String())
	t.mu.Unlock()

	if t.srv.subs != nil {
		t.srv.subs.SessionClosed(sess.sid, deleteSubscriptions)
	}
	t.srv.log.Info("uaserver: session ended", "session", sess.sid, "name", sess.name, "reason", reason,
		"delete_subscriptions", deleteSubscriptions)
	return true
}

// closeAll ends every session and refuses new ones.
func (t *sessionTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	all := make([]*session, 0, len(t.byToken))
	for _, sess := range t.byToken {
		all = append(all, sess)
	}
	t.mu.Unlock()
	for _, sess := range all {
		t.end(sess, true, "server closed")
	}
}

// admit checks that a request from channel chID may run in the session and
// records it as activity. closing allows CloseSession before activation.
func (s *session) admit(chID uint32, closing bool) ua.StatusCode {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ua.StatusBadSessionIDInvalid
	case !s.activated && !closing:
		return ua.StatusBadSessionNotActivated
	case chID != s.chID:
		return ua.StatusBadSecureChannelIDInvalid
	}
	s.lastSeen = s.clock.Now()
	return ua.StatusOK
}

// activate binds the session to channel chID and returns a fresh server
// nonce. The first activation must come over the creating channel; later
// ones may move the session to another channel.
func (s *session) activate(chID uint32) ([]byte, ua.StatusCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ua.StatusBadSessionIDInvalid
	case !s.activated && chID != s.chID:
		return nil, ua.StatusBadSecureChannelIDInvalid
	}
	s.activated = true
	s.chID = chID
	s.nonce = randBytes(sessionNonceLen)
	s.lastSeen = s.clock.Now()
	return s.nonce, ua.StatusOK
}

// addCP stores the remaining references of a Browse and returns the new
// continuation point's id. When limit points exist the oldest is dropped.
func (s *session) addCP(refs []*ua.ReferenceDescription, max uint32, limit int) []byte {
	cp := &browseCP{id: randBytes(16), refs: refs, max: max}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	for len(s.cps) >= limit {
		s.cps[0] = nil
		s.cps = s.cps[1:]
	}
	s.cps = append(s.cps, cp)
	return cp.id
}

// takeCP removes and returns the continuation point id, or nil.
func (s *session) takeCP(id []byte) *browseCP {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, cp := range s.cps {
		if bytes.Equal(cp.id, id) {
			s.cps = append(s.cps[:i:i], s.cps[i+1:]...)
			return cp
		}
	}
	return nil
}

func (s *session) String() string { return fmt.Sprintf("session %s (%s)", s.sid, s.name) }
