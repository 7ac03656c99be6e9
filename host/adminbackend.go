package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// ActionManualFailover is the audit_log action of a triggered failover.
const ActionManualFailover = "cluster.manual-failover"

// MaxAuditRows bounds one Audit read.
const MaxAuditRows = 1000

// Collaborators of adminBackend; the running node passes its daemon,
// mediator and Config DB.
type (
	// memberView is this node's membership (*daemon.Daemon).
	memberView interface {
		Self() membership.UniqueAddress
		Snapshot() membership.State
	}
	// failoverSender sends point to point on the pub/sub mediator
	// (*pubsub.Mediator); it must not block.
	failoverSender interface {
		SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error
	}
	// auditLog is the Config DB's audit_log (*configdb.DB).
	auditLog interface {
		WriteAudit(ctx context.Context, e configdb.AuditEntry) error
		RecentAudit(ctx context.Context, limit int) ([]configdb.AuditEntry, error)
	}
)

// adminBackend is admin.Backend for this node: the panels come from this
// node's live membership and what it heard on the redundancy topic, and a
// failover is planned again against live membership whatever the page
// showed. Its methods are safe for concurrent use; Failover calls run one
// at a time.
type adminBackend struct {
	members memberView
	send    failoverSender
	audit   auditLog
	watch   *panelWatcher
	downing string
	// drain is this node's Redundancy:ManualFailoverDrain, used for the
	// estimate of the target's return (a pair shares its settings).
	drain time.Duration
	now   func() time.Time

	// turn serialises Failover: the re-plan, the audit row and the send
	// of one request happen before the next request is planned.
	turn chan struct{}
	// floating is the floating address panel of a ClusterId (nil: none);
	// set once before the HTTP server starts.
	floating func(clusterID string) *admin.FloatingPanel
	// mirror is the mirrored sessions table of a ClusterId (nil: none);
	// set once before the HTTP server starts.
	mirror func(clusterID string) *admin.MirrorPanel
	// mu guards sent: plan also runs outside turn, for the answer of
	// RequestServerStateChange.
	mu sync.Mutex
	// sent is the last request sent per ClusterId.
	sent map[string]sentFailover
}

type sentFailover struct {
	target membership.UniqueAddress
	actor  string
	at     time.Time
}

var _ admin.Backend = (*adminBackend)(nil)

func newAdminBackend(members memberView, send failoverSender, audit auditLog, watch *panelWatcher,
	downing string, drain time.Duration, now func() time.Time) *adminBackend {
	return &adminBackend{members: members, send: send, audit: audit, watch: watch, downing: downing,
		drain: drain, now: now, turn: make(chan struct{}, 1), sent: map[string]sentFailover{}}
}

// NodeID is this node's NodeId.
func (b *adminBackend) NodeID() string { return b.members.Self().NodeID() }

// Clusters lists every ClusterId of the live view.
func (b *adminBackend) Clusters() []admin.ClusterSummary {
	epochs, _, _ := b.watch.view("")
	return buildClusters(b.members.Snapshot(), epochs)
}

// Redundancy is the live panel of id.
func (b *adminBackend) Redundancy(id string) (admin.RedundancyPanel, error) {
	epochs, infos, failovers := b.watch.view(id)
	p, err := buildPanel(panelInput{
		ClusterID: id, State: b.members.Snapshot(), Epochs: epochs, Infos: infos,
		Downing: b.downing, Failovers: failovers, Now: b.now(),
	})
	if err == nil && b.floating != nil {
		p.Floating = b.floating(id)
	}
	if err == nil && b.mirror != nil {
		p.Mirror = b.mirror(id)
	}
	return p, err
}

// Audit returns up to limit rows (1..MaxAuditRows), newest first.
func (b *adminBackend) Audit(ctx context.Context, limit int) ([]configdb.AuditEntry, error) {
	if limit < 1 || limit > MaxAuditRows {
		return nil, fmt.Errorf("audit limit %d: accepted values are 1..%d", limit, MaxAuditRows)
	}
	return b.audit.RecentAudit(ctx, limit)
}

// Failover plans against live membership, writes the audit row, then asks
// the target to leave. A refusal (*admin.RefusedError,
// admin.ErrUnknownCluster) writes nothing; a failed audit write sends
// nothing.
func (b *adminBackend) Failover(ctx context.Context, id, actor string) (admin.FailoverResult, error) {
	return b.failover(ctx, id, actor, "")
}

// failover is Failover with a reason for the audit row ("" for an admin's
// request; a device hand-over names the device counts).
func (b *adminBackend) failover(ctx context.Context, id, actor, reason string) (admin.FailoverResult, error) {
	if actor == "" {
		return admin.FailoverResult{}, errors.New("failover: the actor (the admin user's name) is required")
	}
	select {
	case b.turn <- struct{}{}:
		defer func() { <-b.turn }()
	case <-ctx.Done():
		return admin.FailoverResult{}, ctx.Err()
	}
	b.mu.Lock()
	for cid, p := range b.sent { // keeps sent to the requests that may be under way
		if b.now().Sub(p.at) >= b.drain+ReturnAllowance {
			delete(b.sent, cid)
		}
	}
	b.mu.Unlock()
	st := b.members.Snapshot()
	target, err := b.plan(st, id)
	if err != nil {
		return admin.FailoverResult{}, err
	}
	epochs, _, _ := b.watch.view(id)
	now := b.now()
	res := admin.FailoverResult{ClusterID: id, Target: target.NodeID(), TargetUID: target.UID, Epoch: epochs[id].Epoch, At: now}
	detail := fmt.Sprintf("clusterId=%s uid=%d epoch=%d", id, res.TargetUID, res.Epoch)
	if reason != "" {
		detail += " reason=" + reason
	}
	err = b.audit.WriteAudit(ctx, configdb.AuditEntry{
		At: now, Actor: actor, Action: ActionManualFailover, Target: res.Target, Detail: detail,
	})
	if err != nil {
		return admin.FailoverResult{}, fmt.Errorf("failover of %s not sent: the audit row could not be written: %w", res.Target, err)
	}
	msg := &wire.ManualFailover{
		ClusterId: id, TargetNodeId: res.Target, TargetUid: res.TargetUID, Actor: actor,
		RequestedAtUnixMs: wire.UnixMs(now), Epoch: res.Epoch,
		EstimatedReturnUnixMs: wire.UnixMs(now.Add(b.drain + ReturnAllowance)),
	}
	if err := b.send.SendTo(target, wire.FailoverTopic, msg); err != nil {
		return admin.FailoverResult{}, fmt.Errorf("failover of %s audited but not sent: %w", res.Target, err)
	}
	b.mu.Lock()
	b.sent[id] = sentFailover{target: target, actor: actor, at: now}
	b.mu.Unlock()
	return res, nil
}

// plan is the server-side peer guard: PlanFailover on live membership,
// then the target must be reachable from here (the request would be
// dropped otherwise) and no earlier request for id may still be under way
// (its target still a member, within drain + ReturnAllowance). Failover
// holds turn around it; RequestServerStateChange's check does not, so a
// request may be under way unseen and Failover's own plan refuses it.
func (b *adminBackend) plan(st membership.State, id string) (membership.UniqueAddress, error) {
	ms, views := liveMembers(st)
	t, err := redundancy.PlanFailover(views, id)
	switch {
	case errors.Is(err, redundancy.ErrNoMember):
		return membership.UniqueAddress{}, admin.ErrUnknownCluster
	case err != nil:
		return membership.UniqueAddress{}, &admin.RefusedError{Reason: refusalReason(err)}
	}
	var target membership.UniqueAddress
	for _, m := range ms {
		if m.Address.NodeID() == t.NodeID && m.Status == membership.Up {
			target = m.Address
		}
	}
	if target.IsZero() {
		panic(fmt.Sprintf("host: PlanFailover named %s, which is not an Up member of the live view", t.NodeID))
	}
	if target != st.Self && !st.Gossip.IsReachable(st.Self, target) {
		return membership.UniqueAddress{}, &admin.RefusedError{Reason: fmt.Sprintf("the Primary %s is unreachable from this node: the request could not reach it", t.NodeID)}
	}
	b.mu.Lock()
	prev, ok := b.sent[id]
	b.mu.Unlock()
	if ok && b.now().Sub(prev.at) < b.drain+ReturnAllowance && st.Gossip.HasMember(prev.target) &&
		st.Gossip.StatusOf(prev.target) != membership.Down && st.Gossip.StatusOf(prev.target) != membership.Removed {
		return membership.UniqueAddress{}, &admin.RefusedError{Reason: fmt.Sprintf("a failover of %s requested by %s at %s is still under way",
			prev.target.NodeID(), prev.actor, prev.at.UTC().Format(time.RFC3339))}
	}
	return target, nil
}
