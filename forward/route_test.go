package forward

import (
	"testing"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/gate"
)

func TestRoute(t *testing.T) {
	allow := gate.Decision{Allow: true, Epoch: 4}
	deny := func(r gate.Reason) gate.Decision { return gate.Decision{Reason: r} }
	for _, tc := range []struct {
		name string
		in   RouteInput
		act  Action
		st   ua.StatusCode
	}{
		{"viewer refused here, never sent", RouteInput{Forward, gate.SiteWrite, false, deny(gate.DeniedSecondary)}, Refuse, ua.StatusBadUserAccessDenied},
		{"viewer refused on the Primary too", RouteInput{Forward, gate.SiteWrite, false, allow}, Refuse, ua.StatusBadUserAccessDenied},
		{"primary executes a write", RouteInput{Forward, gate.SiteWrite, true, allow}, Local, ua.StatusOK},
		{"primary executes in confirmed", RouteInput{Confirmed, gate.SiteAck, true, allow}, Local, ua.StatusOK},
		{"secondary forwards a write", RouteInput{Forward, gate.SiteWrite, true, deny(gate.DeniedSecondary)}, Send, ua.StatusOK},
		{"secondary forwards an acknowledge", RouteInput{Forward, gate.SiteAck, true, deny(gate.DeniedSecondary)}, Send, ua.StatusOK},
		{"role unknown forwards", RouteInput{Forward, gate.SiteWrite, true, deny(gate.DeniedRoleUnknown)}, Send, ua.StatusOK},
		{"not a member forwards", RouteInput{Forward, gate.SiteWrite, true, deny(gate.DeniedNotMember)}, Send, ua.StatusOK},
		{"fenced forwards", RouteInput{Forward, gate.SiteAck, true, deny(gate.DeniedFenced)}, Send, ua.StatusOK},
		{"woken forwards", RouteInput{Forward, gate.SiteWrite, true, deny(gate.DeniedWoken)}, Send, ua.StatusOK},
		{"detached has no Primary", RouteInput{Forward, gate.SiteWrite, true, deny(gate.DeniedDetached)}, Refuse, StatusNotPrimary},
		{"confirmed refuses as today", RouteInput{Confirmed, gate.SiteWrite, true, deny(gate.DeniedSecondary)}, Refuse, StatusNotPrimary},
		{"optimistic refuses (the caller reverts)", RouteInput{Optimistic, gate.SiteWrite, true, deny(gate.DeniedSecondary)}, Refuse, StatusNotPrimary},
		{"optimistic ack refused as today", RouteInput{Optimistic, gate.SiteAck, true, deny(gate.DeniedSecondary)}, Refuse, StatusNotPrimary},
		{"an emit is never forwarded", RouteInput{Forward, gate.SiteAlarmEmit, true, deny(gate.DeniedSecondary)}, Refuse, StatusNotPrimary},
		{"a drain is never forwarded", RouteInput{Forward, gate.SiteHistorianDrain, true, deny(gate.DeniedSecondary)}, Refuse, StatusNotPrimary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			act, st := Route(tc.in)
			if act != tc.act || st != tc.st {
				t.Fatalf("Route(%+v) = %v %v, want %v %v", tc.in, act, st, tc.act, tc.st)
			}
		})
	}
}

// TestRouteSendsOnlyForwardableSitesInForwardMode checks Route against
// its definition over every site, reason and mode.
func TestRouteSendsOnlyForwardableSitesInForwardMode(t *testing.T) {
	reasons := []gate.Reason{gate.Allowed, gate.DeniedSecondary, gate.DeniedDetached, gate.DeniedRoleUnknown,
		gate.DeniedFenced, gate.DeniedNotMember, gate.DeniedWoken}
	for _, site := range gate.Sites() {
		for _, r := range reasons {
			for _, mode := range []Mode{Optimistic, Confirmed, Forward} {
				for _, perm := range []bool{false, true} {
					d := gate.Decision{Allow: r == gate.Allowed, Reason: r}
					act, _ := Route(RouteInput{Mode: mode, Site: site, Permitted: perm, Gate: d})
					want := Refuse
					switch {
					case !perm:
					case d.Allow:
						want = Local
					case mode == Forward && r != gate.DeniedDetached && (site == gate.SiteWrite || site == gate.SiteAck):
						want = Send
					}
					if act != want {
						t.Errorf("site %v reason %v mode %v permitted %v: %v, want %v", site, r, mode, perm, act, want)
					}
				}
			}
		}
	}
}

func TestEpochOK(t *testing.T) {
	for _, tc := range []struct {
		sender, own uint64
		ok          bool
	}{
		{0, 0, true}, {3, 3, true}, {2, 3, true}, {4, 3, false}, {1, 0, false},
	} {
		if got := EpochOK(tc.sender, tc.own); got != tc.ok {
			t.Errorf("EpochOK(sender %d, own %d) = %v, want %v", tc.sender, tc.own, got, tc.ok)
		}
	}
}
