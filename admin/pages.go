package admin

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/otopcua/otopcua/configdb"
)

// auditLimit is how many audit_log rows /audit lists.
const auditLimit = 200

// pages holds the parsed templates, one per page, each with the layout.
type pages struct {
	byName map[string]*template.Template
}

var templateFuncs = template.FuncMap{
	"fmtTime":    fmtTime,
	"pathEscape": url.PathEscape,
}

// fmtTime renders a time the same way admin.js does: UTC, to the second.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func mustParsePages() *pages {
	base := template.Must(template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html"))
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range []string{"login.html", "overview.html", "redundancy.html", "audit.html", "error.html"} {
		p.byName[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name))
	}
	return p
}

// layoutData is what every page's layout reads.
type layoutData struct {
	Title string
	// User is nil on the login and error pages without a session.
	User *User
	// CSRF is the session's token, for the logout form and admin.js.
	CSRF string
	// ClearText: neither TLS nor loopback, so passwords cross the network
	// readable by anyone on the path.
	ClearText bool
	NodeID    string
	// Page is the page's own data.
	Page any
}

func (h *Handler) layout(title string, s *Session, page any) layoutData {
	d := layoutData{Title: title, ClearText: !h.tls && !h.loopback, NodeID: h.backend.NodeID(), Page: page}
	if s != nil {
		u := s.User
		d.User = &u
		d.CSRF = s.CSRFToken
	}
	return d
}

// render executes a page into a buffer first, so a template error never
// sends half a page.
func (h *Handler) render(w http.ResponseWriter, status int, name string, d layoutData) {
	var buf bytes.Buffer
	if err := h.pages.byName[name].Execute(&buf, d); err != nil {
		h.log.Error("admin: page template failed", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorPageData struct {
	Status  int
	Heading string
	Message string
}

func (h *Handler) errorPage(w http.ResponseWriter, r *http.Request, status int, heading, msg string) {
	var sp *Session
	if s, ok := h.sessionOf(r); ok {
		sp = &s
	}
	h.render(w, status, "error.html", h.layout(heading, sp, errorPageData{Status: status, Heading: heading, Message: msg}))
}

type loginData struct {
	Name    string
	Next    string
	Error   string
	NoUsers bool
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if !localPath(next) {
		next = ""
	}
	h.renderLogin(w, r, http.StatusOK, loginData{Next: next})
}

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, d loginData) {
	d.NoUsers = h.noUsers(r.Context())
	w.Header().Set("Cache-Control", "no-store")
	h.render(w, status, "login.html", h.layout("Log in", nil, d))
}

// hasUsersFor is how long a "users exist" answer is reused, so a flood of
// GET /login costs one user-store query per period. "No user" is never
// reused: the hint goes away as soon as the first user is added.
const hasUsersFor = 30 * time.Second

// noUsers reports whether the user store is known to hold no user (false
// when it cannot be read: the hint is then not shown).
func (h *Handler) noUsers(ctx context.Context) bool {
	now := h.clock.Now()
	h.hasUsersMu.Lock()
	cached := now.Before(h.hasUsersUntil)
	h.hasUsersMu.Unlock()
	if cached {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, backendTimeout)
	defer cancel()
	has, err := h.auth.HasUsers(ctx)
	if err != nil {
		h.log.Warn("admin: cannot tell whether any user exists", "err", err)
		return false
	}
	if has {
		h.hasUsersMu.Lock()
		h.hasUsersUntil = now.Add(hasUsersFor)
		h.hasUsersMu.Unlock()
	}
	return !has
}

// loginSubmit checks the name and password and opens a session.
func (h *Handler) loginSubmit(w http.ResponseWriter, r *http.Request) {
	body, status, reason := readBody(w, r, maxLoginBody, "application/x-www-form-urlencoded")
	if status != 0 {
		h.renderLogin(w, r, status, loginData{Error: reason})
		return
	}
	f, err := decodeLogin(body)
	if err != nil {
		h.renderLogin(w, r, http.StatusBadRequest, loginData{Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), backendTimeout)
	defer cancel()
	s, err := h.auth.Login(ctx, f.Name, f.Password, remoteHost(r))
	if err != nil {
		h.loginFailed(w, r, f, err)
		return
	}
	h.log.Info("admin: login", "user", s.User.Name, "role", s.User.Role, "from", remoteHost(r))
	h.setSessionCookie(w, s.ID)
	http.Redirect(w, r, f.Next, http.StatusSeeOther)
}

func (h *Handler) loginFailed(w http.ResponseWriter, r *http.Request, f loginForm, err error) {
	d := loginData{Name: f.Name, Next: f.Next}
	var throttled *ThrottledError
	switch {
	case errors.Is(err, ErrBadCredentials):
		h.log.Warn("admin: wrong name or password", "user", f.Name, "from", remoteHost(r))
		d.Error = "Wrong name or password."
		h.renderLogin(w, r, http.StatusUnauthorized, d)
	case errors.As(err, &throttled):
		wait := retryAfter(throttled.Until, h.clock.Now())
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		d.Error = "Too many failed logins of " + throttled.Who + ": this attempt was not checked, and none is before " +
			fmtTime(throttled.Until) + " (in " + wait.String() + "); each earlier attempt makes the wait longer."
		h.renderLogin(w, r, http.StatusTooManyRequests, d)
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "1")
		d.Error = "Too many logins are being checked at once; try again in a moment."
		h.renderLogin(w, r, http.StatusServiceUnavailable, d)
	default:
		h.log.Error("admin: login check failed", "user", f.Name, "err", err)
		d.Error = "The login could not be checked: " + err.Error()
		h.renderLogin(w, r, http.StatusServiceUnavailable, d)
	}
}

// retryAfter is the whole seconds, at least one, from now until until
// (rounded up: a client that waits that long is not refused again).
func retryAfter(until, now time.Time) time.Duration {
	secs := (until.Sub(now) + time.Second - 1) / time.Second
	return max(secs, 1) * time.Second
}

// logout ends the session. It needs the session's CSRF token (form field
// csrf or X-CSRF-Token), so another site cannot log an operator out.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	s, ok := h.sessionOf(r)
	if !ok {
		h.clearSessionCookie(w)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	token := r.Header.Get("X-CSRF-Token")
	if token == "" {
		body, status, reason := readBody(w, r, maxLogoutBody, "application/x-www-form-urlencoded")
		if status != 0 {
			h.errorPage(w, r, status, "Bad request", reason)
			return
		}
		if token, _ = decodeCSRFForm(body); token == "" {
			h.errorPage(w, r, http.StatusForbidden, "Refused", "the logout form did not carry this session's token; log out from the page's own button")
			return
		}
	}
	if !csrfMatches(s, token) {
		h.errorPage(w, r, http.StatusForbidden, "Refused", "the logout request carried a token that does not match this session")
		return
	}
	h.auth.Logout(s.ID)
	h.clearSessionCookie(w)
	h.log.Info("admin: logout", "user", s.User.Name)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (h *Handler) overview(w http.ResponseWriter, _ *http.Request, s Session) {
	h.render(w, http.StatusOK, "overview.html", h.layout("Clusters", &s, h.backend.Clusters()))
}

type redundancyData struct {
	Panel RedundancyPanel
	// CanFailover: the user's role may trigger a failover.
	CanFailover bool
}

func (h *Handler) redundancyPage(w http.ResponseWriter, r *http.Request, s Session) {
	id, err := parseClusterID(r.PathValue("id"))
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Bad ClusterId", err.Error())
		return
	}
	p, err := h.backend.Redundancy(id)
	if err != nil {
		status, reason := backendStatus(err)
		h.errorPage(w, r, status, "Cluster "+id, reason)
		return
	}
	d := redundancyData{Panel: p, CanFailover: s.User.Role.CanFailover()}
	h.render(w, http.StatusOK, "redundancy.html", h.layout("Redundancy of "+id, &s, d))
}

func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, s Session) {
	if !s.User.Role.CanReadAudit() {
		h.errorPage(w, r, http.StatusForbidden, "Not allowed", "only an Administrator may read the audit log (you are "+string(s.User.Role)+")")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), backendTimeout)
	defer cancel()
	rows, err := h.backend.Audit(ctx, auditLimit)
	if err != nil {
		h.errorPage(w, r, http.StatusServiceUnavailable, "Audit log unavailable", "the audit log could not be read from the Config DB: "+err.Error())
		return
	}
	h.render(w, http.StatusOK, "audit.html", h.layout("Audit log", &s, auditData{Rows: rows, Limit: auditLimit}))
}

type auditData struct {
	Rows  []configdb.AuditEntry
	Limit int
}

// remoteHost is the client's address without the port (what the
// Authenticator rate-limits by). Forwarding headers are not trusted.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
