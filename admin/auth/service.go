package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/configdb"
)

// Store is what Service needs of the Config DB; *configdb.DB satisfies it.
// Its methods are called concurrently, never while Service holds mu, each
// under a context bounded by Options.LookupTimeout. A missing user or token
// is an error wrapping configdb.ErrNotFound.
type Store interface {
	User(ctx context.Context, name string) (configdb.AdminUser, error)
	UserByTokenHash(ctx context.Context, tokenHash string) (configdb.AdminUser, error)
	SetUserTokenHash(ctx context.Context, name, tokenHash string) error
	CountUsers(ctx context.Context) (int, error)
}

// Options configure a Service. A zero field takes its default.
type Options struct {
	// DB is the user store (required).
	DB Store
	// Clock times sessions, locks and the busy wait. Default: the real clock.
	Clock actors.Clock

	// SessionIdle ends a session not used for this long. Default 30 min.
	SessionIdle time.Duration
	// SessionMax ends a session this long after login, however busy.
	// Default 12 h.
	SessionMax time.Duration
	// MaxSessions is the most sessions this node holds; a login beyond ends
	// the least recently used one. Default 10,000.
	MaxSessions int
	// MaxSessionsPerUser is the most sessions of one user; a login beyond
	// ends that user's oldest. Default 20.
	MaxSessionsPerUser int
	// RecheckEvery is how often a live session's user is read again from
	// the Config DB: a removed user, a changed password or a changed role
	// ends the session at the next recheck. Default 1 min.
	RecheckEvery time.Duration

	// MaxFailures wrong passwords for one user name within LockFor lock that
	// name for LockFor. Default 10.
	MaxFailures int
	// MaxAddressFailures failed logins from one client address within
	// LockFor lock that address for LockFor. Default 50.
	MaxAddressFailures int
	// LockFor is the counting window and the length of a lock. Default 5 min.
	LockFor time.Duration
	// MaxTracked is the most user names, and separately the most addresses,
	// whose failures are remembered; beyond, the stalest record is dropped.
	// Default 10,000.
	MaxTracked int

	// MaxConcurrentChecks is how many logins are checked at once (a bcrypt
	// check keeps one core busy for about a quarter of a second at cost 12).
	// Default 4.
	MaxConcurrentChecks int
	// MaxQueuedLogins is how many logins may wait for a check slot; one more
	// gets admin.ErrBusy at once. Default 64.
	MaxQueuedLogins int
	// BusyWait is the longest a login waits for a check slot before
	// admin.ErrBusy. Default 2 s.
	BusyWait time.Duration
	// MaxConcurrentLookups bounds the Config DB queries of Bearer and
	// HasUsers (each waits at most BusyWait for a slot). Default 16.
	MaxConcurrentLookups int
	// LookupTimeout bounds each Config DB query. Default 5 s.
	LookupTimeout time.Duration
	// HasUsersFor is how long a HasUsers answer is reused. Default 5 s.
	HasUsersFor time.Duration

	// BcryptCost is the cost of the hash unknown users are checked against;
	// set it to the cost the users' hashes were made with (the CLI uses
	// DefaultBcryptCost). Default DefaultBcryptCost; tests use bcrypt.MinCost.
	BcryptCost int
}

func (o *Options) withDefaults() error {
	if o.DB == nil {
		return errors.New("admin/auth: Options.DB is required")
	}
	if o.Clock == nil {
		o.Clock = actors.RealClock()
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"SessionIdle", &o.SessionIdle, 30 * time.Minute},
		{"SessionMax", &o.SessionMax, 12 * time.Hour},
		{"RecheckEvery", &o.RecheckEvery, time.Minute},
		{"LockFor", &o.LockFor, 5 * time.Minute},
		{"BusyWait", &o.BusyWait, 2 * time.Second},
		{"LookupTimeout", &o.LookupTimeout, 5 * time.Second},
		{"HasUsersFor", &o.HasUsersFor, 5 * time.Second},
	}
	for _, d := range durations {
		if *d.v < 0 {
			return fmt.Errorf("admin/auth: Options.%s %v: accepted are positive durations, or 0 for the default %v", d.name, *d.v, d.def)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	counts := []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxSessions", &o.MaxSessions, 10000},
		{"MaxSessionsPerUser", &o.MaxSessionsPerUser, 20},
		{"MaxFailures", &o.MaxFailures, 10},
		{"MaxAddressFailures", &o.MaxAddressFailures, 50},
		{"MaxTracked", &o.MaxTracked, 10000},
		{"MaxConcurrentChecks", &o.MaxConcurrentChecks, 4},
		{"MaxQueuedLogins", &o.MaxQueuedLogins, 64},
		{"MaxConcurrentLookups", &o.MaxConcurrentLookups, 16},
		{"BcryptCost", &o.BcryptCost, DefaultBcryptCost},
	}
	for _, c := range counts {
		if *c.v < 0 {
			return fmt.Errorf("admin/auth: Options.%s %d: accepted are positive numbers, or 0 for the default %d", c.name, *c.v, c.def)
		}
		if *c.v == 0 {
			*c.v = c.def
		}
	}
	if o.BcryptCost < bcrypt.MinCost || o.BcryptCost > bcrypt.MaxCost {
		return fmt.Errorf("admin/auth: Options.BcryptCost %d: accepted are %d to %d", o.BcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	return nil
}

// Service checks logins, sessions and API tokens for the admin pages. It
// is safe for concurrent use.
type Service struct {
	o         Options
	dummyHash func() []byte // what an unknown user's password is compared with

	checks  chan struct{} // one token per login being checked
	queued  atomic.Int64  // logins waiting for a check slot
	lookups chan struct{} // one token per Bearer / HasUsers query

	mu       sync.Mutex // guards everything below; never held during I/O or bcrypt
	sessions *sessionTable
	users    *failureTable // by user name
	addrs    *failureTable // by client address
	hasUsers struct {
		known bool
		v     bool
		at    time.Time
	}
}

var _ admin.Authenticator = (*Service)(nil)

// New returns a Service. In the background it hashes one random password
// at Options.BcryptCost (about a quarter of a second at the default cost,
// much longer in a race-detector build), so that an unknown user costs the
// same check as a known one without delaying the node's start; a login
// that needs it first waits for it.
func New(o Options) (*Service, error) {
	if err := o.withDefaults(); err != nil {
		return nil, err
	}
	var dummy []byte
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		// The cost is in bcrypt's range (withDefaults), the only error.
		dummy, _ = bcrypt.GenerateFromPassword([]byte(randomID()[:MaxPasswordBytes/2]), o.BcryptCost)
	}()
	return &Service{
		o:         o,
		dummyHash: func() []byte { <-ready; return dummy },
		checks:    make(chan struct{}, o.MaxConcurrentChecks),
		lookups:   make(chan struct{}, o.MaxConcurrentLookups),
		sessions:  newSessionTable(o.SessionIdle, o.SessionMax, o.MaxSessions, o.MaxSessionsPerUser),
		users:     newFailureTable(o.MaxFailures, o.LockFor, o.MaxTracked),
		addrs:     newFailureTable(o.MaxAddressFailures, o.LockFor, o.MaxTracked),
	}, nil
}

// Login checks name and password from remoteAddr and opens a session.
//
// A locked user name or address is refused with *admin.LockedError before
// any check, also with the right password. Otherwise the login waits for
// one of MaxConcurrentChecks check slots (at most BusyWait, admin.ErrBusy
// after that or when MaxQueuedLogins already wait), then reads the user and
// compares the password with bcrypt; an unknown user is compared against a
// dummy hash and gets the same admin.ErrBadCredentials as a wrong password.
// The failure that reaches MaxFailures (or MaxAddressFailures) returns the
// *admin.LockedError itself. A Config DB failure is returned as it is and
// counts as no failure.
func (s *Service) Login(ctx context.Context, name, password, remoteAddr string) (admin.Session, error) {
	u, role, err := s.authenticate(ctx, name, password, remoteAddr)
	if err != nil {
		return admin.Session{}, err
	}
	sess := admin.Session{ID: randomID(), User: admin.User{Name: u.Name, Role: role}, CSRFToken: randomID()}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions.open(sess, u.PasswordHash, s.o.Clock.Now()), nil
}

// Verify checks name and password from remoteAddr as Login does (the same
// locks, failure counts, check slots and errors: admin.ErrBadCredentials,
// *admin.LockedError, admin.ErrBusy, a Config DB failure) and returns the
// user, without opening a session. The OPC UA endpoint calls it for a
// UserName identity token.
func (s *Service) Verify(ctx context.Context, name, password, remoteAddr string) (admin.User, error) {
	u, role, err := s.authenticate(ctx, name, password, remoteAddr)
	if err != nil {
		return admin.User{}, err
	}
	return admin.User{Name: u.Name, Role: role}, nil
}

// authenticate is the check of Login and Verify; a success forgets the
// user name's failures.
func (s *Service) authenticate(ctx context.Context, name, password, remoteAddr string) (configdb.AdminUser, admin.Role, error) {
	addr := addressKey(remoteAddr)
	validName := configdb.CheckUserName(name) == nil
	if err := s.refuseLocked(name, validName, addr); err != nil {
		return configdb.AdminUser{}, "", err
	}
	release, err := s.acquireCheck(ctx)
	if err != nil {
		return configdb.AdminUser{}, "", err
	}
	defer release()
	// A lock may have been placed while this login waited.
	if err := s.refuseLocked(name, validName, addr); err != nil {
		return configdb.AdminUser{}, "", err
	}
	u, ok, err := s.check(ctx, name, validName, password)
	if err != nil {
		return configdb.AdminUser{}, "", err
	}
	if !ok {
		return configdb.AdminUser{}, "", s.failed(name, validName, addr)
	}
	role, err := admin.ParseRole(u.Role)
	if err != nil {
		return configdb.AdminUser{}, "", fmt.Errorf("admin/auth: user %q: %w", u.Name, err)
	}
	s.mu.Lock()
	s.users.reset(name, s.o.Clock.Now())
	s.mu.Unlock()
	return u, role, nil
}

// User returns the user called name with its role, under the lookup bound
// (admin.ErrBusy), without any password: the OPC UA endpoint calls it for
// the user an X509 identity token's trusted certificate names. An unknown
// user is admin.ErrBadCredentials.
func (s *Service) User(ctx context.Context, name string) (admin.User, error) {
	if configdb.CheckUserName(name) != nil {
		return admin.User{}, admin.ErrBadCredentials
	}
	release, err := s.acquire(ctx, s.lookups)
	if err != nil {
		return admin.User{}, err
	}
	defer release()
	lctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
	defer cancel()
	u, err := s.o.DB.User(lctx, name)
	if errors.Is(err, configdb.ErrNotFound) {
		return admin.User{}, admin.ErrBadCredentials
	}
	if err != nil {
		return admin.User{}, fmt.Errorf("admin/auth: look up user %q: %w", name, err)
	}
	role, err := admin.ParseRole(u.Role)
	if err != nil {
		return admin.User{}, fmt.Errorf("admin/auth: user %q: %w", u.Name, err)
	}
	return admin.User{Name: u.Name, Role: role}, nil
}

// check reads the user and compares the password: ok false for an unknown
// user or a wrong password, an error only when the Config DB failed.
func (s *Service) check(ctx context.Context, name string, validName bool, password string) (configdb.AdminUser, bool, error) {
	if !validName || len(password) > MaxPasswordBytes {
		// No such user can exist, or no such password was accepted
		// (CheckPasswordRules): nothing to ask the Config DB.
		return configdb.AdminUser{}, false, nil
	}
	lctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
	u, err := s.o.DB.User(lctx, name)
	cancel()
	hash := []byte(u.PasswordHash)
	switch {
	case errors.Is(err, configdb.ErrNotFound):
		hash = s.dummyHash()
	case err != nil:
		return configdb.AdminUser{}, false, fmt.Errorf("admin/auth: look up user %q: %w", name, err)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || err != nil {
		return configdb.AdminUser{}, false, nil
	}
	return u, true, nil
}

// refuseLocked returns the *admin.LockedError of a locked address or name.
func (s *Service) refuseLocked(name string, validName bool, addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Clock.Now()
	if until, ok := s.addrs.locked(addr, now); ok {
		return &admin.LockedError{Until: until, Who: "address " + addr}
	}
	if !validName {
		return nil
	}
	if until, ok := s.users.locked(name, now); ok {
		return &admin.LockedError{Until: until, Who: "user " + name}
	}
	return nil
}

// failed counts a failed login against the name (when it could be a user's)
// and the address, and says whether that locked either.
func (s *Service) failed(name string, validName bool, addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Clock.Now()
	var userLock time.Time
	var userLocked bool
	if validName {
		userLock, userLocked = s.users.fail(name, now)
	}
	addrLock, addrLocked := s.addrs.fail(addr, now)
	switch {
	case userLocked:
		return &admin.LockedError{Until: userLock, Who: "user " + name}
	case addrLocked:
		return &admin.LockedError{Until: addrLock, Who: "address " + addr}
	}
	return admin.ErrBadCredentials
}

// acquireCheck takes a login check slot, waiting at most BusyWait.
func (s *Service) acquireCheck(ctx context.Context) (func(), error) {
	if s.queued.Add(1) > int64(s.o.MaxQueuedLogins+s.o.MaxConcurrentChecks) {
		s.queued.Add(-1)
		return nil, admin.ErrBusy
	}
	release, err := s.acquire(ctx, s.checks)
	if err != nil {
		s.queued.Add(-1)
		return nil, err
	}
	return func() { release(); s.queued.Add(-1) }, nil
}

// acquire takes a slot of sem, waiting at most BusyWait (admin.ErrBusy).
func (s *Service) acquire(ctx context.Context, sem chan struct{}) (func(), error) {
	release := func() { <-sem }
	select {
	case sem <- struct{}{}:
		return release, nil
	default:
	}
	t := s.o.Clock.NewTimer(s.o.BusyWait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return release, nil
	case <-t.Chan():
		return nil, admin.ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// addressKey is the host part of a client address ("10.0.0.7:51234" and
// "10.0.0.7" are one address).
func addressKey(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// Session returns the live session id names and extends its idle expiry.
// Every RecheckEvery it reads the user again: a removed user, a changed
// password or role ends the session (a Config DB failure keeps it).
func (s *Service) Session(id string) (admin.Session, bool) {
	if len(id) != idLen {
		return admin.Session{}, false
	}
	s.mu.Lock()
	now := s.o.Clock.Now()
	e, ok := s.sessions.get(id, now)
	if !ok {
		s.mu.Unlock()
		return admin.Session{}, false
	}
	sess, hash := e.s, e.passwordHash
	recheck := now.Sub(e.checked) >= s.o.RecheckEvery
	if recheck {
		e.checked = now // one recheck at a time per session
	}
	s.mu.Unlock()
	if recheck && !s.stillValid(sess.User, hash) {
		s.mu.Lock()
		s.sessions.remove(id)
		s.mu.Unlock()
		return admin.Session{}, false
	}
	return sess, true
}

// stillValid reads u again: false when it was removed or its password or
// role changed; true when it is unchanged or the Config DB did not answer.
func (s *Service) stillValid(u admin.User, hash string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.LookupTimeout)
	defer cancel()
	release, err := s.acquire(ctx, s.lookups)
	if err != nil {
		return true
	}
	defer release()
	cur, err := s.o.DB.User(ctx, u.Name)
	if errors.Is(err, configdb.ErrNotFound) {
		return false
	}
	if err != nil {
		return true
	}
	return cur.PasswordHash == hash && cur.Role == string(u.Role)
}

// Logout ends the session id names; unknown ids are ignored.
func (s *Service) Logout(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions.remove(id)
}

// Bearer returns the user whose API token this is. A token that is not of
// the form NewToken makes is refused without asking the Config DB; the
// others are looked up by their SHA-256 under the lookup bound
// (admin.ErrBusy when MaxConcurrentLookups are busy for BusyWait).
func (s *Service) Bearer(ctx context.Context, token string) (admin.User, error) {
	if !wellFormedToken(token) {
		return admin.User{}, admin.ErrNoToken
	}
	release, err := s.acquire(ctx, s.lookups)
	if err != nil {
		return admin.User{}, err
	}
	defer release()
	lctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
	defer cancel()
	u, err := s.o.DB.UserByTokenHash(lctx, TokenHash(token))
	if errors.Is(err, configdb.ErrNotFound) {
		return admin.User{}, admin.ErrNoToken
	}
	if err != nil {
		return admin.User{}, fmt.Errorf("admin/auth: look up a bearer token: %w", err)
	}
	role, err := admin.ParseRole(u.Role)
	if err != nil {
		return admin.User{}, fmt.Errorf("admin/auth: user %q: %w", u.Name, err)
	}
	return admin.User{Name: u.Name, Role: role}, nil
}

// IssueToken gives the user a new API token, replacing any earlier one,
// and returns it; only its SHA-256 is stored. An unknown user is an error
// wrapping configdb.ErrNotFound.
func (s *Service) IssueToken(ctx context.Context, name string) (string, error) {
	token, hash := NewToken()
	lctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
	defer cancel()
	if err := s.o.DB.SetUserTokenHash(lctx, name, hash); err != nil {
		return "", fmt.Errorf("admin/auth: issue a token for %q: %w", name, err)
	}
	return token, nil
}

// HasUsers reports whether any user exists. The answer is reused for
// HasUsersFor, so that unauthenticated page loads do not each query the
// Config DB.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	s.mu.Lock()
	h := s.hasUsers
	now := s.o.Clock.Now()
	s.mu.Unlock()
	if h.known && now.Sub(h.at) < s.o.HasUsersFor {
		return h.v, nil
	}
	release, err := s.acquire(ctx, s.lookups)
	if err != nil {
		return false, err
	}
	defer release()
	lctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
	defer cancel()
	n, err := s.o.DB.CountUsers(lctx)
	if err != nil {
		return false, fmt.Errorf("admin/auth: count users: %w", err)
	}
	s.mu.Lock()
	s.hasUsers.known, s.hasUsers.v, s.hasUsers.at = true, n > 0, now
	s.mu.Unlock()
	return n > 0, nil
}
