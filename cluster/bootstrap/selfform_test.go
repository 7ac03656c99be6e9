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

func TestDecideSelfFormRefused(t *testing.T) {
	const w = DefaultSelfFormAfter
	a := m.Address{Host: "a", Port: 2552}
	refused := []Refusal{{By: a, At: 100, Cause: CauseWrongSecret}}
	reason := "a:2552 refused this node (wrong Cluster:Secret)"
	cases := []struct {
		name string
		in   SelfFormInput
		want SelfFormDecision
	}{
		{"refused, window expired, nobody listening: still no self-form",
			SelfFormInput{Window: w, Elapsed: w, OwnAddressInSeeds: true, Refusals: refused}, SelfFormDecision{Refused, reason}},
		{"refused, long after expiry",
			SelfFormInput{Window: w, Elapsed: 100 * w, OwnAddressInSeeds: true, Refusals: refused}, SelfFormDecision{Refused, reason}},
		{"refused, another seed accepts TCP: the refusal is named",
			SelfFormInput{Window: w, Elapsed: w, OwnAddressInSeeds: true, AnotherSeedAcceptsTCP: true, Refusals: refused}, SelfFormDecision{Refused, reason}},
		{"refused, window not expired",
			SelfFormInput{Window: w, Elapsed: w - 1, OwnAddressInSeeds: true, Refusals: refused}, SelfFormDecision{Verdict: Pending}},
		{"refused, disabled",
			SelfFormInput{Window: 0, Elapsed: w, OwnAddressInSeeds: true, Refusals: refused}, SelfFormDecision{Verdict: Disabled}},
		{"positive control: not refused, same snapshot self-forms",
			SelfFormInput{Window: w, Elapsed: w, OwnAddressInSeeds: true}, SelfFormDecision{Verdict: SelfForm}},
	}
	for _, c := range cases {
		if got := DecideSelfForm(c.in); got != c.want {
			t.Errorf("%s: got %v %q, want %v %q", c.name, got.Verdict, got.Reason, c.want.Verdict, c.want.Reason)
		}
	}
}

func TestDecideFirstSeed(t *testing.T) {
	const timeout = 5000
	b := m.Address{Host: "b", Port: 2552}
	refused := []Refusal{{By: b, At: 200, Cause: CauseWrongSecret}}
	tls := []Refusal{{By: b, At: 200, Cause: CauseTLS}}
	cases := []struct {
		name string
		in   FirstSeedInput
		want FirstSeedDecision
	}{
		{"before the timeout", FirstSeedInput{Timeout: timeout, Elapsed: timeout - 1}, FirstSeedDecision{Verdict: KeepAsking}},
		{"no seed answered within the timeout: form", FirstSeedInput{Timeout: timeout, Elapsed: timeout}, FirstSeedDecision{Verdict: FormCluster}},
		{"every other seed said Nack: form early", FirstSeedInput{Timeout: timeout, Elapsed: 1, AllOthersNacked: true}, FirstSeedDecision{Verdict: FormCluster}},
		{"refused before the timeout: keep asking", FirstSeedInput{Timeout: timeout, Elapsed: 1, Refusals: refused}, FirstSeedDecision{Verdict: KeepAsking}},
		{"refused, timeout passed: held", FirstSeedInput{Timeout: timeout, Elapsed: timeout, Refusals: refused},
			FirstSeedDecision{HeldByRefusal, "b:2552 refused this node (wrong Cluster:Secret)"}},
		{"refused, an hour later: still held", FirstSeedInput{Timeout: timeout, Elapsed: 3_600_000, Refusals: refused},
			FirstSeedDecision{HeldByRefusal, "b:2552 refused this node (wrong Cluster:Secret)"}},
		{"refused, every other seed Nacked: held", FirstSeedInput{Timeout: timeout, Elapsed: 1, AllOthersNacked: true, Refusals: refused},
			FirstSeedDecision{HeldByRefusal, "b:2552 refused this node (wrong Cluster:Secret)"}},
		{"TLS refusal: held", FirstSeedInput{Timeout: timeout, Elapsed: timeout, Refusals: tls},
			FirstSeedDecision{HeldByRefusal, "b:2552 refused this node (TLS handshake refused: check Cluster:Tls)"}},
	}
	for _, c := range cases {
		if got := DecideFirstSeed(c.in); got != c.want {
			t.Errorf("%s: got %v %q, want %v %q", c.name, got.Verdict, got.Reason, c.want.Verdict, c.want.Reason)
		}
	}
}

func TestNoteDue(t *testing.T) {
	cases := []struct {
		last, now int64
		want      bool
	}{
		{-1, 0, true},
		{0, RefusalNoteEvery - 1, false},
		{0, RefusalNoteEvery, true},
		{5000, 5000, false},
	}
	for _, c := range cases {
		if got := NoteDue(c.last, c.now); got != c.want {
			t.Errorf("NoteDue(%d, %d) = %v, want %v", c.last, c.now, got, c.want)
		}
	}
}
