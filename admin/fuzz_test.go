package admin_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/admin"
)

// expectedStatus is every status the admin routes may answer with.
var expectedStatus = map[int]bool{
	200: true, 301: true, 303: true, 307: true, 308: true, 400: true, 401: true, 403: true,
	404: true, 405: true, 409: true, 413: true, 415: true, 429: true, 503: true,
}

// FuzzAPIRequest sends arbitrary requests through the whole handler over
// the fakes: it never panics, answers only expected statuses, every API
// error is JSON, and only an authenticated Administrator with the CSRF
// token (or a bearer token) ever reaches Backend.Failover.
func FuzzAPIRequest(f *testing.F) {
	f.Add(uint8(0), "/api/clusters/line-1/failover", []byte(`{"expectTarget":"10.0.0.1:4053"}`), "application/json", uint8(1), true, "")
	f.Add(uint8(0), "/api/clusters/line-1/failover", []byte(``), "", uint8(2), true, "")
	f.Add(uint8(0), "/api/clusters/line-1/failover", []byte(`{"expectTarget":1}`), "application/json", uint8(3), false, "https://evil.example")
	f.Add(uint8(1), "/api/clusters/%00/redundancy", []byte(nil), "", uint8(1), false, "")
	f.Add(uint8(1), "/clusters/line-1/redundancy", []byte(nil), "", uint8(2), false, "")
	f.Add(uint8(0), "/login", []byte("name=alice&password=alice-pw"), "application/x-www-form-urlencoded", uint8(0), false, "")
	f.Add(uint8(0), "/logout", []byte("csrf=x"), "application/x-www-form-urlencoded", uint8(1), false, "")
	f.Add(uint8(2), "/api//clusters/../audit", []byte("x"), "text/plain", uint8(4), true, "")
	f.Fuzz(func(t *testing.T, method uint8, path string, body []byte, contentType string, who uint8, withCSRF bool, origin string) {
		e := newEnv(t, admin.Options{})
		editor, editorCSRF := e.login(t, "carl", "carl-pw")
		alice, aliceCSRF := e.login(t, "alice", "alice-pw")
		r, err := http.NewRequest([]string{"POST", "GET", "PUT", "DELETE", "HEAD"}[int(method)%5], "http://admin.test"+path, bytes.NewReader(body))
		if err != nil || !strings.HasPrefix(r.URL.Path, "/") {
			return // not a request a server could receive
		}
		r.Host = "admin.test"
		r.RemoteAddr = "192.0.2.7:50000"
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		csrf := ""
		switch who % 5 {
		case 1:
			r.AddCookie(alice)
			csrf = aliceCSRF
		case 2:
			r.AddCookie(editor)
			csrf = editorCSRF
		case 3:
			r.Header.Set("Authorization", "Bearer tok-admin")
		case 4:
			r.Header.Set("Authorization", "Bearer "+path)
		}
		if withCSRF && csrf != "" {
			r.Header.Set("X-CSRF-Token", csrf)
		}
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		if !expectedStatus[w.Code] {
			t.Fatalf("%s %q: status %d", r.Method, path, w.Code)
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && w.Code >= 400 && w.Code != 404 && w.Code != 405 {
			apiErr(t, w)
		}
		if calls := e.b.FailoverCalls(); len(calls) > 0 {
			adminCookie := who%5 == 1 && withCSRF
			bearer := who%5 == 3
			if len(calls) != 1 || !(adminCookie || bearer) || r.Method != "POST" {
				t.Fatalf("%s %q by caller %d (csrf %v) reached Failover: %v", r.Method, path, who%5, withCSRF, calls)
			}
		}
	})
}
