package daemon

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/bootstrap"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Rate limits of the join-refusal and silent-seed log lines, in
// node.Instant milliseconds.
const (
	refusalLogEvery node.Instant = 60_000
	// SilentSeedsAfter is how long a node looks for its cluster without
	// an answer before LogSeedsSilent.
	SilentSeedsAfter node.Instant = 10_000
)

// joinAuth is the daemon's Cluster:Secret check. It lives on the actor's
// goroutine; nothing here is shared.
type joinAuth struct {
	secret    []byte                  // nil: no check
	refused   map[string]node.Instant // last LogRefusedJoin per sender and cause
	refusedBy map[string]node.Instant // last LogJoinRefusedBy per peer and cause
	silent    node.Instant            // since when no membership; -1: member
	warned    node.Instant            // last LogSeedsSilent; -1: never
}

func newJoinAuth(secret string) joinAuth {
	a := joinAuth{refused: map[string]node.Instant{}, refusedBy: map[string]node.Instant{}, silent: -1, warned: -1}
	if secret != "" {
		a.secret = []byte(secret)
	}
	return a
}

// due reports whether a line about addr and cause may be logged at t, and
// notes it; the map is bounded by forgetting everything older than the
// limit.
func due(last map[string]node.Instant, addr m.Address, cause string, t node.Instant) bool {
	key := addr.String() + " " + cause
	if p, ok := last[key]; ok && t-p < refusalLogEvery {
		return false
	}
	if len(last) > node.QuarantineSize {
		for k, v := range last {
			if t-v >= refusalLogEvery {
				delete(last, k)
			}
		}
	}
	last[key] = t
	return true
}

// prove adds this node's proof to an outgoing handshake message.
func (a *daemonActor) prove(w proto.Message) {
	if a.auth.secret != nil {
		wire.Prove(a.auth.secret, w)
	}
}

// admit applies the Cluster:Secret rules to a received, well-formed
// message addressed to this incarnation: a handshake message needs the
// proof, any other message must come from a member. It reports whether
// the message may be stepped.
func (a *daemonActor) admit(pm proto.Message, h node.Header) bool {
	if a.auth.secret == nil {
		return true
	}
	if wire.IsHandshake(pm) {
		err := wire.Verify(a.auth.secret, pm)
		if err == nil {
			return true
		}
		a.refuseJoin(pm, h.From, err)
		return false
	}
	if a.n.State().Gossip.HasMember(h.From) {
		return true
	}
	a.d.stats.unknownSender.Add(1)
	a.log.Debug("cluster message dropped: the sender is not a member and Cluster:Secret is set",
		"type", fmt.Sprintf("%T", pm), "from", h.From.String())
	return false
}

// refuseJoin logs a refused handshake message (rate limited) and tells
// the sender why.
func (a *daemonActor) refuseJoin(pm proto.Message, from m.UniqueAddress, err error) {
	a.d.stats.refusedJoin.Add(1)
	reason := wire.RefusalReason_REFUSAL_REASON_WRONG_SECRET
	cause := err.Error()
	if errors.Is(err, wire.ErrMissingProof) {
		reason = wire.RefusalReason_REFUSAL_REASON_MISSING_PROOF
		cause += " (the sender has no Cluster:Secret)"
	}
	if due(a.auth.refused, from.Address(), cause, a.now()) {
		a.log.Warn(LogRefusedJoin+" "+from.NodeID()+": "+cause, "from", from.NodeID(), "uid", uidText(from),
			"type", string(pm.ProtoReflect().Descriptor().Name()), "hint", "every node of the cluster needs the same Cluster:Secret")
	}
	a.d.opts.Transport.Send(from.Address(), wire.NewJoinRefused(a.self(), from, reason, a.d.opts.Protocol))
}

// releaseNotes is where an operator reads which releases run side by side.
const releaseNotes = "docs/releases.md (Compatibility)"

// admitProtocol checks what the sender of a received join handshake
// message says of the cluster protocol (wire.Generations.Accepts; other
// messages pass). A node this one does not work with is refused: the
// refusal is logged with both generations (rate limited), answered with a
// JoinRefused naming this node's generations, and stepped into the core
// as a refusal by that node, so that a node still looking for its cluster
// never forms one of its own beside a cluster it cannot join (a member
// ignores it). It reports whether the message may go on.
func (a *daemonActor) admitProtocol(pm proto.Message, from m.UniqueAddress) bool {
	peer, ok := wire.HandshakeGenerations(pm)
	own := a.d.opts.Protocol
	if !ok || own.Accepts(peer) {
		return true
	}
	a.d.stats.refusedProtocol.Add(1)
	cause := fmt.Sprintf("it speaks cluster protocol %v and this node %v", peer, own)
	if due(a.auth.refused, from.Address(), cause, a.now()) {
		a.log.Warn(LogRefusedJoin+" "+from.NodeID()+": "+cause+"; the two releases cannot run side by side in one cluster, see "+releaseNotes,
			"from", from.NodeID(), "uid", uidText(from), "type", string(pm.ProtoReflect().Descriptor().Name()),
			"peerGeneration", peer.Speaks, "peerOldest", peer.Oldest, "generation", own.Speaks, "oldest", own.Oldest)
	}
	a.d.opts.Transport.Send(from.Address(), wire.NewJoinRefused(a.self(), from, wire.RefusalReason_REFUSAL_REASON_INCOMPATIBLE_PROTOCOL, own))
	a.step(node.JoinRefused{Header: a.local(), By: from.Address(), Cause: bootstrap.CauseIncompatibleProtocol})
	return false
}

// onJoinRefused feeds a peer's refusal of this node's handshake to the
// core (which then never forms a cluster of its own) and logs it (rate
// limited). A refusal addressed to another incarnation, or with an
// invalid sender address, is ignored.
func (a *daemonActor) onJoinRefused(r *wire.JoinRefused) {
	peer, ok := wire.RefusedBy(r, a.self())
	if !ok {
		return
	}
	var cause string
	kind := bootstrap.CauseWrongSecret
	hint := "every node of the cluster needs the same Cluster:Secret"
	switch r.GetReason() {
	case wire.RefusalReason_REFUSAL_REASON_WRONG_SECRET:
		cause = "its Cluster:Secret differs from this node's"
	case wire.RefusalReason_REFUSAL_REASON_MISSING_PROOF:
		cause = "it has a Cluster:Secret and this node has none"
		kind = bootstrap.CauseMissingProof
	case wire.RefusalReason_REFUSAL_REASON_INCOMPATIBLE_PROTOCOL:
		cause = fmt.Sprintf("it speaks cluster protocol %v and this node %v", wire.RefuserGenerations(r), a.d.opts.Protocol)
		kind = bootstrap.CauseIncompatibleProtocol
		hint = "the two releases cannot run side by side in one cluster; see " + releaseNotes
	default:
		cause = "reason " + r.GetReason().String()
	}
	a.step(node.JoinRefused{Header: a.local(), By: peer, Cause: kind})
	if !due(a.auth.refusedBy, peer, cause, a.now()) {
		return
	}
	a.log.Warn(LogJoinRefusedBy+" "+peer.String()+": "+cause, "peer", peer.String(), "hint", hint)
}

// watchSeeds logs LogSeedsSilent when this node has looked for its cluster
// for SilentSeedsAfter without becoming a member: with the seeds running,
// a refused TLS handshake or secret is the likely cause.
func (a *daemonActor) watchSeeds(t node.Instant) {
	switch a.n.Phase() {
	case node.SeedJoining, node.TryingToJoin:
	default:
		a.auth.silent = -1
		return
	}
	if a.auth.silent < 0 {
		a.auth.silent = t
		return
	}
	if t-a.auth.silent < SilentSeedsAfter || (a.auth.warned >= 0 && t-a.auth.warned < refusalLogEvery) {
		return
	}
	a.auth.warned = t
	seeds := make([]string, 0, len(a.d.opts.Node.Seeds))
	for _, s := range a.d.opts.Node.Seeds {
		if s != a.self().Address() {
			seeds = append(seeds, s.String())
		}
	}
	a.log.Warn(LogSeedsSilent+" ("+strings.Join(seeds, ", ")+")", "seeds", seeds, "phase", a.n.Phase().String(),
		"waited", fmt.Sprintf("%ds", (t-a.auth.silent)/1000),
		"hint", "if the seeds are running, check that this node's Cluster:Tls (same CA, a certificate naming Cluster:PublicHostname) and Cluster:Secret match theirs; their logs name a refused TLS connection or join")
}
