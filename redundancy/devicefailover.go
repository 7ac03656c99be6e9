package redundancy

import (
	"fmt"
	"time"
)

// Defaults of Redundancy:DeviceFailoverAfter and
// Redundancy:DeviceFailoverHold.
const (
	// DefaultDeviceFailoverAfter is how long a peer must have reached
	// strictly more devices than the Primary before the Primary hands its
	// role over.
	DefaultDeviceFailoverAfter = 10 * time.Second
	// DefaultDeviceFailoverHold is how long after a node became Primary
	// (by a device hand-over or any other failover) it never hands over
	// for device health, and how long after a hand-over it asked for it
	// asks for none again.
	DefaultDeviceFailoverHold = 60 * time.Second
)

// DeviceCounts is one instant of device health as the device hand-over
// sees it: this node's role and counts beside its peers'.
type DeviceCounts struct {
	// Now is when the counts were taken (the caller's clock).
	Now time.Time
	// Primary: the latest snapshot names this node Primary of its
	// ClusterId.
	Primary bool
	// Reached and Total are this node's connected devices and the
	// deployment's (servicelevel.DeviceHealth).
	Reached, Total int
	// PeerReached is the most devices a peer of the ClusterId reaches by
	// its latest fresh NodeStatus; 0 when no peer news is fresh.
	PeerReached int
}

// DeviceHandOver is a decision to hand the Primary role over.
type DeviceHandOver struct {
	// Reason is the audit row's reason, in words an operator can act on.
	Reason string
}

// DeviceFailover decides when a Primary hands its role over because a peer
// reaches more of its devices (Redundancy:DeviceHealth failover). It is a
// pure state machine over the instants its caller passes; it reads no
// clock. The rule, for a node that is Primary:
//
//   - a peer has reached strictly more devices than this node for After
//     without a break (the counts may change, the inequality must hold at
//     every Step), and
//   - this node has been Primary for at least Hold (as this process saw
//     it: a role that just moved, by a device hand-over or by any other
//     failover, does not move again within the hold — no flapping), and
//   - it asked for no hand-over within the last Hold
//
// → hand over; Step answers nil otherwise. A node still Primary after a
// hand-over it asked for (the request was refused or lost) asks again only
// after another After and the hold. Equal counts (both nodes
// lost the same devices, or none) never hand over. A node that is not
// Primary forgets both timers.
//
// The value is used from one goroutine (the OpcUaPublishActor's).
type DeviceFailover struct {
	// After is Redundancy:DeviceFailoverAfter; Hold is
	// Redundancy:DeviceFailoverHold.
	After, Hold time.Duration

	primarySince time.Time // when this node was first seen Primary in its current tenure; zero when not Primary
	behindSince  time.Time // when a peer began to reach more, in this run; zero when it does not
	askedAt      time.Time // the last hand-over this value answered; zero before the first
}

// NewDeviceFailover returns the decision with the given after and hold;
// zero or negative values take the defaults.
func NewDeviceFailover(after, hold time.Duration) *DeviceFailover {
	if after <= 0 {
		after = DefaultDeviceFailoverAfter
	}
	if hold <= 0 {
		hold = DefaultDeviceFailoverHold
	}
	return &DeviceFailover{After: after, Hold: hold}
}

// Step takes the counts at c.Now and says whether to hand over now.
// Instants must not go backwards between calls.
func (d *DeviceFailover) Step(c DeviceCounts) *DeviceHandOver {
	if !c.Primary {
		d.primarySince, d.behindSince = time.Time{}, time.Time{}
		return nil
	}
	if d.primarySince.IsZero() {
		d.primarySince = c.Now
	}
	if c.PeerReached <= c.Reached {
		d.behindSince = time.Time{}
		return nil
	}
	if d.behindSince.IsZero() {
		d.behindSince = c.Now
	}
	switch {
	case c.Now.Sub(d.behindSince) < d.After:
		return nil
	case c.Now.Sub(d.primarySince) < d.Hold:
		return nil
	case !d.askedAt.IsZero() && c.Now.Sub(d.askedAt) < d.Hold:
		return nil
	}
	behind := c.Now.Sub(d.behindSince)
	d.askedAt, d.behindSince = c.Now, c.Now // a repeat needs another After (and the hold)
	return &DeviceHandOver{Reason: fmt.Sprintf(
		"device health: this Primary reaches %d of %d devices, a peer reaches %d, for %v (Redundancy:DeviceFailoverAfter %v)",
		c.Reached, c.Total, c.PeerReached, behind.Round(time.Millisecond), d.After)}
}
