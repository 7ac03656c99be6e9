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
)

// liveStatuses are the statuses a member can have in gossip.
var liveStatuses = []m.Status{m.Joining, m.WeaklyUp, m.Up, m.Leaving, m.Exiting, m.Down}

// RegisterMetrics adds the membership gauges to meter, read from the
// daemon's snapshot at every collection: members{status}, unreachable,
// is_oldest{role} for each of this node's roles, is_leader, and
// messages_dropped{reason}.
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
	if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
		return fmt.Errorf("daemon: metrics: %w", err)
	}
	roles := d.opts.Node.Roles
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := d.Snapshot()
		counts := map[m.Status]int64{}
		var unreach int64
		for _, mb := range st.Gossip.Members {
			counts[mb.Status]++
			if mb.Address != st.Self && !st.IsReachableExcludingDownedObservers(mb.Address) {
				unreach++
			}
		}
		for _, s := range liveStatuses {
			o.ObserveInt64(members, counts[s], metric.WithAttributes(attribute.String("status", s.String())))
		}
		o.ObserveInt64(unreachable, unreach)
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
			"quarantined": s.Quarantined, "unknown-sender": s.UnknownSender, "send-gate": s.Transport.GateDropped,
		} {
			o.ObserveInt64(dropped, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
		}
		return nil
	}, members, unreachable, isOldest, isLeader, dropped)
	return err
}
