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
	// Clock times sessions, failure waits and the busy wait. Default: the
	// real clock.
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

	// FreeFailures is how many failed logins of one user name from one
	// client address cost no wait; after each further failure that name
	// waits from that address (only) for FirstWait, then twice as long per
	// failure, at most MaxWait. Default 5.
	FreeFailures int
	// FreeAddressFailures is how many failed logins from one client
	// address, for any names, cost no wait; beyond, the address waits the
	// same way. Default 50.
	FreeAddressFailures int
	// FirstWait is the wait after the first failure beyond the free ones.
	// Default 1 s.
	FirstWait time.Duration
	// MaxWait is the longest wait. Default 5 min.
	MaxWait time.Duration
	// ForgetAfter: a name-and-address or an address without a failure for
	// this long starts afresh (free failures again). Default 15 min.
	ForgetAfter time.Duration
	// MaxTracked is the most name-and-address pairs, and separately the
	// most addresses, whose failures are remembered; beyond, the least
	// recently failed is forgotten. Default 10,000.
	MaxTracked int
	// Throttled, when set, is told of each attempt refused unchecked
	// because its key waits, with the surface it came from (SurfaceAdmin
	// for Login, SurfaceOpcUa for Verify). It is called concurrently, on
	// the login's goroutine, without Service's lock; it must not block.
	Throttled func(surface string)

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
		{"FirstWait", &o.FirstWait, time.Second},
		{"MaxWait", &o.MaxWait, 5 * time.Minute},
		{"ForgetAfter", &o.ForgetAfter, 15 * time.Minute},
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
		{"FreeFailures", &o.FreeFailures, 5},
		{"FreeAddressFailures", &o.FreeAddressFailures, 50},
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
	if o.MaxWait < o.FirstWait {
		return fmt.Errorf("admin/auth: Options.MaxWait %v: accepted are durations of at least FirstWait (%v)", o.MaxWait, o.FirstWait)
	}
	if o.ForgetAfter < o.MaxWait {
		// Shorter, a key that waited MaxWait would find its failures gone.
		return fmt.Errorf("admin/auth: Options.ForgetAfter %v: accepted are durations of at least MaxWait (%v)", o.ForgetAfter, o.MaxWait)
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
	pairs    *throttle // by user name and client address (pairKey)
	addrs    *throttle // by client address
	hasUsers struct {
		known bool
		v     bool
		at    time.Time
	}
}

var _ admin.Authenticator = (*Service)(nil)

// New returns a Service. An unknown user's password is checked against a
// hash of Options.BcryptCost, so that it costs the same as a known user's:
// at DefaultBcryptCost that hash is unknownUserHash; at any other cost one
// random password is hashed in the background (about a quarter of a second
// at cost 12, much longer in a race-detector build) without delaying the
// node's start, and a login that needs it first waits for it.
func New(o Options) (*Service, error) {
	if err := o.withDefaults(); err != nil {
		return nil, err
	}
	dummy := []byte(unknownUserHash)
	ready := make(chan struct{})
	if o.BcryptCost == DefaultBcryptCost {
		close(ready)
	} else {
		go func() {
			defer close(ready)
			// The cost is in bcrypt's range (withDefaults), the only error.
			dummy, _ = bcrypt.GenerateFromPassword([]byte(randomID()[:MaxPasswordBytes/2]), o.BcryptCost)
		}()
	}
	return &Service{
		o:         o,
		dummyHash: func() []byte { <-ready; return dummy },
		checks:    make(chan struct{}, o.MaxConcurrentChecks),
		lookups:   make(chan struct{}, o.MaxConcurrentLookups),
		sessions:  newSessionTable(o.SessionIdle, o.SessionMax, o.MaxSessions, o.MaxSessionsPerUser),
		pairs:     newThrottle(o.FreeFailures, o.FirstWait, o.MaxWait, o.ForgetAfter, o.MaxTracked),
		addrs:     newThrottle(o.FreeAddressFailures, o.FirstWait, o.MaxWait, o.ForgetAfter, o.MaxTracked),
	}, nil
}

// unknownUserHash is a bcrypt hash at DefaultBcryptCost of a random
// password that was thrown away. It need not be secret: an unknown user's
// check fails whatever the password (check), the hash only makes it cost
// what a known user's costs. Hashing one at every start cost each node a
// quarter of a second of CPU; 24 nodes started at once on one small
// machine spent seconds of their start-up on it.
const unknownUserHash = "$2a$12$pN5ASSC6Cq710UuzHYNP6.WEtvYSQmuOatIp4ASEL8MhVhSxPfJlW"

// Surfaces a login comes from (Options.Throttled).
const (
	SurfaceAdmin = "admin" // Login: the admin login page
	SurfaceOpcUa = "opcua" // Verify: an OPC UA UserName identity token
)

// Login checks name and password from remoteAddr and opens a session.
//
// An attempt whose address, or whose name from that address, must wait
// (Options.FreeFailures, FreeAddressFailures) is refused with
// *admin.ThrottledError before any check, also with the right password,
// and counted as one more failure of the key that waits. Otherwise the
// login waits for one of MaxConcurrentChecks check slots (at most BusyWait,
// admin.ErrBusy after that or when MaxQueuedLogins already wait), then
// reads the user and compares the password with bcrypt; an unknown user is
// compared against a dummy hash and gets the same admin.ErrBadCredentials
// as a wrong password, which counts against the name from that address and
// against the address. A Config DB failure is returned as it is and counts
// as no failure. The same name from another address is never slowed by
// these failures.
func (s *Service) Login(ctx context.Context, name, password, remoteAddr string) (admin.Session, error) {
	u, role, err := s.authenticate(ctx, SurfaceAdmin, name, password, remoteAddr)
	if err != nil {
		return admin.Session{}, err
	}
	sess := admin.Session{ID: randomID(), User: admin.User{Name: u.Name, Role: role}, CSRFToken: randomID()}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions.open(sess, u.PasswordHash, s.o.Clock.Now()), nil
}

// Verify checks name and password from remoteAddr as Login does (the same
// failure counts and waits, check slots and errors: admin.ErrBadCredentials,
// *admin.ThrottledError, admin.ErrBusy, a Config DB failure) and returns the
// user, without opening a session. The OPC UA endpoint calls it for a
// UserName identity token.
func (s *Service) Verify(ctx context.Context, name, password, remoteAddr string) (admin.User, error) {
	u, role, err := s.authenticate(ctx, SurfaceOpcUa, name, password, remoteAddr)
	if err != nil {
		return admin.User{}, err
	}
	return admin.User{Name: u.Name, Role: role}, nil
}

// attempt names the failure keys of one login.
type attempt struct {
	name      string
	validName bool   // the name could be a user's; else only addr counts
	addr      string // addressKey of the client
	surface   string
}

// pair is the key of the name from the address.
func (a attempt) pair() string { return a.name + "\x00" + a.addr }

// authenticate is the check of Login and Verify; a success forgets the
// failures of the name from that address (not those of the address).
func (s *Service) authenticate(ctx context.Context, surface, name, password, remoteAddr string) (configdb.AdminUser, admin.Role, error) {
	a := attempt{name: name, validName: configdb.CheckUserName(name) == nil, addr: addressKey(remoteAddr), surface: surface}
	if err := s.refuseWaiting(a); err != nil {
		return configdb.AdminUser{}, "", err
	}
	release, err := s.acquireCheck(ctx)
	if err != nil {
		return configdb.AdminUser{}, "", err
	}
	defer release()
	// A wait may have begun while this login waited for its slot.
	if err := s.refuseWaiting(a); err != nil {
		return configdb.AdminUser{}, "", err
	}
	u, ok, err := s.check(ctx, name, a.validName, password)
	if err != nil {
		return configdb.AdminUser{}, "", err
	}
	if !ok {
		s.failed(a)
		return configdb.AdminUser{}, "", admin.ErrBadCredentials
	}
	role, err := admin.ParseRole(u.Role)
	if err != nil {
		return configdb.AdminUser{}, "", fmt.Errorf("admin/auth: user %q: %w", u.Name, err)
	}
	s.mu.Lock()
	s.pairs.reset(a.pair())
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

// refuseWaiting returns the *admin.ThrottledError of an attempt whose
// address, or name from that address, must wait, after counting the
// attempt as one more failure of that key (which restarts its wait,
// longer), and tells Options.Throttled. It returns nil for an attempt that
// may be checked.
func (s *Service) refuseWaiting(a attempt) error {
	s.mu.Lock()
	now := s.o.Clock.Now()
	var err *admin.ThrottledError
	if _, ok := s.addrs.waiting(a.addr, now); ok {
		err = &admin.ThrottledError{Until: s.addrs.fail(a.addr, now), Who: "address " + a.addr}
	} else if _, ok := s.pairs.waiting(a.pair(), now); a.validName && ok {
		err = &admin.ThrottledError{Until: s.pairs.fail(a.pair(), now), Who: "user " + a.name + " from address " + a.addr}
	}
	s.mu.Unlock()
	if err == nil {
		return nil
	}
	if s.o.Throttled != nil {
		s.o.Throttled(a.surface)
	}
	return err
}

// failed counts a checked, failed login against the name from the address
// (when the name could be a user's) and against the address.
func (s *Service) failed(a attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Clock.Now()
	if a.validName {
		s.pairs.fail(a.pair(), now)
	}
	s.addrs.fail(a.addr, now)
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
