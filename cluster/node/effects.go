package node

import (
	"fmt"

	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// Effect is something the driver must do after a Step or Tick, in order.
type Effect interface{ isEffect() }

// Send delivers Msg to Msg.Route().To (best effort; loss is tolerated).
type Send struct{ Msg Message }

// Publish hands Event to the node's subscribers.
type Publish struct{ Event m.Event }

// Note is a log line worth an operator's attention (decisions taken).
// Kind tells the driver which notes are warnings; Text is for people.
type Note struct {
	Kind NoteKind
	Text string
}

// NoteKind classifies a Note.
type NoteKind uint8

// Note kinds.
const (
	// NoteDecision: any other decision (the zero value).
	NoteDecision NoteKind = iota
	// NoteSelfFormed: the self-form fallback formed a cluster on this node.
	NoteSelfFormed
	// NoteNewIncarnation: a restarted process at a known address joins and
	// its previous incarnation is downed.
	NoteNewIncarnation
	// NoteNotFormingAlone: this node would form a cluster of its own (first
	// seed or self-form fallback) but a member of the mesh refused it; it
	// keeps asking to join. At most once per bootstrap.RefusalNoteEvery.
	NoteNotFormingAlone
	// NoteFastPathDown: the crash fast path downs a member whose cluster
	// port refuses connections.
	NoteFastPathDown
	// NoteFastPathLease: under lease-majority the fast path acquires the
	// lease before it downs such a member.
	NoteFastPathLease
	// NoteFastPathNoLease: the lease was not acquired; the split-brain
	// strategy decides.
	NoteFastPathNoLease
	// NoteQuarantineNotice: a removed incarnation that still talks to this
	// node was told it is no longer a member.
	NoteQuarantineNotice
	// NoteFormingLease: under lease-majority this node asks for the lease
	// before it forms a cluster on itself (debug).
	NoteFormingLease
	// NoteFormingHeld: under lease-majority this node would form a cluster
	// on itself while a seed is silent, but the lease was not acquired (a
	// node of the set holds it, or its store did not answer); it keeps
	// asking the seeds. At most once per bootstrap.RefusalNoteEvery.
	NoteFormingHeld
)

// ProbeSeeds asks the driver to TCP-probe the seed addresses and step a
// SeedProbeResult (self-form fallback guard 1).
type ProbeSeeds struct{ Seeds []m.Address }

// ProbePeer asks the driver to make up to fastpath.MaxProbes TCP probes of
// Peer's cluster port within fastpath.ProbeWindow ms and step a
// PeerProbeResult. The node asks at most once per member at a time and
// takes no other part in the probing: the driver keeps no fast-path state.
type ProbePeer struct{ Peer m.UniqueAddress }

// FastPathVerdict reports the crash fast path's decision on the probes of
// Peer's port, for the operator log: what started the probe, the probes'
// results and fastpath.Decide's verdict. The node has acted on it already.
type FastPathVerdict struct {
	Peer    m.UniqueAddress
	Trigger Trigger
	Probes  []fastpath.ProbeResult
	Verdict fastpath.Verdict
}

// AcquireLease asks the driver to acquire the split-brain lease for Owner
// and step a LeaseResult.
type AcquireLease struct{ Owner string }

// ReleaseLease asks the driver to release the lease held by Owner.
type ReleaseLease struct{ Owner string }

// AcquireFastPathLease asks the driver, under lease-majority, to acquire
// the lease for Owner before the crash fast path downs Dead (whose port
// refuses connections), and to step a FastPathLeaseResult. A lease Dead
// holds is not taken from it (the port may be a firewall's reset in front
// of a live holder); the driver may wait for it to run out.
type AcquireFastPathLease struct {
	Owner string
	Dead  m.UniqueAddress
}

// AcquireFormingLease asks the driver, under lease-majority, to acquire
// the lease for Owner before this node forms a cluster on itself while
// some seed is silent, and to step a FormingLeaseResult. Another node of
// the set holding it is running behind a partition: a second cluster of
// the ClusterId would never merge with its own.
type AcquireFormingLease struct{ Owner string }

// StartExiting asks the driver to run the cluster-leave tasks (singleton
// hand-over) and then step ExitingCompleted.
type StartExiting struct{}

// ShutdownReason says why the node stopped.
type ShutdownReason uint8

// Shutdown reasons.
const (
	// ReasonDowned: this node was downed. The process must exit non-zero so
	// its supervisor restarts it (termination watchdog).
	ReasonDowned ShutdownReason = iota + 1
	// ReasonLeft: this node left gracefully (Leave → Exiting → Removed);
	// exit 0.
	ReasonLeft
	// ReasonRemoved: this node found itself removed by the others.
	ReasonRemoved
)

func (r ShutdownReason) String() string {
	switch r {
	case ReasonDowned:
		return "downed"
	case ReasonLeft:
		return "left"
	case ReasonRemoved:
		return "removed"
	}
	return fmt.Sprintf("ShutdownReason(%d)", r)
}

// Shutdown: the node has stopped; the driver runs coordinated shutdown and
// exits the process. The Node ignores every later Step and Tick.
type Shutdown struct{ Reason ShutdownReason }

func (Send) isEffect()            {}
func (Publish) isEffect()         {}
func (Note) isEffect()            {}
func (ProbeSeeds) isEffect()      {}
func (ProbePeer) isEffect()       {}
func (FastPathVerdict) isEffect() {}
func (AcquireLease) isEffect()    {}
func (ReleaseLease) isEffect()    {}

func (AcquireFastPathLease) isEffect() {}
func (AcquireFormingLease) isEffect()  {}
func (StartExiting) isEffect()         {}
func (Shutdown) isEffect()             {}
