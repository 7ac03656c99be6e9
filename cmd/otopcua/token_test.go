package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// guardedNode answers /api/actors and /api/cluster/config to the bearer
// token want and 401 (as a node does) to anyone else.
func guardedNode(t *testing.T, want string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+want {
			w.Header().Set("WWW-Authenticate", `Bearer realm="otopcua"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"not authenticated","reason":"log in at /login or send Authorization: Bearer TOKEN"}`))
			return
		}
		switch r.URL.Path {
		case "/api/actors":
			w.Write([]byte(`{"nodeId":"127.0.0.1:4053","uid":7,"actors":[]}`))
		case "/api/cluster/config":
			w.Write([]byte("akka.cluster {}\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReportCommandsSendAToken: status and config effective --url send
// --token, else $OTOPCUA_TOKEN, as a bearer token (the flag wins); without
// one a guarded node's 401 is exit 1 with a hint naming both.
func TestReportCommandsSendAToken(t *testing.T) {
	const good = "otk_good"
	srv := guardedNode(t, good)
	commands := map[string][]string{
		"status":           {"status", "--url", srv.URL},
		"config effective": {"config", "effective", "--url", srv.URL},
	}
	for name, argv := range commands {
		for _, tc := range []struct {
			name     string
			environ  []string
			flag     string
			wantCode int
			wantErr  string
		}{
			{"flag", nil, good, 0, ""},
			{"environment", []string{tokenEnv + "=" + good}, "", 0, ""},
			{"flag wins over environment", []string{tokenEnv + "=otk_stale"}, good, 0, ""},
			{"none", nil, "", exitFailure, "pass --token or set " + tokenEnv},
			{"wrong", []string{tokenEnv + "=otk_stale"}, "", exitFailure, "the token was refused"},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				args := append([]string{}, argv...)
				if tc.flag != "" {
					args = append(args, "--token", tc.flag)
				}
				code, out, errOut := runCLI(tc.environ, args...)
				if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
					t.Fatalf("exit %d, want %d; stderr %q, want it to contain %q", code, tc.wantCode, errOut, tc.wantErr)
				}
				if code == 0 && out == "" {
					t.Fatal("no output")
				}
				if code != 0 && !strings.Contains(errOut, "401") {
					t.Fatalf("stderr %q does not show the node's 401", errOut)
				}
			})
		}
	}
}
