package host

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"

	"github.com/otopcua/otopcua/admin"
)

// guard is who may call a route of Http:Port.
type guard int

const (
	// anyone: no sign-in. The admin pages' login, logout and static
	// files; the host's read reports with Http:AnonymousRead. (/healthz,
	// /readyz and /metrics, mounted by health.HTTPServer, are open too.)
	anyone guard = iota
	// testHook: no sign-in, and mounted only when the process runs with a
	// test-hook variable (EnvTestHooks, EnvGCHook). Never in production.
	testHook
	// signedIn: an admin session (pages: a redirect to /login without
	// one) or an API token (API: 401 without one), checked by the admin
	// package.
	signedIn
	// viewer: a host read report, served to a session or an API token of
	// role Viewer or above (admin.Handler.Reader), 401 with the API's JSON
	// error without one.
	viewer
)

func (g guard) String() string {
	switch g {
	case anyone:
		return "anyone"
	case testHook:
		return "test hook"
	case signedIn:
		return "signed in"
	case viewer:
		return "viewer"
	}
	return fmt.Sprintf("guard(%d)", int(g))
}

// route is one line of Http:Port's route table.
type route struct {
	pattern string // an http.ServeMux pattern
	guard   guard
	handler http.Handler
}

// site is what Http:Port serves beside /healthz, /readyz and /metrics
// (health.HTTPServer mounts those three itself, open to anyone): a handler
// per route, nil for a route this node does not serve.
type site struct {
	members, clusterConfig, actors http.Handler
	// deployment and alerts on a driver node; localDb with LocalDb
	// replication on; historian with a LocalDb.
	deployment, alerts, localDb, historian http.Handler
	// floating with Redundancy:FloatingAddress.
	floating http.Handler
	// gc with EnvGCHook; serviceLevel and actorFault with EnvTestHooks.
	gc, serviceLevel, actorFault http.Handler
	// admin serves the admin pages and JSON API (docs/admin.md) and
	// guards the read reports. Required.
	admin *admin.Handler
	// anonymousRead is Http:AnonymousRead: the read reports are open to
	// anyone (a lab) instead of guarded as viewer.
	anonymousRead bool
}

// routeTable is Http:Port's route table: every route this node serves
// beside the probes and /metrics, with its guard. The host's own routes are
// read-only reports, for a Viewer or above (anyone with
// Http:AnonymousRead), and test hooks; the admin package's routes follow,
// signed in but for its login, logout and static files.
func routeTable(s site) []route {
	if s.admin == nil {
		panic("host: routeTable needs the admin handler: it guards the read reports")
	}
	read := viewer
	if s.anonymousRead {
		read = anyone
	}
	rs := []route{
		{"GET /api/cluster/members", read, s.members},
		{"GET /api/cluster/config", read, s.clusterConfig},
		{"GET /api/actors", read, s.actors},
		{"GET /api/deployment", read, s.deployment},
		{"GET /alerts", read, s.alerts},
		{"GET /api/localdb", read, s.localDb},
		{"GET /api/historian", read, s.historian},
		{"GET /api/floating", read, s.floating},
		{"POST /debug/gc", testHook, s.gc},
		{"POST /debug/service-level", testHook, s.serviceLevel},
		{"POST /debug/actor-fault", testHook, s.actorFault},
	}
	rs = slices.DeleteFunc(rs, func(r route) bool { return r.handler == nil })
	for i, r := range rs {
		if r.guard == viewer {
			rs[i].handler = s.admin.Reader(r.handler)
		}
	}
	var admins adminRoutes
	s.admin.Mount(&admins)
	return append(rs, admins...)
}

// adminOpen are the admin routes served without sign-in: the rest of the
// admin package's routes check a session or an API token.
var adminOpen = map[string]bool{
	"GET /login":   true,
	"POST /login":  true,
	"POST /logout": true,
	"GET /static/": true,
}

// adminRoutes collects the admin package's routes (with its security
// headers and cross-origin protection around each) as route table lines.
type adminRoutes []route

// Handle records one admin route.
func (a *adminRoutes) Handle(pattern string, h http.Handler) {
	g := signedIn
	if adminOpen[pattern] {
		g = anyone
	}
	*a = append(*a, route{pattern: pattern, guard: g, handler: h})
}

// mount registers rs on mux.
func mount(mux interface{ Handle(string, http.Handler) }, rs []route) {
	for _, r := range rs {
		mux.Handle(r.pattern, r.handler)
	}
}

// gcHandler is the test hook POST /debug/gc: a full collection that
// returns freed memory to the operating system.
func gcHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		debug.FreeOSMemory() // runs a full collection first
		fmt.Fprintln(w, "collected")
	})
}
