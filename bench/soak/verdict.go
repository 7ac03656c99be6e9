package main

import (
	"fmt"
	"strings"
	"time"
)

// Limits are the pass conditions of a soak.
type Limits struct {
	// MaxGap is the largest gap allowed between two Publish responses of
	// the well-behaved client.
	MaxGap time.Duration
	// FDSlack is how many more open file descriptors than at the
	// baseline the host may hold after recovery.
	FDSlack int
	// RSSFactor and RSSSlack bound the RSS after recovery at RSSFactor ×
	// baseline + RSSSlack bytes. The last sample follows a forced full
	// collection in the host (POST /debug/gc, host.EnvGCHook), so it
	// measures memory still held, not memory the Go runtime has freed but
	// not yet returned (that took minutes and failed a 10 s recovery on a
	// loaded machine).
	RSSFactor float64
	RSSSlack  uint64
}

// DefaultLimits: a Publish response is due every 200 ms, so 200 ms + 500
// ms; 10 descriptors; twice the baseline RSS plus 50 MiB.
var DefaultLimits = Limits{MaxGap: goodPublishing + 500*time.Millisecond, FDSlack: 10, RSSFactor: 2, RSSSlack: 50 << 20}

// Check is one pass condition and how the soak did against it.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Verdict checks s against l: no error seen by the well-behaved client,
// every newcomer during the abuse got a session, no Publish gap above
// l.MaxGap, file descriptors and RSS back within their bounds after
// recovery, the host still running, and when s.Hardened the checks of
// hardeningChecks.
func Verdict(s Summary, l Limits) []Check {
	g := s.Good
	errs := Check{Name: "well-behaved client errors", OK: g.Errors == 0, Detail: fmt.Sprintf("%d", g.Errors)}
	if len(g.ErrorTexts) > 0 {
		errs.Detail += ", first: " + g.ErrorTexts[0]
	}
	nc := Check{Name: "newcomers during the abuse", OK: s.Newcomers.Ops > 0, Detail: fmt.Sprintf("%d attempts", s.Newcomers.Ops)}
	for _, o := range s.Newcomers.Outcomes {
		if o.Outcome != "Good" {
			nc.OK = false
		}
		nc.Detail += fmt.Sprintf(", %s ×%d", o.Outcome, o.Count)
	}
	out := []Check{
		errs, nc,
		{Name: "largest Publish gap", OK: g.GapMax <= l.MaxGap,
			Detail: fmt.Sprintf("%s at %.1f s (limit %s)", msText(g.GapMax), g.GapMaxAt.Seconds(), msText(l.MaxGap))},
	}
	if s.Baseline == nil || s.After == nil {
		return append(out, Check{Name: "host samples", OK: false, Detail: "no baseline or no after-recovery sample of the host process"})
	}
	b, a := *s.Baseline, *s.After
	fdLimit := b.FDs + l.FDSlack
	rssLimit := uint64(l.RSSFactor*float64(b.RSS)) + l.RSSSlack
	out = append(out,
		Check{Name: "open fds after recovery", OK: a.FDs <= fdLimit,
			Detail: fmt.Sprintf("%d (baseline %d, limit %d)", a.FDs, b.FDs, fdLimit)},
		Check{Name: "RSS after recovery", OK: a.RSS <= rssLimit,
			Detail: fmt.Sprintf("%s (baseline %s, limit %s)", mib(a.RSS), mib(b.RSS), mib(rssLimit))},
	)
	out = append(out, Check{Name: "host process running", OK: s.HostExit == "", Detail: or(s.HostExit, "yes")})
	if s.Hardened {
		out = append(out, hardeningChecks(s)...)
	}
	return out
}

// hardeningChecks: every probe of the well-behaved side passed (the
// Operator's right password Good and 303 at once while it was guessed
// from 127.0.0.2, an anonymous session within its limit, a row synced
// with the key); no wrong password of the attacker succeeded; every
// replayed OpenSecureChannel was refused; every unauthenticated read was
// answered 401.
func hardeningChecks(s Summary) []Check {
	var out []Check
	for _, name := range []string{probeAnonymous, probeOPCUA, probeAdmin, probeReplication} {
		out = append(out, probeCheck(s.Probes, name))
	}
	opc, adm := abuserNamed(s.Abusers, abuserOPCUAPassword), abuserNamed(s.Abusers, abuserAdminPassword)
	won := opc.Count("Good") + adm.Count("303")
	out = append(out, Check{Name: "no password attempt from the attacker succeeded", OK: won == 0 && opc.Ops > 0 && adm.Ops > 0,
		Detail: fmt.Sprintf("%d of %d attempts on OPC UA and %d on the admin login succeeded", won, opc.Ops, adm.Ops)})
	replay := abuserNamed(s.Abusers, abuserReplay)
	var replays uint64
	for _, o := range replay.Outcomes {
		if strings.HasPrefix(o.Outcome, replayPrefix) {
			replays += o.Count
		}
	}
	refused := replay.Count(replayRefused)
	out = append(out, Check{Name: "replayed OpenSecureChannel refused", OK: replays > 0 && refused == replays,
		Detail: fmt.Sprintf("%d of %d replays answered ERR BadNonceInvalid (%d captures opened a channel)", refused, replays, replay.Count(replayCaptured))})
	reads := abuserNamed(s.Abusers, abuserHTTPRead)
	var answered uint64
	for _, o := range reads.Outcomes {
		if o.Outcome != cutShort {
			answered += o.Count
		}
	}
	return append(out, Check{Name: "every unauthenticated read answered 401", OK: answered > 0 && reads.Count("401") == answered,
		Detail: fmt.Sprintf("%d of %d: %s", reads.Count("401"), answered, or(reads.outcomes(), "none"))})
}

// probeCheck: the probe named name ran and every attempt passed.
func probeCheck(ps []ProbeFigures, name string) Check {
	c := Check{Name: "well-behaved " + name, Detail: "did not run"}
	for _, p := range ps {
		if p.Name != name {
			continue
		}
		c.OK = p.Attempts > 0 && p.Passed == p.Attempts
		c.Detail = fmt.Sprintf("%d of %d %s", p.Passed, p.Attempts, p.Want)
		if p.WithinNS > 0 {
			c.Detail += fmt.Sprintf(" within %s (%d slower, max %s)", msText(p.WithinNS), p.Slow, msText(p.Max))
		}
		if o := (AbuserCount{Outcomes: p.Outcomes}).outcomes(); o != "" {
			c.Detail += "; " + o
		}
	}
	return c
}

// Failed returns the checks that did not pass.
func Failed(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

func msText(d time.Duration) string { return fmt.Sprintf("%.0f ms", ms(d)) }

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
