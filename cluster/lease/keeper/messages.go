package keeper

import "time"

// Observation is what the driver read of the membership and the role view
// at one instant.
type Observation struct {
	// Primary: the role view names this node the Primary of its ClusterId.
	Primary bool
	// Self: this node is an Up driver member of its ClusterId.
	Self bool
	// Peers are the other members of the gossip (any status).
	Peers []Peer
}

// Peer is one other member as this node sees it.
type Peer struct {
	ID string
	// Member: an Up member of this node's ClusterId with role driver.
	Member bool
	// Leaving: a driver member of this node's ClusterId that leaves the
	// cluster gracefully (Leaving or Exiting): it never acts as Primary
	// again. Reachable and LastHeard are filled as for a Member.
	Leaving bool
	// Down: a driver member of this node's ClusterId that was downed and
	// is still in the gossip; Proven when it was proven dead (the crash
	// fast path). The same as a Downed message, read off the membership,
	// so that the promotion hold does not depend on which of the two the
	// driver sees first.
	Down, Proven bool
	// Reachable: this node's failure detector holds it reachable.
	Reachable bool
	// Heard: LastHeard is known (a heartbeat or a reply has arrived).
	Heard     bool
	LastHeard time.Time
}

// Message is an input the driver steps into the keeper.
type Message interface{ isMessage() }

// Follow: the keeper starts following its set (its actor started); the
// first tick gap is counted from now.
type Follow struct{}

// Observed: a fresh Observation outside a tick (the driver reads one
// before answering a licence query).
type Observed struct{ Observation Observation }

// AcquireResult answers an Acquire effect.
type AcquireResult struct {
	Purpose Purpose   // the Acquire's
	Start   time.Time // the Acquire's
	// Outcome is Granted, Held (another live owner holds it: Holder,
	// Epoch) or Failed (the store did not answer: Err).
	Outcome Outcome
	Holder  string
	Epoch   uint64
	Err     string
}

// Outcome is how the store answered an acquire.
type Outcome uint8

// Outcomes.
const (
	Granted Outcome = iota + 1
	Held
	Failed
)

// ReleaseResult answers a Release effect; OK when the store answered.
type ReleaseResult struct{ OK bool }

// CoreAcquire: the cluster core's split-brain decision wants the lease.
type CoreAcquire struct{}

// CoreRelease: the core releases the lease after its release-after; the
// keeper frees it once the set is whole again (a lone Primary keeps it).
type CoreRelease struct{}

// FastPath: the crash fast path wants the lease before it downs Dead, whose
// port refuses connections. A lease Dead holds is not taken from it: the
// driver may ask again once it has run out (a TTL later).
type FastPath struct{ Dead string }

// Forming: the cluster core wants the lease before it forms a cluster on
// this node alone.
type Forming struct{}

// Downed: a driver peer of the ClusterId was downed; Proven when the crash
// fast path found its port refusing (a dead process: no promotion hold).
type Downed struct {
	Peer   string
	Proven bool
}

func (Follow) isMessage()        {}
func (Observed) isMessage()      {}
func (AcquireResult) isMessage() {}
func (Forming) isMessage()       {}
func (ReleaseResult) isMessage() {}
func (CoreAcquire) isMessage()   {}
func (CoreRelease) isMessage()   {}
func (FastPath) isMessage()      {}
func (Downed) isMessage()        {}
