package gate

import "time"

// Licence is whether the elected Primary of a ClusterId may act (service
// writes, acks, alerts and the historian drain, and advertise 250) under
// lease-majority, where the shared lease decides a split.
type Licence int

const (
	// Licensed: it may act.
	Licensed Licence = iota
	// Holding: it became Primary after a peer was downed while that peer
	// may still be alive, and waits out Redundancy:PromotionHold; it shows
	// a follower's level meanwhile.
	Holding
	// Unlicensed: a driver peer of its set is missing, unreachable or
	// silent and it does not hold the lease; it cannot win the decision
	// and drops out of the Healthy band.
	Unlicensed
)

func (l Licence) String() string {
	switch l {
	case Licensed:
		return "licensed"
	case Holding:
		return "promotion hold"
	default:
		return "unlicensed (no lease while the set is split)"
	}
}

// LicenceInput is what Licence decides on, gathered by the host.
type LicenceInput struct {
	// LeaseMajority: the downing strategy is lease-majority. Under every
	// other strategy the Primary is always licensed (unchanged behaviour).
	LeaseMajority bool
	// Whole: every node of the set (this one and OpcUa:PeerApplicationUris)
	// is an Up driver member of the ClusterId, reachable, and heard from
	// within the failure detector's acceptable pause.
	Whole bool
	// LeaseValid: this node holds the shared lease, renewed recently
	// enough on its own clock (request time + TTL − margin is ahead).
	LeaseValid bool
	// HoldLeft is what remains of a running promotion hold (≤ 0: none).
	HoldLeft time.Duration
}

// LicenceOf decides:
//
//	not lease-majority            → Licensed
//	promotion hold running        → Holding
//	set whole                     → Licensed (no split: nothing to decide)
//	set split, lease held         → Licensed
//	set split, no lease           → Unlicensed
func LicenceOf(in LicenceInput) Licence {
	switch {
	case !in.LeaseMajority:
		return Licensed
	case in.HoldLeft > 0:
		return Holding
	case in.Whole, in.LeaseValid:
		return Licensed
	}
	return Unlicensed
}
