package auth

import (
	"slices"
	"time"

	"github.com/otopcua/otopcua/admin"
)

// sessionTable holds the live sessions of this node. It is a plain value
// with no clock and no lock of its own; Service holds mu around every call.
//
// Invariants: every id in byUser names an entry of byID and the reverse;
// byUser[name] lists that user's ids oldest first and is never longer
// than perUser; len(byID) never exceeds cap.
type sessionTable struct {
	idle, max    time.Duration
	cap, perUser int
	byID         map[string]*sessionEntry
	byUser       map[string][]string
}

type sessionEntry struct {
	s       admin.Session
	created time.Time // login: the absolute expiry counts from here
	used    time.Time // last Session call: the idle expiry counts from here
	checked time.Time // last time the user was read again from the Config DB
	// passwordHash is the user's hash at login: a changed password ends the
	// session at the next recheck.
	passwordHash string
}

func newSessionTable(idle, max time.Duration, capacity, perUser int) *sessionTable {
	return &sessionTable{idle: idle, max: max, cap: capacity, perUser: perUser,
		byID: map[string]*sessionEntry{}, byUser: map[string][]string{}}
}

// expires is when e ends unless it is used again: idle after its last use,
// and never later than max after login.
func (t *sessionTable) expires(e *sessionEntry) time.Time {
	idle, abs := e.used.Add(t.idle), e.created.Add(t.max)
	if abs.Before(idle) {
		return abs
	}
	return idle
}

// open adds a session for s.User at now, first ending that user's oldest
// session when the user already has perUser, and the least recently used
// of all when the node already has cap (after dropping the expired ones).
func (t *sessionTable) open(s admin.Session, passwordHash string, now time.Time) admin.Session {
	if ids := t.byUser[s.User.Name]; len(ids) >= t.perUser {
		t.remove(ids[0])
	}
	if len(t.byID) >= t.cap {
		t.sweep(now)
	}
	if len(t.byID) >= t.cap {
		var lru string
		var lruAt time.Time
		for id, e := range t.byID {
			if lru == "" || e.used.Before(lruAt) {
				lru, lruAt = id, e.used
			}
		}
		t.remove(lru)
	}
	e := &sessionEntry{s: s, created: now, used: now, checked: now, passwordHash: passwordHash}
	e.s.Expires = t.expires(e)
	t.byID[s.ID] = e
	t.byUser[s.User.Name] = append(t.byUser[s.User.Name], s.ID)
	return e.s
}

// get returns the live session id and extends its idle expiry; an expired
// session is removed and reported missing.
func (t *sessionTable) get(id string, now time.Time) (*sessionEntry, bool) {
	e, ok := t.byID[id]
	if !ok {
		return nil, false
	}
	if !now.Before(t.expires(e)) {
		t.remove(id)
		return nil, false
	}
	e.used = now
	e.s.Expires = t.expires(e)
	return e, true
}

// remove ends session id; an unknown id is ignored.
func (t *sessionTable) remove(id string) {
	e, ok := t.byID[id]
	if !ok {
		return
	}
	delete(t.byID, id)
	name := e.s.User.Name
	ids := slices.DeleteFunc(t.byUser[name], func(x string) bool { return x == id })
	if len(ids) == 0 {
		delete(t.byUser, name)
	} else {
		t.byUser[name] = ids
	}
}

// sweep removes every session expired at now.
func (t *sessionTable) sweep(now time.Time) {
	for id, e := range t.byID {
		if !now.Before(t.expires(e)) {
			t.remove(id)
		}
	}
}
