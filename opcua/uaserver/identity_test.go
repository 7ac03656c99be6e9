package uaserver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/subscription"
)

// newCert returns a self-signed RSA 2048 certificate for uri and its key.
func newCert(t *testing.T, uri string) ([]byte, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(uri)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: uri},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), URIs: []*url.URL{u},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// fakeUsers is a user directory: name → password and role. It records the
// passwords it was asked to check.
type fakeUsers struct {
	mu       sync.Mutex
	password map[string]string
	role     map[string]string
	checked  []string // "name/password" of every Verify
	// slow, when set, is called by Verify before it checks: a check that
	// takes as long as the test wants.
	slow func()
	// gate, when set, is called by Verify with the name and password
	// before it checks (after slow).
	gate func(name, password string)
}

func (f *fakeUsers) Verify(_ context.Context, name, password, _ string) (string, ua.StatusCode) {
	f.mu.Lock()
	slow, gate := f.slow, f.gate
	f.mu.Unlock()
	if slow != nil {
		slow()
	}
	if gate != nil {
		gate(name, password)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = append(f.checked, name+"/"+password)
	if pw, ok := f.password[name]; !ok || pw != password {
		return "", ua.StatusBadUserAccessDenied
	}
	return f.role[name], ua.StatusOK
}

func (f *fakeUsers) Role(_ context.Context, name string) (string, ua.StatusCode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.role[name]
	if !ok {
		return "", ua.StatusBadUserAccessDenied
	}
	return r, ua.StatusOK
}

func (f *fakeUsers) checks() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.checked)
}

// testAuthorization is OpcUa:Authorization's default.
var testAuthorization = map[string]Rights{
	"Administrator": AllRights, "Operator": AllRights, "ConfigEditor": RightRead,
	"Designer": RightRead, "Viewer": RightRead, AnonymousRole: RightRead,
}

// identityRig is a server with a certificate, users otto (Operator) and
// vera (Viewer), a user certificate trusted for "cert-op", and the default
// authorization.
type identityRig struct {
	*testServer
	users    *fakeUsers
	userCert []byte
	userKey  *rsa.PrivateKey
}

func newIdentityRig(t *testing.T, setup func(*Config), handlers ...func(*Server)) *identityRig {
	t.Helper()
	cert, key := newCert(t, "urn:otopcua:test:a")
	userCert, userKey := newCert(t, "urn:user:cert-op")
	users := &fakeUsers{
		password: map[string]string{"otto": "otto-password", "vera": "vera-password"},
		role:     map[string]string{"otto": "Operator", "vera": "Viewer", "cert-op": "Operator"},
	}
	ts := startServer(t, func(c *Config) {
		c.Security.Certificate, c.Security.PrivateKey = cert, key
		c.Users = users
		c.Authorization = testAuthorization
		c.ValidateUserCertificate = func(der []byte) (string, error) {
			if slices.Equal(der, userCert) {
				return "cert-op", nil
			}
			return "", errors.New("not in the user trust list")
		}
		if setup != nil {
			setup(c)
		}
	}, handlers...)
	return &identityRig{testServer: ts, users: users, userCert: userCert, userKey: userKey}
}

// endpoint returns the server's None endpoint from GetEndpoints.
func (r *identityRig) endpoint(t *testing.T) *ua.EndpointDescription {
	t.Helper()
	eps, err := opcua.GetEndpoints(testCtx(t), r.url)
	if err != nil || len(eps) != 1 {
		t.Fatalf("GetEndpoints: %v, %d endpoints", err, len(eps))
	}
	return eps[0]
}

// connect connects gopcua's client with the token type's policy of the
// endpoint and opts (AuthUsername, ...).
func (r *identityRig) connect(t *testing.T, typ ua.UserTokenType, opts ...opcua.Option) (*opcua.Client, error) {
	t.Helper()
	ep := r.endpoint(t)
	opts = append([]opcua.Option{opcua.SecurityMode(ua.MessageSecurityModeNone), opcua.AutoReconnect(false),
		opcua.RequestTimeout(5 * time.Second)}, opts...)
	opts = append(opts, opcua.SecurityFromEndpoint(ep, typ))
	c, err := opcua.NewClient(r.url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(testCtx(t)); err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, nil
}

func writeTemp(t *testing.T, c *opcua.Client, v float64) ua.StatusCode {
	t.Helper()
	res, err := c.Write(testCtx(t), &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("Write: %v", err)
	}
	return res.Results[0]
}

func (ts *testServer) temp() float64 {
	ts.store.mu.Lock()
	defer ts.store.mu.Unlock()
	return ts.store.temp
}

func TestEndpointsListTheTokenPolicies(t *testing.T) {
	r := newIdentityRig(t, nil)
	got := r.endpoint(t).UserIdentityTokens
	want := []*ua.UserTokenPolicy{
		{PolicyID: anonymousPolicyID, TokenType: ua.UserTokenTypeAnonymous},
		{PolicyID: userNamePolicyID, TokenType: ua.UserTokenTypeUserName, SecurityPolicyURI: ua.SecurityPolicyURIBasic256Sha256},
		{PolicyID: certificatePolicyID, TokenType: ua.UserTokenTypeCertificate, SecurityPolicyURI: ua.SecurityPolicyURIBasic256Sha256},
	}
	if len(got) != len(want) {
		t.Fatalf("token policies %+v, want %+v", got, want)
	}
	for i := range want {
		if *got[i] != *want[i] {
			t.Errorf("policy %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	// Without a certificate no password could be encrypted: anonymous only.
	plain := startServer(t, func(c *Config) { c.Users = r.users; c.DisableAnonymous = true })
	eps, err := opcua.GetEndpoints(testCtx(t), plain.url)
	if err != nil || len(eps[0].UserIdentityTokens) != 0 {
		t.Fatalf("no certificate, anonymous disabled: %v, %+v; want no token policy", err, eps[0].UserIdentityTokens)
	}
}

// TestUserNameTokens: gopcua encrypts the password on a None channel
// because the policy names Basic256Sha256; the server decrypts it, the
// user's role decides the write.
func TestUserNameTokens(t *testing.T) {
	r := newIdentityRig(t, nil)
	otto, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "otto-password"))
	if err != nil {
		t.Fatalf("Operator connect: %v", err)
	}
	if got := r.users.checks(); !slices.Equal(got, []string{"otto/otto-password"}) {
		t.Fatalf("directory asked %q, want the decrypted password once", got)
	}
	if st := writeTemp(t, otto, 30); st != ua.StatusOK || r.temp() != 30 {
		t.Fatalf("Operator write: %v, store %v", st, r.temp())
	}

	vera, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("vera", "vera-password"))
	if err != nil {
		t.Fatalf("Viewer connect: %v", err)
	}
	if st := writeTemp(t, vera, 99); st != ua.StatusBadUserAccessDenied || r.temp() != 30 {
		t.Fatalf("Viewer write: %v, store %v; want BadUserAccessDenied and the store untouched", st, r.temp())
	}
	if v, err := vera.Node(nodeTemp).Value(testCtx(t)); err != nil || v.Value() != 30.0 {
		t.Fatalf("Viewer read: %v, %v", v, err)
	}

	before := r.Stats().RejectedSessions
	if _, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "wrong")); !errors.Is(err, ua.StatusBadUserAccessDenied) {
		t.Fatalf("wrong password: %v, want BadUserAccessDenied", err)
	}
	if got := r.Stats().RejectedSessions; got != before+1 {
		t.Fatalf("RejectedSessions %d, want %d", got, before+1)
	}
}

// TestClearTextPasswordIsRefused: a UserName token without encryption
// never reaches the directory.
func TestClearTextPasswordIsRefused(t *testing.T) {
	r := newIdentityRig(t, nil)
	rc := dialRaw(t, r.url)
	rc.createSession(60000)
	rc.wantStatus(activateRequest(&ua.UserNameIdentityToken{PolicyID: userNamePolicyID, UserName: "otto",
		Password: []byte("otto-password")}), ua.StatusBadIdentityTokenInvalid)
	if got := r.users.checks(); len(got) != 0 {
		t.Fatalf("a clear-text password reached the directory: %q", got)
	}
}

func TestAnonymousTokens(t *testing.T) {
	r := newIdentityRig(t, nil)
	anon, err := r.connect(t, ua.UserTokenTypeAnonymous, opcua.AuthAnonymous())
	if err != nil {
		t.Fatal(err)
	}
	if st := writeTemp(t, anon, 5); st != ua.StatusBadUserAccessDenied || r.temp() != 21.5 {
		t.Fatalf("anonymous write under the default rights: %v, store %v", st, r.temp())
	}

	closed := newIdentityRig(t, func(c *Config) { c.DisableAnonymous = true })
	rc := dialRaw(t, closed.url)
	rc.createSession(60000)
	rc.wantStatus(activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID}), ua.StatusBadIdentityTokenRejected)
	for _, p := range closed.endpoint(t).UserIdentityTokens {
		if p.TokenType == ua.UserTokenTypeAnonymous {
			t.Fatal("anonymous disabled but its token policy is offered")
		}
	}
}

func TestX509Tokens(t *testing.T) {
	r := newIdentityRig(t, nil)
	c, err := r.connect(t, ua.UserTokenTypeCertificate, opcua.AuthCertificate(r.userCert), opcua.AuthPrivateKey(r.userKey))
	if err != nil {
		t.Fatalf("trusted user certificate: %v", err)
	}
	if st := writeTemp(t, c, 7); st != ua.StatusOK {
		t.Fatalf("write as cert-op (Operator): %v", st)
	}

	_, otherKey := newCert(t, "urn:user:other")
	if _, err := r.connect(t, ua.UserTokenTypeCertificate, opcua.AuthCertificate(r.userCert), opcua.AuthPrivateKey(otherKey)); !errors.Is(err, ua.StatusBadUserSignatureInvalid) {
		t.Fatalf("signed with another key: %v, want BadUserSignatureInvalid", err)
	}
	untrusted, untrustedKey := newCert(t, "urn:user:stranger")
	if _, err := r.connect(t, ua.UserTokenTypeCertificate, opcua.AuthCertificate(untrusted), opcua.AuthPrivateKey(untrustedKey)); !errors.Is(err, ua.StatusBadIdentityTokenRejected) {
		t.Fatalf("untrusted user certificate: %v, want BadIdentityTokenRejected", err)
	}
}

// TestFailedActivationsLockTheAddress: after the limit of refusals from
// one address even the right password is refused, unchecked, until the
// lockout ends on the server's clock.
func TestFailedActivationsLockTheAddress(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r := newIdentityRig(t, func(c *Config) {
		c.Clock = clock
		c.MaxActivationFailuresPerAddress = 2
		c.ActivationLockout = time.Minute
	})
	for range 2 {
		if _, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "wrong")); !errors.Is(err, ua.StatusBadUserAccessDenied) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	asked := len(r.users.checks())
	if _, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "otto-password")); !errors.Is(err, ua.StatusBadUserAccessDenied) {
		t.Fatalf("locked address, right password: %v, want BadUserAccessDenied", err)
	}
	if got := len(r.users.checks()); got != asked {
		t.Fatal("a locked address's password reached the directory")
	}
	if got := r.Stats().Refusals[LimitActivationFailures]; got < 2 {
		t.Fatalf("refusals of %s: %d, want the lock and the refused attempt", LimitActivationFailures, got)
	}
	clock.Advance(time.Minute)
	if _, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "otto-password")); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
}

// TestSlowPasswordCheckOutlastsTheUnactivatedDeadline: the unactivated
// deadline counts to the arrival of ActivateSession; a password check
// that runs past it (a bcrypt on a loaded machine) still activates the
// session, and a refused one past it ends the session at once.
func TestSlowPasswordCheckOutlastsTheUnactivatedDeadline(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r := newIdentityRig(t, func(c *Config) { c.Clock = clock })
	entered := make(chan struct{})
	var release chan struct{}
	var let func() // lets the held check go on; deferred so a failure does not hang the server's Close
	hold := func() {
		release = make(chan struct{})
		let = sync.OnceFunc(func() { close(release) })
	}
	hold()
	defer func() { let() }()
	r.users.mu.Lock()
	r.users.slow = func() {
		r.users.mu.Lock()
		ch := release
		r.users.mu.Unlock()
		entered <- struct{}{}
		<-ch
	}
	r.users.mu.Unlock()

	type result struct {
		c   *opcua.Client
		err error
	}
	connect := func(password string) chan result {
		done := make(chan result, 1)
		go func() {
			c, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", password))
			done <- result{c, err}
		}()
		return done
	}
	done := connect("otto-password")
	<-entered
	clock.Advance(limits.Defaults().UnactivatedSessionTimeout + time.Second)
	// The expiry timer runs (on its own goroutine, within microseconds)
	// while the check holds: the session stays through a window far longer.
	poll.Holds(t, 300*time.Millisecond, 10*time.Millisecond, func() error {
		if n := r.SessionCount(); n != 1 {
			return fmt.Errorf("%d sessions while the password check runs past the deadline, want 1", n)
		}
		return nil
	})
	let()
	res := <-done
	if res.err != nil {
		t.Fatalf("a check past the unactivated deadline: %v, want the session activated", res.err)
	}
	if st := writeTemp(t, res.c, 31); st != ua.StatusOK {
		t.Fatalf("write in the slowly activated session: %v", st)
	}

	r.users.mu.Lock()
	hold()
	r.users.mu.Unlock()
	done = connect("wrong")
	<-entered
	clock.Advance(limits.Defaults().UnactivatedSessionTimeout + time.Second)
	let()
	if res := <-done; !errors.Is(res.err, ua.StatusBadUserAccessDenied) {
		t.Fatalf("a wrong password: %v, want BadUserAccessDenied", res.err)
	}
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := r.SessionCount(); n != 1 {
			return fmt.Errorf("%d sessions, want the refused one ended and the first kept", n)
		}
		return nil
	})
}

func TestActivationLimiterIsBounded(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	l := newActivationLimiter(2, time.Minute, 3)
	for i, a := range []string{"a", "b", "c", "d"} {
		l.fail(a, t0.Add(time.Duration(i)*time.Second))
	}
	if len(l.byAddr) != 3 {
		t.Fatalf("%d addresses tracked, want at most 3", len(l.byAddr))
	}
	if _, ok := l.byAddr["a"]; ok {
		t.Fatal("the stalest address was kept")
	}
	if !l.fail("d", t0.Add(5*time.Second)) || !l.locked("d", t0.Add(time.Minute)) || l.locked("d", t0.Add(65*time.Second)) {
		t.Fatal("d: want locked by its second failure for one minute")
	}
}

// TestCallNeedsTheMethodsRight: a method's Right is checked before its
// arguments, and a session without it never runs the method.
func TestCallNeedsTheMethodsRight(t *testing.T) {
	r := newIdentityRig(t, nil)
	rec := &methodRecorder{}
	m := Method{Inputs: []Argument{{Name: "Text", Type: ua.TypeIDString}}, Func: rec.run, Right: RightAcknowledge}
	if err := r.RegisterMethod(nodeReset, m); err != nil {
		t.Fatal(err)
	}
	call := func(c *opcua.Client, args ...*ua.Variant) ua.StatusCode {
		res, err := c.Call(testCtx(t), &ua.CallMethodRequest{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode
	}
	vera, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("vera", "vera-password"))
	if err != nil {
		t.Fatal(err)
	}
	if st := call(vera, ua.MustVariant("ack")); st != ua.StatusBadUserAccessDenied {
		t.Fatalf("Viewer call: %v, want BadUserAccessDenied", st)
	}
	if st := call(vera); st != ua.StatusBadUserAccessDenied {
		t.Fatalf("Viewer call without arguments: %v, want BadUserAccessDenied before the argument check", st)
	}
	if len(rec.all()) != 0 {
		t.Fatal("the method ran for a Viewer")
	}
	otto, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "otto-password"))
	if err != nil {
		t.Fatal(err)
	}
	if st := call(otto, ua.MustVariant("ack")); st != ua.StatusOK {
		t.Fatalf("Operator call: %v", st)
	}
	calls := rec.all()
	if len(calls) != 1 || calls[0].Session.UserID != "otto" || calls[0].Session.Role != "Operator" || calls[0].Session.Rights != AllRights {
		t.Fatalf("calls %+v, want one by otto as Operator", calls)
	}
}

// noSource is an address space with no variables: enough for
// subscriptions without items.
type noSource struct{}

func (noSource) Read(*ua.NodeID, ua.AttributeID) *ua.DataValue {
	return &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadNodeIDUnknown}
}

func (noSource) Watch(*ua.NodeID, func(*ua.DataValue)) (func(), ua.StatusCode) {
	return nil, ua.StatusBadNodeIDUnknown
}

// TestTransferSubscriptionsOnlyToTheSameUser: a session of another user
// cannot take a subscription over (Part 4 §5.13.7: BadUserAccessDenied);
// another session of its user can.
func TestTransferSubscriptionsOnlyToTheSameUser(t *testing.T) {
	eng := subscription.New(noSource{}, subscription.Options{})
	t.Cleanup(eng.Close)
	r := newIdentityRig(t, nil, func(s *Server) { s.subs = eng })
	send := func(c *opcua.Client, req ua.Request) ua.Response {
		t.Helper()
		var out ua.Response
		if err := c.Send(testCtx(t), req, func(r ua.Response) error { out = r; return nil }); err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		return out
	}
	otto, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "otto-password"))
	if err != nil {
		t.Fatal(err)
	}
	sub := send(otto, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, RequestedLifetimeCount: 600,
		RequestedMaxKeepAliveCount: 10, PublishingEnabled: true}).(*ua.CreateSubscriptionResponse).SubscriptionID
	transfer := func(c *opcua.Client) ua.StatusCode {
		t.Helper()
		resp := send(c, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}).(*ua.TransferSubscriptionsResponse)
		return resp.Results[0].StatusCode
	}
	vera, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("vera", "vera-password"))
	if err != nil {
		t.Fatal(err)
	}
	if st := transfer(vera); st != ua.StatusBadUserAccessDenied {
		t.Fatalf("another user's transfer: %v, want BadUserAccessDenied", st)
	}
	otto2, err := r.connect(t, ua.UserTokenTypeUserName, opcua.AuthUsername("otto", "otto-password"))
	if err != nil {
		t.Fatal(err)
	}
	if st := transfer(otto2); st != ua.StatusOK {
		t.Fatalf("the same user's transfer: %v, want Good", st)
	}
}
