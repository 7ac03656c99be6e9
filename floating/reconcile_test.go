package floating

import "testing"

func TestDrift(t *testing.T) {
	none := Observation{Kind: HolderNone}
	self := Observation{Kind: HolderSelf, Member: "a"}
	selfAsMember := Observation{Kind: HolderMember, Member: "a"}
	other := Observation{Kind: HolderMember, Member: "b"}
	foreign := Observation{Kind: HolderForeign, ID: "02:00:00:00:00:99"}
	for _, tc := range []struct {
		name, owner string
		obs         Observation
		kind        string
		verb        Verb
	}{
		{"owner holds it", "a", self, "", VerbNone},
		{"owner seen as a member holds it", "a", selfAsMember, "", VerbNone},
		{"owner, nobody holds it", "a", none, DriftMissing, VerbSeize},
		{"owner, another member holds it", "a", other, DriftMissing, VerbReassign},
		{"owner, a foreign holder", "a", foreign, DriftConflict, VerbNone},
		{"non-owner holds it", "b", self, DriftExtra, VerbRelease},
		{"non-owner seen as a member holds it", "b", selfAsMember, DriftExtra, VerbRelease},
		{"no owner, self holds it", "", self, DriftExtra, VerbRelease},
		{"non-owner, nobody holds it", "b", none, "", VerbNone},
		{"non-owner, the owner holds it", "b", other, "", VerbNone},
		{"non-owner, a foreign holder", "b", foreign, DriftConflict, VerbNone},
		{"no owner, nobody holds it", "", none, "", VerbNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, verb := Drift(tc.owner, "a", tc.obs)
			if kind != tc.kind || verb != tc.verb {
				t.Fatalf("Drift(owner %q, self a, %+v) = %q, %s; want %q, %s", tc.owner, tc.obs, kind, verb, tc.kind, tc.verb)
			}
		})
	}
}
