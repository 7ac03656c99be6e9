package config

import (
	"fmt"
	"strconv"
	"time"
)

// SingleNode reports whether this node is a set of one by configuration:
// no OpcUa:PeerApplicationUris and no Cluster:SeedNodes but its own
// address (an empty list is its own address after loading). Such a node
// has no peer to wait for, and none to mirror sessions to.
func (c *Config) SingleNode() bool {
	if len(c.OpcUa.PeerApplicationUris) > 0 {
		return false
	}
	self := c.Cluster.SelfAddress()
	for _, s := range c.Cluster.SeedNodes {
		a, err := ParseSeedAddress(s)
		if err != nil || !a.Equal(self) {
			return false
		}
	}
	return true
}

// Mirrored reports whether OpcUa:RedundancySupport is HotAndMirrored.
func (o *OpcUaConfig) Mirrored() bool { return o.RedundancySupport == RedundancyHotAndMirrored }

// validateRedundancySupport checks OpcUa:RedundancySupport and, for
// HotAndMirrored, that the node has peers to mirror to, and OpcUa:Mirror.
func (c *Config) validateRedundancySupport(p *problems) {
	o := &c.OpcUa
	switch {
	case !contains(RedundancySupports, o.RedundancySupport):
		p.add("OpcUa:RedundancySupport", o.RedundancySupport, oneOf(RedundancySupports))
	case o.Mirrored() && !c.Cluster.HasRole(RoleDriver):
		p.add("OpcUa:RedundancySupport", o.RedundancySupport,
			"accepted values are Warm or Hot on a node without the driver role: HotAndMirrored mirrors sessions between the driver members of a ClusterId (add driver to Cluster:Roles)")
	case o.Mirrored() && c.SingleNode():
		p.add("OpcUa:RedundancySupport", o.RedundancySupport,
			"accepted values are Warm or Hot on a node without a cluster: HotAndMirrored mirrors sessions to the other driver members of the ClusterId, and Cluster:SeedNodes names no node but this one (list every node of the set in Cluster:SeedNodes and the peers in OpcUa:PeerApplicationUris)")
	}
	c.validateMirror(p)
}

// validateMirror checks the OpcUa:Mirror keys against their bounds.
func (c *Config) validateMirror(p *problems) {
	m := &c.OpcUa.Mirror
	durationIn(p, "OpcUa:Mirror:AckTimeout", m.AckTimeout, MinMirrorAckTimeout, MaxMirrorAckTimeout, "1ms", "5s")
	durationIn(p, "OpcUa:Mirror:MatchWindow", m.MatchWindow, MinMirrorMatchWindow, MaxMirrorMatchWindow, "10ms", "60s")
	if m.MaxLagBytes < MinMirrorMaxLagBytes || m.MaxLagBytes > MaxMirrorMaxLagBytes {
		p.add("OpcUa:Mirror:MaxLagBytes", strconv.Itoa(m.MaxLagBytes),
			fmt.Sprintf("accepted values are whole numbers of bytes from %d (64 KiB) to %d (1 GiB)", MinMirrorMaxLagBytes, MaxMirrorMaxLagBytes))
	}
	if m.QueueSize < MinMirrorQueueSize || m.QueueSize > MaxMirrorQueueSize {
		p.add("OpcUa:Mirror:QueueSize", strconv.Itoa(m.QueueSize),
			fmt.Sprintf("accepted values are whole numbers from %d to %d (values per mirrored item)", MinMirrorQueueSize, MaxMirrorQueueSize))
	}
}

// durationIn reports d outside lo..hi, naming the bounds as shown.
func durationIn(p *problems, key string, d, lo, hi time.Duration, loText, hiText string) {
	if d < lo || d > hi {
		p.add(key, d.String(), "accepted values are durations from "+loText+" to "+hiText+", as "+DurationFormat)
	}
}

// MirrorSummary is one line on session mirroring for `otopcua config
// check`: off, or the OpcUa:Mirror keys in force.
func (c *Config) MirrorSummary() string {
	if !c.OpcUa.Mirrored() {
		return "session mirroring off (OpcUa:RedundancySupport is " + c.OpcUa.RedundancySupport + ")"
	}
	m := &c.OpcUa.Mirror
	return fmt.Sprintf("session mirroring on (HotAndMirrored) sync=%s ack-timeout=%s max-lag-bytes=%d queue-size=%d match-window=%s",
		onOff(m.Sync), m.AckTimeout, m.MaxLagBytes, m.QueueSize, m.MatchWindow)
}
