package keeper

import (
	"errors"
	"time"
)

// Fixed timings of the keeper (not configurable: the drills measured them).
const (
	// RetryEvery paces the attempts to take the lease for a Primary whose
	// set looks split.
	RetryEvery = 500 * time.Millisecond
	// DownedMemory is how long a downing of a driver peer counts for the
	// promotion hold of the node that becomes Primary after it.
	DownedMemory = 30 * time.Second
)

// Config is what the keeper decides with; the host fills it from the
// settings and the lease store.
type Config struct {
	// Owner is this node's name at the lease store (its unique address).
	Owner string
	// Expected is the number of nodes of the set: this one and
	// OpcUa:PeerApplicationUris.
	Expected int
	// Heartbeat is Cluster:FailureDetector:HeartbeatInterval.
	Heartbeat time.Duration
	// Pause is Cluster:FailureDetector:AcceptableHeartbeatPause.
	Pause time.Duration
	// Hold is Redundancy:PromotionHold (≤ 0: none).
	Hold time.Duration
	// TTL is the lease's time to live.
	TTL time.Duration
}

// Validate reports a Config the keeper cannot run with.
func (c Config) Validate() error {
	switch {
	case c.Owner == "":
		return errors.New("keeper: empty owner")
	case c.Expected < 1:
		return errors.New("keeper: a set has at least one node")
	case c.Heartbeat <= 0, c.Pause <= 0, c.TTL <= 0:
		return errors.New("keeper: heartbeat, pause and TTL must be positive")
	}
	return nil
}

// SuspectAfter is the silence of a peer after which the keeper takes the
// lease for its Primary: a heartbeat interval plus a quarter of the pause,
// so that the ordinary gap between two heartbeats never looks like a split
// (taking and freeing the lease between heartbeats left it held at the
// moment a Primary froze, and the survivor could not take it).
func (c Config) SuspectAfter() time.Duration { return c.Heartbeat + c.Pause/4 }

// WholeWithin is the silence of a peer after which a Primary without the
// lease counts its set as split, and so unlicensed: the pause plus a
// heartbeat interval. That leaves the lease taken at SuspectAfter a
// heartbeat interval and three quarters of the pause to arrive (a Primary
// stalled by a loaded machine renews late, and a licence that lapses for
// a millisecond is ServiceLevel 100 for its clients), and still ends well
// before a peer can act: it must first find this node unreachable (phi,
// at least the pause and a heartbeat interval of silence), wait
// stable-after, take the lease and hold its promotion.
func (c Config) WholeWithin() time.Duration { return c.Pause + c.Heartbeat }

// RenewEvery is how often a held lease is renewed: a third of the TTL.
func (c Config) RenewEvery() time.Duration { return c.TTL / 3 }

// Margin is what the keeper takes off the TTL when it counts a grant on
// its own clock from the request's start: the lease licenses until
// start + TTL − Margin.
func (c Config) Margin() time.Duration { return c.TTL / 6 }
