package bootstrap

import (
	"fmt"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// Cause is why a peer refused this node's join handshake.
type Cause uint8

// Causes of a refusal.
const (
	// CauseWrongSecret: the peer's Cluster:Secret differs from this node's.
	CauseWrongSecret Cause = iota + 1
	// CauseMissingProof: the peer has a Cluster:Secret and this node none.
	CauseMissingProof
	// CauseTLS: the peer accepts TCP but refused this node's TLS handshake
	// (another CA, or a certificate not naming Cluster:PublicHostname).
	CauseTLS
	// CauseIncompatibleProtocol: the peer's cluster protocol generation and
	// this node's do not work together (two releases that cannot run side
	// by side; docs/releases.md).
	CauseIncompatibleProtocol
)

func (c Cause) String() string {
	switch c {
	case CauseWrongSecret:
		return "wrong Cluster:Secret"
	case CauseMissingProof:
		return "this node has no Cluster:Secret and the peer has one"
	case CauseTLS:
		return "TLS handshake refused: check Cluster:Tls"
	case CauseIncompatibleProtocol:
		return "incompatible cluster protocol generation: see docs/releases.md"
	}
	return fmt.Sprintf("Cause(%d)", c)
}

// Refusal is one input of the decisions below: By refused this node's join
// handshake At (ms on the driver's clock) because of Cause.
//
// A refusal means the mesh is running and has decided against this node:
// its silence is not evidence of an absent cluster, so a node holding a
// refusal never forms a cluster of its own. Neither the first seed after
// seed-node-timeout (or after every other seed said InitJoinNack) nor the
// self-form fallback does; the node keeps asking to join instead, so that
// it comes in once the configurations agree. Forming would give the same
// ClusterId two clusters, each with a Primary.
//
// A refusal by an address is withdrawn when a join handshake message from
// that address reaches the core: the driver steps only messages that passed
// the same checks, so the peer now accepts this node's secret.
type Refusal struct {
	By    m.Address
	At    int64
	Cause Cause
}

// ReasonRefused is the text of a decision held back by a refusal; it
// names the refusing peer and the cause.
func ReasonRefused(r Refusal) string {
	return fmt.Sprintf("%v refused this node (%v)", r.By, r.Cause)
}

// FirstSeedInput is the snapshot of the first seed's decision (Akka's
// FirstSeedNodeProcess): form a new cluster on itself, or keep asking.
type FirstSeedInput struct {
	// Timeout is seed-node-timeout in ms.
	Timeout int64
	// Elapsed is the time since the seed process started, in ms.
	Elapsed int64
	// AllOthersNacked: every other seed answered InitJoinNack (none is
	// in a cluster).
	AllOthersNacked bool
	// Refusals are the refusals this node holds, oldest first.
	Refusals []Refusal
}

// FirstSeedVerdict is the outcome of DecideFirstSeed.
type FirstSeedVerdict uint8

// First-seed verdicts.
const (
	// KeepAsking: nobody answered yet and the timeout has not passed.
	KeepAsking FirstSeedVerdict = iota + 1
	// FormCluster: join this node itself and form a new cluster.
	FormCluster
	// HeldByRefusal: the node would form a cluster, but a member of the
	// mesh refused it; keep asking the seeds (see Refusal).
	HeldByRefusal
)

func (v FirstSeedVerdict) String() string {
	switch v {
	case KeepAsking:
		return "KeepAsking"
	case FormCluster:
		return "FormCluster"
	case HeldByRefusal:
		return "HeldByRefusal"
	}
	return "FirstSeedVerdict(?)"
}

// FirstSeedDecision is a verdict with its reason (HeldByRefusal only).
type FirstSeedDecision struct {
	Verdict FirstSeedVerdict
	Reason  string
}

// DecideFirstSeed applies Akka's first-seed rule (form after the timeout,
// or once every other seed said InitJoinNack) under the refusal guard.
func DecideFirstSeed(in FirstSeedInput) FirstSeedDecision {
	switch {
	case in.Elapsed < in.Timeout && !in.AllOthersNacked:
		return FirstSeedDecision{Verdict: KeepAsking}
	case len(in.Refusals) > 0:
		return FirstSeedDecision{Verdict: HeldByRefusal, Reason: ReasonRefused(in.Refusals[0])}
	default:
		return FirstSeedDecision{Verdict: FormCluster}
	}
}

// RefusalNoteEvery is how often, in ms, a node held back by a refusal says
// so (the "not forming a cluster of my own" line).
const RefusalNoteEvery = 60_000

// NoteDue reports whether the held-back line may be repeated at now when
// it was last given at last (negative: never).
func NoteDue(last, now int64) bool { return last < 0 || now-last >= RefusalNoteEvery }
