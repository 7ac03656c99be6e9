package auth

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/crypto/bcrypt"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/configdb"
)

var _ Store = (*configdb.DB)(nil)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

const goodPassword = "correct horse battery"

// fakeStore is an in-memory user store. When gate is set, User blocks
// until a value is sent on it (or ctx ends), after telling entered.
type fakeStore struct {
	mu      sync.Mutex
	users   map[string]configdb.AdminUser
	gate    chan struct{}
	entered chan struct{}
	calls   atomic.Int64 // every call of any method
}

func newFakeStore() *fakeStore { return &fakeStore{users: map[string]configdb.AdminUser{}} }

func (f *fakeStore) add(t testing.TB, name string, role admin.Role, password string) {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[name] = configdb.AdminUser{Name: name, Role: string(role), PasswordHash: string(h)}
}

func (f *fakeStore) User(ctx context.Context, name string) (configdb.AdminUser, error) {
	f.calls.Add(1)
	if f.gate != nil {
		f.entered <- struct{}{}
		select {
		case <-f.gate:
		case <-ctx.Done():
			return configdb.AdminUser{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[name]
	if !ok {
		return configdb.AdminUser{}, fmt.Errorf("%w: no user %q", configdb.ErrNotFound, name)
	}
	return u, nil
}

func (f *fakeStore) UserByTokenHash(_ context.Context, h string) (configdb.AdminUser, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.users {
		if u.TokenHash == h {
			return u, nil
		}
	}
	return configdb.AdminUser{}, configdb.ErrNotFound
}

func (f *fakeStore) SetUserTokenHash(_ context.Context, name, h string) error {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[name]
	if !ok {
		return configdb.ErrNotFound
	}
	u.TokenHash = h
	f.users[name] = u
	return nil
}

func (f *fakeStore) CountUsers(context.Context) (int, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.users), nil
}

func (f *fakeStore) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.users, name)
}

// newService returns a Service over store with a fake clock at t0 and
// bcrypt.MinCost; adjust changes the options first.
func newService(t testing.TB, store Store, adjust func(*Options)) (*Service, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	o := Options{DB: store, Clock: clock, BcryptCost: bcrypt.MinCost}
	if adjust != nil {
		adjust(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s, clock
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantThrottled fails unless err is an *admin.ThrottledError of who until
// until.
func wantThrottled(t *testing.T, err error, who string, until time.Time) {
	t.Helper()
	var te *admin.ThrottledError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want *admin.ThrottledError for %s", err, who)
	}
	if te.Who != who || !te.Until.Equal(until) {
		t.Fatalf("throttled %q until %v, want %q until %v", te.Who, te.Until, who, until)
	}
}

// surfaces records the Options.Throttled calls.
type surfaces struct {
	mu  sync.Mutex
	got []string
}

func (s *surfaces) add(surface string) { s.mu.Lock(); s.got = append(s.got, surface); s.mu.Unlock() }

func (s *surfaces) list() string { s.mu.Lock(); defer s.mu.Unlock(); return strings.Join(s.got, " ") }

// TestWrongPasswordsSlowTheNameFromThatAddressOnly: five wrong passwords
// for alice from one address make alice wait from that address only; the
// right password from another address signs in at once; an attempt
// inside the wait is refused unchecked (the store is not asked), counted,
// and makes the wait longer.
func TestWrongPasswordsSlowTheNameFromThatAddressOnly(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleAdministrator, goodPassword)
	var seen surfaces
	s, clock := newService(t, store, func(o *Options) { o.Throttled = seen.add })
	ctx := ctxT(t)
	const attacker = "192.0.2.66"
	for i := 1; i <= 5; i++ {
		if _, err := s.Login(ctx, "alice", fmt.Sprintf("wrong guess %d", i), attacker+":40000"); err != admin.ErrBadCredentials {
			t.Fatalf("wrong password %d: %v, want ErrBadCredentials", i, err)
		}
	}
	// The fifth failure started a 1 s wait: the sixth attempt, even with the
	// right password, is refused without asking the store, and waits 2 s.
	before := store.calls.Load()
	_, err := s.Login(ctx, "alice", goodPassword, attacker+":40001")
	wantThrottled(t, err, "user alice from address "+attacker, t0.Add(2*time.Second))
	if store.calls.Load() != before {
		t.Fatal("a throttled login read the store")
	}
	if got := seen.list(); got != SurfaceAdmin {
		t.Fatalf("Throttled told %q, want one %q", got, SurfaceAdmin)
	}
	// alice from anywhere else: at once.
	if sess, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1:5000"); err != nil || sess.User.Name != "alice" {
		t.Fatalf("alice from another address during the attack: %+v, %v", sess, err)
	}
	// The attacker hammering only lengthens its own wait: 4 s, then 8 s.
	clock.Advance(time.Second)
	_, err = s.Login(ctx, "alice", "wrong guess 7", attacker)
	wantThrottled(t, err, "user alice from address "+attacker, clock.Now().Add(4*time.Second))
	_, err = s.Login(ctx, "alice", "wrong guess 8", attacker)
	wantThrottled(t, err, "user alice from address "+attacker, clock.Now().Add(8*time.Second))
	// Another name from that address is not slowed: the address has had 5
	// checked failures of its 50 (refused attempts count only against the
	// key that waits).
	if _, err := s.Login(ctx, "bob", "wrong guess 1", attacker); err != admin.ErrBadCredentials {
		t.Fatalf("another name from the attacker's address: %v, want ErrBadCredentials", err)
	}
	// After the wait the right password is checked, and resets the count.
	clock.Advance(8 * time.Second)
	if _, err := s.Login(ctx, "alice", goodPassword, attacker); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := s.Login(ctx, "alice", "wrong again!", attacker); err != admin.ErrBadCredentials {
			t.Fatalf("wrong password %d after a success: %v, want ErrBadCredentials", i, err)
		}
	}
}

// TestNoOneKeepsANameLockedFromAfar is the attack of issue 23: two wrong
// passwords a minute for an Administrator, for an hour, from one address.
// The owner signs in from another address every time; the attacker's
// address waits up to MaxWait, so most of its attempts are never checked.
func TestNoOneKeepsANameLockedFromAfar(t *testing.T) {
	store := newFakeStore()
	store.add(t, "root", admin.RoleAdministrator, goodPassword)
	var seen surfaces
	s, clock := newService(t, store, func(o *Options) { o.Throttled = seen.add })
	ctx := ctxT(t)
	checked := 0
	for minute := 0; minute < 60; minute++ {
		for range 2 {
			_, err := s.Verify(ctx, "root", "guessing away", "192.0.2.66")
			switch {
			case err == admin.ErrBadCredentials:
				checked++
			case !errors.As(err, new(*admin.ThrottledError)):
				t.Fatalf("minute %d: attacker got %v", minute, err)
			}
			clock.Advance(30 * time.Second)
		}
		if _, err := s.Login(ctx, "root", goodPassword, "10.0.0.1"); err != nil {
			t.Fatalf("minute %d: the owner from another address: %v", minute, err)
		}
	}
	throttled := strings.Count(seen.list(), SurfaceOpcUa)
	// The 5th failure starts a wait of 1 s, the 6th to 10th 2, 4, 8, 16
	// and 32 s: the 11th attempt, 30 s later, is inside the wait, and so
	// is every one after it (each restarts the wait, at most 5 min).
	if checked != 10 || throttled != 110 {
		t.Fatalf("of 120 attempts %d were checked and %d throttled, want 10 and 110", checked, throttled)
	}
}

func TestAddressWaits(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleViewer, goodPassword)
	s, clock := newService(t, store, nil)
	ctx := ctxT(t)
	const attacker = "192.0.2.66"
	for i := 1; i <= 50; i++ {
		name := fmt.Sprintf("guess%d", i) // a new name each time: no name waits
		if _, err := s.Login(ctx, name, "password123456", attacker+":40000"); err != admin.ErrBadCredentials {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	_, err := s.Login(ctx, "guess51", "password123456", attacker+":40001")
	wantThrottled(t, err, "address "+attacker, t0.Add(2*time.Second))
	// The right password of a real user from that address waits too; from
	// another address it works.
	_, err = s.Login(ctx, "alice", goodPassword, attacker)
	wantThrottled(t, err, "address "+attacker, t0.Add(4*time.Second))
	if _, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1:5000"); err != nil {
		t.Fatalf("alice from another address: %v", err)
	}
	clock.Advance(4 * time.Second)
	if _, err := s.Login(ctx, "alice", goodPassword, attacker); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	// Names that cannot be users count against the address only.
	s.mu.Lock()
	before := s.pairs.len()
	s.mu.Unlock()
	clock.Advance(time.Hour)
	for range 3 {
		if _, err := s.Login(ctx, "no spaces allowed", "password123456", "10.0.0.7"); err != admin.ErrBadCredentials {
			t.Fatalf("an impossible name: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pairs.len() != before {
		t.Fatalf("impossible names made %d name-and-address records", s.pairs.len()-before)
	}
}

func TestUnknownUserGetsTheSameError(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleViewer, goodPassword)
	s, _ := newService(t, store, nil)
	ctx := ctxT(t)
	_, wrong := s.Login(ctx, "alice", "not the password", "10.0.0.1")
	_, unknown := s.Login(ctx, "mallory", "not the password", "10.0.0.1")
	_, malformed := s.Login(ctx, "no spaces allowed", "not the password", "10.0.0.1")
	for _, err := range []error{wrong, unknown, malformed} {
		if err != admin.ErrBadCredentials {
			t.Fatalf("got %v, want exactly admin.ErrBadCredentials", err)
		}
	}
	// The unknown user is compared against a hash of the configured cost.
	if c, err := bcrypt.Cost(s.dummyHash()); err != nil || c != bcrypt.MinCost {
		t.Fatalf("dummy hash cost %d, %v; want %d", c, err, bcrypt.MinCost)
	}
	s12, err := New(Options{DB: store, Clock: clockwork.NewFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := bcrypt.Cost(s12.dummyHash()); c != DefaultBcryptCost {
		t.Fatalf("default dummy hash cost %d, want %d", c, DefaultBcryptCost)
	}
}

func TestSessionIdleExpiry(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleViewer, goodPassword)
	s, clock := newService(t, store, nil)
	sess, err := s.Login(ctxT(t), "alice", goodPassword, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.ID) != 43 || len(sess.CSRFToken) != 43 || sess.ID == sess.CSRFToken {
		t.Fatalf("id %q, csrf %q: want two distinct 43-character base64url strings", sess.ID, sess.CSRFToken)
	}
	if !sess.Expires.Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("Expires = %v, want login + 30 min", sess.Expires)
	}
	clock.Advance(29 * time.Minute)
	got, ok := s.Session(sess.ID)
	if !ok || !got.Expires.Equal(clock.Now().Add(30*time.Minute)) || got.CSRFToken != sess.CSRFToken {
		t.Fatalf("after 29 min: %+v, %v; want live, extended", got, ok)
	}
	clock.Advance(30*time.Minute - time.Nanosecond)
	if _, ok := s.Session(sess.ID); !ok {
		t.Fatal("ended before 30 idle minutes")
	}
	clock.Advance(30 * time.Minute)
	if _, ok := s.Session(sess.ID); ok {
		t.Fatal("alive after 30 idle minutes")
	}
	if _, ok := s.Session(sess.ID); ok {
		t.Fatal("an expired session came back")
	}
}

func TestSessionAbsoluteExpiry(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleViewer, goodPassword)
	s, clock := newService(t, store, nil)
	sess, err := s.Login(ctxT(t), "alice", goodPassword, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	// Used every 20 minutes: the idle expiry never strikes, the 12 h does.
	for clock.Since(t0) < 12*time.Hour-20*time.Minute {
		clock.Advance(20 * time.Minute)
		if _, ok := s.Session(sess.ID); !ok {
			t.Fatalf("ended %v after login", clock.Since(t0))
		}
	}
	clock.Advance(10 * time.Minute) // 11 h 50 min
	got, ok := s.Session(sess.ID)
	if !ok || !got.Expires.Equal(t0.Add(12*time.Hour)) {
		t.Fatalf("at %v: %+v, %v; want live until login + 12 h", clock.Since(t0), got, ok)
	}
	clock.Advance(10 * time.Minute)
	if _, ok := s.Session(sess.ID); ok {
		t.Fatal("alive 12 h after login")
	}
}

func TestSessionCaps(t *testing.T) {
	store := newFakeStore()
	for _, n := range []string{"alice", "bob", "carol"} {
		store.add(t, n, admin.RoleViewer, goodPassword)
	}
	s, clock := newService(t, store, func(o *Options) { o.MaxSessionsPerUser, o.MaxSessions = 3, 5 })
	ctx := ctxT(t)
	login := func(name string) admin.Session {
		t.Helper()
		clock.Advance(time.Second)
		sess, err := s.Login(ctx, name, goodPassword, "10.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	var alice []admin.Session
	for range 4 {
		alice = append(alice, login("alice"))
	}
	if _, ok := s.Session(alice[0].ID); ok {
		t.Fatal("alice's oldest session survived her 4th login (cap 3)")
	}
	for _, a := range alice[1:] {
		if _, ok := s.Session(a.ID); !ok {
			t.Fatal("a newer session of alice ended")
		}
	}
	// The node's cap: 3 of alice + bob + carol = 5; one more ends the least
	// recently used (bob, not used since his login).
	bob := login("bob")
	carol := login("carol")
	for _, a := range alice[1:] {
		s.Session(a.ID)
	}
	s.Session(carol.ID)
	carol2 := login("carol")
	if _, ok := s.Session(bob.ID); ok {
		t.Fatal("the least recently used session survived the node cap")
	}
	for _, live := range []admin.Session{alice[1], alice[2], alice[3], carol, carol2} {
		if _, ok := s.Session(live.ID); !ok {
			t.Fatalf("session of %s ended", live.User.Name)
		}
	}
	s.Logout(carol.ID)
	if _, ok := s.Session(carol.ID); ok {
		t.Fatal("alive after Logout")
	}
	s.Logout("no such session") // ignored
}

func TestSessionEndsWhenTheUserChanges(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleAdministrator, goodPassword)
	store.add(t, "bob", admin.RoleAdministrator, goodPassword)
	store.add(t, "carol", admin.RoleAdministrator, goodPassword)
	s, clock := newService(t, store, nil)
	ctx := ctxT(t)
	open := func(name string) admin.Session {
		sess, err := s.Login(ctx, name, goodPassword, "10.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	alice, bob, carol := open("alice"), open("bob"), open("carol")
	store.remove("alice")
	store.add(t, "bob", admin.RoleAdministrator, "a new password!") // new hash
	store.add(t, "carol", admin.RoleViewer, goodPassword)           // new role (and hash)
	clock.Advance(30 * time.Second)
	if _, ok := s.Session(alice.ID); !ok {
		t.Fatal("ended before the recheck was due")
	}
	clock.Advance(30 * time.Second)
	for _, sess := range []admin.Session{alice, bob, carol} {
		if _, ok := s.Session(sess.ID); ok {
			t.Errorf("%s's session survived the recheck after a change", sess.User.Name)
		}
	}
}

func TestBusyWhenChecksAreHeld(t *testing.T) {
	store := newFakeStore()
	store.add(t, "alice", admin.RoleViewer, goodPassword)
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 8)
	s, clock := newService(t, store, func(o *Options) { o.MaxConcurrentChecks, o.MaxQueuedLogins = 2, 1 })
	ctx := ctxT(t)
	held := make(chan error, 2)
	for range 2 {
		go func() { _, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1"); held <- err }()
	}
	for range 2 {
		select {
		case <-store.entered:
		case <-ctx.Done():
			t.Fatal("the first two logins never reached the store")
		}
	}
	// Both slots held: a third login waits for BusyWait, then ErrBusy.
	third := make(chan error, 1)
	go func() { _, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1"); third <- err }()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the third login set no timer")
	}
	// One waiting is the queue's limit: a fourth is refused at once.
	if _, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1"); err != admin.ErrBusy {
		t.Fatalf("a login beyond the queue: %v, want ErrBusy", err)
	}
	clock.Advance(2*time.Second - time.Nanosecond)
	select {
	case err := <-third:
		t.Fatalf("the third login returned %v before BusyWait", err)
	default:
	}
	clock.Advance(time.Nanosecond)
	select {
	case err := <-third:
		if err != admin.ErrBusy {
			t.Fatalf("third login: %v, want ErrBusy", err)
		}
	case <-ctx.Done():
		t.Fatal("the third login never returned")
	}
	// Releasing the held checks lets them finish and frees the slots.
	store.gate <- struct{}{}
	store.gate <- struct{}{}
	for range 2 {
		if err := <-held; err != nil {
			t.Fatalf("held login: %v", err)
		}
	}
	store.gate = nil
	if _, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1"); err != nil {
		t.Fatalf("login after the slots were freed: %v", err)
	}
}

func TestTokens(t *testing.T) {
	store := newFakeStore()
	store.add(t, "robot", admin.RoleAdministrator, goodPassword)
	s, _ := newService(t, store, nil)
	ctx := ctxT(t)
	first, err := s.IssueToken(ctx, "robot")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "otk_") || len(first) != 4+43 {
		t.Fatalf("token %q: want otk_ and 43 base64url characters", first)
	}
	u, _ := store.User(ctx, "robot")
	if strings.Contains(u.TokenHash, first[4:]) || u.TokenHash != TokenHash(first) || len(u.TokenHash) != 64 {
		t.Fatalf("stored %q: want only the hex SHA-256 of the token", u.TokenHash)
	}
	if got, err := s.Bearer(ctx, first); err != nil || got != (admin.User{Name: "robot", Role: admin.RoleAdministrator}) {
		t.Fatalf("Bearer(first) = %+v, %v", got, err)
	}
	second, err := s.IssueToken(ctx, "robot")
	if err != nil || second == first {
		t.Fatalf("second token %q, %v", second, err)
	}
	if _, err := s.Bearer(ctx, first); err != admin.ErrNoToken {
		t.Fatalf("the replaced token: %v, want ErrNoToken", err)
	}
	if got, err := s.Bearer(ctx, second); err != nil || got.Name != "robot" {
		t.Fatalf("Bearer(second) = %+v, %v", got, err)
	}
	// Malformed tokens are refused without a query.
	before := store.calls.Load()
	for _, bad := range []string{"", "otk_", second[:len(second)-1], "xyz_" + second[4:], second + "A", "otk_" + strings.Repeat("!", 43), strings.Repeat("A", 1<<20)} {
		if _, err := s.Bearer(ctx, bad); err != admin.ErrNoToken {
			t.Errorf("Bearer(%.20q…) = %v, want ErrNoToken", bad, err)
		}
	}
	if store.calls.Load() != before {
		t.Fatal("a malformed token reached the store")
	}
	if _, err := s.IssueToken(ctx, "nobody"); !errors.Is(err, configdb.ErrNotFound) {
		t.Fatalf("IssueToken(nobody) = %v, want ErrNotFound", err)
	}
}

func TestHasUsersIsReusedBriefly(t *testing.T) {
	store := newFakeStore()
	s, clock := newService(t, store, nil)
	ctx := ctxT(t)
	if has, err := s.HasUsers(ctx); err != nil || has {
		t.Fatalf("fresh install: %v, %v; want false", has, err)
	}
	store.add(t, "alice", admin.RoleAdministrator, goodPassword)
	calls := store.calls.Load()
	if has, _ := s.HasUsers(ctx); has || store.calls.Load() != calls {
		t.Fatal("HasUsers within HasUsersFor asked the store again")
	}
	clock.Advance(5 * time.Second)
	if has, _ := s.HasUsers(ctx); !has {
		t.Fatal("HasUsers after HasUsersFor did not see the new user")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "Options.DB is required"},
		{Options{DB: newFakeStore(), MaxWait: -time.Second}, "Options.MaxWait -1s: accepted are positive durations, or 0 for the default 5m0s"},
		{Options{DB: newFakeStore(), FreeFailures: -1}, "Options.FreeFailures -1: accepted are positive numbers, or 0 for the default 5"},
		{Options{DB: newFakeStore(), FirstWait: time.Minute, MaxWait: time.Second}, "Options.MaxWait 1s: accepted are durations of at least FirstWait (1m0s)"},
		{Options{DB: newFakeStore(), ForgetAfter: time.Minute}, "Options.ForgetAfter 1m0s: accepted are durations of at least MaxWait (5m0s)"},
		{Options{DB: newFakeStore(), BcryptCost: 3}, "Options.BcryptCost 3: accepted are 4 to 31"},
	} {
		_, err := New(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestPasswordRules(t *testing.T) {
	for _, p := range []string{"", "short", "123456789", strings.Repeat("x", 73), strings.Repeat("é", 37)} {
		err := CheckPasswordRules(p)
		if !errors.Is(err, ErrWeakPassword) || !strings.Contains(err.Error(), "accepted are 10 to 72 bytes") {
			t.Errorf("CheckPasswordRules(%d bytes) = %v", len(p), err)
		}
		if _, err := HashPassword(p, bcrypt.MinCost); !errors.Is(err, ErrWeakPassword) {
			t.Errorf("HashPassword(%d bytes) = %v", len(p), err)
		}
	}
	for _, p := range []string{"1234567890", strings.Repeat("x", 72), "pässwörd-ünïcode"} {
		h, err := HashPassword(p, bcrypt.MinCost)
		if err != nil {
			t.Fatalf("HashPassword(%q): %v", p, err)
		}
		if bcrypt.CompareHashAndPassword([]byte(h), []byte(p)) != nil {
			t.Fatalf("the hash of %q does not match it", p)
		}
	}
	if _, err := HashPassword("1234567890", 32); err == nil || !strings.Contains(err.Error(), "accepted are 4 to 31") {
		t.Fatalf("cost 32: %v", err)
	}
}

// TestWithTheConfigDB runs a login, a token and the lockout against a real
// SQLite Config DB.
func TestWithTheConfigDB(t *testing.T) {
	ctx := ctxT(t)
	db, err := configdb.Open(ctx, "sqlite", "file:"+filepath.Join(t.TempDir(), "config.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := HashPassword(goodPassword, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddUser(ctx, configdb.AdminUser{Name: "ops", Role: "ConfigEditor", PasswordHash: h}); err != nil {
		t.Fatal(err)
	}
	s, _ := newService(t, db, nil)
	if has, err := s.HasUsers(ctx); err != nil || !has {
		t.Fatalf("HasUsers = %v, %v", has, err)
	}
	sess, err := s.Login(ctx, "ops", goodPassword, "127.0.0.1")
	if err != nil || sess.User.Role != admin.RoleConfigEditor {
		t.Fatalf("Login = %+v, %v", sess, err)
	}
	if _, err := s.Login(ctx, "nobody", goodPassword, "127.0.0.1"); err != admin.ErrBadCredentials {
		t.Fatalf("unknown user: %v", err)
	}
	tok, err := s.IssueToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if u, err := s.Bearer(ctx, tok); err != nil || u.Name != "ops" {
		t.Fatalf("Bearer = %+v, %v", u, err)
	}
}

// BenchmarkLogin is one successful login at the default bcrypt cost (12),
// the cost of what a user waits for and of one check slot.
func BenchmarkLogin(b *testing.B) {
	store := newFakeStore()
	h, err := HashPassword(goodPassword, DefaultBcryptCost)
	if err != nil {
		b.Fatal(err)
	}
	store.users["alice"] = configdb.AdminUser{Name: "alice", Role: string(admin.RoleViewer), PasswordHash: h}
	s, err := New(Options{DB: store, MaxSessionsPerUser: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Login(ctx, "alice", goodPassword, "10.0.0.1"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVerify: Verify answers as Login does, shares its failure waits, and
// opens no session.
func TestVerify(t *testing.T) {
	store := newFakeStore()
	store.add(t, "otto", admin.RoleOperator, goodPassword)
	var seen surfaces
	s, clock := newService(t, store, func(o *Options) { o.FreeFailures, o.Throttled = 2, seen.add })
	ctx := ctxT(t)

	u, err := s.Verify(ctx, "otto", goodPassword, "10.0.0.9:50000")
	if err != nil || u != (admin.User{Name: "otto", Role: admin.RoleOperator}) {
		t.Fatalf("Verify: %+v, %v; want otto as Operator", u, err)
	}
	s.mu.Lock()
	open := len(s.sessions.byID)
	s.mu.Unlock()
	if open != 0 {
		t.Fatalf("Verify opened %d sessions, want none", open)
	}
	if _, err := s.Verify(ctx, "nobody", goodPassword, "10.0.0.9"); err != admin.ErrBadCredentials {
		t.Fatalf("unknown user: %v, want ErrBadCredentials", err)
	}

	// Wrong passwords through Verify make the name wait from that address
	// for Login too (one table serves both surfaces), not from another.
	for i := 0; i < 2; i++ {
		if _, err := s.Verify(ctx, "otto", "wrong password", "10.0.0.9"); err != admin.ErrBadCredentials {
			t.Fatalf("wrong password %d: %v, want ErrBadCredentials", i+1, err)
		}
	}
	_, err = s.Verify(ctx, "otto", goodPassword, "10.0.0.9:50001")
	wantThrottled(t, err, "user otto from address 10.0.0.9", t0.Add(2*time.Second))
	_, err = s.Login(ctx, "otto", goodPassword, "10.0.0.9")
	wantThrottled(t, err, "user otto from address 10.0.0.9", t0.Add(4*time.Second))
	if got := seen.list(); got != SurfaceOpcUa+" "+SurfaceAdmin {
		t.Fatalf("Throttled told %q, want %q then %q", got, SurfaceOpcUa, SurfaceAdmin)
	}
	if _, err := s.Verify(ctx, "otto", goodPassword, "10.0.0.10"); err != nil {
		t.Fatalf("otto from another address: %v", err)
	}
	clock.Advance(4 * time.Second)
	if _, err := s.Verify(ctx, "otto", goodPassword, "10.0.0.9"); err != nil {
		t.Fatalf("after the wait: %v", err)
	}

	if u, err := s.User(ctx, "otto"); err != nil || u.Role != admin.RoleOperator {
		t.Fatalf("User: %+v, %v", u, err)
	}
	if _, err := s.User(ctx, "nobody"); err != admin.ErrBadCredentials {
		t.Fatalf("User of an unknown name: %v, want ErrBadCredentials", err)
	}
}

// TestVerifyIsBusyWhenChecksAreHeld: Verify takes the same check slots as
// Login.
func TestVerifyIsBusyWhenChecksAreHeld(t *testing.T) {
	store := newFakeStore()
	store.add(t, "otto", admin.RoleOperator, goodPassword)
	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 8)
	s, clock := newService(t, store, func(o *Options) { o.MaxConcurrentChecks = 1 })
	ctx := ctxT(t)
	held := make(chan error, 1)
	go func() { _, err := s.Login(ctx, "otto", goodPassword, "10.0.0.1"); held <- err }()
	<-store.entered
	verified := make(chan error, 1)
	go func() { _, err := s.Verify(ctx, "otto", goodPassword, "10.0.0.2"); verified <- err }()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if err := <-verified; err != admin.ErrBusy {
		t.Fatalf("Verify while the only slot is held: %v, want ErrBusy", err)
	}
	store.gate <- struct{}{}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
