package failover

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/procs"
)

// The manual failover drills: an Administrator asks the admin API of
// either node to fail the site's Primary over (POST
// /api/clusters/{id}/failover with an API token from `otopcua user
// token`). The Primary drops its ServiceLevel to 0 so that clients move
// first, leaves the cluster gracefully and exits 0; the test is its
// supervisor and starts it again at the same address.

// Users of the drills: an Administrator and a ConfigEditor.
const (
	operator = "ops"
	editor   = "editor"
	password = "correct horse battery staple"
)

// adminAPI is an API client of one node with one user's bearer token.
type adminAPI struct {
	base, token string
}

// do sends method path with the token and decodes the JSON answer into
// out (nil: drop it); it returns the HTTP status.
func (a adminAPI) do(t *testing.T, method, path string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, want JSON: %s", method, path, ct, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, body)
		}
	}
	return res.StatusCode
}

// panel is the part of GET /api/clusters/{id}/redundancy the drills read.
type panel struct {
	Primary         string `json:"primary"`
	Epoch           uint64 `json:"epoch"`
	FailoverAllowed bool   `json:"failoverAllowed"`
	FailoverBlocked string `json:"failoverBlocked"`
	FailoverTarget  string `json:"failoverTarget"`
	Members         []struct {
		NodeID       string `json:"nodeId"`
		Status       string `json:"status"`
		ServiceLevel int    `json:"serviceLevel"`
		Reachable    bool   `json:"reachable"`
		ConfigDb     string `json:"configDb"`
	} `json:"members"`
}

// apiError is the JSON body of a refused request.
type apiError struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

// auditRows reads audit_log from the rig's Config DB.
func (r *rig) auditRows(t *testing.T) []configdb.AuditEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, "sqlite", "file:"+filepath.Join(r.dir, "config.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.RecentAudit(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// users creates the drills' Administrator and ConfigEditor in the rig's
// Config DB and returns their API tokens.
func (r *rig) users(t *testing.T) (admin, edit string) {
	t.Helper()
	cfg := r.config(r.specs[0].name)
	return procs.AddUser(t, cfg, operator, "Administrator", password), procs.AddUser(t, cfg, editor, "ConfigEditor", password)
}

// serverView is what a client reads of the Server object.
type serverView struct {
	level byte
	back  time.Time // EstimatedReturnTime; zero while unknown
}

// connectUA opens a gopcua client session to endpoint, closed at cleanup.
func connectUA(t *testing.T, endpoint string) *gopcua.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := gopcua.NewClient(endpoint, gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// readServer reads Server.ServiceLevel (i=2267) and
// Server.EstimatedReturnTime (i=12885).
func readServer(t *testing.T, c *gopcua.Client) serverView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{
		{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue},
		{NodeID: ua.NewNumericNodeID(0, id.Server_EstimatedReturnTime), AttributeID: ua.AttributeIDValue},
	}})
	if err != nil || len(resp.Results) != 2 {
		t.Fatalf("read the Server object: %v", err)
	}
	level, ok := resp.Results[0].Value.Value().(byte)
	back, ok2 := resp.Results[1].Value.Value().(time.Time)
	if !ok || !ok2 {
		t.Fatalf("Server object: ServiceLevel %v, EstimatedReturnTime %v; want a Byte and a DateTime", resp.Results[0].Value, resp.Results[1].Value)
	}
	if back.Year() <= 1601 {
		back = time.Time{} // the OPC UA minimum DateTime: unknown
	}
	return serverView{level: level, back: back}
}

// Drill 9: manual failover over the admin API. A ConfigEditor is refused
// (403) and nothing is written; the Administrator's request names the
// node redundancy.Elect names, writes the audit row before the Primary
// goes, the Primary drops to 0 before the survivor takes 250, exits 0, and
// its restart joins the survivor's cluster as Secondary 240 without ever
// forming a cluster of its own, although the self-form fallback is armed
// with 1 s; with one Up driver member the API answers 409 and writes
// nothing.
func TestDrill09ManualFailover(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	r.configure("", func(cfg map[string]any) { cfg["Cluster"].(map[string]any)["SelfFormAfter"] = "1s" })
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	adminTok, editTok := r.users(t)
	api := adminAPI{base: r.node(s).HTTP(), token: adminTok} // the page may be served by either node
	const failoverPath = "/api/clusters/site/failover"

	var e apiError
	if code := (adminAPI{base: api.base, token: editTok}).do(t, "POST", failoverPath, &e); code != http.StatusForbidden {
		t.Fatalf("a ConfigEditor's failover got %d (%+v), want 403", code, e)
	}
	if code := (adminAPI{base: api.base, token: "otk_not-a-token"}).do(t, "POST", failoverPath, &e); code != http.StatusUnauthorized {
		t.Fatalf("an unknown token's failover got %d (%+v), want 401", code, e)
	}
	if rows := r.auditRows(t); len(rows) != 0 {
		t.Fatalf("refused failovers wrote audit rows: %+v", rows)
	}
	r.holdLevels(500*time.Millisecond, want) // nothing moved

	var before panel
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if code := api.do(t, "GET", "/api/clusters/site/redundancy", &before); code != http.StatusOK {
			return fmt.Errorf("panel: %d", code)
		}
		if !before.FailoverAllowed || before.FailoverTarget != r.addr(p) || before.Primary != r.addr(p) {
			return fmt.Errorf("panel %+v, want Primary and target %s, failover allowed", before, r.addr(p))
		}
		for _, m := range before.Members {
			if m.ServiceLevel != int(want[r.nameOf(m.NodeID)]) || !m.Reachable || m.ConfigDb != "ok" {
				return fmt.Errorf("panel member %+v, want level %d, reachable, Config DB ok", m, want[r.nameOf(m.NodeID)])
			}
		}
		if len(before.Members) != 2 {
			return fmt.Errorf("panel lists %d members, want 2", len(before.Members))
		}
		return nil
	})

	// An OPC UA client of the Primary reads EstimatedReturnTime: unknown
	// (the zero DateTime) while nothing is planned.
	uc := connectUA(t, r.node(p).Endpoint())
	if v := readServer(t, uc); v.level != Primary || !v.back.IsZero() {
		t.Fatalf("%s before the failover: ServiceLevel %d, EstimatedReturnTime %s; want 250 and unknown", p, v.level, v.back)
	}

	var res struct {
		Target string `json:"target"`
	}
	asked := time.Now()
	if code := api.do(t, "POST", failoverPath, &res); code != http.StatusOK {
		t.Fatalf("the Administrator's failover got %d, want 200", code)
	}
	if res.Target != r.addr(p) {
		t.Fatalf("failover acted on %s, want the Primary %s", res.Target, r.addr(p))
	}
	rows := r.auditRows(t) // the row is written before the Leave, so it is there now
	if len(rows) != 1 || rows[0].Action != "cluster.manual-failover" || rows[0].Actor != operator || rows[0].Target != r.addr(p) {
		t.Fatalf("audit_log after the failover: %+v, want one cluster.manual-failover by %s on %s", rows, operator, r.addr(p))
	}

	// While it drains it still answers: ServiceLevel 0, and when it
	// expects to be back.
	var drained serverView
	procs.CheckFor(t, 2*time.Second, 20*time.Millisecond, func() error {
		if drained = readServer(t, uc); drained.level != 0 {
			return fmt.Errorf("%s ServiceLevel %d, want 0", p, drained.level)
		}
		return nil
	})
	if !drained.back.After(asked) {
		t.Fatalf("%s drains with EstimatedReturnTime %s, want a time after the request (%s)", p, drained.back, asked)
	}
	t.Logf("%s drains: ServiceLevel 0, EstimatedReturnTime %s after the request", p, drained.back.Sub(asked).Round(time.Second))

	zero := r.waitFirst(15*time.Second, p, asked, "0", is(0))
	top := r.waitFirst(30*time.Second, s, asked, "250", is(Primary))
	t.Logf("failover asked → %s at 0 after %v, %s at 250 after %v", p, zero.At.Sub(asked).Round(time.Millisecond),
		s, top.At.Sub(asked).Round(time.Millisecond))
	if !zero.At.Before(top.At) {
		t.Errorf("%s took 250 at %s, not after the old Primary's 0 at %s", s, top.At.Format("15:04:05.000"), zero.At.Format("15:04:05.000"))
	}
	if code := r.node(p).WaitExit(30 * time.Second); code != 0 {
		t.Fatalf("%s exited with code %d after the manual failover, want 0\n%s", p, code, r.node(p).Log())
	}
	exited := time.Now()
	t.Logf("failover asked → %s exited 0 after %v", p, exited.Sub(asked).Round(time.Millisecond))

	// The supervisor starts it again; it must join the survivor, never
	// form a cluster alone (that would be a second Primary).
	r.node(p).Restart()
	sUID := func() (procs.UID, error) {
		v, err := r.view(s)
		if err != nil {
			return "", err
		}
		self, ok := v.SelfMember()
		if !ok {
			return "", fmt.Errorf("%s has no self member", s)
		}
		return self.UID, nil
	}
	survivor, err := sUID()
	if err != nil {
		t.Fatal(err)
	}
	procs.CheckFor(t, formTimeout, 50*time.Millisecond, func() error {
		v, err := r.view(p)
		if err != nil {
			return err
		}
		self, ok := v.SelfMember()
		if !ok || self.Status != "Up" {
			return fmt.Errorf("%s not Up yet: %s", p, v)
		}
		m, ok := v.Member(r.addr(s))
		if !ok || m.UID != survivor {
			t.Fatalf("%s is Up in a cluster without the survivor %s (uid %s): %s", p, s, survivor, v)
		}
		return r.levelsAre(map[string]byte{p: Secondary, s: Primary})
	})
	t.Logf("restart of %s → Up as Secondary 240 after %v", p, time.Since(exited).Round(time.Millisecond))
	if strings.Contains(r.node(p).Log(), daemon.LogSelfFormed) {
		t.Fatalf("%s self-formed on its restart:\n%s", p, r.node(p).Log())
	}
	r.holdLevels(time.Second, map[string]byte{p: Secondary, s: Primary})

	// One Up driver member: the button's guard, enforced by the API.
	r.node(p).Signal(syscall.SIGTERM)
	if code := r.node(p).WaitExit(30 * time.Second); code != 0 {
		t.Fatalf("%s exited with code %d after SIGTERM, want 0", p, code)
	}
	var alone panel
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if code := api.do(t, "GET", "/api/clusters/site/redundancy", &alone); code != http.StatusOK {
			return fmt.Errorf("panel: %d", code)
		}
		if alone.FailoverAllowed || alone.FailoverBlocked == "" {
			return fmt.Errorf("panel with one Up driver member: %+v, want the failover blocked with a reason", alone)
		}
		return nil
	})
	if code := api.do(t, "POST", failoverPath, &e); code != http.StatusConflict || e.Reason == "" {
		t.Fatalf("failover with one Up driver member got %d %+v, want 409 with a reason", code, e)
	}
	t.Logf("one Up driver member: 409 %q", e.Reason)
	if rows := r.auditRows(t); len(rows) != 1 {
		t.Fatalf("the refused failover wrote to audit_log: %+v", rows)
	}
	r.holdLevels(500*time.Millisecond, map[string]byte{s: Primary})
	r.assertInvariant()
}

// Client drill C4: a client subscribed with `otopcua client subscribe -F`
// during a manual failover moves because the Primary's level left the
// healthy band, before the old Primary's connection drops: the planned
// failover costs it no lost connection.
func TestClientDrill04ManualFailover(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	adminTok, _ := r.users(t)
	c := clientproc.Start(t, subscribeArgs(r.node("a").Endpoint(), r.node("b").Endpoint())...)
	connectedTo(t, c, p, Primary)
	procs.Holds(t, 2*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected); err != nil {
			return err
		}
		return r.levelsAre(want)
	})

	from := c.Next()
	exited := make(chan time.Time, 1)
	asked := time.Now()
	if code := (adminAPI{base: r.node(p).HTTP(), token: adminTok}).do(t, "POST", "/api/clusters/site/failover", nil); code != http.StatusOK {
		t.Fatalf("failover got %d, want 200", code)
	}
	go func() {
		r.node(p).WaitExit(60 * time.Second)
		exited <- time.Now()
	}()
	fo := c.WaitFor(30*time.Second, from, "failover event", isEvent(clientproc.Failover, ""))
	t.Logf("failover asked → client's failover event after %v: %s", fo.Time.Sub(asked).Round(time.Millisecond), fo)
	if fo.From.URI != uriOf(p) || fo.To.URI != uriOf(s) {
		t.Fatalf("failover from %s to %s, want %s → %s", fo.From.URI, fo.To.URI, uriOf(p), uriOf(s))
	}
	if !strings.Contains(strings.ToLower(fo.Reason), "healthy band") {
		t.Fatalf("failover reason %q, want the level leaving the healthy band (not a lost connection)", fo.Reason)
	}
	var gone time.Time
	select {
	case gone = <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit after the manual failover", p)
	}
	t.Logf("client moved %v before %s exited", gone.Sub(decidedAt(fo)).Round(time.Millisecond), p)
	if !decidedAt(fo).Before(gone) {
		t.Fatalf("the client decided to move at %s, after %s had exited at %s", decidedAt(fo).Format("15:04:05.000"), p, gone.Format("15:04:05.000"))
	}
	if code, _ := r.node(p).Exited(); code != 0 {
		t.Fatalf("%s exited with code %d, want 0", p, code)
	}
	c.WaitFor(30*time.Second, from, "250 from the survivor", isNote(uriOf(s), levelIs(Primary)))
	procs.Holds(t, 2*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		return onlyEvents(c, clientproc.Connected, clientproc.Failover)
	})
	if o := notesFromOthers(c, fo, uriOf(s)); len(o) > 0 {
		t.Fatalf("after the failover to %s the client printed notifications from elsewhere: %v", s, o)
	}
	r.assertInvariant()
}

// userTimeout bounds a UserName session's activation: the node checks the
// password with bcrypt at cost 12, seconds in a race-detector build on two
// loaded cores.
const userTimeout = 60 * time.Second

// connectUser opens a gopcua session to endpoint on a None channel with a
// UserName token (the password encrypted with the server's certificate).
func connectUser(t *testing.T, endpoint, name, password string) (*gopcua.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), userTimeout)
	defer cancel()
	eps, err := gopcua.GetEndpoints(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	var ep *ua.EndpointDescription
	for _, e := range eps {
		if e.SecurityMode == ua.MessageSecurityModeNone {
			ep = e
		}
	}
	if ep == nil {
		t.Fatalf("%s offers no None endpoint: %v", endpoint, eps)
	}
	c, err := gopcua.NewClient(endpoint, gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false),
		gopcua.RequestTimeout(userTimeout), gopcua.AuthUsername(name, password), gopcua.SecurityFromEndpoint(ep, ua.UserTokenTypeUserName))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, nil
}

// requestStateChange calls Server.RequestServerStateChange (i=12886).
func requestStateChange(t *testing.T, c *gopcua.Client, state ua.ServerState, restart bool) ua.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Call(ctx, &ua.CallMethodRequest{
		ObjectID: ua.NewNumericNodeID(0, id.Server), MethodID: ua.NewNumericNodeID(0, id.Server_RequestServerStateChange),
		InputArguments: []*ua.Variant{ua.MustVariant(int32(state)), ua.MustVariant(time.Now().Add(30 * time.Second)),
			ua.MustVariant(uint32(0)), ua.MustVariant(&ua.LocalizedText{Text: "planned"}), ua.MustVariant(restart)},
	})
	if err != nil {
		t.Fatalf("Call RequestServerStateChange: %v", err)
	}
	return res.StatusCode
}

// Drill 10: RequestServerStateChange (Part 5 §9.4) is the OPC UA way to
// the same manual failover: refused for a ConfigEditor
// (BadUserAccessDenied), for a state other than Shutdown with restart
// (BadInvalidArgument) and on the Secondary (BadInvalidState); an
// Administrator's call on the Primary writes the audit row as
// opcua:USER, the Primary exits 0 and the survivor takes 250.
func TestDrill10RequestServerStateChange(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	// A secured endpoint next to None gives each node its certificate,
	// which UserName tokens need.
	r.configure("", func(cfg map[string]any) {
		cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{
			"Policies": []string{"None:None", "Basic256Sha256:SignAndEncrypt"}, "PkiDir": filepath.Join(r.dir, "pki-"+cfg["OpcUa"].(map[string]any)["ApplicationUri"].(string)[4:5])}
	})
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	r.users(t)
	certBefore := serverCertificate(t, r.node(p).Endpoint())

	ed, err := connectUser(t, r.node(p).Endpoint(), editor, password)
	if err != nil {
		t.Fatalf("ConfigEditor session: %v", err)
	}
	if code := requestStateChange(t, ed, ua.ServerStateShutdown, true); code != ua.StatusBadUserAccessDenied {
		t.Fatalf("a ConfigEditor's RequestServerStateChange: %v, want BadUserAccessDenied", code)
	}
	if _, err := connectUser(t, r.node(p).Endpoint(), operator, "wrong password"); !errors.Is(err, ua.StatusBadUserAccessDenied) {
		t.Fatalf("a wrong password: %v, want BadUserAccessDenied", err)
	}
	op, err := connectUser(t, r.node(p).Endpoint(), operator, password)
	if err != nil {
		t.Fatalf("Administrator session: %v", err)
	}
	if code := requestStateChange(t, op, ua.ServerStateSuspended, true); code != ua.StatusBadInvalidArgument {
		t.Fatalf("RequestServerStateChange to Suspended: %v, want BadInvalidArgument", code)
	}
	sec, err := connectUser(t, r.node(s).Endpoint(), operator, password)
	if err != nil {
		t.Fatalf("Administrator session on the Secondary: %v", err)
	}
	if code := requestStateChange(t, sec, ua.ServerStateShutdown, true); code != ua.StatusBadInvalidState {
		t.Fatalf("RequestServerStateChange on the Secondary: %v, want BadInvalidState", code)
	}
	if rows := r.auditRows(t); len(rows) != 0 {
		t.Fatalf("refused state changes wrote audit rows: %+v", rows)
	}
	r.holdLevels(500*time.Millisecond, want)

	asked := time.Now()
	if code := requestStateChange(t, op, ua.ServerStateShutdown, true); code != ua.StatusOK {
		t.Fatalf("the Administrator's RequestServerStateChange on the Primary: %v, want Good", code)
	}
	r.waitFirst(15*time.Second, p, asked, "0", is(0))
	r.waitFirst(30*time.Second, s, asked, "250", is(Primary))
	if code := r.node(p).WaitExit(30 * time.Second); code != 0 {
		t.Fatalf("%s exited with code %d, want 0", p, code)
	}
	rows := r.auditRows(t)
	if len(rows) != 1 || rows[0].Action != "cluster.manual-failover" || rows[0].Actor != "opcua:"+operator || rows[0].Target != r.addr(p) {
		t.Fatalf("audit_log: %+v, want one cluster.manual-failover by opcua:%s on %s", rows, operator, r.addr(p))
	}
	t.Logf("RequestServerStateChange → %s exited 0 after %v", p, time.Since(asked).Round(time.Millisecond))

	// Restarted, it serves the same application instance certificate
	// (generated once in its PkiDir, never again).
	r.node(p).Restart()
	r.waitLevels(formTimeout, map[string]byte{p: Secondary, s: Primary})
	if after := serverCertificate(t, r.node(p).Endpoint()); !bytes.Equal(after, certBefore) {
		t.Fatalf("%s serves another certificate after its restart (thumbprint %X, was %X)", p, sha1.Sum(after), sha1.Sum(certBefore))
	}
	t.Logf("%s restarted with the same certificate, thumbprint %X", p, sha1.Sum(certBefore))
	r.assertInvariant()
}

// serverCertificate is the ServerCertificate endpoint's GetEndpoints
// lists for its secured endpoint.
func serverCertificate(t *testing.T, endpoint string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps, err := gopcua.GetEndpoints(ctx, endpoint)
	if err != nil {
		t.Fatalf("GetEndpoints %s: %v", endpoint, err)
	}
	for _, e := range eps {
		if e.SecurityMode != ua.MessageSecurityModeNone && len(e.ServerCertificate) > 0 {
			return e.ServerCertificate
		}
	}
	t.Fatalf("%s lists no secured endpoint with a certificate", endpoint)
	return nil
}
