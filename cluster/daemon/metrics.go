package daemon

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// Instrument names of the membership gauges (Prometheus shows '.' as '_').
const (
	MembersMetric     = "otopcua.cluster.members"
	UnreachableMetric = "otopcua.cluster.unreachable"
	IsOldestMetric    = "otopcua.cluster.is_oldest"
	IsLeaderMetric    = "otopcua.cluster.is_leader"
	DroppedMetric     = "otopcua.cluster.messages_dropped"

	// Per application ClusterId (Node:ClusterId) and of this node.
	MembersByClusterMetric  = "otopcua.cluster.members_by_cluster_id"
	IsOldestByClusterMetric = "otopcua.cluster.is_oldest_by_cluster_id"
	SelfUpMetric            = "otopcua.cluster.self_up"
)

// liveStatuses are the statuses a member can have in gossip.
var liveStatuses = []m.Status{m.Joining, m.WeaklyUp, m.Up, m.Leaving, m.Exiting, m.Down}

// RegisterMetrics adds the membership gauges to meter, read from the
// daemon's snapshot at every collection: members{status}, unreachable,
// is_oldest{role} for each of this node's roles, is_leader, and
// messages_dropped{reason} over the whole mesh; the same counts and
// oldest flags per application ClusterId
// (members_by_cluster_id{cluster_id,status} for every ClusterId in view,
// is_oldest_by_cluster_id{cluster_id,role} for this node's ClusterId and
// roles); and self_up, 1 while this node is an Up member.
func (d *Daemon) RegisterMetrics(meter metric.Meter) error {
	members, e1 := meter.Int64ObservableGauge(MembersMetric, metric.WithUnit("{member}"),
		metric.WithDescription("Cluster members in this node's view, by status."))
	unreachable, e2 := meter.Int64ObservableGauge(UnreachableMetric, metric.WithUnit("{member}"),
		metric.WithDescription("Members some live member holds unreachable, in this node's view."))
	isOldest, e3 := meter.Int64ObservableGauge(IsOldestMetric,
		metric.WithDescription("1 when this node is the oldest Up member with the role."))
	isLeader, e4 := meter.Int64ObservableGauge(IsLeaderMetric,
		metric.WithDescription("1 when this node is the cluster leader."))
	dropped, e5 := meter.Int64ObservableCounter(DroppedMetric, metric.WithUnit("{message}"),
		metric.WithDescription("Cluster messages this node refused or could not send, by reason."))
	byCluster, e6 := meter.Int64ObservableGauge(MembersByClusterMetric, metric.WithUnit("{member}"),
		metric.WithDescription("Cluster members in this node's view, by application ClusterId (Node:ClusterId) and status."))
	isOldestIn, e7 := meter.Int64ObservableGauge(IsOldestByClusterMetric,
		metric.WithDescription("1 when this node is the oldest Up member with the role within its application ClusterId (for role driver: the elected Primary)."))
	selfUp, e8 := meter.Int64ObservableGauge(SelfUpMetric,
		metric.WithDescription("1 while this node is an Up member of the cluster (0 while joining, leaving, downed or alone before the join)."))
	if err := errors.Join(e1, e2, e3, e4, e5, e6, e7, e8); err != nil {
		return fmt.Errorf("daemon: metrics: %w", err)
	}
	roles := d.opts.Node.Roles
	ownCluster := d.opts.Node.ClusterID
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := d.Snapshot()
		counts := map[m.Status]int64{}
		perCluster := map[string]map[m.Status]int64{ownCluster: {}}
		var unreach int64
		for _, mb := range st.Gossip.Members {
			counts[mb.Status]++
			if perCluster[mb.ClusterID] == nil {
				perCluster[mb.ClusterID] = map[m.Status]int64{}
			}
			perCluster[mb.ClusterID][mb.Status]++
			if mb.Address != st.Self && !st.IsReachableExcludingDownedObservers(mb.Address) {
				unreach++
			}
		}
		for _, s := range liveStatuses {
			o.ObserveInt64(members, counts[s], metric.WithAttributes(attribute.String("status", s.String())))
		}
		o.ObserveInt64(unreachable, unreach)
		for cid, c := range perCluster {
			for _, s := range liveStatuses {
				o.ObserveInt64(byCluster, c[s], metric.WithAttributes(
					attribute.String("cluster_id", cid), attribute.String("status", s.String())))
			}
		}
		for _, role := range roles {
			v := int64(0)
			if old, ok := m.OldestInCluster(st.Gossip.Members, ownCluster, role); ok && old.Address == st.Self {
				v = 1
			}
			o.ObserveInt64(isOldestIn, v, metric.WithAttributes(
				attribute.String("cluster_id", ownCluster), attribute.String("role", role)))
		}
		up := int64(0)
		if self, ok := st.SelfMember(); ok && self.Status == m.Up {
			up = 1
		}
		o.ObserveInt64(selfUp, up)
		for _, role := range roles {
			v := int64(0)
			if old, ok := st.Oldest(role); ok && old.Address == st.Self {
				v = 1
			}
			o.ObserveInt64(isOldest, v, metric.WithAttributes(attribute.String("role", role)))
		}
		v := int64(0)
		if st.IsLeader(st.Self) {
			v = 1
		}
		o.ObserveInt64(isLeader, v)
		s := d.Stats()
		for reason, n := range map[string]uint64{
			"invalid": s.Invalid, "wrong-incarnation": s.WrongIncarnation, "misaddressed": s.Misaddressed,
			"quarantined": s.Quarantined, "unknown-sender": s.UnknownSender, "refused-join": s.RefusedJoin,
			"refused-protocol": s.RefusedProtocol, "send-gate": s.Transport.GateDropped,
		} {
			o.ObserveInt64(dropped, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
		}
		return nil
	}, members, unreachable, isOldest, isLeader, dropped, byCluster, isOldestIn, selfUp)
	return err
}
