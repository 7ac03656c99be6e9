package bootstrap

import (
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
)

func TestDecideSelfForm(t *testing.T) {
	const w = DefaultSelfFormAfter
	cases := []struct {
		name string
		in   SelfFormInput
		want SelfFormDecision
	}{
		{"disabled by zero window", SelfFormInput{Window: 0, Elapsed: 99_000, OwnAddressInSeeds: true}, SelfFormDecision{Verdict: Disabled}},
		{"disabled by negative window", SelfFormInput{Window: -1, Elapsed: 99_000, OwnAddressInSeeds: true}, SelfFormDecision{Verdict: Disabled}},
		{"member needs no fallback", SelfFormInput{Window: w, Elapsed: w, OwnAddressInSeeds: true, IsMember: true}, SelfFormDecision{NeverSelfForm, ReasonAlreadyMember}},
		{"guard 2: not in own seeds, window expired, nobody listening", SelfFormInput{Window: w, Elapsed: w}, SelfFormDecision{NeverSelfForm, ReasonNotInSeeds}},
		{"guard 2: not in own seeds, before expiry", SelfFormInput{Window: w, Elapsed: 1}, SelfFormDecision{NeverSelfForm, ReasonNotInSeeds}},
		{"window not expired", SelfFormInput{Window: w, Elapsed: w - 1, OwnAddressInSeeds: true}, SelfFormDecision{Verdict: Pending}},
		{"window not expired, peer reachable", SelfFormInput{Window: w, Elapsed: w - 1, OwnAddressInSeeds: true, AnotherSeedAcceptsTCP: true}, SelfFormDecision{Verdict: Pending}},
		{"guard 1: another seed accepts TCP", SelfFormInput{Window: w, Elapsed: w, OwnAddressInSeeds: true, AnotherSeedAcceptsTCP: true}, SelfFormDecision{Verdict: WaitAnotherWindow}},
		{"expired, in seeds, no seed listening: self-form", SelfFormInput{Window: w, Elapsed: w, OwnAddressInSeeds: true}, SelfFormDecision{Verdict: SelfForm}},
		{"long after expiry", SelfFormInput{Window: w, Elapsed: 10 * w, OwnAddressInSeeds: true}, SelfFormDecision{Verdict: SelfForm}},
	}
	for _, c := range cases {
		if got := DecideSelfForm(c.in); got != c.want {
			t.Errorf("%s: got %v %q, want %v %q", c.name, got.Verdict, got.Reason, c.want.Verdict, c.want.Reason)
		}
	}
}

func TestSeedHelpers(t *testing.T) {
	a, b, c := m.Address{Host: "a", Port: 1}, m.Address{Host: "b", Port: 1}, m.Address{Host: "c", Port: 1}
	seeds := []m.Address{a, b}
	if !InSeeds(a, seeds) || InSeeds(c, seeds) {
		t.Fatal("InSeeds wrong")
	}
	if o := OtherSeeds(a, seeds); len(o) != 1 || o[0] != b {
		t.Fatalf("OtherSeeds(a) = %v", o)
	}
	if o := OtherSeeds(c, seeds); len(o) != 2 {
		t.Fatalf("OtherSeeds(c) = %v", o)
	}
}
