package host_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// userSession opens a UserName session from the local address ip and
// closes it again; it returns the activation's status code.
func userSession(t *testing.T, endpoint, ip, name, password string) ua.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{LocalIP: ip})
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	defer ch.Close()
	s, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{Name: "throttle", Timeout: time.Minute,
		CallTimeout: 50 * time.Second, User: &uaclient.UserName{Name: name, Password: password}})
	var refused *uaclient.ActivationError
	switch {
	case err == nil:
		_ = s.Close(ctx, 5*time.Second)
		return ua.StatusOK
	case errors.As(err, &refused):
		return refused.Code
	}
	t.Fatalf("session of %s from %s: %v", name, ip, err)
	return 0
}

// adminLogin posts the login form from the local address ip as a
// same-origin browser would; it returns the status code and Retry-After.
func adminLogin(t *testing.T, base, ip, name, password string) (int, string) {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c := &http.Client{
		Timeout:       60 * time.Second,
		Transport:     &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	form := url.Values{"name": {name}, "password": {password}}.Encode()
	req, err := http.NewRequest("POST", base+"/login", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("login of %s from %s: %v", name, ip, err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Retry-After")
}

// TestWrongPasswordsFromOneAddressLockNobodyOut is issue 23's first
// "must be shown": twelve wrong passwords for an Operator from 127.0.0.2
// on OPC UA and twelve on the admin login, then the right password from
// 127.0.0.1 is Good at once on both; 127.0.0.2 itself is refused, even
// with the right password, and its refusals are counted in
// otopcua_auth_throttled_total.
func TestWrongPasswordsFromOneAddressLockNobodyOut(t *testing.T) {
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("node-a", ports)
	dir := t.TempDir()
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{
		"Policies": []string{"None:None", "Basic256Sha256:SignAndEncrypt"}, "PkiDir": filepath.Join(dir, "pki"),
	}
	const op, opPassword = "op", "operator-pass-15"
	procs.User(t, cfg, opPassword+"\n", "add", op, "--role", "Operator")
	n := procs.Start(t, "node-a", cfg)
	n.WaitReady(30 * time.Second)
	const attacker, owner = "127.0.0.2", "127.0.0.1"

	for i := 1; i <= 12; i++ {
		if code := userSession(t, n.Endpoint(), attacker, op, fmt.Sprintf("wrong password %d", i)); code != ua.StatusBadUserAccessDenied {
			t.Fatalf("OPC UA wrong password %d from %s: %v, want BadUserAccessDenied", i, attacker, code)
		}
	}
	throttledLogins := 0
	for i := 1; i <= 12; i++ {
		code, retry := adminLogin(t, n.HTTP(), attacker, op, fmt.Sprintf("wrong password %d", i))
		switch {
		case code == http.StatusTooManyRequests && retry != "":
			throttledLogins++
		case code != http.StatusUnauthorized:
			t.Fatalf("admin login, wrong password %d from %s: %d (Retry-After %q), want 401 or 429 with Retry-After", i, attacker, code, retry)
		}
	}
	if throttledLogins == 0 {
		t.Fatalf("none of 12 admin logins after 12 OPC UA failures from %s was throttled", attacker)
	}

	// The owner, from another address: Good at once on both surfaces.
	start := time.Now()
	if code := userSession(t, n.Endpoint(), owner, op, opPassword); code != ua.StatusOK {
		t.Fatalf("OPC UA, the right password from %s after the attack: %v, want Good", owner, code)
	}
	opcuaTook := time.Since(start)
	start = time.Now()
	if code, _ := adminLogin(t, n.HTTP(), owner, op, opPassword); code != http.StatusSeeOther {
		t.Fatalf("admin login, the right password from %s after the attack: %d, want 303", owner, code)
	}
	t.Logf("the owner from %s: OPC UA session in %v, admin login in %v (one bcrypt check each)", owner, opcuaTook, time.Since(start))

	// The attacker's address is slowed: even the right password is refused.
	if code := userSession(t, n.Endpoint(), attacker, op, opPassword); code != ua.StatusBadUserAccessDenied {
		t.Fatalf("OPC UA, the right password from %s: %v, want BadUserAccessDenied while it waits", attacker, code)
	}
	code, retry := adminLogin(t, n.HTTP(), attacker, op, opPassword)
	if code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("admin login, the right password from %s: %d (Retry-After %q), want 429 with Retry-After", attacker, code, retry)
	}
	t.Logf("%s: %d of 12 admin logins throttled; the right password then: 429, Retry-After %s s", attacker, throttledLogins, retry)

	body, err := n.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	opcua, err1 := sampleValue(body, `otopcua_auth_throttled_total{surface="opcua"}`)
	adminPage, err2 := sampleValue(body, `otopcua_auth_throttled_total{surface="admin"}`)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	// OPC UA: the refusals among the 12 wrong ones and the right
	// password's. The 5th failure starts a wait of 1 s, the 6th of 2 s, the
	// 7th of 4 s, the 8th of 8 s: at most 8 are checked, unless a session
	// took seconds to open. The admin page: its throttled logins and the
	// right password's.
	if opcua < 5 || opcua > 8 || adminPage != float64(throttledLogins+1) {
		t.Fatalf("otopcua_auth_throttled_total: opcua %v, admin %v; want 5 to 8 and %d", opcua, adminPage, throttledLogins+1)
	}
	t.Logf("otopcua_auth_throttled_total: opcua %v, admin %v", opcua, adminPage)
}
