package gate

import (
	"log/slog"
	"sync"
)

// Source gives the inputs of a decision as they are now, all but Site
// (*redundancy.RoleView on a node). Input is called on every gated action,
// from any goroutine and concurrently; it must not block.
type Source interface {
	Input() Input
}

// Counter counts one denial with the site and reason labels
// (telemetry.Metrics.PrimaryGateDenied). It is called from the gated
// sites' goroutines, concurrently; it must not block.
type Counter interface {
	PrimaryGateDenied(site, reason string)
}

// Guard is the one way a site asks the gate: it gathers the Input, calls
// Decide, counts a denial and logs a site's verdict when it changes. It
// is safe for concurrent use.
type Guard struct {
	src   Source
	count Counter
	log   *slog.Logger

	mu   sync.Mutex
	last [numSites]Reason // the verdict last logged per site; mu must be held.
	seen [numSites]bool   // a verdict was logged for the site; mu must be held.
}

// NewGuard returns a Guard over src. count may be nil (not counted), log
// nil (not logged).
func NewGuard(src Source, count Counter, log *slog.Logger) *Guard {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Guard{src: src, count: count, log: log}
}

// Check asks the gate for one action at site: the decision is counted when
// it denies and logged when the site's verdict changed.
func (g *Guard) Check(site Site) Decision {
	in, d := g.decide(site)
	if !d.Allow && g.count != nil {
		g.count.PrimaryGateDenied(site.String(), d.Reason.Label())
	}
	g.logChange(in, d)
	return d
}

// Look asks the gate without an action (a periodic look at the verdict,
// the alarm engine's role tick): logged on change, never counted.
func (g *Guard) Look(site Site) Decision {
	in, d := g.decide(site)
	g.logChange(in, d)
	return d
}

// Input is the Source's inputs now, for sites that need the membership
// facts too (the alarm engine's first evaluation).
func (g *Guard) Input() Input { return g.src.Input() }

func (g *Guard) decide(site Site) (Input, Decision) {
	in := g.src.Input()
	in.Site = site
	return in, Decide(in)
}

// logChange logs d when it differs from the site's last logged verdict.
func (g *Guard) logChange(in Input, d Decision) {
	i := int(in.Site)
	if i < 0 || i >= int(numSites) {
		panic("gate: Guard asked for a site outside Sites()")
	}
	g.mu.Lock()
	changed := !g.seen[i] || g.last[i] != d.Reason
	g.seen[i], g.last[i] = true, d.Reason
	g.mu.Unlock()
	if !changed {
		return
	}
	attrs := []any{"site", in.Site.String(), "role", in.Role.String(), "drivers", in.Drivers,
		"member", in.Member, "alone", in.Alone, "licence", in.Licence.String(), "woken", in.Woken, "epoch", in.Epoch}
	if d.Allow {
		g.log.Info("primary gate: serviced", attrs...)
		return
	}
	g.log.Info("primary gate: denied; further denials at this site are counted, not logged, until the verdict changes",
		append(attrs, "reason", d.Reason.String(), "label", d.Reason.Label())...)
}
