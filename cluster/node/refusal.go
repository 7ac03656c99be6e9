package node

import (
	"slices"

	"github.com/otopcua/otopcua/cluster/bootstrap"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// refusals are the peers that refused this node's join handshake, oldest
// first, one per address (bootstrap.Refusal).
type refusals struct {
	list  []bootstrap.Refusal
	noted Instant // last NoteNotFormingAlone; -1: never
}

// maxRefusals bounds the list; a refusal by one more address replaces the
// newest (one refusal is enough to hold the node back).
const maxRefusals = 16

// onJoinRefused records a refusal. A member ignores it: it has a cluster
// and forms none.
func (n *Node) onJoinRefused(by m.Address, cause bootstrap.Cause) {
	if n.phase == Initialized || by == n.cfg.Self.Address() {
		return
	}
	r := &n.refuse
	if i := slices.IndexFunc(r.list, func(x bootstrap.Refusal) bool { return x.By == by }); i >= 0 {
		r.list[i].Cause = cause
		return
	}
	if len(r.list) == maxRefusals {
		r.list = r.list[:maxRefusals-1]
	}
	r.list = append(r.list, bootstrap.Refusal{By: by, At: int64(n.now), Cause: cause})
}

// withdrawRefusal forgets the refusal by addr: a handshake message from it
// reached the core, so it accepts this node now.
func (n *Node) withdrawRefusal(addr m.Address) {
	r := &n.refuse
	i := slices.IndexFunc(r.list, func(x bootstrap.Refusal) bool { return x.By == addr })
	if i < 0 {
		return
	}
	r.list = slices.Delete(slices.Clone(r.list), i, i+1)
	n.note("%v accepts this node's join handshake now; its refusal no longer holds this node back", addr)
	if len(r.list) == 0 {
		r.noted = -1
	}
}

// notFormingAlone says, at most once per bootstrap.RefusalNoteEvery, that a
// refusal keeps this node from forming a cluster of its own.
func (n *Node) notFormingAlone(reason string) {
	if !bootstrap.NoteDue(int64(n.refuse.noted), int64(n.now)) {
		return
	}
	n.refuse.noted = n.now
	n.noteKind(NoteNotFormingAlone, "not forming a cluster of my own: %s; still asking the seeds to join", reason)
}

// isHandshake reports whether msg is a join handshake message.
func isHandshake(msg Message) bool {
	switch msg.(type) {
	case InitJoin, InitJoinAck, InitJoinNack, Join, Welcome:
		return true
	}
	return false
}
