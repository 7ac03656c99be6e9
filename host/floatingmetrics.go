package host

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/floating"
)

// Instrument names of the floating address. Prometheus shows them as
// otopcua_floating_address_owned{cluster_id}, …_seizes_total{cluster_id},
// …_drift_total{cluster_id,kind} and …_conflict{cluster_id}.
const (
	floatingOwnedName    = "otopcua.floating_address.owned"
	floatingSeizesName   = "otopcua.floating_address.seizes"
	floatingDriftName    = "otopcua.floating_address.drift"
	floatingConflictName = "otopcua.floating_address.conflict"
)

// otelFloatingMetrics implements floatingMetrics on the node's meter.
type otelFloatingMetrics struct {
	cluster  attribute.KeyValue
	owned    atomic.Bool
	conflict atomic.Bool
	seizes   metric.Int64Counter
	drift    metric.Int64Counter
}

func newFloatingMetrics(meter metric.Meter, clusterID string) (*otelFloatingMetrics, error) {
	m := &otelFloatingMetrics{cluster: attribute.String("cluster_id", clusterID)}
	var err1, err2, err3, err4 error
	m.seizes, err1 = meter.Int64Counter(floatingSeizesName, metric.WithUnit("{seize}"),
		metric.WithDescription("Times this node took the floating address (seize or reassign), by ClusterId."))
	m.drift, err2 = meter.Int64Counter(floatingDriftName, metric.WithUnit("{drift}"),
		metric.WithDescription("Reconcile passes that found the floating address where it should not be, by kind: missing (the owner lacks it), extra (a non-owner holds it), conflict (a foreign holder)."))
	_, err3 = meter.Int64ObservableGauge(floatingOwnedName,
		metric.WithDescription("1 while this node holds its ClusterId's floating address, else 0."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(b2i(m.owned.Load()), metric.WithAttributes(m.cluster))
			return nil
		}))
	_, err4 = meter.Int64ObservableGauge(floatingConflictName,
		metric.WithDescription("1 while the last reconcile found the floating address held by a foreign MAC, instance or NIC, else 0."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(b2i(m.conflict.Load()), metric.WithAttributes(m.cluster))
			return nil
		}))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("floating address metrics: %w", err)
	}
	ctx := context.Background()
	m.seizes.Add(ctx, 0, metric.WithAttributes(m.cluster))
	for _, k := range []string{floating.DriftMissing, floating.DriftExtra, floating.DriftConflict} {
		m.drift.Add(ctx, 0, metric.WithAttributes(m.cluster, attribute.String("kind", k)))
	}
	return m, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (m *otelFloatingMetrics) FloatingOwned(owned bool)       { m.owned.Store(owned) }
func (m *otelFloatingMetrics) FloatingConflict(conflict bool) { m.conflict.Store(conflict) }
func (m *otelFloatingMetrics) FloatingSeize() {
	m.seizes.Add(context.Background(), 1, metric.WithAttributes(m.cluster))
}
func (m *otelFloatingMetrics) FloatingDrift(kind string) {
	m.drift.Add(context.Background(), 1, metric.WithAttributes(m.cluster, attribute.String("kind", kind)))
}
