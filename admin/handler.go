package admin

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Options configure the admin pages.
type Options struct {
	// Backend is the running node. Required.
	Backend Backend
	// Auth checks logins, sessions and bearer tokens. Required.
	Auth Authenticator
	// Clock is the time source (lockout countdowns, page times). Default:
	// the wall clock.
	Clock clockwork.Clock
	// TLS: the pages are served over HTTPS (Http:Tls:CertFile/KeyFile set);
	// the session cookie is then marked Secure. Default false.
	TLS bool
	// Loopback: Http:Hostname is a loopback address, so passwords never
	// cross a network. When neither TLS nor Loopback is set every page
	// warns that passwords travel in clear text. Default false.
	Loopback bool
	// Logger receives login failures and failover requests. Default:
	// slog.Default().
	Logger *slog.Logger
}

// Time bounds of one request's calls into the Backend, so a stuck Config
// DB costs a request at most this long.
const (
	backendTimeout  = 10 * time.Second
	failoverTimeout = 30 * time.Second
)

// SessionCookie is the name of the session cookie.
const SessionCookie = "otopcua_session"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Handler serves the admin pages and JSON API. It is safe for concurrent
// use; it holds no per-session state of its own (the Authenticator does).
type Handler struct {
	backend  Backend
	auth     Authenticator
	clock    clockwork.Clock
	tls      bool
	loopback bool
	log      *slog.Logger
	pages    *pages
	cop      *http.CrossOriginProtection
	routes   []route
	mux      *http.ServeMux

	// failoverMu admits one failover request at a time; the others get
	// 503 at once instead of queueing behind a slow Backend.Failover.
	failoverMu sync.Mutex

	hasUsersMu sync.Mutex
	// hasUsersUntil: HasUsers answered true and is not asked again before
	// this instant. hasUsersMu must be held.
	hasUsersUntil time.Time
}

type route struct {
	pattern string
	handler http.Handler
}

// New builds the admin handler. It panics when Backend or Auth is nil
// (a wiring error of the caller, not a run-time condition).
func New(o Options) *Handler {
	if o.Backend == nil || o.Auth == nil {
		panic("admin.New: Options.Backend and Options.Auth are required")
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &Handler{
		backend:  o.Backend,
		auth:     o.Auth,
		clock:    o.Clock,
		tls:      o.TLS,
		loopback: o.Loopback,
		log:      o.Logger,
		pages:    mustParsePages(),
		cop:      http.NewCrossOriginProtection(),
	}
	h.cop.SetDenyHandler(http.HandlerFunc(h.crossOriginDenied))
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic("admin: embedded static folder missing: " + err.Error())
	}
	h.routes = []route{
		{"GET /login", http.HandlerFunc(h.loginPage)},
		{"POST /login", http.HandlerFunc(h.loginSubmit)},
		{"POST /logout", http.HandlerFunc(h.logout)},
		{"GET /{$}", h.page(h.overview)},
		{"GET /clusters/{id}/redundancy", h.page(h.redundancyPage)},
		{"GET /audit", h.page(h.auditPage)},
		{"GET /api/clusters", h.api(h.apiClusters)},
		{"GET /api/clusters/{id}/redundancy", h.api(h.apiRedundancy)},
		{"POST /api/clusters/{id}/failover", h.api(h.apiFailover)},
		{"GET /static/", http.StripPrefix("/static/", staticFiles(http.FileServerFS(static)))},
	}
	h.mux = http.NewServeMux()
	h.Mount(h.mux)
	return h
}

// Mount registers every admin route on mux (a *http.ServeMux or anything
// with the same Handle). Each route carries the security headers and the
// cross-origin protection.
func (h *Handler) Mount(mux interface{ Handle(string, http.Handler) }) {
	for _, r := range h.routes {
		mux.Handle(r.pattern, h.secure(r.handler))
	}
}

// ServeHTTP serves the admin routes alone (every other path is 404).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// ConfigureServer sets the time and size limits the admin pages rely on
// against clients that never finish a request, on every field of srv still
// at its zero value. Call it on the http.Server that serves Http:Port.
func ConfigureServer(srv *http.Server) {
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = 5 * time.Second
	}
	if srv.ReadTimeout == 0 {
		srv.ReadTimeout = 15 * time.Second
	}
	if srv.WriteTimeout == 0 {
		srv.WriteTimeout = 45 * time.Second // longer than failoverTimeout
	}
	if srv.IdleTimeout == 0 {
		srv.IdleTimeout = 60 * time.Second
	}
	if srv.MaxHeaderBytes == 0 {
		srv.MaxHeaderBytes = 16 << 10
	}
}

// contentSecurityPolicy allows scripts, styles and fetches from this
// server only, and no inline script at all.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure adds the security headers and refuses cross-origin
// state-changing requests (Sec-Fetch-Site / Origin checks).
func (h *Handler) secure(next http.Handler) http.Handler {
	protected := h.cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		if h.tls {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		protected.ServeHTTP(w, r)
	})
}

// staticFiles marks the embedded JavaScript and CSS cacheable for a
// short while.
func staticFiles(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) crossOriginDenied(w http.ResponseWriter, r *http.Request) {
	const reason = "cross-origin request refused: state-changing requests must come from this server's own pages"
	if isAPI(r) {
		writeAPIError(w, http.StatusForbidden, "forbidden", reason)
		return
	}
	h.errorPage(w, r, http.StatusForbidden, "Refused", reason)
}
