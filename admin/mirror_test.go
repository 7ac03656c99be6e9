package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/admin"
)

func mirroredPanel() *admin.MirrorPanel {
	return &admin.MirrorPanel{
		Node: "10.0.0.1:4053", Served: 3,
		Members: []admin.MirrorMember{
			{NodeID: "10.0.0.2:4053", Holds: true, Held: 5, HeldReady: false, Standby: true, StandbyReady: true, LagBytes: 2048},
		},
		Dropped: map[string]uint64{"lag": 1}, Takeovers: map[string]uint64{"ok": 2},
	}
}

// TestAPIReadsTheMirroredSessions: a Viewer's token reads the mirrored
// sessions of the panel as JSON.
func TestAPIReadsTheMirroredSessions(t *testing.T) {
	e := newEnv(t, admin.Options{})
	e.b.Update("line-1", func(p *admin.RedundancyPanel) { p.Mirror = mirroredPanel() })
	r := httptest.NewRequest("GET", "/api/clusters/line-1/redundancy", nil)
	r.Header.Set("Authorization", "Bearer tok-viewer")
	w := e.do(r)
	var raw map[string]json.RawMessage
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &raw) != nil {
		t.Fatalf("panel: %d %s", w.Code, w.Body)
	}
	want := `{"node":"10.0.0.1:4053","served":3,"members":[{"nodeId":"10.0.0.2:4053","holds":true,"held":5,"heldReady":false,` +
		`"standby":true,"standbyReady":true,"lagBytes":2048}],"dropped":{"lag":1},"takeovers":{"ok":2}}`
	if got := string(raw["mirror"]); got != want {
		t.Fatalf("mirror = %s\nwant %s", got, want)
	}
	e.b.Update("line-1", func(p *admin.RedundancyPanel) { p.Mirror = nil })
	r = httptest.NewRequest("GET", "/api/clusters/line-1/redundancy", nil)
	r.Header.Set("Authorization", "Bearer tok-viewer")
	if w := e.do(r); strings.Contains(w.Body.String(), `"mirror"`) {
		t.Fatalf("a node without mirroring shows a mirror: %s", w.Body)
	}
}

// TestPageShowsTheMirroredSessions: the redundancy page has the table,
// one row per member, and none without mirroring.
func TestPageShowsTheMirroredSessions(t *testing.T) {
	e := newEnv(t, admin.Options{})
	cookie, _ := e.login(t, "carl", "carl-pw")
	get := func() string {
		r := httptest.NewRequest("GET", "/clusters/line-1/redundancy", nil)
		r.AddCookie(cookie)
		w := e.do(r)
		if w.Code != http.StatusOK {
			t.Fatalf("page: %d", w.Code)
		}
		return w.Body.String()
	}
	if page := get(); strings.Contains(page, `id="mirror"`) {
		t.Fatal("the page shows a mirrored sessions table for a node without mirroring")
	}
	e.b.Update("line-1", func(p *admin.RedundancyPanel) { p.Mirror = mirroredPanel() })
	page := get()
	for _, want := range []string{
		`Mirrored sessions (HotAndMirrored)`, `<span id="mirror-served">3</span>`,
		`<tr data-node-id="10.0.0.2:4053">`, `<td data-field="held">5</td>`,
		`<td data-field="heldReady">no (catching up: a failover falls back to Warm)</td>`,
		`<td data-field="standby">yes</td>`, `<td data-field="lagBytes">2048</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}
