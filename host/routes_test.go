package host

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

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

// stubs answers 200 for each host route and records which were reached.
type stubs struct{ reached []string }

func (s *stubs) handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.reached = append(s.reached, name)
		w.WriteHeader(http.StatusOK)
	})
}

// testSite is a site with every route on (full) or only those every node
// serves, and the real admin handler.
func testSite(t *testing.T, s *stubs, full bool) site {
	t.Helper()
	users, err := auth.New(auth.Options{DB: noUsers{}})
	if err != nil {
		t.Fatal(err)
	}
	st := site{
		members: s.handler("members"), clusterConfig: s.handler("cluster config"), actors: s.handler("actors"),
		admin: newAdmin(&adminBackend{members: &fakeMembers{}}, users, config.HttpConfig{}, slog.New(slog.DiscardHandler)),
	}
	if full {
		st.deployment, st.alerts, st.localDb, st.historian = s.handler("deployment"), s.handler("alerts"), s.handler("localdb"), s.handler("historian")
		st.gc, st.serviceLevel, st.actorFault = s.handler("gc"), s.handler("service level"), s.handler("actor fault")
	}
	return st
}

func TestRouteTable(t *testing.T) {
	host := []route{
		{pattern: "GET /api/cluster/members", guard: anyone},
		{pattern: "GET /api/cluster/config", guard: anyone},
		{pattern: "GET /api/actors", guard: anyone},
		{pattern: "GET /api/deployment", guard: anyone},
		{pattern: "GET /alerts", guard: anyone},
		{pattern: "GET /api/localdb", guard: anyone},
		{pattern: "GET /api/historian", guard: anyone},
		{pattern: "POST /debug/gc", guard: testHook},
		{pattern: "POST /debug/service-level", guard: testHook},
		{pattern: "POST /debug/actor-fault", guard: testHook},
	}
	for _, tc := range []struct {
		name string
		full bool
		want []route
	}{
		{"driver node with hooks", true, host},
		{"admin-only node without hooks", false, host[:3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := routeTable(testSite(t, &stubs{}, tc.full))
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
					t.Fatalf("%s is %s, want %s", r.pattern, r.guard, want)
				}
			}
			if !slices.ContainsFunc(admins, func(r route) bool { return r.pattern == "POST /api/clusters/{id}/failover" && r.guard == signedIn }) {
				t.Fatalf("the failover API is not in the table as signed in: %v", admins)
			}
			mount(http.NewServeMux(), rs) // panics on two routes with one pattern
		})
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

// TestRouteGuardsHoldForAnAnonymousCaller sends every route of the table a
// request without a session or a token: a signed-in route refuses it (401,
// or a redirect to /login), every other one serves it.
func TestRouteGuardsHoldForAnAnonymousCaller(t *testing.T) {
	s := &stubs{}
	rs := routeTable(testSite(t, s, true))
	mux := http.NewServeMux()
	mount(mux, rs)
	signed := 0
	for _, r := range rs {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, requestFor(r.pattern))
		loc := rec.Header().Get("Location")
		toLogin := rec.Code == http.StatusSeeOther && (loc == "/login" || strings.HasPrefix(loc, "/login?next="))
		refused := rec.Code == http.StatusUnauthorized || toLogin
		switch {
		case r.guard == signedIn && !refused:
			t.Errorf("%s served an anonymous caller: %d %q", r.pattern, rec.Code, loc)
		case r.guard != signedIn && rec.Code == http.StatusUnauthorized:
			t.Errorf("%s refused an anonymous caller: %d", r.pattern, rec.Code)
		}
		if r.guard == signedIn {
			signed++
		}
	}
	if signed == 0 {
		t.Fatal("no signed-in route in the table")
	}
	want := []string{"members", "cluster config", "actors", "deployment", "alerts", "localdb", "historian", "gc", "service level", "actor fault"}
	if !slices.Equal(s.reached, want) {
		t.Fatalf("host routes reached %q, want %q", s.reached, want)
	}
}
