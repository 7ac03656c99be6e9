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

// SessionIDOf is the subscription engine's id of the session whose
// SessionId (CreateSession's answer) is sessionID.
func SessionIDOf(sessionID *ua.NodeID) subscription.SessionID {
	return subscription.SessionID(sessionID.String())
}

// sessionTable holds the server's sessions by authentication token.
//
// A session lives until CloseSession or until no request arrived for its
// revised timeout (measured on Config.Clock). Closing its secure channel
// does not end it: the client may re-activate it on a new channel.
type sessionTable struct {
	srv *Server

	mu          sync.Mutex
	byToken     map[string]*session      // key: authentication token NodeId string; mu must be held.
	byAddr      map[string]*addrSessions // sessions by client IP address; mu must be held.
	unactivated int                      // sessions not yet activated; mu must be held.
	nextID      uint32                   // last numeric session id issued; mu must be held.
	closed      bool                     // set by closeAll; mu must be held.
}

// addrSessions counts the sessions of one client IP address.
type addrSessions struct {
	sessions, unactivated int
}

func newSessionTable(s *Server) *sessionTable {
	return &sessionTable{srv: s, byToken: make(map[string]*session), byAddr: make(map[string]*addrSessions), nextID: randUint32()}
}

// session is one OPC UA session.
type session struct {
	id      *ua.NodeID // SessionId, public
	sid     subscription.SessionID
	token   *ua.NodeID // AuthenticationToken, secret
	name    string
	timeout time.Duration // revised session timeout
	created time.Time     // CreateSession, on clock
	clock   clockwork.Clock

	mu        sync.Mutex
	closed    bool               // mu must be held.
	activated bool               // sessionTable.mu and mu must be held to write; either to read.
	checking  int                // ActivateSessions whose identity is being checked; mu must be held.
	addr      string             // client IP address of chID; sessionTable.mu and mu must be held to write; either to read.
	chID      uint32             // channel bound to (the creating one until activated); mu must be held.
	nonce     []byte             // last server nonce; mu must be held.
	sec       sessionSecurity    // channel security at CreateSession; mu must be held.
	who       identity           // user, role and rights of the last activation; mu must be held.
	lastSeen  time.Time          // time of the last admitted request; mu must be held.
	timer     clockwork.Timer    // fires at the earliest possible expiry; mu must be held.
	cps       cpList[browseCP]   // Browse continuation points; mu must be held.
	hcps      cpList[eventQuery] // HistoryRead continuation points: where each read stands; mu must be held.
}

// browseCP is the rest of one Browse result not yet returned.
type browseCP struct {
	refs []*ua.ReferenceDescription
	max  uint32 // references per page, 0 = all
}

// cpList is one service's continuation points of a session, oldest first.
// The session's mu must be held.
type cpList[T any] []cpEntry[T]

type cpEntry[T any] struct {
	id []byte
	v  *T
}

// add stores v as point id. When limit points exist the oldest is
// released first: a client that never releases its points holds at most
// limit of them.
func (l *cpList[T]) add(id []byte, v *T, limit int) {
	for len(*l) >= limit {
		(*l)[0] = cpEntry[T]{}
		*l = (*l)[1:]
	}
	*l = append(*l, cpEntry[T]{id: id, v: v})
}

// take removes and returns point id, or nil.
func (l *cpList[T]) take(id []byte) *T {
	for i, cp := range *l {
		if bytes.Equal(cp.id, id) {
			*l = append((*l)[:i:i], (*l)[i+1:]...)
			return cp.v
		}
	}
	return nil
}

// create adds a session bound to channel chID from client address addr.
// It answers BadTooManySessions, naming the limit, when MaxSessions
// sessions exist, when addr holds MaxSessionsPerAddress, or when the
// unactivated budget (MaxUnactivatedSessions, per address
// MaxUnactivatedSessionsPerAddress) is spent. An unactivated session is
// closed after UnactivatedSessionTimeout.
func (t *sessionTable) create(chID uint32, addr, name string, timeout time.Duration) (*session, string, ua.StatusCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, "", ua.StatusBadServerHalted
	}
	cfg := &t.srv.cfg
	a := t.byAddr[addr]
	if a == nil {
		a = &addrSessions{}
	}
	switch {
	case len(t.byToken) >= cfg.MaxSessions:
		return nil, LimitSessions, ua.StatusBadTooManySessions
	case t.unactivated >= cfg.MaxUnactivatedSessions:
		return nil, LimitUnactivatedSessions, ua.StatusBadTooManySessions
	case a.sessions >= cfg.MaxSessionsPerAddress:
		return nil, LimitSessionsPerAddress, ua.StatusBadTooManySessions
	case a.unactivated >= cfg.MaxUnactivatedSessionsPerAddress:
		return nil, LimitUnactivatedSessionsPerAddress, ua.StatusBadTooManySessions
	}
	t.nextID++
	clock := cfg.Clock
	now := clock.Now()
	sess := &session{
		id:       ua.NewNumericNodeID(1, t.nextID),
		token:    ua.NewByteStringNodeID(0, randBytes(32)),
		name:     name,
		timeout:  timeout,
		created:  now,
		clock:    clock,
		addr:     addr,
		chID:     chID,
		nonce:    randBytes(sessionNonceLen),
		lastSeen: now,
	}
	sess.sid = SessionIDOf(sess.id)
	sess.mu.Lock()
	sess.timer = clock.AfterFunc(min(timeout, cfg.UnactivatedSessionTimeout), func() { t.expire(sess) })
	sess.mu.Unlock()
	t.byToken[sess.token.String()] = sess
	a.sessions++
	a.unactivated++
	t.byAddr[addr] = a
	t.unactivated++
	return sess, "", ua.StatusOK
}

// counts returns the activated and unactivated sessions held.
func (t *sessionTable) counts() (activated, unactivated int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken) - t.unactivated, t.unactivated
}

// uncountLocked removes sess from the address and activation counts.
// t.mu must be held.
func (t *sessionTable) uncountLocked(sess *session) {
	a := t.byAddr[sess.addr]
	if a == nil {
		return
	}
	a.sessions--
	if !sess.activated {
		a.unactivated--
		t.unactivated--
	}
	if a.sessions <= 0 {
		delete(t.byAddr, sess.addr)
	}
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
// arrived for its timeout, or if it is still unactivated
// UnactivatedSessionTimeout after CreateSession, and re-arms the timer
// otherwise.
func (t *sessionTable) expire(sess *session) {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return
	}
	idle := sess.clock.Since(sess.lastSeen)
	left := sess.timeout - idle
	unactivated := !sess.activated
	if unactivated && sess.checking == 0 {
		left = min(left, t.srv.cfg.UnactivatedSessionTimeout-sess.clock.Since(sess.created))
	}
	if left > 0 {
		sess.timer.Reset(left)
		sess.mu.Unlock()
		return
	}
	sess.mu.Unlock()
	t.srv.counters.sessionTimeouts.Add(1)
	if unactivated {
		t.srv.counters.refuse(LimitUnactivatedSessionTimeout)
		t.end(sess, true, "not activated in time")
		return
	}
	// Part 4 §5.13.7: the subscriptions of a timed-out session outlive it
	// until their own lifetime ends, so a returning client can transfer them.
	t.end(sess, false, "timeout")
}

// end removes sess and tells the engine. It reports whether this call
// ended it (false when it had already ended).
func (t *sessionTable) end(sess *session, deleteSubscriptions bool, reason string) bool {
	t.mu.Lock()
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		t.mu.Unlock()
		return false
	}
	sess.closed = true
	sess.timer.Stop()
	sess.cps, sess.hcps = nil, nil
	delete(t.byToken, sess.token.String())
	t.uncountLocked(sess)
	sess.mu.Unlock()
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

// serverNonce returns the last server nonce sent to the client.
func (s *session) serverNonce() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nonce
}

// may reports whether the session's role holds want.
func (s *session) may(want Rights) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.who.rights.Has(want)
}

// beginCheck records that an ActivateSession of sess arrived and its
// identity is being checked: the unactivated deadline counts to the
// arrival of the request, so a slow password check (a bcrypt on a loaded
// machine) does not end the session under the client. The check itself is
// bounded by the user directory. It reports false when sess has ended.
func (t *sessionTable) beginCheck(sess *session) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return false
	}
	sess.checking++
	return true
}

// endCheck undoes beginCheck. A session still unactivated gets its
// unactivated deadline back (ended at once when it has passed).
func (t *sessionTable) endCheck(sess *session) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.checking--
	if sess.closed || sess.activated || sess.checking > 0 {
		return
	}
	sess.timer.Reset(max(0, t.srv.cfg.UnactivatedSessionTimeout-sess.clock.Since(sess.created)))
}

// activate binds sess to channel chID from client address addr as who and
// returns a fresh server nonce. The first activation must come over the
// creating channel; later ones may move the session to another channel,
// and its per-address count with it.
func (t *sessionTable) activate(sess *session, chID uint32, addr string, who identity) ([]byte, ua.StatusCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	switch {
	case sess.closed:
		return nil, ua.StatusBadSessionIDInvalid
	case !sess.activated && chID != sess.chID:
		return nil, ua.StatusBadSecureChannelIDInvalid
	}
	if addr != sess.addr {
		t.uncountLocked(sess)
		sess.addr = addr
		a := t.byAddr[addr]
		if a == nil {
			a = &addrSessions{}
			t.byAddr[addr] = a
		}
		a.sessions++
		if !sess.activated {
			a.unactivated++
			t.unactivated++
		}
	}
	if !sess.activated {
		t.byAddr[addr].unactivated--
		t.unactivated--
	}
	sess.activated = true
	sess.who = who
	sess.chID = chID
	sess.nonce = randBytes(sessionNonceLen)
	sess.lastSeen = sess.clock.Now()
	return sess.nonce, ua.StatusOK
}

// addCP stores the remaining references of a Browse and returns the new
// continuation point's id (nil once the session is closed). When limit
// points exist the oldest is dropped.
func (s *session) addCP(refs []*ua.ReferenceDescription, max uint32, limit int) []byte {
	id := randBytes(16)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.cps.add(id, &browseCP{refs: refs, max: max}, limit)
	return id
}

// takeCP removes and returns the continuation point id, or nil.
func (s *session) takeCP(id []byte) *browseCP {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cps.take(id)
}

// addHistoryCP stores q as a new HistoryRead continuation point and
// returns its id (nil once the session is closed). When limit points exist
// the oldest is released.
func (s *session) addHistoryCP(q *eventQuery, limit int) []byte {
	id := randBytes(16)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.hcps.add(id, q, limit)
	return id
}

// takeHistoryCP removes and returns the query of HistoryRead continuation
// point id, or nil.
func (s *session) takeHistoryCP(id []byte) *eventQuery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hcps.take(id)
}

// info describes the session to a method.
func (s *session) info() SessionInfo {
	s.mu.Lock()
	who := s.who
	s.mu.Unlock()
	return SessionInfo{ID: s.sid, NodeID: s.id, Name: s.name, UserID: who.user, Role: who.role, Rights: who.rights}
}

func (s *session) String() string { return fmt.Sprintf("session %s (%s)", s.sid, s.name) }
