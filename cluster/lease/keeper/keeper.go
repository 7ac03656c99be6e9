package keeper

import (
	"slices"
	"strings"
	"time"

	"github.com/otopcua/otopcua/cluster/woken"
	"github.com/otopcua/otopcua/gate"
)

// Keeper is one node's lease keeper: its decisions and what it knows of
// the lease. It is not safe for concurrent use: the driver calls it from
// one goroutine or under one lock.
type Keeper struct {
	cfg Config

	holder string // last holder seen ("" free or unknown)
	// elsewhereUntil: another node held the lease when the store last
	// answered this node (Held), so that node may act as the survivor of
	// a split until then (the answer's request start + TTL): the set
	// being whole in this node's eyes licenses nothing before it.
	elsewhereUntil time.Time
	elsewhere      string    // the holder that answer named
	validUntil     time.Time // this node's grant licenses until then
	renewedAt      time.Time // start of the last acquire or renewal (paces attempts)
	busy           bool      // a Take, Renew or Release call runs
	wantFree       bool      // free the lease once the set is whole
	freeAfterSplit bool      // a crash fast path's lease: free it once the set, split since, is whole again
	holdUntil      time.Time // promotion hold
	wasPrimary     bool
	downed         map[string]downing // by peer
	last           gate.Licence       // last licence reported
	ticks          *woken.Detector    // the gaps between Ticks (from Follow)
	following      bool               // Follow was stepped
	obs            Observation
	// leavers are the peers seen leaving gracefully, by ID, with when they
	// were last heard; forgotten once that is longer ago than WholeWithin.
	leavers map[string]time.Time
}

type downing struct {
	at     time.Time
	proven bool
}

// New returns the keeper of cfg (Validate first) at now. The lease is free
// as far as it knows, and the licence Licensed.
func New(cfg Config, now time.Time) *Keeper {
	return &Keeper{cfg: cfg, downed: map[string]downing{}, last: gate.Licensed, ticks: woken.NewDetector(cfg.Pause, now),
		leavers: map[string]time.Time{}}
}

// Config is the keeper's configuration.
func (k *Keeper) Config() Config { return k.cfg }

// Holder is the last holder seen ("" when free or unknown).
func (k *Keeper) Holder() string { return k.holder }

// Busy reports whether a Take, Renew or Release call is outstanding.
func (k *Keeper) Busy() bool { return k.busy }

// Licence is the Primary's licence at now, from the state alone. Before
// Follow nothing is gated yet: Licensed.
func (k *Keeper) Licence(now time.Time) gate.Licence {
	if !k.following {
		return gate.Licensed
	}
	return gate.LicenceOf(gate.LicenceInput{
		LeaseMajority: true,
		Whole:         k.whole(now) && !k.heldElsewhere(now),
		LeaseValid:    k.holder == k.cfg.Owner && now.Before(k.validUntil),
		HoldLeft:      k.holdUntil.Sub(now),
	})
}

// Tick is the keeper's timer (the driver ticks it every 250 ms): it
// renews a held lease, takes it for a Primary whose set looks split, frees
// it once the set is whole and the core released it, and reports a
// licence change.
func (k *Keeper) Tick(now time.Time, obs Observation) []Effect {
	var effs []Effect
	if gap, woke := k.ticks.Tick(now); woke {
		// The process did not run for a pause (SIGSTOP, a VM freeze): what
		// it hears now may have waited in its sockets through the freeze.
		effs = append(effs, Note{Kind: NoteWoken, For: gap})
	}
	effs = append(effs, k.observe(now, obs)...)
	if e, ok := k.decide(now); ok {
		k.busy = true
		effs = append(effs, e)
	}
	for id, d := range k.downed {
		if now.Sub(d.at) >= DownedMemory {
			delete(k.downed, id)
		}
	}
	return append(effs, k.changed(now)...)
}

// decide picks the tick's store call, if any: one at a time. A peer that
// leaves gracefully is not counted: its Primary takes the lease at once,
// before the leaver stops counting for the licence (whole), and frees it
// only once the set is whole without it.
func (k *Keeper) decide(now time.Time) (Effect, bool) {
	mySide, known := k.side(now, k.cfg.SuspectAfter(), false)
	suspect := !known || mySide < k.cfg.Expected
	// Only a side that cannot be a minority (a pair's lone Primary, half
	// or more of a larger set) takes the lease ahead of the decision: a
	// Primary cut off in the minority of three or more leaves it to the
	// majority's resolver.
	notMinority := mySide*2 >= k.cfg.Expected
	mine := k.holder == k.cfg.Owner && now.Before(k.validUntil.Add(k.cfg.Margin()))
	if mine && suspect && k.freeAfterSplit {
		// The fast path took the lease the moment a peer's port refused,
		// before its silence made the set look split: it is freed once the
		// set, split since, is whole again (the peer restarted and
		// rejoined, or the partition healed). Kept for good, it would make
		// the next crash of this node cost a TTL, since the fast path
		// never takes a lease from its holder.
		k.freeAfterSplit, k.wantFree = false, true
	}
	switch {
	case k.busy:
	case mine && !suspect && k.wantFree:
		// Free only once every peer is heard again within SuspectAfter:
		// freeing while one is still suspect would be taken back at once,
		// and could lapse the licence when the set stops being whole.
		return Release{}, true
	case mine && now.Sub(k.renewedAt) >= k.cfg.RenewEvery():
		return Acquire{Purpose: Renew, Start: now}, true
	case !mine && k.obs.Primary && suspect && notMinority && now.Sub(k.renewedAt) >= RetryEvery:
		k.renewedAt = now
		return Acquire{Purpose: Take, Start: now}, true
	}
	return nil, false
}

// Step takes one input at now.
func (k *Keeper) Step(now time.Time, msg Message) []Effect {
	switch msg := msg.(type) {
	case Follow:
		k.ticks.Reset(now)
		k.following = true
	case Observed:
		return k.observe(now, msg.Observation)
	case AcquireResult:
		effs := k.acquired(msg)
		if lost(effs) && !k.whole(now) {
			effs = append(effs, DownSelf{Holder: msg.Holder})
		}
		return append(effs, k.changed(now)...)
	case ReleaseResult:
		var effs []Effect
		if msg.OK {
			k.holder, k.validUntil, k.wantFree, k.freeAfterSplit = "", time.Time{}, false, false
			effs = append(effs, Note{Kind: NoteReleased})
		}
		k.busy = false
		return append(effs, k.changed(now)...)
	case CoreAcquire:
		return []Effect{Acquire{Purpose: ForCore, Start: now}}
	case CoreRelease:
		k.wantFree = true
	case FastPath:
		return []Effect{Acquire{Purpose: ForFastPath, Start: now}}
	case Forming:
		return []Effect{Acquire{Purpose: ForForming, Start: now}}
	case Downed:
		k.downed[msg.Peer] = downing{at: now, proven: msg.Proven}
	}
	return nil
}

// acquired records the store's answer to an acquire.
func (k *Keeper) acquired(r AcquireResult) []Effect {
	var effs []Effect
	switch r.Outcome {
	case Granted:
		if k.holder != k.cfg.Owner {
			effs = append(effs, Note{Kind: NoteAcquired, Epoch: r.Epoch})
		}
		k.holder, k.renewedAt = k.cfg.Owner, r.Start
		k.validUntil = r.Start.Add(k.cfg.TTL - k.cfg.Margin())
		switch r.Purpose {
		case Take, ForForming:
			k.wantFree = true // its own: freed again once the set is whole
		case ForFastPath:
			k.freeAfterSplit = !k.wantFree
		case ForCore:
			k.wantFree, k.freeAfterSplit = false, false
		}
	case Held:
		if k.holder == k.cfg.Owner {
			effs = append(effs, Note{Kind: NoteLost, Peer: r.Holder, Epoch: r.Epoch})
		}
		k.holder, k.validUntil, k.freeAfterSplit = r.Holder, time.Time{}, false
		k.elsewhereUntil, k.elsewhere = r.Start.Add(k.cfg.TTL), r.Holder
	default:
		effs = append(effs, Note{Kind: NoteStoreSilent, Err: r.Err})
	}
	if r.Purpose.Background() {
		k.busy = false
	}
	return effs
}

// heldElsewhere reports whether another node held the lease at the store's
// last answer to this node, less than a TTL ago, and may act on it: a
// peer leaving gracefully never acts as Primary again (its lease is one it
// took while this node was away, and it frees it or lets it run out), so
// its hold fences nothing — the new Primary of a graceful hand-over is
// not shown at 100 while the leaver's lease runs out.
func (k *Keeper) heldElsewhere(now time.Time) bool {
	if !now.Before(k.elsewhereUntil) {
		return false
	}
	id, _, _ := strings.Cut(k.elsewhere, "#")
	if _, leaving := k.leavers[id]; leaving {
		return false
	}
	for _, p := range k.obs.Peers {
		if p.ID == id && p.Leaving {
			return false
		}
	}
	return true
}

// lost reports whether effs say this node lost the lease it held.
func lost(effs []Effect) bool {
	return slices.ContainsFunc(effs, func(e Effect) bool {
		n, ok := e.(Note)
		return ok && n.Kind == NoteLost
	})
}

// observe records obs and the peers that leave gracefully, and starts the
// promotion hold when this node has just become Primary after the downing
// of a peer that may be alive.
func (k *Keeper) observe(now time.Time, obs Observation) []Effect {
	k.obs = obs
	for _, p := range obs.Peers {
		if p.Leaving && p.Heard && p.LastHeard.After(k.leavers[p.ID]) {
			k.leavers[p.ID] = p.LastHeard
		}
		if _, known := k.downed[p.ID]; p.Down && !known {
			// The downing, seen in the gossip before (or instead of) its
			// Downed message: the observation that names this node Primary
			// must know of it, or the hold would not start.
			k.downed[p.ID] = downing{at: now, proven: p.Proven}
		}
	}
	for id, at := range k.leavers {
		if now.Sub(at) > k.cfg.WholeWithin() {
			delete(k.leavers, id)
		}
	}
	var effs []Effect
	if obs.Primary && !k.wasPrimary && k.cfg.Hold > 0 {
		ids := make([]string, 0, len(k.downed))
		for id := range k.downed {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if d := k.downed[id]; !d.proven && now.Sub(d.at) < DownedMemory {
				k.holdUntil = now.Add(k.cfg.Hold)
				effs = append(effs, Note{Kind: NoteHold, Peer: id, For: k.cfg.Hold})
				break
			}
		}
	}
	k.wasPrimary = obs.Primary
	return effs
}

// changed reports a licence that moved since the last report.
func (k *Keeper) changed(now time.Time) []Effect {
	l := k.Licence(now)
	if l == k.last {
		return nil
	}
	k.last = l
	return []Effect{LicenceChanged{Licence: l}}
}

// whole reports whether every node of the set is on this node's side,
// heard from within WholeWithin, a peer that leaves gracefully included:
// it never acts as Primary again, so while it is heard (and for
// WholeWithin after it was last heard, gone or not) it splits nothing,
// and its Primary has that long to take the lease (decide) without a
// moment unlicensed.
func (k *Keeper) whole(now time.Time) bool {
	n, ok := k.side(now, k.cfg.WholeWithin(), true)
	return ok && n >= k.cfg.Expected
}

// side counts the nodes of the set on this node's side — itself and the Up
// driver peers it holds reachable and heard from within silence, and with
// leavers the peers seen leaving gracefully heard from within silence; ok
// is false while it cannot tell: the process did not run for a pause, or
// woke from that less than a pause ago (until then only the lease licenses
// it).
func (k *Keeper) side(now time.Time, silence time.Duration, leavers bool) (n int, ok bool) {
	if k.ticks.Unsure(now) {
		return 1, false
	}
	if k.obs.Self {
		n++
	}
	counted := map[string]bool{}
	for _, p := range k.obs.Peers {
		if (p.Member || leavers && p.Leaving) && p.Reachable && p.Heard && now.Sub(p.LastHeard) <= silence {
			n++
			counted[p.ID] = true
		}
	}
	if leavers {
		for id, at := range k.leavers {
			if !counted[id] && now.Sub(at) <= silence {
				n++ // left, or leaving and no longer reachable: heard recently
			}
		}
	}
	return n, true
}
