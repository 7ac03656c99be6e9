package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Generations is what a node says of the cluster protocol in its join
// handshake messages: the generation it speaks and the oldest generation
// it still works with.
//
// Generation 1 is the protocol of v0.1.0, the first tagged release, whose
// messages carry no Protocol field. A build raises Speaks with every
// change that an older node would misread on any cluster channel
// (membership, pub/sub, singletons, forwarded writes, mirrored sessions):
// it keeps Oldest where it is while it still reads and writes the older
// generation's messages, and raises Oldest to Speaks when it no longer
// does; docs/releases.md says which release did what.
//
// The accepted range is "Oldest and newer", never capped from above: a node
// cannot know whether a later generation works with it, the later node
// does, and says so with its own Oldest. Accepts is symmetric, so two
// nodes of this release or later always agree.
type Generations struct {
	Speaks uint32
	Oldest uint32
}

// GenerationV010 is the generation of v0.1.0: what a handshake message
// without a Protocol field speaks.
const GenerationV010 uint32 = 1

// Current is the protocol this build speaks. It is generation 1, the one
// of v0.1.0: nothing on the cluster wire has changed incompatibly since.
var Current = Generations{Speaks: 1, Oldest: 1}

// Accepts reports whether a node that says g works with a peer that says
// peer: each speaks at least the other's oldest generation.
func (g Generations) Accepts(peer Generations) bool {
	return peer.Speaks >= g.Oldest && g.Speaks >= peer.Oldest
}

func (g Generations) String() string {
	return fmt.Sprintf("generation %d (works with %d and newer)", g.Speaks, g.Oldest)
}

// generationsOf reads a Protocol field; nil (a v0.1.0 sender) and zero
// fields mean generation 1.
func generationsOf(p *Protocol) Generations {
	g := Generations{Speaks: p.GetGeneration(), Oldest: p.GetOldest()}
	if g.Speaks == 0 {
		g.Speaks = GenerationV010
	}
	if g.Oldest == 0 {
		g.Oldest = GenerationV010
	}
	return g
}

func (g Generations) toWire() *Protocol { return &Protocol{Generation: g.Speaks, Oldest: g.Oldest} }

// HandshakeGenerations returns what the sender of a join handshake
// message says of the protocol (generation 1 when it says nothing); ok is
// false for any other message.
func HandshakeGenerations(msg proto.Message) (g Generations, ok bool) {
	switch x := msg.(type) {
	case *InitJoin:
		return generationsOf(x.GetProtocol()), true
	case *InitJoinAck:
		return generationsOf(x.GetProtocol()), true
	case *InitJoinNack:
		return generationsOf(x.GetProtocol()), true
	case *Join:
		return generationsOf(x.GetProtocol()), true
	case *Welcome:
		return generationsOf(x.GetProtocol()), true
	}
	return Generations{}, false
}

// Stamp sets g on a join handshake message; other messages are left alone.
// The proof (Prove) does not cover it: v0.1.0 computes proofs without it.
func Stamp(msg proto.Message, g Generations) {
	switch x := msg.(type) {
	case *InitJoin:
		x.Protocol = g.toWire()
	case *InitJoinAck:
		x.Protocol = g.toWire()
	case *InitJoinNack:
		x.Protocol = g.toWire()
	case *Join:
		x.Protocol = g.toWire()
	case *Welcome:
		x.Protocol = g.toWire()
	}
}

// RefuserGenerations is what the sender of a JoinRefused says of its
// protocol (generation 1 when it says nothing).
func RefuserGenerations(r *JoinRefused) Generations { return generationsOf(r.GetProtocol()) }
