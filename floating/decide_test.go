package floating

import (
	"strings"
	"testing"
	"time"
)

// TestDecideRules holds Decide to the table in the package documentation,
// one row per rule, on a stream at t0+10s with ttl 3s + hold 2s: a
// heartbeat at t0+6s is fresh, one at t0+5s is stale (stale when
// Heartbeat + ttl + hold <= StreamMax).
func TestDecideRules(t *testing.T) {
	fresh, stale := t0.Add(6*time.Second), t0.Add(5*time.Second)
	a := func(mod func(*Member)) Member {
		m := Member{Node: "a", Primary: true, Healthy: true, Licensed: true, Heartbeat: fresh}
		if mod != nil {
			mod(&m)
		}
		return m
	}
	b := func(mod func(*Member)) Member {
		m := Member{Node: "b", Healthy: true, Licensed: true, Heartbeat: fresh, Claims: true}
		if mod != nil {
			mod(&m)
		}
		return m
	}
	self := Observation{Kind: HolderSelf, Member: "a"}
	byB := Observation{Kind: HolderMember, Member: "b"}
	none := Observation{Kind: HolderNone}
	auto := Params{AutoFailover: true, HeartbeatTTL: 3 * time.Second, PromotionHold: 2 * time.Second, LicenceRequired: true}
	manual := auto
	manual.AutoFailover = false
	for _, tc := range []struct {
		name    string
		members []Member
		holder  Observation
		p       Params
		owner   string
		verb    Verb
		from    string
		reason  string // a part of the reason
	}{
		{"owner holds it", []Member{a(nil), b(nil)}, self, auto, "a", VerbNone, "", "a holds the address"},
		{"owner seen by its member id holds it", []Member{a(nil), b(nil)}, Observation{Kind: HolderMember, Member: "a"}, auto, "a", VerbNone, "", "a holds the address"},
		{"nobody holds it: seize", []Member{a(nil), b(nil)}, none, auto, "a", VerbSeize, "", "nobody holds"},
		{"AutoFailover off still seizes an unheld address", []Member{a(nil), b(nil)}, none, manual, "a", VerbSeize, "", "nobody holds"},
		{"live claiming holder: wait", []Member{a(nil), b(nil)}, byB, auto, "a", VerbWait, "", "b still claims the address and is live"},
		{"holder stale exactly at ttl+hold: reassign", []Member{a(nil), b(func(m *Member) { m.Heartbeat = stale })}, byB, auto, "a", VerbReassign, "b", "went silent on the stream at 10:00:05.000"},
		{"holder gone: reassign at once", []Member{a(nil), b(func(m *Member) { m.Gone = true })}, byB, auto, "a", VerbReassign, "b", "process is gone"},
		{"holder released: reassign", []Member{a(nil), b(func(m *Member) { m.Claims = false })}, byB, auto, "a", VerbReassign, "b", "released the address"},
		{"AutoFailover off, holder released: reassign", []Member{a(nil), b(func(m *Member) { m.Claims = false })}, byB, manual, "a", VerbReassign, "b", "released the address"},
		{"AutoFailover off, holder gone: wait", []Member{a(nil), b(func(m *Member) { m.Gone = true })}, byB, manual, "a", VerbWait, "", "automatic failover is off"},
		{"AutoFailover off, holder stale: wait", []Member{a(nil), b(func(m *Member) { m.Heartbeat = stale })}, byB, manual, "a", VerbWait, "", "automatic failover is off"},
		{"holder unknown to the view: no heartbeat, stale", []Member{a(nil), b(nil)}, Observation{Kind: HolderMember, Member: "x"}, auto, "a", VerbReassign, "x", "x holds the address but has no heartbeat"},
		{"foreign holder: wait, never fought", []Member{a(nil), b(nil)}, Observation{Kind: HolderForeign, ID: "02:00:00:00:00:99"}, auto, "a", VerbWait, "", "02:00:00:00:00:99, not a member (a conflict"},
		{"draining Primary releases", []Member{a(func(m *Member) { m.Draining = true }), b(nil)}, self, auto, "", VerbRelease, "", "a is Primary but is draining"},
		{"unhealthy Primary releases", []Member{a(func(m *Member) { m.Healthy = false }), b(nil)}, self, auto, "", VerbRelease, "", "is not Healthy"},
		{"Primary without licence releases", []Member{a(func(m *Member) { m.Licensed = false }), b(nil)}, self, auto, "", VerbRelease, "", "does not hold its licence"},
		{"licence not required: unlicensed Primary keeps it", []Member{a(func(m *Member) { m.Licensed = false }), b(nil)}, self, Params{AutoFailover: true, HeartbeatTTL: 3 * time.Second, PromotionHold: 2 * time.Second}, "a", VerbNone, "", "a is Primary and eligible"},
		{"stale Primary releases", []Member{a(func(m *Member) { m.Heartbeat = stale }), b(nil)}, self, auto, "", VerbRelease, "", "a is Primary but went silent"},
		{"Primary without heartbeat does not seize", []Member{a(func(m *Member) { m.Heartbeat = time.Time{} }), b(nil)}, none, auto, "", VerbNone, "", "has no heartbeat on the stream"},
		{"not Primary, holds it: release", []Member{a(func(m *Member) { m.Primary = false }), b(func(m *Member) { m.Primary = true })}, self, auto, "b", VerbRelease, "", "b is Primary and eligible; a holds the address and releases it"},
		{"not Primary, holds nothing: none", []Member{a(func(m *Member) { m.Primary = false }), b(func(m *Member) { m.Primary = true })}, byB, auto, "b", VerbNone, "", "b holds the address"},
		{"no Primary: nobody owns", []Member{a(func(m *Member) { m.Primary = false }), b(nil)}, none, auto, "", VerbNone, "", "no member is Primary"},
		{"two Primaries: nobody owns", []Member{a(nil), b(func(m *Member) { m.Primary = true })}, none, auto, "", VerbNone, "", "a and b are each named Primary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := View{Self: "a", Members: tc.members, StreamMax: t0.Add(10 * time.Second), Epoch: 7, Holder: tc.holder}
			d := Decide(v, tc.p)
			if d.Owner != tc.owner || d.Verb != tc.verb || d.From != tc.from || d.Epoch != 7 {
				t.Fatalf("Decide = owner %q verb %s from %q epoch %d; want owner %q verb %s from %q epoch 7 (%s)",
					d.Owner, d.Verb, d.From, d.Epoch, tc.owner, tc.verb, tc.from, d.Reason)
			}
			if !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("reason %q does not say %q", d.Reason, tc.reason)
			}
		})
	}
}
