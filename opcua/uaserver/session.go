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
//
// The unactivated budget (MaxUnactivatedSessions, per address
// MaxUnactivatedSessionsPerAddress) holds the sessions created and not yet
// activated, except those whose password is being checked: those count
// against MaxPasswordChecksPerAddress instead, so that a flood of sign-ins
// from many addresses does not crowd the budget. When the budget is full a
// new session evicts one (evictionVictim).
type sessionTable struct {
	srv *Server

	mu          sync.Mutex
	byToken     map[string]*session      // key: authentication token NodeId string; mu must be held.
	byAddr      map[string]*addrSessions // sessions by client IP address; mu must be held.
	budget      map[*session]struct{}    // the unactivated budget; mu must be held.
	checks      map[string]int           // password checks running, by client IP address; mu must be held.
	unactivated int                      // sessions not yet activated, in the budget or not; mu must be held.
	nextID      uint32                   // last numeric session id issued; mu must be held.
	nextSeq     uint64                   // creation order of the last session created; mu must be held.
	closed      bool                     // set by closeAll; mu must be held.
}

// addrSessions counts the sessions of one client IP address.
type addrSessions struct {
	sessions int // all of them
	pending  int // those in the unactivated budget
}

func newSessionTable(s *Server) *sessionTable {
	return &sessionTable{srv: s, byToken: make(map[string]*session), byAddr: make(map[string]*addrSessions),
		budget: make(map[*session]struct{}), checks: make(map[string]int), nextID: randUint32()}
}

// session is one OPC UA session.
type session struct {
	id      *ua.NodeID // SessionId, public
	sid     subscription.SessionID
	token   *ua.NodeID // AuthenticationToken, secret
	name    string
	timeout time.Duration // revised session timeout
	created time.Time     // CreateSession, on clock
	seq     uint64        // creation order, for the eviction rule
	clock   clockwork.Clock

	mu         sync.Mutex
	closed     bool              // mu must be held.
	activated  bool              // sessionTable.mu and mu must be held to write; either to read.
	checking   int               // ActivateSessions whose identity is being checked; mu must be held.
	pwChecks   int               // of those, password checks: out of the unactivated budget while > 0; sessionTable.mu must be held.
	addr       string            // client IP address of chID; sessionTable.mu and mu must be held to write; either to read.
	chID       uint32            // channel bound to (the creating one until activated); sessionTable.mu and mu must be held to write; either to read.
	nonce      []byte            // last server nonce; mu must be held.
	sec        sessionSecurity   // channel security at CreateSession; mu must be held.
	serverCert []byte            // the certificate CreateSession answered with; immutable
	who        identity          // user, role and rights of the last activation; mu must be held.
	lastSeen   time.Time         // time of the last admitted request; mu must be held.
	timer      clockwork.Timer   // fires at the earliest possible expiry; mu must be held.
	cps        cpList[browseCP]  // Browse continuation points; mu must be held.
	hcps       cpList[historyCP] // HistoryRead continuation points: where each read stands; mu must be held.
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
// sessions exist, when addr holds MaxSessionsPerAddress or
// MaxUnactivatedSessionsPerAddress, or when the unactivated budget is full
// and addr holds about as much of it as its largest holder; a full budget
// otherwise makes room by evicting a session of the largest holder
// (evictionVictim has the rule). An unactivated session is closed after
// UnactivatedSessionTimeout.
func (t *sessionTable) create(chID uint32, addr, name string, timeout time.Duration) (*session, string, ua.StatusCode) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, "", ua.StatusBadServerHalted
	}
	cfg := &t.srv.cfg
	limit := ""
	switch {
	case len(t.byToken) >= cfg.MaxSessions:
		limit = LimitSessions
	case t.byAddr[addr] != nil && t.byAddr[addr].sessions >= cfg.MaxSessionsPerAddress:
		limit = LimitSessionsPerAddress
	}
	var ev eviction
	if limit == "" {
		ev, limit = t.makeRoomLocked(addr)
	}
	if limit != "" {
		t.mu.Unlock()
		return nil, limit, ua.StatusBadTooManySessions
	}
	sess := t.addLocked(chID, addr, name, timeout)
	t.mu.Unlock()
	t.evict(ev)
	return sess, "", ua.StatusOK
}

// addLocked creates a session in the unactivated budget. t.mu must be
// held and the budget must have room.
func (t *sessionTable) addLocked(chID uint32, addr, name string, timeout time.Duration) *session {
	cfg := &t.srv.cfg
	t.nextID++
	t.nextSeq++
	clock := cfg.Clock
	now := clock.Now()
	sess := &session{
		id:       ua.NewNumericNodeID(1, t.nextID),
		token:    ua.NewByteStringNodeID(0, randBytes(32)),
		name:     name,
		timeout:  timeout,
		created:  now,
		seq:      t.nextSeq,
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
	a := t.byAddr[addr]
	if a == nil {
		a = &addrSessions{}
		t.byAddr[addr] = a
	}
	a.sessions++
	t.unactivated++
	t.enterBudgetLocked(sess)
	return sess
}

// eviction is a session removed from the table to make room in the
// unactivated budget, still to be announced (evict).
type eviction struct {
	sess *session
	chID uint32
	// lastOnChannel: no other session is bound to the evicted one's
	// channel, which is then closed.
	lastOnChannel bool
}

// roomLocked names the limit that leaves no room in the unactivated
// budget for one more session of addr, without evicting: "" when there
// is room. t.mu must be held.
func (t *sessionTable) roomLocked(addr string) string {
	cfg := &t.srv.cfg
	if a := t.byAddr[addr]; a != nil && a.pending >= cfg.MaxUnactivatedSessionsPerAddress {
		return LimitUnactivatedSessionsPerAddress
	}
	if len(t.budget) >= cfg.MaxUnactivatedSessions {
		return LimitUnactivatedSessions
	}
	return ""
}

// makeRoomLocked makes room in the unactivated budget for one session of
// addr: it names the limit that refuses it, or removes the victim of a
// full budget (evictionVictim) and returns it for evict. t.mu must be
// held.
func (t *sessionTable) makeRoomLocked(addr string) (eviction, string) {
	if limit := t.roomLocked(addr); limit != LimitUnactivatedSessions {
		return eviction{}, limit // room, or the address's own limit: nothing to evict
	}
	held := make([]*session, 0, len(t.budget))
	view := make([]pendingSession, 0, len(t.budget))
	for sess := range t.budget {
		held = append(held, sess)
		view = append(view, pendingSession{addr: sess.addr, seq: sess.seq})
	}
	i := evictionVictim(view, addr)
	if i < 0 {
		return eviction{}, LimitUnactivatedSessions
	}
	victim := held[i]
	t.removeLocked(victim)
	ev := eviction{sess: victim, chID: victim.chID, lastOnChannel: true}
	for _, other := range t.byToken {
		if other.chID == victim.chID {
			ev.lastOnChannel = false
			break
		}
	}
	return ev, ""
}

// evict announces an eviction made by makeRoomLocked: counted, the engine
// told, and the session's channel closed with an ERR BadTooManySessions
// when no other session uses it (the client learns at once why its
// session is gone, and the connection is freed). Called with no lock
// held; a zero eviction does nothing.
func (t *sessionTable) evict(ev eviction) {
	if ev.sess == nil {
		return
	}
	t.srv.counters.refuse(LimitUnactivatedSessionEvictions)
	t.finish(ev.sess, true, "evicted: the unactivated session budget is full")
	if ev.lastOnChannel {
		t.srv.shutChannel(ev.chID, ua.StatusBadTooManySessions,
			"session evicted: the server's budget of sessions not yet activated is full (OpcUa:Limits:MaxUnactivatedSessions)")
	}
}

// enterBudgetLocked puts the unactivated sess into the unactivated
// budget. t.mu must be held.
func (t *sessionTable) enterBudgetLocked(sess *session) {
	t.budget[sess] = struct{}{}
	t.byAddr[sess.addr].pending++
}

// leaveBudgetLocked takes sess out of the unactivated budget, if it is
// there. t.mu must be held.
func (t *sessionTable) leaveBudgetLocked(sess *session) {
	if _, ok := t.budget[sess]; !ok {
		return
	}
	delete(t.budget, sess)
	t.byAddr[sess.addr].pending--
}

// counts returns the activated and unactivated sessions held.
func (t *sessionTable) counts() (activated, unactivated int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken) - t.unactivated, t.unactivated
}

// uncountLocked removes sess from the address, budget and activation
// counts. t.mu must be held.
func (t *sessionTable) uncountLocked(sess *session) {
	a := t.byAddr[sess.addr]
	if a == nil {
		return
	}
	t.leaveBudgetLocked(sess)
	if !sess.activated {
		t.unactivated--
	}
	a.sessions--
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
	ended := t.removeLocked(sess)
	t.mu.Unlock()
	if ended {
		t.finish(sess, deleteSubscriptions, reason)
	}
	return ended
}

// removeLocked marks sess closed and removes it from the table; it reports
// false when sess had already ended. The caller then calls finish with no
// lock held. t.mu must be held.
func (t *sessionTable) removeLocked(sess *session) bool {
	sess.mu.Lock()
	if sess.closed {
		sess.mu.Unlock()
		return false
	}
	sess.closed = true
	sess.timer.Stop()
	sess.cps, sess.hcps = nil, nil
	sess.mu.Unlock()
	delete(t.byToken, sess.token.String())
	t.uncountLocked(sess)
	return true
}

// finish tells the engine that sess, removed by removeLocked, has ended,
// and logs why. Called with no lock held.
func (t *sessionTable) finish(sess *session, deleteSubscriptions bool, reason string) {
	if t.srv.subs != nil {
		t.srv.subs.SessionClosed(sess.sid, deleteSubscriptions)
	}
	if m := t.srv.cfg.Mirror; m != nil {
		m.SessionEnded(sess.id, deleteSubscriptions)
	}
	t.srv.log.Info("uaserver: session ended", "session", sess.sid, "name", sess.name, "reason", reason,
		"delete_subscriptions", deleteSubscriptions)
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

// beginCheck records that an ActivateSession of sess from client address
// addr arrived and its identity is being checked: the unactivated deadline
// counts to the arrival of the request, so a slow password check (a bcrypt
// on a loaded machine) does not end the session under the client. The
// check itself is bounded by the user directory.
//
// A password check (password: a UserName token) also takes one of addr's
// MaxPasswordChecksPerAddress check slots, and an unactivated session
// leaves the unactivated budget while it runs. With no slot free it
// answers BadTooManySessions, naming the limit; a session that has ended
// answers BadSessionIdInvalid.
func (t *sessionTable) beginCheck(sess *session, addr string, password bool) (string, ua.StatusCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	switch {
	case sess.closed:
		return "", ua.StatusBadSessionIDInvalid
	case password && t.checks[addr] >= t.srv.cfg.MaxPasswordChecksPerAddress:
		return LimitPasswordChecksPerAddress, ua.StatusBadTooManySessions
	}
	if password {
		t.checks[addr]++
		sess.pwChecks++
		t.leaveBudgetLocked(sess)
	}
	sess.checking++
	return "", ua.StatusOK
}

// endCheck undoes beginCheck. A session still unactivated gets its
// unactivated deadline back (ended at once when it has passed); after a
// refused password it goes back into the unactivated budget by the rule
// of create (it may evict another), or, with no room for it there, ends.
func (t *sessionTable) endCheck(sess *session, addr string, password bool) {
	t.mu.Lock()
	if password {
		if t.checks[addr]--; t.checks[addr] <= 0 {
			delete(t.checks, addr)
		}
		sess.pwChecks--
	}
	sess.mu.Lock()
	sess.checking--
	waiting := !sess.closed && !sess.activated
	if waiting && sess.checking == 0 {
		sess.timer.Reset(max(0, t.srv.cfg.UnactivatedSessionTimeout-sess.clock.Since(sess.created)))
	}
	sess.mu.Unlock()
	if !password || !waiting || sess.pwChecks > 0 {
		t.mu.Unlock()
		return
	}
	// Back from a refused password: it re-enters the budget only where
	// there is room, and never evicts. Another session's eviction here
	// would cut a client whose own refusal is on its way (its channel
	// closed before it read the answer), on behalf of a sign-in that
	// already failed.
	limit := t.roomLocked(sess.addr)
	if limit == "" {
		t.enterBudgetLocked(sess)
	} else {
		t.removeLocked(sess)
	}
	t.mu.Unlock()
	if limit != "" {
		t.srv.counters.refuse(limit)
		t.finish(sess, true, "not activated, and no room left in the unactivated budget after its password check")
	}
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
	if !sess.activated {
		t.leaveBudgetLocked(sess)
		t.unactivated--
	}
	sess.activated = true
	if addr != sess.addr { // a later activation from another address
		t.uncountLocked(sess)
		sess.addr = addr
		a := t.byAddr[addr]
		if a == nil {
			a = &addrSessions{}
			t.byAddr[addr] = a
		}
		a.sessions++
	}
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
func (s *session) addHistoryCP(q *historyCP, limit int) []byte {
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
func (s *session) takeHistoryCP(id []byte) *historyCP {
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
