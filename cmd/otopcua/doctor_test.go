package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/host"
)

func TestDiagnoseFloating(t *testing.T) {
	hb := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	member := func(node string, skew time.Duration) host.FloatingMember {
		return host.FloatingMember{Node: node, Heartbeat: hb, Skew: skew}
	}
	healthy := func() map[string]*host.FloatingReport {
		return map[string]*host.FloatingReport{
			"http://a": {Self: "a:1", Holds: true, Owner: "a:1", Members: []host.FloatingMember{member("a:1", 3*time.Millisecond), member("b:1", -2*time.Millisecond)}},
			"http://b": {Self: "b:1", Owner: "a:1"},
		}
	}
	for _, tc := range []struct {
		name     string
		edit     func(map[string]*host.FloatingReport)
		errs     map[string]error
		problems []string
		warnings []string
	}{
		{name: "healthy pair"},
		{name: "two holders", edit: func(r map[string]*host.FloatingReport) { r["http://b"].Holds = true },
			problems: []string{"2 members hold the address: a:1, b:1"}},
		{name: "foreign holder", edit: func(r map[string]*host.FloatingReport) {
			r["http://a"].Holds = false
			r["http://a"].Conflict = true
			r["http://a"].Drift = "conflict"
			r["http://a"].Observed = &host.FloatingObserved{Kind: "foreign", ID: "02:00:00:00:00:ff"}
		}, problems: []string{"held by a foreign foreign (02:00:00:00:00:ff)"}, warnings: []string{"does not hold the address yet"}},
		{name: "stream down", edit: func(r map[string]*host.FloatingReport) { r["http://b"].StreamErr = "connection refused" },
			problems: []string{"b:1: cannot write its heartbeat"}},
		{name: "member silent", errs: map[string]error{"http://c": errors.New("did not answer")}, problems: []string{"http://c: did not answer"}},
		{name: "drift repaired", edit: func(r map[string]*host.FloatingReport) { r["http://b"].Drift = "extra" },
			warnings: []string{`b:1: last reconcile found drift "extra"`}},
		{name: "owners disagree", edit: func(r map[string]*host.FloatingReport) { r["http://b"].Owner = "b:1" },
			warnings: []string{"members name different owners: a:1, b:1"}},
		{name: "clock ten seconds off", edit: func(r map[string]*host.FloatingReport) {
			r["http://a"].Members[1].Skew = 10 * time.Second
		}, warnings: []string{"b:1: clock +10s off the Config DB's"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := healthy()
			if tc.edit != nil {
				tc.edit(r)
			}
			fs := diagnoseFloating(r, tc.errs)
			var problems, warnings []string
			for _, f := range fs {
				if f.problem {
					problems = append(problems, f.text)
				} else {
					warnings = append(warnings, f.text)
				}
			}
			check := func(kind string, got, want []string) {
				if len(got) != len(want) {
					t.Fatalf("%s %q, want %d matching %q", kind, got, len(want), want)
				}
				for i := range want {
					if !strings.Contains(got[i], want[i]) {
						t.Errorf("%s %d %q does not say %q", kind, i, got[i], want[i])
					}
				}
			}
			check("problems", problems, tc.problems)
			check("warnings", warnings, tc.warnings)
		})
	}
}
