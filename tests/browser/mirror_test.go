package browser_test

import (
	"testing"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/tests/browser"
)

// TestMirroredSessionsFollowLive: the mirrored sessions table of a
// HotAndMirrored pair shows the peer catching up, then ready, without a
// reload of the page.
func TestMirroredSessionsFollowLive(t *testing.T) {
	s := newSite(t)
	mirror := func(served, held int, ready bool) func(*admin.RedundancyPanel) {
		return func(p *admin.RedundancyPanel) {
			p.Mirror = &admin.MirrorPanel{Node: nodeA, Served: served, Members: []admin.MirrorMember{
				{NodeID: nodeB, Holds: true, Held: held, HeldReady: ready, Standby: true, StandbyReady: ready, LagBytes: 4096},
			}, Dropped: map[string]uint64{}, Takeovers: map[string]uint64{}}
		}
	}
	s.backend.Update("line-1", mirror(2, 1, false))
	ctx := openPanel(t, s, "carl", "carl-pw")
	row := `#mirror-body tr[data-node-id="` + nodeB + `"] `
	must(t, browser.WaitText(ctx, "#mirror-served", "2", within))
	must(t, browser.WaitText(ctx, row+`[data-field="heldReady"]`, "no (catching up: a failover falls back to Warm)", within))
	must(t, browser.WaitText(ctx, row+`[data-field="standby"]`, "no (catching up)", within))
	_, err := browser.Eval[bool](ctx, "window.sameDocument = true")
	must(t, err)

	s.backend.Update("line-1", mirror(5, 3, true))
	must(t, browser.WaitText(ctx, "#mirror-served", "5", within))
	must(t, browser.WaitText(ctx, row+`[data-field="held"]`, "3", within))
	must(t, browser.WaitText(ctx, row+`[data-field="heldReady"]`, "yes", within))
	must(t, browser.WaitText(ctx, row+`[data-field="standby"]`, "yes", within))
	must(t, browser.WaitText(ctx, row+`[data-field="lagBytes"]`, "4096", within))
	same, err := browser.Eval[bool](ctx, "window.sameDocument === true")
	must(t, err)
	if !same {
		t.Fatal("the page was reloaded to show the mirror ready")
	}
	screenshot(t, ctx, "admin-mirrored-sessions.png")
}
