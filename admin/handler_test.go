package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/admintest"
	"github.com/otopcua/otopcua/configdb"
)

// env is one admin handler over in-memory fakes.
type env struct {
	h     *admin.Handler
	b     *admintest.Backend
	a     *admintest.Auth
	clock *clockwork.FakeClock
}

var t0 = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func twoNodePanel() admin.RedundancyPanel {
	return admin.RedundancyPanel{
		ClusterID: "line-1",
		Primary:   "10.0.0.1:4053",
		Members: []admin.PanelMember{
			{NodeID: "10.0.0.1:4053", Status: "Up", UpNumber: 1, Roles: []string{"admin", "driver"}, Role: "Primary", ServiceLevel: 250, HasServiceLevel: true, Reachable: true, ConfigDb: "ok", Self: true},
			{NodeID: "10.0.0.2:4053", Status: "Up", UpNumber: 2, Roles: []string{"admin", "driver"}, Role: "Secondary", ServiceLevel: 240, HasServiceLevel: true, Reachable: true, ConfigDb: "ok"},
		},
		Downing:         "keep-oldest, auto-down after 10s",
		Epoch:           7,
		Failovers:       []admin.FailoverRecord{{At: t0.Add(-time.Hour), Epoch: 7, From: "10.0.0.2:4053", To: "10.0.0.1:4053"}},
		FailoverAllowed: true,
		FailoverTarget:  "10.0.0.1:4053",
		AsOf:            t0,
	}
}

func newEnv(t *testing.T, o admin.Options) *env {
	t.Helper()
	e := &env{b: admintest.NewBackend("10.0.0.1:4053"), a: admintest.NewAuth(), clock: clockwork.NewFakeClockAt(t0)}
	e.b.SetPanel(twoNodePanel())
	e.a.AddUser("alice", "alice-pw", admin.RoleAdministrator)
	e.a.AddUser("carl", "carl-pw", admin.RoleConfigEditor)
	e.a.AddToken("tok-admin", "robot", admin.RoleAdministrator)
	e.a.AddToken("tok-viewer", "watcher", admin.RoleViewer)
	o.Backend, o.Auth, o.Clock = e.b, e.a, e.clock
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e.h = admin.New(o)
	return e
}

func (e *env) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

func loginRequest(name, password string) *http.Request {
	r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"name": {name}, "password": {password}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

// login returns the session cookie and CSRF token of a fresh session.
func (e *env) login(t *testing.T, name, password string) (*http.Cookie, string) {
	t.Helper()
	w := e.do(loginRequest(name, password))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login %s: status %d, body %s", name, w.Code, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == admin.SessionCookie {
			s, ok := e.a.Session(c.Value)
			if !ok {
				t.Fatalf("login %s: cookie names no session", name)
			}
			return c, s.CSRFToken
		}
	}
	t.Fatalf("login %s: no %s cookie", name, admin.SessionCookie)
	return nil, ""
}

func failoverRequest(cookie *http.Cookie, csrf, body string) *http.Request {
	r := httptest.NewRequest("POST", "/api/clusters/line-1/failover", strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if cookie != nil {
		r.AddCookie(cookie)
	}
	if csrf != "" {
		r.Header.Set("X-CSRF-Token", csrf)
	}
	return r
}

func apiErr(t *testing.T, w *httptest.ResponseRecorder) (code, reason string) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q, body %s", ct, w.Body)
	}
	var e struct{ Error, Reason string }
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" || e.Reason == "" {
		t.Fatalf("error body %q is not {error, reason}: %v", w.Body, err)
	}
	return e.Error, e.Reason
}

func TestLoginCookieAttributes(t *testing.T) {
	for _, tls := range []bool{false, true} {
		e := newEnv(t, admin.Options{TLS: tls})
		w := e.do(loginRequest("alice", "alice-pw"))
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
			t.Fatalf("TLS=%v: status %d Location %q; want 303 to /", tls, w.Code, w.Header().Get("Location"))
		}
		cs := w.Result().Cookies()
		if len(cs) != 1 || cs[0].Name != "otopcua_session" {
			t.Fatalf("TLS=%v: cookies %v", tls, cs)
		}
		c := cs[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure != tls {
			t.Errorf("TLS=%v: cookie %s: want HttpOnly, SameSite=Strict, Path=/, Secure=%v", tls, w.Header().Get("Set-Cookie"), tls)
		}
		if _, ok := e.a.Session(c.Value); !ok {
			t.Errorf("TLS=%v: the cookie value is not the Authenticator's session id", tls)
		}
	}
}

func TestLoginReturnsToNext(t *testing.T) {
	e := newEnv(t, admin.Options{})
	w := e.do(httptest.NewRequest("GET", "/clusters/line-1/redundancy", nil))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login?next=%2Fclusters%2Fline-1%2Fredundancy" {
		t.Fatalf("page without session: %d Location %q", w.Code, w.Header().Get("Location"))
	}
	page := e.do(httptest.NewRequest("GET", w.Header().Get("Location"), nil)).Body.String()
	if !strings.Contains(page, `name="next" value="/clusters/line-1/redundancy"`) {
		t.Fatalf("login page does not carry next:\n%s", page)
	}
	r := httptest.NewRequest("POST", "/login", strings.NewReader("name=alice&password=alice-pw&next=%2Fclusters%2Fline-1%2Fredundancy"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w := e.do(r); w.Header().Get("Location") != "/clusters/line-1/redundancy" {
		t.Fatalf("after login Location %q", w.Header().Get("Location"))
	}
}

func TestLoginFailures(t *testing.T) {
	e := newEnv(t, admin.Options{})
	w := e.do(loginRequest("alice", "wrong"))
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "Wrong name or password.") || len(w.Result().Cookies()) != 0 {
		t.Errorf("wrong password: %d, cookies %v, body %s", w.Code, w.Result().Cookies(), w.Body)
	}

	for _, tc := range []struct {
		wait       time.Duration
		retryAfter string
		in, until  string
	}{
		{5 * time.Minute, "300", "in 5m0s", "2026-03-14 09:35:00Z"},
		{1500 * time.Millisecond, "2", "in 2s", "2026-03-14 09:30:01Z"}, // rounded up: waiting Retry-After is enough
		{-time.Second, "1", "in 1s", "2026-03-14 09:29:59Z"},            // the wait ended meanwhile: at least 1
	} {
		until := t0.Add(tc.wait)
		e.a.SetLoginError(&admin.ThrottledError{Until: until, Who: "user alice from address 127.0.0.2"})
		w = e.do(loginRequest("alice", "alice-pw"))
		body := w.Body.String()
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != tc.retryAfter ||
			!strings.Contains(body, "user alice from address 127.0.0.2") || !strings.Contains(body, tc.in) ||
			!strings.Contains(body, tc.until) || !strings.Contains(body, "not checked") {
			t.Errorf("throttled for %v: %d Retry-After %q body %s; want 429, Retry-After %s", tc.wait, w.Code, w.Header().Get("Retry-After"), body, tc.retryAfter)
		}
	}
	e.a.SetLoginError(admin.ErrBusy)
	if w := e.do(loginRequest("alice", "alice-pw")); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "try again") {
		t.Errorf("busy: %d body %s", w.Code, w.Body)
	}
}

func TestLoginBodyIsBounded(t *testing.T) {
	e := newEnv(t, admin.Options{})
	big := loginRequest("alice", strings.Repeat("x", 8<<10))
	if w := e.do(big); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("8 KiB login: status %d; want 413", w.Code)
	}
	r := httptest.NewRequest("POST", "/login", strings.NewReader(`{"name":"alice","password":"alice-pw"}`))
	r.Header.Set("Content-Type", "application/json")
	if w := e.do(r); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("JSON login: status %d; want 415", w.Code)
	}
	r = httptest.NewRequest("POST", "/login", strings.NewReader("name=alice&password=alice-pw&role=x"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w := e.do(r); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "unknown form field") {
		t.Errorf("extra field: %d body %s", w.Code, w.Body)
	}
	if n := e.a.Logins(); n != 0 {
		t.Errorf("the Authenticator checked %d of these refused logins; want 0", n)
	}
}

const userAddHint = "otopcua user add NAME --role Administrator --config appsettings.json"

func TestNoUserHint(t *testing.T) {
	fresh := admin.New(admin.Options{Backend: admintest.NewBackend("n:1"), Auth: admintest.NewAuth(), Logger: slog.New(slog.DiscardHandler)})
	w := httptest.NewRecorder()
	fresh.ServeHTTP(w, httptest.NewRequest("GET", "/login", nil))
	if !strings.Contains(w.Body.String(), userAddHint) || !strings.Contains(w.Body.String(), "no default password") {
		t.Errorf("fresh install login page lacks the hint:\n%s", w.Body)
	}
	e := newEnv(t, admin.Options{})
	if body := e.do(httptest.NewRequest("GET", "/login", nil)).Body.String(); strings.Contains(body, userAddHint) {
		t.Errorf("login page with users still shows the create-a-user hint")
	}
}

func TestLoginPageFloodCostsOneUserStoreQueryPerPeriod(t *testing.T) {
	e := newEnv(t, admin.Options{})
	for range 1000 {
		e.do(httptest.NewRequest("GET", "/login", nil))
	}
	if n := e.a.HasUsersCalls(); n != 1 {
		t.Fatalf("1000 login pages asked the user store %d times; want 1", n)
	}
	e.clock.Advance(31 * time.Second)
	e.do(httptest.NewRequest("GET", "/login", nil))
	if n := e.a.HasUsersCalls(); n != 2 {
		t.Fatalf("after the period the user store was asked %d times in all; want 2", n)
	}

	// "No user" is asked every time, so the hint goes as soon as a user exists.
	fresh := admintest.NewAuth()
	h := admin.New(admin.Options{Backend: e.b, Auth: fresh, Clock: e.clock, Logger: slog.New(slog.DiscardHandler)})
	page := func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/login", nil))
		return w.Body.String()
	}
	if !strings.Contains(page(), userAddHint) {
		t.Fatal("no hint on a fresh install")
	}
	fresh.AddUser("alice", "pw", admin.RoleAdministrator)
	if strings.Contains(page(), userAddHint) {
		t.Fatal("the hint outlived the first user")
	}
}

func TestClearTextWarning(t *testing.T) {
	for _, c := range []struct{ tls, loopback, warn bool }{{false, false, true}, {true, false, false}, {false, true, false}, {true, true, false}} {
		e := newEnv(t, admin.Options{TLS: c.tls, Loopback: c.loopback})
		cookie, _ := e.login(t, "alice", "alice-pw")
		for _, path := range []string{"/login", "/", "/clusters/line-1/redundancy", "/audit"} {
			r := httptest.NewRequest("GET", path, nil)
			r.AddCookie(cookie)
			w := e.do(r)
			if w.Code != http.StatusOK {
				t.Fatalf("%s: status %d", path, w.Code)
			}
			body := w.Body.String()
			got := strings.Contains(body, `id="cleartext-warning"`) && strings.Contains(body, "Http:Tls:CertFile") && strings.Contains(body, "loopback")
			if got != c.warn {
				t.Errorf("TLS=%v Loopback=%v %s: warning shown=%v, want %v", c.tls, c.loopback, path, got, c.warn)
			}
		}
	}
}

func TestEveryPageNeedsASession(t *testing.T) {
	e := newEnv(t, admin.Options{})
	for _, path := range []string{"/", "/clusters/line-1/redundancy", "/audit"} {
		w := e.do(httptest.NewRequest("GET", path, nil))
		if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/login") {
			t.Errorf("%s without session: %d Location %q; want 303 to /login", path, w.Code, w.Header().Get("Location"))
		}
	}
	stale := &http.Cookie{Name: admin.SessionCookie, Value: "expired-or-forged"}
	for _, r := range []*http.Request{
		httptest.NewRequest("GET", "/api/clusters", nil),
		httptest.NewRequest("GET", "/api/clusters/line-1/redundancy", nil),
		failoverRequest(stale, "x", ""),
	} {
		r.AddCookie(stale)
		w := e.do(r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("%s %s without session: %d", r.Method, r.URL, w.Code)
		}
		if code, _ := apiErr(t, w); code != "not authenticated" {
			t.Errorf("%s: error %q", r.URL, code)
		}
	}
	if n := len(e.b.FailoverCalls()); n != 0 {
		t.Errorf("Failover called %d times without a session", n)
	}
}

func TestFailoverRoleIsCheckedOnTheServer(t *testing.T) {
	e := newEnv(t, admin.Options{})
	cookie, csrf := e.login(t, "carl", "carl-pw")
	w := e.do(failoverRequest(cookie, csrf, ""))
	if w.Code != http.StatusForbidden {
		t.Fatalf("ConfigEditor failover: %d %s; want 403", w.Code, w.Body)
	}
	if _, reason := apiErr(t, w); !strings.Contains(reason, "Administrator") {
		t.Errorf("reason %q does not name the role needed", reason)
	}
	r := failoverRequest(nil, "", "")
	r.Header.Set("Authorization", "Bearer tok-viewer")
	if w := e.do(r); w.Code != http.StatusForbidden {
		t.Errorf("Viewer token failover: %d; want 403", w.Code)
	}
	if calls := e.b.FailoverCalls(); len(calls) != 0 {
		t.Fatalf("Backend.Failover was called for a non-Administrator: %v", calls)
	}

	cookie, csrf = e.login(t, "alice", "alice-pw")
	w = e.do(failoverRequest(cookie, csrf, `{"expectTarget":"10.0.0.1:4053"}`))
	var res admin.FailoverResult
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &res) != nil || res.Target != "10.0.0.1:4053" {
		t.Fatalf("Administrator failover: %d %s", w.Code, w.Body)
	}
	if calls := e.b.FailoverCalls(); len(calls) != 1 || calls[0] != (admintest.FailoverCall{ClusterID: "line-1", Actor: "alice"}) {
		t.Errorf("Failover calls %v; want one for line-1 by alice", calls)
	}
}

// otherLast returns s with its last character changed (to "0", or to "1"
// when it already is "0": a token ending in "0" must not stay right).
func otherLast(s string) string {
	if strings.HasSuffix(s, "0") {
		return s[:len(s)-1] + "1"
	}
	return s[:len(s)-1] + "0"
}

func TestFailoverCSRF(t *testing.T) {
	e := newEnv(t, admin.Options{})
	cookie, csrf := e.login(t, "alice", "alice-pw")
	refused := map[string]*http.Request{
		"no token":    failoverRequest(cookie, "", ""),
		"wrong token": failoverRequest(cookie, otherLast(csrf), ""),
	}
	other := failoverRequest(cookie, csrf, "")
	other.Header.Set("Origin", "https://evil.example")
	refused["Origin of another site"] = other
	fetchSite := failoverRequest(cookie, csrf, "")
	fetchSite.Header.Set("Sec-Fetch-Site", "cross-site")
	refused["Sec-Fetch-Site cross-site"] = fetchSite
	for what, r := range refused {
		w := e.do(r)
		if w.Code != http.StatusForbidden {
			t.Errorf("%s: %d; want 403", what, w.Code)
			continue
		}
		apiErr(t, w)
	}
	if calls := e.b.FailoverCalls(); len(calls) != 0 {
		t.Fatalf("a refused cross-site request reached Backend.Failover: %v", calls)
	}
	// The same origin is fine, and a bearer token needs no CSRF token.
	same := failoverRequest(cookie, csrf, "")
	same.Header.Set("Sec-Fetch-Site", "same-origin")
	if w := e.do(same); w.Code != http.StatusOK {
		t.Errorf("same-origin with token: %d %s", w.Code, w.Body)
	}
	bearer := failoverRequest(nil, "", "")
	bearer.Header.Set("Authorization", "Bearer tok-admin")
	if w := e.do(bearer); w.Code != http.StatusOK {
		t.Errorf("bearer: %d %s", w.Code, w.Body)
	}
	if calls := e.b.FailoverCalls(); len(calls) != 2 || calls[1].Actor != "robot" {
		t.Errorf("calls %v; want alice then robot", calls)
	}
}

func TestCrossSiteLoginAndLogoutAreRefused(t *testing.T) {
	e := newEnv(t, admin.Options{})
	login := loginRequest("alice", "alice-pw")
	login.Header.Set("Sec-Fetch-Site", "cross-site")
	if w := e.do(login); w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
		t.Errorf("cross-site login: %d cookies %v; want 403 and no session", w.Code, w.Result().Cookies())
	}
	if n := e.a.Logins(); n != 0 {
		t.Errorf("a cross-site login reached the Authenticator (%d)", n)
	}
	cookie, csrf := e.login(t, "alice", "alice-pw")
	r := httptest.NewRequest("POST", "/logout", strings.NewReader("csrf="+url.QueryEscape(csrf)))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "https://evil.example")
	r.AddCookie(cookie)
	if w := e.do(r); w.Code != http.StatusForbidden {
		t.Errorf("logout from another origin: %d; want 403", w.Code)
	}
	if _, ok := e.a.Session(cookie.Value); !ok {
		t.Error("a logout from another origin ended the session")
	}
}

func TestFailoverRefusedPassesReason(t *testing.T) {
	e := newEnv(t, admin.Options{})
	const why = "fewer than two Up driver members: with one node a failover is a shutdown"
	e.b.Update("line-1", func(p *admin.RedundancyPanel) { p.FailoverAllowed, p.FailoverBlocked = false, why })
	r := failoverRequest(nil, "", "")
	r.Header.Set("Authorization", "Bearer tok-admin")
	w := e.do(r)
	if w.Code != http.StatusConflict {
		t.Fatalf("refused failover: %d %s; want 409", w.Code, w.Body)
	}
	if code, reason := apiErr(t, w); code != "refused" || reason != why {
		t.Errorf("error %q reason %q; want refused / %q", code, reason, why)
	}
}

func TestFailoverOfAnUnconfirmedNodeIsRefused(t *testing.T) {
	e := newEnv(t, admin.Options{})
	r := failoverRequest(nil, "", `{"expectTarget":"10.0.0.2:4053"}`)
	r.Header.Set("Authorization", "Bearer tok-admin")
	w := e.do(r)
	if w.Code != http.StatusConflict {
		t.Fatalf("stale confirmation: %d %s; want 409", w.Code, w.Body)
	}
	if _, reason := apiErr(t, w); !strings.Contains(reason, "10.0.0.1:4053") {
		t.Errorf("reason %q does not name the node it would act on", reason)
	}
	if calls := e.b.FailoverCalls(); len(calls) != 0 {
		t.Errorf("Failover called despite the stale confirmation: %v", calls)
	}
}

func TestAPIErrors(t *testing.T) {
	e := newEnv(t, admin.Options{})
	bearer := func(method, path, body string) *http.Request {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok-admin")
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		return r
	}
	cases := []struct {
		name   string
		r      *http.Request
		status int
		code   string
	}{
		{"unknown cluster", bearer("GET", "/api/clusters/nope/redundancy", ""), 404, "unknown cluster"},
		{"unknown cluster failover", bearer("POST", "/api/clusters/nope/failover", ""), 404, "unknown cluster"},
		{"ClusterId too long", bearer("GET", "/api/clusters/"+strings.Repeat("x", 65)+"/redundancy", ""), 400, "bad request"},
		{"ClusterId with a control character", bearer("GET", "/api/clusters/a%01b/redundancy", ""), 400, "bad request"},
		{"unknown JSON field", bearer("POST", "/api/clusters/line-1/failover", `{"target":"10.0.0.2:4053"}`), 400, "bad request"},
		{"body too large", bearer("POST", "/api/clusters/line-1/failover", `{"expectTarget":"`+strings.Repeat("x", 2000)+`"}`), 413, "bad request"},
		{"unknown token", func() *http.Request {
			r := bearer("GET", "/api/clusters", "")
			r.Header.Set("Authorization", "Bearer nope")
			return r
		}(), 401, "not authenticated"},
		{"not a bearer", func() *http.Request {
			r := bearer("GET", "/api/clusters", "")
			r.Header.Set("Authorization", "Basic YTpi")
			return r
		}(), 401, "not authenticated"},
	}
	for _, c := range cases {
		w := e.do(c.r)
		if w.Code != c.status {
			t.Errorf("%s: status %d body %s; want %d", c.name, w.Code, w.Body, c.status)
			continue
		}
		if code, _ := apiErr(t, w); code != c.code {
			t.Errorf("%s: error %q; want %q", c.name, code, c.code)
		}
	}
	e.b.SetFailoverError(errors.New("config db: connection refused"))
	w := e.do(bearer("POST", "/api/clusters/line-1/failover", ""))
	if _, reason := apiErr(t, w); w.Code != http.StatusServiceUnavailable || !strings.Contains(reason, "connection refused") {
		t.Errorf("backend failure: %d reason %q; want 503 with the cause", w.Code, reason)
	}
}

func TestAPIReadsThePanel(t *testing.T) {
	e := newEnv(t, admin.Options{})
	cookie, _ := e.login(t, "carl", "carl-pw")
	r := httptest.NewRequest("GET", "/api/clusters/line-1/redundancy", nil)
	r.AddCookie(cookie)
	w := e.do(r)
	var p admin.RedundancyPanel
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &p) != nil {
		t.Fatalf("panel: %d %s", w.Code, w.Body)
	}
	if p.Primary != "10.0.0.1:4053" || len(p.Members) != 2 || p.Members[1].ServiceLevel != 240 || !p.AsOf.Equal(t0) {
		t.Errorf("panel %+v", p)
	}
	r = httptest.NewRequest("GET", "/api/clusters", nil)
	r.AddCookie(cookie)
	var cs []admin.ClusterSummary
	if w := e.do(r); json.Unmarshal(w.Body.Bytes(), &cs) != nil || len(cs) != 1 || cs[0].UpDrivers != 2 || cs[0].Primary != "10.0.0.1:4053" {
		t.Errorf("clusters %s", w.Body)
	}
}

func TestLogoutNeedsTheToken(t *testing.T) {
	e := newEnv(t, admin.Options{})
	cookie, csrf := e.login(t, "alice", "alice-pw")
	post := func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/logout", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(cookie)
		return e.do(r)
	}
	if w := post(""); w.Code != http.StatusForbidden {
		t.Errorf("logout without token: %d; want 403", w.Code)
	}
	if w := post("csrf=forged"); w.Code != http.StatusForbidden {
		t.Errorf("logout with a wrong token: %d; want 403", w.Code)
	}
	if _, ok := e.a.Session(cookie.Value); !ok {
		t.Fatal("a refused logout ended the session")
	}
	w := post("csrf=" + url.QueryEscape(csrf))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login" {
		t.Fatalf("logout: %d Location %q", w.Code, w.Header().Get("Location"))
	}
	if _, ok := e.a.Session(cookie.Value); ok {
		t.Error("the session outlived its logout")
	}
	if cs := w.Result().Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Errorf("logout does not clear the cookie: %v", cs)
	}
}

func TestAuditPage(t *testing.T) {
	e := newEnv(t, admin.Options{})
	e.b.AddAudit(configdb.AuditEntry{At: t0, Actor: "alice", Action: "cluster.manual-failover", Target: "<b>10.0.0.1:4053</b>"})
	get := func(c *http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/audit", nil)
		r.AddCookie(c)
		return e.do(r)
	}
	admin1, _ := e.login(t, "alice", "alice-pw")
	w := get(admin1)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "cluster.manual-failover") || !strings.Contains(body, "&lt;b&gt;10.0.0.1:4053&lt;/b&gt;") || strings.Contains(body, "<b>10.0.0.1") {
		t.Errorf("audit page for an Administrator: %d\n%s", w.Code, body)
	}
	editor, _ := e.login(t, "carl", "carl-pw")
	if w := get(editor); w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "cluster.manual-failover") {
		t.Errorf("audit page for a ConfigEditor: %d; want 403 without the rows", w.Code)
	}
	e.b.SetAuditError(errors.New("config db down"))
	if w := get(admin1); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "config db down") {
		t.Errorf("audit with the Config DB down: %d", w.Code)
	}
}

// button returns the Trigger failover button's tag.
func button(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<button[^>]*id="failover-button"[^>]*>`).FindString(page)
	if m == "" {
		t.Fatalf("no failover button in\n%s", page)
	}
	return m
}

func TestRedundancyPage(t *testing.T) {
	e := newEnv(t, admin.Options{})
	e.b.Update("line-1", func(p *admin.RedundancyPanel) { p.Downing = `<script>alert("x")</script>` })
	get := func(c *http.Cookie) string {
		r := httptest.NewRequest("GET", "/clusters/line-1/redundancy", nil)
		r.AddCookie(c)
		w := e.do(r)
		if w.Code != http.StatusOK {
			t.Fatalf("panel page: %d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	alice, _ := e.login(t, "alice", "alice-pw")
	page := get(alice)
	for _, want := range []string{`id="primary">10.0.0.1:4053<`, `data-node-id="10.0.0.2:4053"`, `data-service-level="240"`, `id="epoch">7<`, "2026-03-14 08:30:00Z", `id="failover-dialog"`, "ServiceLevel 250 moves to the other node", `&lt;script&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("Administrator's panel lacks %q", want)
		}
	}
	if strings.Contains(page, `<script>alert`) {
		t.Error("the downing text reached the page unescaped")
	}
	if b := button(t, page); strings.Contains(b, "disabled") {
		t.Errorf("Administrator with two Up drivers gets %s; want it enabled", b)
	}

	e.b.Update("line-1", func(p *admin.RedundancyPanel) {
		p.FailoverAllowed, p.FailoverBlocked = false, "fewer than two Up driver members"
	})
	if b := button(t, get(alice)); !strings.Contains(b, "disabled") || !strings.Contains(b, `title="fewer than two Up driver members"`) {
		t.Errorf("blocked failover button %s; want disabled with the reason as title", b)
	}

	carl, _ := e.login(t, "carl", "carl-pw")
	page = get(carl)
	if b := button(t, page); !strings.Contains(b, "disabled") || !strings.Contains(b, "Only an Administrator") {
		t.Errorf("ConfigEditor's button %s; want disabled", b)
	}
	if strings.Contains(page, `id="failover-dialog"`) {
		t.Error("ConfigEditor's page carries the confirmation dialog")
	}
}

func TestSecurityHeadersAndNoInlineScript(t *testing.T) {
	e := newEnv(t, admin.Options{})
	alice, _ := e.login(t, "alice", "alice-pw")
	for _, path := range []string{"/login", "/", "/clusters/line-1/redundancy", "/api/clusters", "/static/admin.js"} {
		r := httptest.NewRequest("GET", path, nil)
		r.AddCookie(alice)
		w := e.do(r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, w.Code)
		}
		h := w.Header()
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") == "" {
			t.Errorf("%s: headers %v", path, h)
		}
		if strings.HasSuffix(path, ".js") {
			if ct := h.Get("Content-Type"); !strings.Contains(ct, "javascript") {
				t.Errorf("admin.js served as %q", ct)
			}
			continue
		}
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(w.Body.String(), -1) {
			if !strings.Contains(tag, `src="/static/`) {
				t.Errorf("%s: inline script %s", path, tag)
			}
		}
	}
}

// blockingBackend holds Failover until release is closed.
type blockingBackend struct {
	*admintest.Backend
	entered chan struct{}
	release chan struct{}
}

func (b *blockingBackend) Failover(ctx context.Context, id, actor string) (admin.FailoverResult, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Backend.Failover(ctx, id, actor)
}

func TestOneFailoverAtATime(t *testing.T) {
	b := &blockingBackend{Backend: admintest.NewBackend("n:1"), entered: make(chan struct{}), release: make(chan struct{})}
	b.SetPanel(twoNodePanel())
	a := admintest.NewAuth()
	a.AddToken("tok", "robot", admin.RoleAdministrator)
	h := admin.New(admin.Options{Backend: b, Auth: a, Logger: slog.New(slog.DiscardHandler)})
	post := func() *httptest.ResponseRecorder {
		r := failoverRequest(nil, "", "")
		r.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	first := make(chan int)
	go func() { first <- post().Code }()
	<-b.entered // the first request is inside Backend.Failover
	for i := 0; i < 50; i++ {
		if w := post(); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("request %d while a failover is in flight: %d; want 503", i, w.Code)
		}
	}
	close(b.release)
	if code := <-first; code != http.StatusOK {
		t.Fatalf("first failover: %d", code)
	}
	if n := len(b.FailoverCalls()); n != 1 {
		t.Fatalf("Failover reached the backend %d times; want 1", n)
	}
	go func() { <-b.entered }() // let the next one through
	if w := post(); w.Code != http.StatusOK {
		t.Fatalf("failover after the first finished: %d", w.Code)
	}
}

func TestStaticAndOverview(t *testing.T) {
	e := newEnv(t, admin.Options{})
	e.b.SetPanel(admin.RedundancyPanel{ClusterID: "line 2/β", Epoch: 1})
	alice, _ := e.login(t, "alice", "alice-pw")
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(alice)
	body := e.do(r).Body.String()
	if !strings.Contains(body, `href="/clusters/line-1/redundancy"`) || !strings.Contains(body, `href="/clusters/line%202%2F%CE%B2/redundancy"`) {
		t.Errorf("overview links:\n%s", body)
	}
	r = httptest.NewRequest("GET", "/clusters/line%202%2F%CE%B2/redundancy", nil)
	r.AddCookie(alice)
	if w := e.do(r); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `data-cluster-id="line 2/β"`) {
		t.Errorf("escaped ClusterId link does not reach its panel: %d", w.Code)
	}
	css, _ := io.ReadAll(e.do(httptest.NewRequest("GET", "/static/admin.css", nil)).Body)
	if !strings.Contains(string(css), "#primary") {
		t.Error("admin.css not served")
	}
}
