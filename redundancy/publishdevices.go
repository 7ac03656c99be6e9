package redundancy

import (
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
)

// deviceView is what an OpcUaPublishActor incarnation knows of device
// health: this node's counts at its latest compute and what it last
// advertised, and each peer's counts from its NodeStatus.
type deviceView struct {
	reached, total int // this node's, at the latest compute
	sentR, sentT   int // advertised in the latest NodeStatus; -1 before the first
	peers          map[string]peerDevices
}

// peerDevices is one peer's latest NodeStatus counts.
type peerDevices struct {
	uid     uint64
	reached int
	at      time.Time // arrival
}

func newDeviceView() deviceView {
	return deviceView{sentR: -1, sentT: -1, peers: map[string]peerDevices{}}
}

// changed reports whether this node's counts differ from the advertised.
func (v *deviceView) changed() bool { return v.reached != v.sentR || v.total != v.sentT }

// advertised records that the current counts went out in NodeStatus.
func (v *deviceView) advertised() { v.sentR, v.sentT = v.reached, v.total }

// peerReached is the most devices a peer reaches: only peers whose
// NodeStatus is fresh (servicelevel.FreshFor) and whose incarnation is an
// Up member of this node's view count.
func (v *deviceView) peerReached(st membership.State, now time.Time) int {
	best := 0
	for _, m := range st.Gossip.Members {
		p, ok := v.peers[m.Address.NodeID()]
		if !ok || m.Address == st.Self || m.Status != membership.Up || m.Address.UID != p.uid || !servicelevel.Fresh(p.at, now) {
			continue
		}
		best = max(best, p.reached)
	}
	return best
}

// onPeerDevices keeps the device counts of a peer of this ClusterId.
func (c *publishIncarnation) onPeerDevices(i NodeInfo, now time.Time) {
	if i.ClusterID != c.a.o.ClusterID {
		return
	}
	c.devices.peers[i.NodeID] = peerDevices{uid: i.UID, reached: i.DevicesReached, at: now}
}

// deviceHealth counts this node's devices and is servicelevel's device
// input at now.
func (c *publishIncarnation) deviceHealth(now time.Time) servicelevel.DeviceHealth {
	a := c.a
	if a.o.Devices != nil {
		c.devices.reached, c.devices.total = a.o.Devices()
	}
	return servicelevel.DeviceHealth{
		Rated:   a.o.DeviceLevel,
		Reached: c.devices.reached, Total: c.devices.total,
		PeerReached: c.devices.peerReached(c.obs.Members, now),
	}
}

// decideHandOver steps the device hand-over decision with the inputs of
// one compute and starts a hand-over when it says so. A draining node
// hands nothing over: it is leaving already.
func (c *publishIncarnation) decideHandOver(in servicelevel.Inputs) {
	a := c.a
	if a.o.DeviceFailover == nil || in.Pin.Drain {
		return
	}
	d := a.o.DeviceFailover.Step(DeviceCounts{
		Now: in.Now, Primary: in.IsDriverPrimary,
		Reached: in.Devices.Reached, Total: in.Devices.Total, PeerReached: in.Devices.PeerReached,
	})
	if d == nil {
		return
	}
	a.o.Logger.Warn("device hand-over: this Primary asks the manual failover path to move the Primary role to a peer that reaches more devices",
		"reason", d.Reason, "clusterId", a.o.ClusterID)
	if a.o.HandOver != nil {
		a.o.HandOver(d.Reason)
	}
}
