package browser_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/admintest"
	"github.com/otopcua/otopcua/tests/browser"
)

// within bounds every wait for the page; the panel polls once a second.
const within = 10 * time.Second

const (
	nodeA = "10.0.0.1:4053"
	nodeB = "10.0.0.2:4053"
)

type site struct {
	url     string
	backend *admintest.Backend
}

// newSite serves admin.New over the fakes on a loopback httptest server,
// mounted on a ServeMux as the node mounts it.
func newSite(t *testing.T) *site {
	t.Helper()
	b := admintest.NewBackend(nodeA)
	b.SetPanel(panel(nodeA, nodeB, 7))
	a := admintest.NewAuth()
	a.AddUser("alice", "alice-pw", admin.RoleAdministrator)
	a.AddUser("carl", "carl-pw", admin.RoleConfigEditor)
	h := admin.New(admin.Options{Backend: b, Auth: a, Loopback: true, Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	h.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &site{url: srv.URL, backend: b}
}

// panel is the panel of line-1 with primary oldest and secondary youngest.
func panel(primary, secondary string, epoch uint64) admin.RedundancyPanel {
	return admin.RedundancyPanel{
		ClusterID: "line-1",
		Primary:   primary,
		Members: []admin.PanelMember{
			{NodeID: primary, Status: "Up", UpNumber: 1, Roles: []string{"admin", "driver"}, Role: "Primary", ServiceLevel: 250, HasServiceLevel: true, Reachable: true, ConfigDb: "ok"},
			{NodeID: secondary, Status: "Up", UpNumber: 2, Roles: []string{"admin", "driver"}, Role: "Secondary", ServiceLevel: 240, HasServiceLevel: true, Reachable: true, ConfigDb: "ok"},
		},
		Downing:         "keep-oldest, auto-down after 10s",
		Epoch:           epoch,
		Failovers:       []admin.FailoverRecord{{At: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC), Epoch: epoch, From: secondary, To: primary}},
		FailoverAllowed: true,
		FailoverTarget:  primary,
		AsOf:            time.Date(2026, 3, 14, 9, 30, int(epoch), 0, time.UTC),
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openPanel logs in and opens the Live redundancy panel of line-1.
func openPanel(t *testing.T, s *site, name, password string) context.Context {
	t.Helper()
	ctx := browser.NewContext(t, 60*time.Second)
	must(t, browser.Login(ctx, s.url, name, password, within))
	must(t, browser.Open(ctx, s.url, "/clusters/line-1/redundancy"))
	must(t, browser.WaitText(ctx, "#primary", nodeA, within))
	return ctx
}

// screenshot keeps a PNG of the page: in $OTOPCUA_SCREENSHOTS when set
// (for the docs), else in the test's temporary directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("OTOPCUA_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	must(t, browser.Screenshot(ctx, path))
	png, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s is not a PNG (%d bytes, %v)", path, len(png), err)
	}
}

func TestAdministratorTriggersFailover(t *testing.T) {
	s := newSite(t)
	ctx := openPanel(t, s, "alice", "alice-pw")
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+nodeA+`"] [data-field="serviceLevel"]`, "data-service-level", "250", within))
	screenshot(t, ctx, "admin-redundancy-panel.png")

	// The Primary moves (as after a failover seen elsewhere): the panel
	// follows without a reload of the page.
	_, err := browser.Eval[bool](ctx, "window.sameDocument = true")
	must(t, err)
	s.backend.SetPanel(panel(nodeB, nodeA, 8))
	must(t, browser.WaitText(ctx, "#primary", nodeB, within))
	must(t, browser.WaitText(ctx, "#epoch", "8", within))
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+nodeB+`"] [data-field="serviceLevel"]`, "data-service-level", "250", within))
	must(t, browser.WaitAttr(ctx, `tr[data-node-id="`+nodeA+`"] [data-field="serviceLevel"]`, "data-service-level", "240", within))
	same, err := browser.Eval[bool](ctx, "window.sameDocument === true")
	must(t, err)
	if !same {
		t.Fatal("the page was reloaded to show the new Primary")
	}

	// Trigger failover: the dialog names the node it acts on (now nodeB)
	// and what follows; confirming posts the failover.
	must(t, browser.WaitAttr(ctx, "#failover-button", "data-target", nodeB, within))
	must(t, browser.Click(ctx, "#failover-button"))
	must(t, browser.WaitTrue(ctx, `document.getElementById("failover-dialog").open`, within))
	must(t, browser.WaitText(ctx, "#failover-dialog-target", nodeB, within))
	text, _, err := browser.Text(ctx, "#failover-dialog")
	must(t, err)
	for _, want := range []string{"it restarts", "ServiceLevel 250 moves to the other node", "OPC UA clients re-select"} {
		if !strings.Contains(text, want) {
			t.Errorf("the confirmation dialog does not say %q: %q", want, text)
		}
	}
	if calls := s.backend.FailoverCalls(); len(calls) != 0 {
		t.Fatalf("Failover called before the confirmation: %v", calls)
	}
	screenshot(t, ctx, "admin-failover-dialog.png")
	must(t, browser.Click(ctx, "#failover-confirm"))
	must(t, browser.WaitAttr(ctx, "#failover-result", "data-outcome", "ok", within))
	result, _, err := browser.Text(ctx, "#failover-result")
	must(t, err)
	if !strings.Contains(result, nodeB) {
		t.Errorf("the result %q does not name the node acted on", result)
	}
	calls := s.backend.FailoverCalls()
	if len(calls) != 1 || calls[0] != (admintest.FailoverCall{ClusterID: "line-1", Actor: "alice"}) {
		t.Fatalf("Failover calls %v; want one for line-1 by alice", calls)
	}
}

func TestConfigEditorCannotTriggerFailover(t *testing.T) {
	s := newSite(t)
	ctx := openPanel(t, s, "carl", "carl-pw")
	must(t, browser.WaitTrue(ctx, `document.getElementById("failover-button").disabled`, within))
	must(t, browser.WaitAttr(ctx, "#failover-button", "title", "Only an Administrator may trigger a failover", within))

	// After a refresh of the panel the button is still disabled.
	s.backend.SetPanel(panel(nodeA, nodeB, 9))
	must(t, browser.WaitText(ctx, "#epoch", "9", within))
	disabled, err := browser.Eval[bool](ctx, `document.getElementById("failover-button").disabled && document.getElementById("failover-dialog") === null`)
	must(t, err)
	if !disabled {
		t.Fatal("a ConfigEditor's page enabled the button or carries the dialog")
	}

	// A POST made with this session and its own CSRF token is refused.
	status, err := browser.EvalAwait[int](ctx, `fetch("/api/clusters/line-1/failover", {method: "POST",
		headers: {"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}}).then(r => r.status)`)
	must(t, err)
	if status != http.StatusForbidden {
		t.Fatalf("a ConfigEditor's direct POST answered %d; want 403", status)
	}
	if calls := s.backend.FailoverCalls(); len(calls) != 0 {
		t.Fatalf("Failover called for a ConfigEditor: %v", calls)
	}
}

func TestBlockedFailoverShowsTheReason(t *testing.T) {
	s := newSite(t)
	const why = "fewer than two Up driver members: with one node a failover is a shutdown"
	s.backend.Update("line-1", func(p *admin.RedundancyPanel) { p.FailoverAllowed, p.FailoverBlocked = false, why })
	ctx := openPanel(t, s, "alice", "alice-pw")
	must(t, browser.WaitTrue(ctx, `document.getElementById("failover-button").disabled`, within))
	must(t, browser.WaitAttr(ctx, "#failover-button", "title", why, within))
	screenshot(t, ctx, "admin-failover-blocked.png")

	// The peer comes back: the button is enabled without a reload.
	s.backend.Update("line-1", func(p *admin.RedundancyPanel) { p.FailoverAllowed, p.FailoverBlocked = true, "" })
	must(t, browser.WaitTrue(ctx, `!document.getElementById("failover-button").disabled`, within))
	must(t, browser.WaitAttr(ctx, "#failover-button", "title", "Fail over "+nodeA, within))
}
