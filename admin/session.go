package admin

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// caller is who made an API request: a browser session (CSRF token
// required on POST) or a bearer token (no cookie, so no CSRF).
type caller struct {
	User User
	// Session is nil for a bearer token.
	Session *Session
}

// sessionOf returns the live session the request's cookie names.
func (h *Handler) sessionOf(r *http.Request) (Session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > maxCredentialLen {
		return Session{}, false
	}
	return h.auth.Session(c.Value)
}

// setSessionCookie hands the browser the session id: HttpOnly (no script
// reads it), SameSite=Strict (no other site's page sends it), Secure when
// served over TLS. It carries no expiry: the Authenticator expires the
// session on the server, and the browser drops the cookie when it closes.
func (h *Handler) setSessionCookie(w http.ResponseWriter, id string) {
	h.sessionCookie(w, id, 0)
}

// clearSessionCookie tells the browser to drop the session cookie.
func (h *Handler) clearSessionCookie(w http.ResponseWriter) {
	h.sessionCookie(w, "", -1)
}

func (h *Handler) sessionCookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     SessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   h.tls,
		SameSite: http.SameSiteStrictMode,
	})
}

// csrfMatches compares the token the request carried with the session's,
// in constant time.
func csrfMatches(s Session, got string) bool {
	return s.CSRFToken != "" && len(got) == len(s.CSRFToken) &&
		subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRFToken)) == 1
}

// page wraps a page handler: without a live session the browser is sent
// to /login, which returns here afterwards.
func (h *Handler) page(fn func(http.ResponseWriter, *http.Request, Session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := h.sessionOf(r)
		if !ok {
			target := "/login"
			if next := r.URL.RequestURI(); next != "/" && localPath(next) {
				target += "?next=" + url.QueryEscape(next)
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fn(w, r, s)
	})
}

// api wraps a JSON API handler: the caller is authenticated by an
// Authorization: Bearer token or by the session cookie; a cookie-borne
// POST must carry the session's CSRF token in X-CSRF-Token.
func (h *Handler) api(fn func(http.ResponseWriter, *http.Request, caller)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		c, status, reason := h.authenticateAPI(r)
		if status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="otopcua"`)
				writeAPIError(w, status, "not authenticated", reason)
			} else {
				writeAPIError(w, status, errorCode(status), reason)
			}
			return
		}
		if c.Session != nil && r.Method != http.MethodGet && r.Method != http.MethodHead &&
			!csrfMatches(*c.Session, r.Header.Get("X-CSRF-Token")) {
			writeAPIError(w, http.StatusForbidden, "forbidden", "the X-CSRF-Token header is missing or does not match this session")
			return
		}
		fn(w, r, c)
	})
}

// Reader guards a read-only report of the host (JSON or text) with the
// API's rule: the caller is signed in (session cookie) or sends
// Authorization: Bearer TOKEN, of role Viewer or above; else 401 with the
// API's JSON error, as every /api/ route of this package answers. The
// answer is marked no-store: reports show device addresses and live
// process values. The security headers are added as on every admin route.
func (h *Handler) Reader(next http.Handler) http.Handler {
	return h.secure(h.api(func(w http.ResponseWriter, r *http.Request, c caller) {
		if !c.User.Role.CanRead() {
			writeAPIError(w, http.StatusForbidden, "forbidden", "the role "+strconv.Quote(string(c.User.Role))+" may not read this report")
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// authenticateAPI returns the caller, or the HTTP status and reason to
// refuse with.
func (h *Handler) authenticateAPI(r *http.Request) (caller, int, string) {
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, token, ok := strings.Cut(authz, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return caller{}, http.StatusUnauthorized, "the Authorization header must be \"Bearer TOKEN\" (otopcua user token NAME prints one)"
		}
		if len(token) > maxCredentialLen {
			return caller{}, http.StatusUnauthorized, "unknown bearer token"
		}
		ctx, cancel := context.WithTimeout(r.Context(), backendTimeout)
		defer cancel()
		u, err := h.auth.Bearer(ctx, token)
		switch {
		case err == nil:
			return caller{User: u}, 0, ""
		case errors.Is(err, ErrNoToken):
			return caller{}, http.StatusUnauthorized, "unknown bearer token"
		default:
			h.log.Warn("admin: bearer token check failed", "err", err)
			return caller{}, http.StatusServiceUnavailable, "the token could not be checked: " + err.Error()
		}
	}
	s, ok := h.sessionOf(r)
	if !ok {
		return caller{}, http.StatusUnauthorized, "log in at /login or send Authorization: Bearer TOKEN"
	}
	return caller{User: s.User, Session: &s}, 0, ""
}
