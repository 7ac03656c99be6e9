package node

import (
	"github.com/otopcua/otopcua/cluster/bootstrap"
	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// Header routes a message. Every cluster message names the exact sender and
// receiver incarnation; a node drops a message whose To.UID is not its own
// (a message queued for a dead process may be delivered to the next process
// at the same address). Only InitJoin may be sent with To.UID == 0, because
// a joining node does not know the seeds' uids yet.
type Header struct {
	From m.UniqueAddress
	To   m.UniqueAddress
}

// Route returns the header.
func (h Header) Route() Header { return h }

// Message is anything a Node steps: cluster protocol messages between nodes
// and local messages from the driver (From == To == the node itself).
type Message interface {
	Route() Header
}

// Cluster protocol messages.
type (
	// InitJoin asks a seed whether it is part of a cluster.
	InitJoin struct{ Header }
	// InitJoinAck: the seed is in a cluster; join through it.
	InitJoinAck struct{ Header }
	// InitJoinNack: the seed is not (yet) in a cluster, or is Down/Exiting.
	InitJoinNack struct{ Header }
	// Join asks a member to add the sender as Joining.
	Join struct {
		Header
		Roles     []string
		ClusterID string
	}
	// Welcome answers Join with the current gossip.
	Welcome struct {
		Header
		Gossip m.Gossip
	}
	// GossipEnvelope carries a full gossip.
	GossipEnvelope struct {
		Header
		Gossip m.Gossip
	}
	// GossipStatus carries only a gossip version.
	GossipStatus struct {
		Header
		Version m.VectorClock
	}
	// Leave asks the receiver to mark Node as Leaving (Cluster.Leave).
	Leave struct {
		Header
		Node m.Address
	}
	// Down asks the receiver to mark Node as Down (Cluster.Down).
	Down struct {
		Header
		Node m.Address
	}
	// Heartbeat from the failure detector's sender side.
	Heartbeat struct {
		Header
		Seq uint64
	}
	// HeartbeatRsp answers a Heartbeat.
	HeartbeatRsp struct {
		Header
		Seq uint64
	}
	// ExitingConfirmed tells a leader that Node finished exiting.
	ExitingConfirmed struct {
		Header
		Node m.UniqueAddress
	}
)

// Local messages from the driver (From == To == Self).
type (
	// ExitingCompleted: the leaving tasks started by StartExiting are done.
	ExitingCompleted struct{ Header }
	// SeedProbeResult answers ProbeSeeds.
	SeedProbeResult struct {
		Header
		AnyAccepted bool
	}
	// ConnectionLost: the transport reported Peer's connection terminated.
	ConnectionLost struct {
		Header
		Peer m.UniqueAddress
	}
	// PeerProbeResult answers ProbePeer.
	PeerProbeResult struct {
		Header
		Peer    m.UniqueAddress
		Results []fastpath.ProbeResult
	}
	// LeaseResult answers AcquireLease.
	LeaseResult struct {
		Header
		Acquired bool
	}
	// FastPathLeaseResult answers AcquireFastPathLease.
	FastPathLeaseResult struct {
		Header
		Dead     m.UniqueAddress
		Acquired bool
	}
	// FormingLeaseResult answers AcquireFormingLease.
	FormingLeaseResult struct {
		Header
		Acquired bool
	}
	// JoinRefused: the peer at By refused this node's join handshake
	// (its JoinRefused answer, or a refused TLS handshake). While the
	// refusal stands the node never forms a cluster of its own (see
	// bootstrap.Refusal).
	JoinRefused struct {
		Header
		By    m.Address
		Cause bootstrap.Cause
	}
)

// Local builds the header of a local message to self.
func Local(self m.UniqueAddress) Header { return Header{From: self, To: self} }
