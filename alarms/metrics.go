package alarms

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names (OTel); Prometheus shows otopcua_alarms_active and
// otopcua_alarm_transitions_total.
const (
	ActiveMetric      = "otopcua.alarms.active"
	TransitionsMetric = "otopcua.alarm.transitions"
)

// Metrics are where the engine reports.
type Metrics struct {
	// Meter gets the instruments otopcua.alarms.active{cluster_id} and
	// otopcua.alarm.transitions{cluster_id,kind}. Nil: none. (The gate's
	// denials are counted by Options.Gate.)
	Meter metric.Meter
}

type instruments struct {
	transitions metric.Int64Counter
	cluster     attribute.KeyValue
}

// register creates the instruments; active reads the view.
func (m Metrics) register(clusterID string, v *view) (*instruments, error) {
	if m.Meter == nil {
		return nil, nil
	}
	in := &instruments{cluster: attribute.String("cluster_id", clusterID)}
	var e1, e2 error
	in.transitions, e1 = m.Meter.Int64Counter(TransitionsMetric, metric.WithUnit("{transition}"),
		metric.WithDescription("Alarm transitions received on the alerts topic for this ClusterId (every node counts the same ones), by kind: active, inactive, acked, confirmed, enabled, disabled, comment."))
	active, e2 := m.Meter.Int64ObservableGauge(ActiveMetric, metric.WithUnit("{alarm}"),
		metric.WithDescription("Enabled alarms of this ClusterId that are active on this node."))
	if err := errors.Join(e1, e2); err != nil {
		return nil, fmt.Errorf("alarms: metrics: %w", err)
	}
	if _, err := m.Meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(active, int64(v.active()), metric.WithAttributes(in.cluster))
		return nil
	}, active); err != nil {
		return nil, fmt.Errorf("alarms: metrics: %w", err)
	}
	for _, k := range Transitions {
		in.transitions.Add(context.Background(), 0, metric.WithAttributes(in.cluster, attribute.String("kind", string(k))))
	}
	return in, nil
}

func (in *instruments) transition(k Kind) {
	if in == nil {
		return
	}
	in.transitions.Add(context.Background(), 1, metric.WithAttributes(in.cluster, attribute.String("kind", string(k))))
}
