package wire

import "github.com/otopcua/otopcua/cluster/membership"

// NewJoinRefused is self's JoinRefused answer to a join handshake message
// from sender; g is what self says of the protocol.
func NewJoinRefused(self, sender membership.UniqueAddress, reason RefusalReason, g Generations) *JoinRefused {
	return &JoinRefused{From: uaToWire(self), To: uaToWire(sender), Reason: reason, Protocol: g.toWire()}
}

// RefusedBy returns the address of the peer that sent r, with the address
// checks of every other message. ok is false when r is addressed to
// another incarnation than self or its sender address is invalid.
func RefusedBy(r *JoinRefused, self membership.UniqueAddress) (by membership.Address, ok bool) {
	if to, err := uaFromWire(r.GetTo(), false); err != nil || to != self {
		return membership.Address{}, false
	}
	by, err := checkHostPort(r.GetFrom().GetHost(), r.GetFrom().GetPort())
	return by, err == nil
}
