package host

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// ReturnAllowance is what a manual failover's estimate of the target's
// return adds to the drain: the graceful leave (at most LeaveTimeout), the
// supervisor's restart and the rejoin. It fills Server.EstimatedReturnTime.
const ReturnAllowance = LeaveTimeout + 10*time.Second

// failoverVerdict is what a node does with a ManualFailover it received.
type failoverVerdict int

const (
	// failoverAct: the request is for this incarnation; drain and leave.
	failoverAct failoverVerdict = iota
	// failoverNotMe: another node, or another ClusterId, is named.
	failoverNotMe
	// failoverStale: this address, but an earlier incarnation's uid (a
	// request queued before this process started).
	failoverStale
	// failoverBusy: a manual failover of this node is already under way.
	failoverBusy
)

func (v failoverVerdict) String() string {
	return [...]string{"act", "ignore: not this node", "ignore: an earlier incarnation of this node", "ignore: a failover is already under way"}[v]
}

// decideFailover is the pure decision on a received request: self is this
// process, clusterID its Node:ClusterId, busy whether a manual failover of
// this node has already begun.
func decideFailover(m *wire.ManualFailover, self membership.UniqueAddress, clusterID string, busy bool) failoverVerdict {
	switch {
	case m.GetTargetNodeId() != self.NodeID() || m.GetClusterId() != clusterID:
		return failoverNotMe
	case m.GetTargetUid() != self.UID:
		return failoverStale
	case busy:
		return failoverBusy
	}
	return failoverAct
}

// failoverReceiver takes ManualFailover requests from the pub/sub topic
// wire.FailoverTopic on every node. Handle decides at once on the
// mediator's goroutine and never blocks; an accepted request is handed to
// Requested, which host.Run serves: it drains (ServiceLevel 0,
// EstimatedReturnTime) and leaves. At most one request is ever accepted.
type failoverReceiver struct {
	self      membership.UniqueAddress
	clusterID string
	log       *slog.Logger

	started   atomic.Bool
	requested chan *wire.ManualFailover // capacity 1; receives at most one request
}

func newFailoverReceiver(self membership.UniqueAddress, clusterID string, log *slog.Logger) *failoverReceiver {
	return &failoverReceiver{self: self, clusterID: clusterID, log: log, requested: make(chan *wire.ManualFailover, 1)}
}

// Handle is the topic subscriber (pubsub.Handler).
func (r *failoverReceiver) Handle(from membership.UniqueAddress, msg proto.Message) {
	m, ok := msg.(*wire.ManualFailover)
	if !ok {
		return
	}
	v := decideFailover(m, r.self, r.clusterID, r.started.Load())
	if v == failoverAct && !r.started.CompareAndSwap(false, true) {
		v = failoverBusy
	}
	attrs := []any{"verdict", v.String(), "from", from.NodeID(), "clusterId", m.GetClusterId(),
		"target", m.GetTargetNodeId(), "targetUid", m.GetTargetUid(), "actor", m.GetActor(), "epoch", m.GetEpoch()}
	if v != failoverAct {
		r.log.Warn("manual failover request ignored", attrs...)
		return
	}
	r.log.Warn("manual failover requested: this node drains its clients and leaves the cluster", attrs...)
	r.requested <- m // never blocks: capacity 1, and only the first request gets here
}

// Requested delivers the one accepted request.
func (r *failoverReceiver) Requested() <-chan *wire.ManualFailover { return r.requested }

// drainer is what a manual failover changes on this node before it leaves.
type drainer interface {
	// drain sets the drain pin (servicelevel.Pin.Drain) for the rest of
	// the process: the node shows ServiceLevel 0.
	drain()
}

// estimatedReturnSetter is the OPC UA server's Server.EstimatedReturnTime.
type estimatedReturnSetter interface {
	SetEstimatedReturnTime(time.Time)
}

// drainForFailover does the first half of an accepted manual failover:
// ServiceLevel 0 for good (clients leave the healthy band at once and move
// to the other server), EstimatedReturnTime from the request (or now +
// drain + ReturnAllowance when it has none), then it waits drain on clock.
// It returns false when stop closed or ctx ended first.
func drainForFailover(ctx context.Context, m *wire.ManualFailover, pins drainer, srv estimatedReturnSetter,
	clock clockwork.Clock, drain time.Duration, stop <-chan struct{}) bool {
	pins.drain()
	back := wire.FromUnixMs(m.GetEstimatedReturnUnixMs())
	if back.IsZero() {
		back = clock.Now().Add(drain + ReturnAllowance)
	}
	srv.SetEstimatedReturnTime(back)
	t := clock.NewTimer(drain)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}
