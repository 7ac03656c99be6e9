package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/otopcua/otopcua/admin"
)

// TestReaderGuardsAReport: a host report wrapped by Reader is served to a
// session or a bearer token of any role (Viewer and above) and refused
// with the API's 401 otherwise; a role this build does not know gets 403.
func TestReaderGuardsAReport(t *testing.T) {
	e := newEnv(t, admin.Options{})
	e.a.AddToken("tok-odd", "odd", admin.Role("Guest"))
	e.a.AddUser("vera", "vera-pw", admin.RoleViewer)
	cookie, _ := e.login(t, "vera", "vera-pw")
	reached := 0
	report := e.h.Reader(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached++
		w.Write([]byte(`{"devices":[]}`))
	}))
	for _, tc := range []struct {
		name       string
		authz      string
		cookie     *http.Cookie
		wantStatus int
	}{
		{"anonymous", "", nil, http.StatusUnauthorized},
		{"unknown token", "Bearer tok-nobody", nil, http.StatusUnauthorized},
		{"not a bearer", "Basic dmVyYTp2ZXJhLXB3", nil, http.StatusUnauthorized},
		{"stale cookie", "", &http.Cookie{Name: admin.SessionCookie, Value: "gone"}, http.StatusUnauthorized},
		{"viewer token", "Bearer tok-viewer", nil, http.StatusOK},
		{"administrator token", "Bearer tok-admin", nil, http.StatusOK},
		{"viewer session", "", cookie, http.StatusOK},
		{"unknown role", "Bearer tok-odd", nil, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			r := httptest.NewRequest("GET", "/api/deployment", nil)
			if tc.authz != "" {
				r.Header.Set("Authorization", tc.authz)
			}
			if tc.cookie != nil {
				r.AddCookie(tc.cookie)
			}
			w := httptest.NewRecorder()
			report.ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			if served := reached > before; served != (tc.wantStatus == http.StatusOK) {
				t.Fatalf("report reached %v with status %d", served, w.Code)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Fatalf("Cache-Control %q, want no-store", got)
			}
			if tc.wantStatus == http.StatusOK {
				return
			}
			var body struct{ Error, Reason string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Reason == "" {
				t.Fatalf("refusal is not the API's JSON error: %v %s", err, w.Body)
			}
			if tc.wantStatus == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
}

func TestRoleCanRead(t *testing.T) {
	for _, r := range admin.Roles {
		if !r.CanRead() {
			t.Errorf("%s cannot read", r)
		}
	}
	for _, r := range []admin.Role{"", "Guest", "viewer"} {
		if r.CanRead() {
			t.Errorf("%q can read", r)
		}
	}
}
