package host

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
)

// noUsers is an admin user store that knows no user and no token.
type noUsers struct{}

func (noUsers) User(context.Context, string) (configdb.AdminUser, error) {
	return configdb.AdminUser{}, configdb.ErrNotFound
}

func (noUsers) UserByTokenHash(context.Context, string) (configdb.AdminUser, error) {
	return configdb.AdminUser{}, configdb.ErrNotFound
}
func (noUsers) SetUserTokenHash(context.Context, string, string) error { return configdb.ErrNotFound }
func (noUsers) CountUsers(context.Context) (int, error)                { return 1, nil }

// viewerToken is the API token of the one user tokenUsers knows, Viewer
// "vic".
var viewerToken, viewerTokenHash = auth.NewToken()

// tokenUsers knows one user, by its API token only.
type tokenUsers struct{ noUsers }

func (tokenUsers) UserByTokenHash(_ context.Context, hash string) (configdb.AdminUser, error) {
	if hash != viewerTokenHash {
		return configdb.AdminUser{}, configdb.ErrNotFound
	}
	return configdb.AdminUser{Name: "vic", Role: string(admin.RoleViewer)}, nil
}

// stubs answers 200 for each host route and records which were reached.
type stubs struct{ reached []string }

func (s *stubs) handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.reached = append(s.reached, name)
		w.WriteHeader(http.StatusOK)
	})
}

// siteOpts choose a testSite: every route on (full: a driver node with
// test hooks) or only those every node serves, and Http:AnonymousRead.
type siteOpts struct{ full, anonymousRead bool }

// testSite is a site over stubs with the real admin handler, whose user
// store knows the Viewer viewerToken.
func testSite(t *testing.T, s *stubs, o siteOpts) site {
	t.Helper()
	users, err := auth.New(auth.Options{DB: tokenUsers{}})
	if err != nil {
		t.Fatal(err)
	}
	st := site{
		members: s.handler("members"), clusterConfig: s.handler("cluster config"), actors: s.handler("actors"),
		admin:         newAdmin(&adminBackend{members: &fakeMembers{}}, users, config.HttpConfig{}, slog.New(slog.DiscardHandler)),
		anonymousRead: o.anonymousRead,
	}
	if o.full {
		st.deployment, st.alerts, st.localDb, st.historian = s.handler("deployment"), s.handler("alerts"), s.handler("localdb"), s.handler("historian")
		st.floating = s.handler("floating")
		st.gc, st.serviceLevel, st.actorFault = s.handler("gc"), s.handler("service level"), s.handler("actor fault")
	}
	return st
}

// hostRoutes is the host's part of the table: its read reports guarded
// as read (viewer, or anyone with Http:AnonymousRead) and its test hooks.
func hostRoutes(read guard) []route {
	return []route{
		{pattern: "GET /api/cluster/members", guard: read},
		{pattern: "GET /api/cluster/config", guard: read},
		{pattern: "GET /api/actors", guard: read},
		{pattern: "GET /api/deployment", guard: read},
		{pattern: "GET /alerts", guard: read},
		{pattern: "GET /api/localdb", guard: read},
		{pattern: "GET /api/historian", guard: read},
		{pattern: "GET /api/floating", guard: read},
		{pattern: "POST /debug/gc", guard: testHook},
		{pattern: "POST /debug/service-level", guard: testHook},
		{pattern: "POST /debug/actor-fault", guard: testHook},
	}
}

func TestRouteTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    siteOpts
		want []route
	}{
		{"driver node with hooks", siteOpts{full: true}, hostRoutes(viewer)},
		{"admin-only node without hooks", siteOpts{}, hostRoutes(viewer)[:3]},
		{"driver node with Http:AnonymousRead", siteOpts{full: true, anonymousRead: true}, hostRoutes(anyone)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := routeTable(testSite(t, &stubs{}, tc.o))
			got := rs[:len(tc.want)]
			for i, r := range got {
				if r.pattern != tc.want[i].pattern || r.guard != tc.want[i].guard || r.handler == nil {
					t.Fatalf("route %d is %s (%s), want %s (%s)", i, r.pattern, r.guard, tc.want[i].pattern, tc.want[i].guard)
				}
			}
			admins := rs[len(tc.want):]
			for _, r := range admins {
				if strings.HasPrefix(r.pattern, "POST /debug/") || r.guard == testHook {
					t.Fatalf("an admin route is a test hook: %s", r.pattern)
				}
				if want := map[bool]guard{true: anyone, false: signedIn}[adminOpen[r.pattern]]; r.guard != want {
					t.Fatalf("%s is %s, want %s (Http:AnonymousRead opens no admin route)", r.pattern, r.guard, want)
				}
			}
			if !slices.ContainsFunc(admins, func(r route) bool { return r.pattern == "POST /api/clusters/{id}/failover" && r.guard == signedIn }) {
				t.Fatalf("the failover API is not in the table as signed in: %v", admins)
			}
			mount(http.NewServeMux(), rs) // panics on two routes with one pattern
		})
	}
}

// TestEveryReadRouteIsGuarded: no GET route of the table under /api/ or
// /alerts is open to anyone without Http:AnonymousRead, whoever adds it.
func TestEveryReadRouteIsGuarded(t *testing.T) {
	for _, r := range routeTable(testSite(t, &stubs{}, siteOpts{full: true})) {
		_, path, _ := strings.Cut(r.pattern, " ")
		if (strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/alerts")) && r.guard != viewer && r.guard != signedIn {
			t.Errorf("%s is %s: plant data must need a Viewer or above", r.pattern, r.guard)
		}
	}
}

// requestFor is a request that matches pattern.
func requestFor(pattern string) *http.Request {
	method, path, _ := strings.Cut(pattern, " ")
	path = strings.ReplaceAll(path, "{id}", "c1")
	path = strings.TrimSuffix(path, "{$}")
	if strings.HasSuffix(path, "/static/") {
		path += "missing.css"
	}
	return httptest.NewRequest(method, path, nil)
}

// walk sends every route of the table built from o one request, with
// the Authorization header authz (none when empty), and returns the
// routes, their answers and which host stubs were reached. With a token
// it walks the host's routes alone: the admin API would reach the
// backend, which this test site leaves empty.
func walk(t *testing.T, o siteOpts, authz string) ([]route, []*httptest.ResponseRecorder, []string) {
	t.Helper()
	s := &stubs{}
	rs := routeTable(testSite(t, s, o))
	if authz != "" {
		rs = slices.DeleteFunc(rs, func(r route) bool { return r.guard == signedIn || adminOpen[r.pattern] })
	}
	mux := http.NewServeMux()
	mount(mux, rs)
	recs := make([]*httptest.ResponseRecorder, len(rs))
	for i, r := range rs {
		req := requestFor(r.pattern)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		recs[i] = httptest.NewRecorder()
		mux.ServeHTTP(recs[i], req)
	}
	return rs, recs, s.reached
}

// TestRouteGuardsHoldForAnAnonymousCaller sends every route of the table a
// request without a session or a token: a viewer route answers 401 (the
// API's JSON error) without reaching its handler, a signed-in route
// refuses it (401, or a redirect to /login), every other one serves it.
func TestRouteGuardsHoldForAnAnonymousCaller(t *testing.T) {
	rs, recs, reached := walk(t, siteOpts{full: true}, "")
	guarded := 0
	for i, r := range rs {
		rec := recs[i]
		loc := rec.Header().Get("Location")
		toLogin := rec.Code == http.StatusSeeOther && (loc == "/login" || strings.HasPrefix(loc, "/login?next="))
		refused := rec.Code == http.StatusUnauthorized || toLogin
		switch {
		case r.guard == viewer && (rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json")):
			t.Errorf("%s answered an anonymous caller %d %q, want 401 JSON", r.pattern, rec.Code, rec.Header().Get("Content-Type"))
		case r.guard == signedIn && !refused:
			t.Errorf("%s served an anonymous caller: %d %q", r.pattern, rec.Code, loc)
		case r.guard != signedIn && r.guard != viewer && rec.Code == http.StatusUnauthorized:
			t.Errorf("%s refused an anonymous caller: %d", r.pattern, rec.Code)
		}
		if r.guard == viewer || r.guard == signedIn {
			guarded++
		}
	}
	if guarded < 7+3 {
		t.Fatalf("%d guarded routes, want the 7 read reports and the admin pages", guarded)
	}
	want := []string{"gc", "service level", "actor fault"}
	if !slices.Equal(reached, want) {
		t.Fatalf("host routes reached %q, want only the test hooks %q", reached, want)
	}
}

// TestReadRoutesServeAViewer: a Viewer's API token opens every read
// report; a wrong token opens none.
func TestReadRoutesServeAViewer(t *testing.T) {
	reads := []string{"members", "cluster config", "actors", "deployment", "alerts", "localdb", "historian", "floating"}
	rs, recs, reached := walk(t, siteOpts{full: true}, "Bearer "+viewerToken)
	for i, r := range rs {
		if r.guard == viewer && recs[i].Code != http.StatusOK {
			t.Errorf("%s answered a Viewer's token %d: %s", r.pattern, recs[i].Code, recs[i].Body)
		}
	}
	if !slices.Equal(reached[:len(reads)], reads) {
		t.Fatalf("host routes reached %q, want the read reports %q first", reached, reads)
	}
	wrong, _ := auth.NewToken()
	rs, recs, reached = walk(t, siteOpts{full: true}, "Bearer "+wrong)
	for i, r := range rs {
		if r.guard == viewer && recs[i].Code != http.StatusUnauthorized {
			t.Errorf("%s answered an unknown token %d", r.pattern, recs[i].Code)
		}
	}
	if slices.ContainsFunc(reached, func(s string) bool { return slices.Contains(reads, s) }) {
		t.Fatalf("an unknown token reached a read report: %q", reached)
	}
}

// TestAnonymousReadOpensTheReports: with Http:AnonymousRead the read
// reports serve a caller without credentials; the admin pages and API do
// not.
func TestAnonymousReadOpensTheReports(t *testing.T) {
	rs, recs, reached := walk(t, siteOpts{full: true, anonymousRead: true}, "")
	want := []string{"members", "cluster config", "actors", "deployment", "alerts", "localdb", "historian", "floating", "gc", "service level", "actor fault"}
	if !slices.Equal(reached, want) {
		t.Fatalf("host routes reached %q, want %q", reached, want)
	}
	for i, r := range rs {
		if r.pattern == "GET /api/clusters/{id}/redundancy" && recs[i].Code != http.StatusUnauthorized {
			t.Fatalf("%s answered an anonymous caller %d with Http:AnonymousRead, want 401", r.pattern, recs[i].Code)
		}
	}
}
