package floating

import (
	"fmt"
	"strings"
	"time"
)

// Decide is what the node of v.Self does with the floating address now: the
// desired owner (the Primary, if eligible) and this node's verb, with the
// reason in an operator's words. Pure: it reads v and p only (the stream's
// time is v.StreamMax, never a clock). The rules are the table in the
// package documentation.
func Decide(v View, p Params) Decision {
	owner, why := desiredOwner(v, p)
	d := Decision{Owner: owner, Epoch: v.Epoch, Verb: VerbNone}
	switch h := v.Holder; {
	case holdsSelf(v):
		d.Verb, d.Reason = heldBySelf(v.Self, owner, why)
	case v.Self != owner:
		d.Reason = why + "; " + notOwnerNote(v.Self, h)
	case h.Kind == HolderForeign:
		d.Verb, d.Reason = VerbWait, why+"; "+foreignNote(h)+": "+v.Self+" waits until an operator frees it"
	case h.Kind == HolderMember:
		d.Verb, d.From, d.Reason = fromMember(v, p, member(v, h.Member), why)
	default:
		d.Verb, d.Reason = VerbSeize, why+"; nobody holds the address"
	}
	return d
}

// desiredOwner is the Primary of v if it is eligible, else "", with the
// reason in words.
func desiredOwner(v View, p Params) (string, string) {
	var prim []string
	for _, m := range v.Members {
		if m.Primary {
			prim = append(prim, m.Node)
		}
	}
	switch len(prim) {
	case 0:
		return "", "no member is Primary"
	case 1:
	default:
		return "", strings.Join(prim, " and ") + " are each named Primary in this view; nobody owns the address until the view settles"
	}
	m := member(v, prim[0])
	why := ineligible(m, v.StreamMax, p)
	if why == "" {
		return m.Node, m.Node + " is Primary and eligible"
	}
	if s, ok := successor(v); ok && m.Draining && ineligible(s, v.StreamMax, p) == "" {
		return s.Node, m.Node + " is Primary but " + why + ": a planned hand-over to " + s.Node + ", the next Primary, which is eligible"
	}
	return "", m.Node + " is Primary but " + why + "; nobody owns the address"
}

// successor is the one member v marks Successor.
func successor(v View) (Member, bool) {
	var found []Member
	for _, m := range v.Members {
		if m.Successor && !m.Primary {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return Member{}, false
	}
	return found[0], true
}

// ineligible says why m may not own the address ("" when it may):
// eligible(m) = ¬Draining ∧ Healthy ∧ (¬LicenceRequired ∨ Licensed) ∧ fresh(m).
func ineligible(m Member, streamMax time.Time, p Params) string {
	switch {
	case m.Draining:
		return "is draining"
	case !m.Healthy:
		return "is not Healthy"
	case p.LicenceRequired && !m.Licensed:
		return "does not hold its licence"
	}
	return staleness(m, streamMax, p)
}

// fresh is Heartbeat non-zero ∧ Heartbeat + TTL + Hold > streamMax: a
// stream that does not move declares nobody stale.
func fresh(m Member, streamMax time.Time, p Params) bool {
	return !m.Heartbeat.IsZero() && m.Heartbeat.Add(p.HeartbeatTTL+p.PromotionHold).After(streamMax)
}

// staleness says how m is stale on the stream ("" when fresh).
func staleness(m Member, streamMax time.Time, p Params) string {
	switch {
	case m.Heartbeat.IsZero():
		return "has no heartbeat on the stream"
	case fresh(m, streamMax, p):
		return ""
	}
	return fmt.Sprintf("went silent on the stream at %s (stream at %s, past ttl %s + hold %s)",
		clock(m.Heartbeat), clock(streamMax), p.HeartbeatTTL, p.PromotionHold)
}

// heldBySelf: this node holds the address; it keeps it only as the owner.
func heldBySelf(self, owner, why string) (Verb, string) {
	if self == owner {
		return VerbNone, why + "; " + self + " holds the address"
	}
	return VerbRelease, why + "; " + self + " holds the address and releases it"
}

// fromMember: this node is the owner and member h holds the address. It is
// taken when h is gone, silent on the stream, or has said it released it
// (AutoFailover off: only the last); otherwise this node waits.
func fromMember(v View, p Params, h Member, why string) (Verb, string, string) {
	switch {
	case !h.Heartbeat.IsZero() && !h.Claims:
		return VerbReassign, h.Node, why + "; " + h.Node + " released the address (its last heartbeat claims nothing) but is still seen holding it"
	case !p.AutoFailover:
		return VerbWait, "", why + "; " + h.Node + " still holds the address and automatic failover is off: it moves only when " + h.Node + " gives it up (a planned failover or a drain)"
	case h.Gone:
		return VerbReassign, h.Node, why + "; " + h.Node + "'s process is gone (proven dead)"
	}
	if s := staleness(h, v.StreamMax, p); s != "" {
		return VerbReassign, h.Node, why + "; " + h.Node + " holds the address but " + s
	}
	return VerbWait, "", fmt.Sprintf("%s; %s still claims the address and is live on the stream (last heartbeat %s, silent once the stream reaches %s; stream at %s)",
		why, h.Node, clock(h.Heartbeat), clock(h.Heartbeat.Add(p.HeartbeatTTL+p.PromotionHold)), clock(v.StreamMax))
}

// notOwnerNote: this node is not the owner and does not hold the address.
func notOwnerNote(self string, h Observation) string {
	switch h.Kind {
	case HolderForeign:
		return foreignNote(h)
	case HolderMember:
		return h.Member + " holds the address"
	}
	return self + " does not hold the address"
}

func foreignNote(h Observation) string {
	return "the address is held by " + orUnknown(h.ID) + ", not a member (a conflict, never fought over)"
}

// holdsSelf: the observation names this node as the holder.
func holdsSelf(v View) bool {
	return v.Holder.Kind == HolderSelf || (v.Holder.Kind == HolderMember && v.Holder.Member == v.Self)
}

// member is v's member named node (a member the view does not list has no
// heartbeat: it is stale on the stream).
func member(v View, node string) Member {
	for _, m := range v.Members {
		if m.Node == node {
			return m
		}
	}
	return Member{Node: node}
}

func orUnknown(id string) string {
	if id == "" {
		return "an unknown holder"
	}
	return id
}

// clock prints a stream time for a reason: UTC, to the millisecond.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }
