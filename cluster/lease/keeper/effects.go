package keeper

import (
	"fmt"
	"time"

	"github.com/otopcua/otopcua/gate"
)

// Effect is something the driver must do after a Tick or Step, in order.
type Effect interface{ isEffect() }

// Purpose says why an Acquire was asked for; the driver echoes it in the
// AcquireResult.
type Purpose uint8

// Purposes of an Acquire.
const (
	// Take: the keeper takes the lease for its Primary whose set looks
	// split (it frees it again once the set is whole).
	Take Purpose = iota + 1
	// Renew: the keeper renews the lease it holds.
	Renew
	// ForCore: the cluster core's split-brain decision asks for the lease
	// (downing.Lease.Acquire); the caller waits for the answer.
	ForCore
	// ForFastPath: the crash fast path takes the lease before it downs a
	// peer whose port refuses connections. It never evicts a holder: a
	// port that refuses may be a firewall's TCP reset in front of a live
	// node that acts on its lease until the lease runs out.
	ForFastPath
	// ForForming: the node takes the lease before it forms a cluster on
	// itself (a first seed no other seed answered, the self-form
	// fallback): a node of the ClusterId that holds it is running behind a
	// partition, and a second cluster would give the ClusterId two
	// Primaries that never merge. Freed, like Take's, once the set is
	// whole.
	ForForming
)

func (p Purpose) String() string {
	switch p {
	case Take:
		return "take"
	case Renew:
		return "renew"
	case ForCore:
		return "core"
	case ForFastPath:
		return "fast-path"
	case ForForming:
		return "forming"
	}
	return fmt.Sprintf("Purpose(%d)", p)
}

// Background reports whether the keeper asked for the call itself (one at
// a time, answered on a goroutine); ForCore, ForFastPath and ForForming
// calls are made for a caller that waits.
func (p Purpose) Background() bool { return p == Take || p == Renew }

// Acquire asks the driver to take or renew the lease for the owner
// within TTL/2, and to step an AcquireResult with the same Purpose and
// Start.
type Acquire struct {
	Purpose Purpose
	// Start is the instant the request is made: a grant licenses until
	// Start + TTL − Margin.
	Start time.Time
}

// Release asks the driver to free the lease held by the owner within
// TTL/2 and to step a ReleaseResult.
type Release struct{}

// DownSelf: this node held the lease and another node of its set took it
// while the set is split: the other side decides, and this node is cut
// off from it with no licence. The driver downs this node (the process
// ends with the restart exit code and rejoins as a new incarnation)
// instead of leaving it fenced for good.
type DownSelf struct{ Holder string }

// LicenceChanged: the Primary's licence moved; the driver logs it and
// wakes the publish actor (the ServiceLevel and the gate follow it).
type LicenceChanged struct{ Licence gate.Licence }

// Note is a log line: Kind tells the driver its message and level, the
// other fields are its attributes (only those the kind names are set).
type Note struct {
	Kind NoteKind
	// Peer: the holder that took the lease (NoteLost) or the downed peer
	// (NoteHold).
	Peer  string
	Epoch uint64        // NoteAcquired, NoteLost
	For   time.Duration // NoteWoken: the tick gap; NoteHold: the hold
	Err   string        // NoteStoreSilent
}

// NoteKind classifies a Note.
type NoteKind uint8

// Note kinds.
const (
	// NoteAcquired: this node took the lease (info).
	NoteAcquired NoteKind = iota + 1
	// NoteLost: another node holds the lease this node held (warning).
	NoteLost
	// NoteStoreSilent: the store did not answer an acquire (warning).
	NoteStoreSilent
	// NoteReleased: the keeper freed the lease, the set being whole (info).
	NoteReleased
	// NoteWoken: a tick came more than a pause after the last one — the
	// process was frozen — so only the lease licenses it for a pause
	// (warning).
	NoteWoken
	// NoteHold: the promotion hold starts (warning).
	NoteHold
)

// String renders the note for people and scenario files.
func (n Note) String() string {
	switch n.Kind {
	case NoteAcquired:
		return fmt.Sprintf("lease acquired (epoch %d)", n.Epoch)
	case NoteLost:
		return fmt.Sprintf("lease lost to %s (epoch %d)", n.Peer, n.Epoch)
	case NoteStoreSilent:
		return "lease store did not answer: " + n.Err
	case NoteReleased:
		return "lease released: the set is whole again"
	case NoteWoken:
		return fmt.Sprintf("did not run for %v (frozen?): only the lease licenses for a pause", n.For)
	case NoteHold:
		return fmt.Sprintf("promotion hold %v: Primary after the downing of %s, which may still be alive", n.For, n.Peer)
	}
	return fmt.Sprintf("NoteKind(%d)", n.Kind)
}

func (Acquire) isEffect()        {}
func (Release) isEffect()        {}
func (DownSelf) isEffect()       {}
func (LicenceChanged) isEffect() {}
func (Note) isEffect()           {}
