// Package admintest holds in-memory stand-ins for admin.Backend and
// admin.Authenticator, for tests of the admin pages (unit tests and
// browser tests). They keep their state behind one mutex each and are
// safe for concurrent use; nothing in them touches a network or a disk.
package admintest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/configdb"
)

var (
	_ admin.Backend       = (*Backend)(nil)
	_ admin.Authenticator = (*Auth)(nil)
)

// FailoverCall is one call of Backend.Failover.
type FailoverCall struct {
	ClusterID string
	Actor     string
}

// Backend is an in-memory admin.Backend whose panels the test sets and
// changes while the pages run.
type Backend struct {
	node string

	mu          sync.Mutex // guards every field below
	panels      map[string]admin.RedundancyPanel
	failoverErr error
	calls       []FailoverCall
	audit       []configdb.AuditEntry
	auditErr    error
	now         func() time.Time
}

// NewBackend returns a Backend serving pages as node (a NodeId).
func NewBackend(node string) *Backend {
	return &Backend{node: node, panels: map[string]admin.RedundancyPanel{}, now: time.Now}
}

// SetNow sets the time Failover stamps its result and audit row with.
func (b *Backend) SetNow(now func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = now
}

// SetPanel adds or replaces the panel of p.ClusterID.
func (b *Backend) SetPanel(p admin.RedundancyPanel) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.panels[p.ClusterID] = p
}

// Update changes the panel of id in place; it panics when id is unknown
// (a broken test).
func (b *Backend) Update(id string, change func(*admin.RedundancyPanel)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.panels[id]
	if !ok {
		panic("admintest: Update of a ClusterId never set: " + id)
	}
	change(&p)
	b.panels[id] = p
}

// SetFailoverError makes every later Failover return err (nil: succeed).
func (b *Backend) SetFailoverError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failoverErr = err
}

// SetAuditError makes Audit return err (nil: succeed).
func (b *Backend) SetAuditError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.auditErr = err
}

// FailoverCalls returns every Failover call so far, oldest first.
func (b *Backend) FailoverCalls() []FailoverCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]FailoverCall(nil), b.calls...)
}

// AddAudit adds an audit row (as the newest).
func (b *Backend) AddAudit(e configdb.AuditEntry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.ID = int64(len(b.audit) + 1)
	b.audit = append(b.audit, e)
}

// Clusters summarises every panel, sorted by ClusterId.
func (b *Backend) Clusters() []admin.ClusterSummary {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]admin.ClusterSummary, 0, len(b.panels))
	for _, p := range b.panels {
		s := admin.ClusterSummary{ClusterID: p.ClusterID, Primary: p.Primary, Members: len(p.Members), Epoch: p.Epoch}
		for _, m := range p.Members {
			if m.Status == "Up" && contains(m.Roles, "driver") {
				s.UpDrivers++
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClusterID < out[j].ClusterID })
	return out
}

// Redundancy returns the panel of id or admin.ErrUnknownCluster.
func (b *Backend) Redundancy(id string) (admin.RedundancyPanel, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.panels[id]
	if !ok {
		return admin.RedundancyPanel{}, admin.ErrUnknownCluster
	}
	p.Members = append([]admin.PanelMember(nil), p.Members...)
	p.Failovers = append([]admin.FailoverRecord(nil), p.Failovers...)
	return p, nil
}

// Failover records the call, then fails with the error SetFailoverError
// set, with admin.ErrUnknownCluster, or with a *admin.RefusedError when the
// panel says FailoverAllowed is false; otherwise it writes an audit row
// (cluster.manual-failover) and returns the panel's FailoverTarget.
func (b *Backend) Failover(ctx context.Context, id, actor string) (admin.FailoverResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, FailoverCall{ClusterID: id, Actor: actor})
	if err := ctx.Err(); err != nil {
		return admin.FailoverResult{}, err
	}
	if b.failoverErr != nil {
		return admin.FailoverResult{}, b.failoverErr
	}
	p, ok := b.panels[id]
	if !ok {
		return admin.FailoverResult{}, admin.ErrUnknownCluster
	}
	if !p.FailoverAllowed {
		return admin.FailoverResult{}, &admin.RefusedError{Reason: p.FailoverBlocked}
	}
	at := b.now()
	b.audit = append(b.audit, configdb.AuditEntry{ID: int64(len(b.audit) + 1), At: at, Actor: actor, Action: "cluster.manual-failover", Target: p.FailoverTarget})
	return admin.FailoverResult{ClusterID: id, Target: p.FailoverTarget, TargetUID: 1, Epoch: p.Epoch, At: at}, nil
}

// Audit returns up to limit rows, newest first.
func (b *Backend) Audit(_ context.Context, limit int) ([]configdb.AuditEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.auditErr != nil {
		return nil, b.auditErr
	}
	var out []configdb.AuditEntry
	for i := len(b.audit) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, b.audit[i])
	}
	return out, nil
}

// NodeID is the node given to NewBackend.
func (b *Backend) NodeID() string { return b.node }

// Auth is an in-memory admin.Authenticator with plain-text passwords
// (tests only) and sessions that never expire unless Expire is called.
type Auth struct {
	mu       sync.Mutex // guards every field below
	users    map[string]fakeUser
	sessions map[string]admin.Session
	tokens   map[string]admin.User
	loginErr error
	logins   int
	hasUsers int
}

type fakeUser struct {
	password string
	role     admin.Role
}

// NewAuth returns an Auth with no user.
func NewAuth() *Auth {
	return &Auth{users: map[string]fakeUser{}, sessions: map[string]admin.Session{}, tokens: map[string]admin.User{}}
}

// AddUser adds or replaces a user.
func (a *Auth) AddUser(name, password string, role admin.Role) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users[name] = fakeUser{password: password, role: role}
}

// AddToken makes token a bearer token of the user name with role.
func (a *Auth) AddToken(token, name string, role admin.Role) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens[token] = admin.User{Name: name, Role: role}
}

// SetLoginError makes every later Login fail with err (nil: check
// passwords again).
func (a *Auth) SetLoginError(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loginErr = err
}

// Logins counts the Login calls so far.
func (a *Auth) Logins() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logins
}

// Sessions counts the live sessions.
func (a *Auth) Sessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// Login checks the plain-text password.
func (a *Auth) Login(_ context.Context, name, password, _ string) (admin.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logins++
	if a.loginErr != nil {
		return admin.Session{}, a.loginErr
	}
	u, ok := a.users[name]
	if !ok || u.password != password {
		return admin.Session{}, admin.ErrBadCredentials
	}
	s := admin.Session{ID: randomHex(), CSRFToken: randomHex(), User: admin.User{Name: name, Role: u.role}, Expires: time.Now().Add(time.Hour)}
	a.sessions[s.ID] = s
	return s, nil
}

// Session returns the live session id names.
func (a *Auth) Session(id string) (admin.Session, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	return s, ok
}

// Logout ends the session id names.
func (a *Auth) Logout(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, id)
}

// Bearer returns the user of token or admin.ErrNoToken.
func (a *Auth) Bearer(_ context.Context, token string) (admin.User, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u, ok := a.tokens[token]
	if !ok {
		return admin.User{}, admin.ErrNoToken
	}
	return u, nil
}

// HasUsers reports whether AddUser was called.
func (a *Auth) HasUsers(context.Context) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hasUsers++
	return len(a.users) > 0, nil
}

// HasUsersCalls counts the HasUsers calls so far.
func (a *Auth) HasUsersCalls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hasUsers
}

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
