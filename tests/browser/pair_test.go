package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/tests/browser"
	"github.com/otopcua/otopcua/tests/procs"
)

// The admin pages on a real pair: two `otopcua host` processes of
// ClusterId "site" sharing one SQLite Config DB, their users created with
// `otopcua user add`, the pages driven in headless Chromium. The test is
// the nodes' supervisor: it starts a node again when it exits.

const (
	adminName = "ops"
	editName  = "editor"
	userPw    = "correct horse battery staple"
	// pairWithin bounds a wait for the pair itself (formation, failover,
	// restart), longer than a wait for the page.
	pairWithin = 60 * time.Second
)

type pair struct {
	t     *testing.T
	dir   string
	ports map[string]procs.Ports
	nodes map[string]*procs.Node
}

func (p *pair) addr(name string) string { return fmt.Sprintf("127.0.0.1:%d", p.ports[name].Cluster) }

func (p *pair) config(name string) map[string]any {
	cfg := procs.BaseConfig(name, p.ports[name])
	c := cfg["Cluster"].(map[string]any)
	c["SeedNodes"] = []string{p.addr("a"), p.addr("b")}
	cfg["Node"].(map[string]any)["ClusterId"] = "site"
	other := map[string]string{"a": "b", "b": "a"}[name]
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other + ":otopcua"}
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(p.dir, "config.db")}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

// startPair starts a, then b once a is ready, so that a is the oldest
// member: the Primary.
func startPair(t *testing.T) *pair {
	p := &pair{t: t, dir: t.TempDir(), ports: map[string]procs.Ports{}, nodes: map[string]*procs.Node{}}
	for _, n := range []string{"a", "b"} {
		p.ports[n] = procs.NewPorts(t)
	}
	p.nodes["a"] = procs.Start(t, "a", p.config("a"))
	p.nodes["a"].WaitReady(pairWithin)
	p.nodes["b"] = procs.Start(t, "b", p.config("b"))
	p.nodes["b"].WaitReady(pairWithin)
	return p
}

// apiPanel is what the drills read of GET /api/clusters/site/redundancy.
type apiPanel struct {
	Primary         string `json:"primary"`
	FailoverAllowed bool   `json:"failoverAllowed"`
	Members         []struct {
		NodeID       string `json:"nodeId"`
		Role         string `json:"role"`
		ServiceLevel int    `json:"serviceLevel"`
	} `json:"members"`
}

// api sends method path to name's admin API with token; it returns the
// status and the body.
func (p *pair) api(name, token, method, path string) (int, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.nodes[name].HTTP()+path, nil)
	must(p.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	must(p.t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	must(p.t, err)
	return res.StatusCode, body
}

// waitLevels waits until name's panel lists exactly the wanted
// ServiceLevels (NodeId → level) with Primary primary.
func (p *pair) waitLevels(name, token, primary string, want map[string]int) {
	p.t.Helper()
	procs.CheckFor(p.t, pairWithin, 100*time.Millisecond, func() error {
		code, body := p.api(name, token, "GET", "/api/clusters/site/redundancy")
		var got apiPanel
		if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
			return fmt.Errorf("panel: %d %s", code, body)
		}
		levels := map[string]int{}
		for _, m := range got.Members {
			levels[m.NodeID] = m.ServiceLevel
		}
		if got.Primary != primary || fmt.Sprint(levels) != fmt.Sprint(want) {
			return fmt.Errorf("panel Primary %s levels %v, want %s %v", got.Primary, levels, primary, want)
		}
		return nil
	})
}

func (p *pair) audit() []configdb.AuditEntry {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, "sqlite", "file:"+filepath.Join(p.dir, "config.db"))
	must(p.t, err)
	defer db.Close()
	rows, err := db.RecentAudit(ctx, 100)
	must(p.t, err)
	return rows
}

// TestFailoverOnARealPair: a ConfigEditor sees Trigger failover disabled
// and its direct POST is refused (403, no audit row); an Administrator
// triggers it on the Secondary's page, confirms, watches the Primary
// change on the page and the old Primary come back as Secondary 240
// after its restart, and finds the action on /audit; with one Up driver
// member the button is disabled with the reason and the API answers 409.
func TestFailoverOnARealPair(t *testing.T) {
	t.Parallel()
	p := startPair(t)
	cfg := p.config("a")
	adminTok := procs.AddUser(t, cfg, adminName, "Administrator", userPw)
	procs.AddUser(t, cfg, editName, "ConfigEditor", userPw)
	a, b := p.addr("a"), p.addr("b")
	p.waitLevels("b", adminTok, a, map[string]int{a: 250, b: 240})
	site := p.nodes["b"].HTTP() // the page of the node that stays

	// The ConfigEditor: disabled button, a refused POST, nothing written.
	ed := browser.NewContext(t, 2*time.Minute)
	must(t, browser.Login(ed, site, editName, userPw, within))
	must(t, browser.Open(ed, site, "/clusters/site/redundancy"))
	must(t, browser.WaitText(ed, "#primary", a, within))
	must(t, browser.WaitTrue(ed, `document.getElementById("failover-button").disabled`, within))
	status, err := browser.EvalAwait[int](ed, `fetch("/api/clusters/site/failover", {method: "POST",
		headers: {"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}}).then(r => r.status)`)
	must(t, err)
	if status != http.StatusForbidden {
		t.Fatalf("the ConfigEditor's POST with its session answered %d, want 403", status)
	}
	if rows := p.audit(); len(rows) != 0 {
		t.Fatalf("a refused failover wrote audit rows: %+v", rows)
	}

	// The Administrator.
	ctx := browser.NewContext(t, 4*time.Minute)
	must(t, browser.Login(ctx, site, adminName, userPw, within))
	must(t, browser.Open(ctx, site, "/clusters/site/redundancy"))
	must(t, browser.WaitText(ctx, "#primary", a, within))
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+a+`"] [data-field="serviceLevel"]`, "data-service-level", "250", within))
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+b+`"] [data-field="serviceLevel"]`, "data-service-level", "240", within))
	must(t, browser.WaitTrue(ctx, `!document.getElementById("failover-button").disabled`, within))
	screenshot(t, ctx, "pair-redundancy-panel.png")
	must(t, browser.Click(ctx, "#failover-button"))
	must(t, browser.WaitText(ctx, "#failover-dialog-target", a, within))
	screenshot(t, ctx, "pair-failover-dialog.png")
	must(t, browser.Click(ctx, "#failover-confirm"))
	must(t, browser.WaitAttr(ctx, "#failover-result", "data-outcome", "ok", within))
	rows := p.audit()
	if len(rows) != 1 || rows[0].Action != "cluster.manual-failover" || rows[0].Actor != adminName || rows[0].Target != a {
		t.Fatalf("audit_log after the failover: %+v, want one cluster.manual-failover by %s on %s", rows, adminName, a)
	}

	// The page follows: b becomes the Primary; a exits 0, is started
	// again and comes back as Secondary 240.
	must(t, browser.WaitText(ctx, "#primary", b, pairWithin))
	if code := p.nodes["a"].WaitExit(pairWithin); code != 0 {
		t.Fatalf("a exited with code %d after the manual failover, want 0\n%s", code, p.nodes["a"].Log())
	}
	p.nodes["a"].Restart()
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+a+`"] [data-field="serviceLevel"]`, "data-service-level", "240", pairWithin))
	must(t, browser.WaitText(ctx, `tr[data-node-id="`+a+`"] [data-field="role"]`, "Secondary", within))
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+b+`"] [data-field="serviceLevel"]`, "data-service-level", "250", within))
	must(t, browser.WaitTrue(ctx, `document.querySelectorAll("#failovers-body tr").length > 0`, within))
	screenshot(t, ctx, "pair-after-failover.png")

	must(t, browser.Open(ctx, site, "/audit"))
	text, _, err := browser.Text(ctx, "#audit")
	must(t, err)
	for _, want := range []string{"cluster.manual-failover", adminName, a} {
		if !strings.Contains(text, want) {
			t.Errorf("/audit does not show %q: %q", want, text)
		}
	}

	// One Up driver member: the button is disabled with the reason, and
	// the API refuses with 409 and writes nothing.
	must(t, browser.Open(ctx, site, "/clusters/site/redundancy"))
	p.nodes["a"].Signal(syscall.SIGTERM)
	if code := p.nodes["a"].WaitExit(pairWithin); code != 0 {
		t.Fatalf("a exited with code %d after SIGTERM, want 0", code)
	}
	must(t, browser.WaitTrue(ctx, `document.getElementById("failover-button").disabled &&
		document.getElementById("failover-button").title.includes("only one Up driver member")`, pairWithin))
	screenshot(t, ctx, "pair-failover-blocked.png")
	code, body := p.api("b", adminTok, "POST", "/api/clusters/site/failover")
	var refused struct {
		Reason string `json:"reason"`
	}
	if code != http.StatusConflict || json.Unmarshal(body, &refused) != nil || !strings.Contains(refused.Reason, "only one Up driver member") {
		t.Fatalf("failover with one Up driver member: %d %s, want 409 with the reason", code, body)
	}
	if rows := p.audit(); len(rows) != 1 {
		t.Fatalf("the refused failover wrote to audit_log: %+v", rows)
	}
}

// login posts the login form to base as a same-origin browser would and
// returns the response (its body closed) without following the redirect.
func login(t *testing.T, base, name, password string) *http.Response {
	t.Helper()
	form := url.Values{"name": {name}, "password": {password}}.Encode()
	req, err := http.NewRequest("POST", base+"/login", strings.NewReader(form))
	must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	// A login is a bcrypt check of cost 12: about 5 s in a node built with
	// -race, longer while the other drills share the two cores. The bound
	// is for a node that never answers, not a latency check.
	c := &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	must(t, err)
	res.Body.Close()
	return res
}

// TestLoginAndCrossSiteRulesOnARealNode: the session cookie is HttpOnly
// and SameSite=Strict; ten wrong passwords make the user name wait from
// that address, so that the right one is refused (429) too; a failover POST with a live session but
// without its CSRF token, or from another origin with it, is refused and
// writes nothing.
func TestLoginAndCrossSiteRulesOnARealNode(t *testing.T) {
	t.Parallel()
	p := startPair(t)
	cfg := p.config("a")
	adminTok := procs.AddUser(t, cfg, adminName, "Administrator", userPw)
	procs.AddUser(t, cfg, editName, "ConfigEditor", userPw)
	p.waitLevels("a", adminTok, p.addr("a"), map[string]int{p.addr("a"): 250, p.addr("b"): 240})
	base := p.nodes["a"].HTTP()

	res := login(t, base, adminName, userPw)
	var session *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "otopcua_session" {
			session = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure {
		t.Fatalf("login: %d, session cookie %+v; want 303 and an HttpOnly, SameSite=Strict cookie (not Secure without TLS)", res.StatusCode, session)
	}

	// A page of this session carries the CSRF token in its meta tag.
	page, err := http.NewRequest("GET", base+"/clusters/site/redundancy", nil)
	must(t, err)
	page.AddCookie(session)
	pres, err := http.DefaultClient.Do(page)
	must(t, err)
	body, err := io.ReadAll(pres.Body)
	pres.Body.Close()
	must(t, err)
	m := regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`).FindSubmatch(body)
	if pres.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("panel page: %d, no CSRF token in\n%s", pres.StatusCode, body)
	}
	token := string(m[1])
	post := func(origin, csrf string) int {
		req, err := http.NewRequest("POST", base+"/api/clusters/site/failover", nil)
		must(t, err)
		req.AddCookie(session)
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("", ""); code != http.StatusForbidden {
		t.Fatalf("failover POST with the session and no CSRF token: %d, want 403", code)
	}
	if code := post("http://plant-portal.invalid", token); code != http.StatusForbidden {
		t.Fatalf("failover POST from another origin with the session and its token: %d, want 403", code)
	}
	if rows := p.audit(); len(rows) != 0 {
		t.Fatalf("refused cross-site failovers wrote audit rows: %+v", rows)
	}

	// Wrong passwords 1 to 5 are refused as such; the fifth makes the name
	// wait from this address, 1 s and then twice as long per attempt, so
	// that of the next five at least one is refused unchecked (429).
	throttled := 0
	for i := 1; i <= 10; i++ {
		res := login(t, base, editName, "wrong password "+fmt.Sprint(i))
		switch {
		case res.StatusCode == http.StatusTooManyRequests && i > 5:
			throttled++
		case res.StatusCode != http.StatusUnauthorized:
			t.Fatalf("wrong password %d: %d, want 401 (or 429 after the fifth)", i, res.StatusCode)
		}
	}
	if throttled == 0 {
		t.Fatal("none of wrong passwords 6 to 10 was throttled (429)")
	}
	if res := login(t, base, editName, userPw); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("the right password after 10 wrong ones from the same address: %d (Retry-After %q), want 429 while the name waits", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := login(t, base, adminName, userPw); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("another user during the wait: %d, want 303 (the wait is per user name and address)", res.StatusCode)
	}
	p.waitLevels("a", adminTok, p.addr("a"), map[string]int{p.addr("a"): 250, p.addr("b"): 240}) // nothing moved
}
