package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hardenedSummary is a soak that passed every check, hardening included.
func hardenedSummary() Summary {
	const mb = 1 << 20
	base := Sample{RSS: 60 * mb, FDs: 16}
	probes := []ProbeFigures{
		{Name: probeAnonymous, Want: "Good", WithinNS: time.Second, Attempts: 3, Passed: 3, Outcomes: []OutcomeCount{{"Good", 3}}},
		{Name: probeOPCUA, Want: "Good", Attempts: 2, Passed: 2, Outcomes: []OutcomeCount{{"Good", 2}}},
		{Name: probeAdmin, Want: "303", Attempts: 2, Passed: 2, Outcomes: []OutcomeCount{{"303", 2}}},
		{Name: probeReplication, Want: syncedOutcome, Attempts: 2, Passed: 2, Outcomes: []OutcomeCount{{syncedOutcome, 2}}},
	}
	return Summary{Good: GoodFigures{GapMax: 300 * time.Millisecond}, Baseline: &base, After: &Sample{RSS: 70 * mb, FDs: 18},
		Newcomers: newcomersOf(probes), Probes: probes, Hardened: true,
		Abusers: []AbuserCount{
			{Abuser: abuserOPCUAPassword, Ops: 5, Outcomes: []OutcomeCount{{"BadUserAccessDenied", 4}, {"channel: ERR BadTCPNotEnoughResources", 3}}},
			{Abuser: abuserAdminPassword, Ops: 5, Outcomes: []OutcomeCount{{"401", 4}, {"429", 1}}},
			{Abuser: abuserReplay, Ops: 12, Outcomes: []OutcomeCount{{replayRefused, 10}, {replayCaptured, 2}}},
			{Abuser: abuserHTTPRead, Ops: 9, Outcomes: []OutcomeCount{{"401", 8}, {cutShort, 1}}},
		}}
}

// TestVerdictHardening: each check of the hardening fails on its own
// finding and on its attack or probe not having run.
func TestVerdictHardening(t *testing.T) {
	setOutcomes := func(s *Summary, abuser string, o ...OutcomeCount) {
		for k := range s.Abusers {
			if s.Abusers[k].Abuser == abuser {
				s.Abusers[k].Outcomes = o
			}
		}
	}
	setProbe := func(s *Summary, name string, edit func(*ProbeFigures)) {
		s.Probes = append([]ProbeFigures(nil), s.Probes...)
		for k := range s.Probes {
			if s.Probes[k].Name == name {
				edit(&s.Probes[k])
			}
		}
	}
	cases := []struct {
		name   string
		edit   func(*Summary)
		failed []string
	}{
		{"every check passes", func(*Summary) {}, nil},
		{"the attacker's password worked on OPC UA", func(s *Summary) {
			setOutcomes(s, abuserOPCUAPassword, OutcomeCount{"BadUserAccessDenied", 4}, OutcomeCount{"Good", 1})
		}, []string{"no password attempt from the attacker succeeded"}},
		{"the attacker signed in on the admin page", func(s *Summary) {
			setOutcomes(s, abuserAdminPassword, OutcomeCount{"401", 4}, OutcomeCount{"303", 1})
		}, []string{"no password attempt from the attacker succeeded"}},
		{"no password attack ran", func(s *Summary) { s.Abusers = s.Abusers[1:] }, []string{"no password attempt from the attacker succeeded"}},
		{"one replay opened a channel", func(s *Summary) {
			setOutcomes(s, abuserReplay, OutcomeCount{replayRefused, 10}, OutcomeCount{replayPrefix + "opened a channel", 1})
		}, []string{"replayed OpenSecureChannel refused"}},
		{"a replay not answered", func(s *Summary) {
			setOutcomes(s, abuserReplay, OutcomeCount{replayRefused, 10}, OutcomeCount{replayPrefix + "refused: no answer", 1})
		}, []string{"replayed OpenSecureChannel refused"}},
		{"no replay", func(s *Summary) { setOutcomes(s, abuserReplay, OutcomeCount{replayCaptured, 1}) }, []string{"replayed OpenSecureChannel refused"}},
		{"a read served without credentials", func(s *Summary) {
			setOutcomes(s, abuserHTTPRead, OutcomeCount{"401", 8}, OutcomeCount{"200", 1})
		}, []string{"every unauthenticated read answered 401"}},
		{"reads only cut short", func(s *Summary) { setOutcomes(s, abuserHTTPRead, OutcomeCount{cutShort, 1}) }, []string{"every unauthenticated read answered 401"}},
		{"the Operator locked out on OPC UA", func(s *Summary) {
			setProbe(s, probeOPCUA, func(p *ProbeFigures) { p.Passed = 1 })
		}, []string{"well-behaved " + probeOPCUA}},
		{"the Operator's login throttled", func(s *Summary) {
			setProbe(s, probeAdmin, func(p *ProbeFigures) { p.Passed = 1 })
		}, []string{"well-behaved " + probeAdmin}},
		{"an anonymous session later than 1 s", func(s *Summary) {
			setProbe(s, probeAnonymous, func(p *ProbeFigures) { p.Passed, p.Slow = 2, 1 })
		}, []string{"well-behaved " + probeAnonymous}},
		{"replication probe never ran", func(s *Summary) { s.Probes = s.Probes[:3] }, []string{"well-behaved " + probeReplication}},
	}
	for _, c := range cases {
		s := hardenedSummary()
		c.edit(&s)
		var got []string
		for _, f := range Failed(Verdict(s, DefaultLimits)) {
			got = append(got, f.Name)
		}
		if strings.Join(got, ",") != strings.Join(c.failed, ",") {
			t.Errorf("%s: failed %v, want %v", c.name, got, c.failed)
		}
	}
}

func TestRefusedBeforeThePassword(t *testing.T) {
	for got, want := range map[string]bool{
		"channel: ERR BadTCPNotEnoughResources": true, "BadTooManySessions": true,
		"BadUserAccessDenied": false, "Good": false, "no answer": false,
	} {
		if refusedBeforeThePassword(got) != want {
			t.Errorf("refusedBeforeThePassword(%q) = %v, want %v", got, !want, want)
		}
	}
}

func TestCountBucket(t *testing.T) {
	for n, want := range map[int]string{0: "0", 1: "≤ 5", 10: "≤ 10", 11: "≤ 20", 100: "≤ 100", 101: "> 100"} {
		if got := countBucket(n); got != want {
			t.Errorf("countBucket(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestProbeCountsEachAttempt: a probe counts every attempt that ended
// before its context, as passed only when it answered want within its
// limit, and stops with its context.
func TestProbeCountsEachAttempt(t *testing.T) {
	var n atomic.Int64
	p := probe{name: "p", every: time.Millisecond, want: "Good", within: 50 * time.Millisecond, do: func(ctx context.Context) string {
		switch n.Add(1) % 3 {
		case 1:
			return "Good"
		case 2:
			pause(ctx, 80*time.Millisecond) // later than within
			return "Good"
		}
		return "BadTooManySessions"
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ProbeFigures)
	go func() { done <- p.run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the probe made no six attempts in 10 s")
		}
		pause(context.Background(), 10*time.Millisecond)
		if n.Load() >= 6 {
			break
		}
	}
	cancel()
	f := <-done
	if f.Attempts < 5 || f.Passed+f.Slow+int(AbuserCount{Outcomes: f.Outcomes}.Count("BadTooManySessions")) != f.Attempts {
		t.Fatalf("%d attempts: %d passed, %d slow, outcomes %v", f.Attempts, f.Passed, f.Slow, f.Outcomes)
	}
	if f.Slow == 0 || f.Passed == 0 || f.Max < 80*time.Millisecond {
		t.Fatalf("passed %d, slow %d, max %v: the slow attempts were not told apart", f.Passed, f.Slow, f.Max)
	}
}
