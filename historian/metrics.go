package historian

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names (Prometheus shows '.' as '_', counters with the suffix
// _total and the age with _seconds).
const (
	QueueDepthMetric = "otopcua.historian.queue_depth"
	PoisonedMetric   = "otopcua.historian.poisoned"
	OldestAgeMetric  = "otopcua.historian.oldest_age"
	DrainedMetric    = "otopcua.historian.drained"
	RefusedMetric    = "otopcua.historian.refused"
	DrainStateMetric = "otopcua.historian.drain_state"
)

// RegisterMetrics adds the historian's instruments to meter, each labelled
// with the ClusterId (cluster_id) and read from Status at every collection:
//
//   - otopcua_historian_queue_depth: rows waiting in this node's queue;
//   - otopcua_historian_poisoned: rows the Config DB refused MaxAttempts
//     times, kept in the queue and no longer delivered;
//   - otopcua_historian_oldest_age_seconds: how long the oldest waiting
//     row has waited (0 when none);
//   - otopcua_historian_drained_total: rows this node delivered;
//   - otopcua_historian_refused_total: events this node could not queue;
//   - otopcua_historian_drain_state{state}: 1 for the current state, 0 for
//     the others.
func (h *Historian) RegisterMetrics(meter metric.Meter) error {
	depth, e1 := meter.Int64ObservableGauge(QueueDepthMetric, metric.WithUnit("{row}"),
		metric.WithDescription("Alarm history events waiting in this node's LocalDb queue for the Primary's drain to the Config DB (every node queues every transition; only the Primary drains)."))
	poisoned, e2 := meter.Int64ObservableGauge(PoisonedMetric, metric.WithUnit("{row}"),
		metric.WithDescription("Alarm history events the Config DB refused on every attempt (3 by default): kept in this node's LocalDb queue, no longer delivered; an operator must look at them (GET /api/historian, the log)."))
	age, e3 := meter.Float64ObservableGauge(OldestAgeMetric, metric.WithUnit("s"),
		metric.WithDescription("How long the oldest alarm history event waiting in this node's queue has waited; growing on the Primary means history is not reaching the Config DB."))
	drained, e4 := meter.Int64ObservableCounter(DrainedMetric, metric.WithUnit("{row}"),
		metric.WithDescription("Alarm history events this node delivered to the Config DB alarm_history (stored, or found already stored) and removed from its queue."))
	refused, e5 := meter.Int64ObservableCounter(RefusedMetric, metric.WithUnit("{event}"),
		metric.WithDescription("Alarm transitions this node could not queue (queue full at its limit, LocalDb failing, invalid event): history missing from this node's queue."))
	state, e6 := meter.Int64ObservableGauge(DrainStateMetric,
		metric.WithDescription("1 for the historian drain's current state (Draining, Idle, NotPrimary, CentralUnreachable, LocalDbError, Stopped), 0 for the others."))
	if err := errors.Join(e1, e2, e3, e4, e5, e6); err != nil {
		return fmt.Errorf("historian: metrics: %w", err)
	}
	cid := attribute.String("cluster_id", h.opts.ClusterID)
	attrs := metric.WithAttributes(cid)
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := h.Status()
		o.ObserveInt64(depth, int64(st.QueueDepth), attrs)
		o.ObserveInt64(poisoned, int64(st.Poisoned), attrs)
		a := 0.0
		if !st.Oldest.IsZero() {
			a = max(0, h.opts.Clock.Since(st.Oldest).Seconds())
		}
		o.ObserveFloat64(age, a, attrs)
		o.ObserveInt64(drained, int64(st.Drained), attrs)
		o.ObserveInt64(refused, int64(st.Refused), attrs)
		for _, s := range States {
			v := int64(0)
			if s == st.State {
				v = 1
			}
			o.ObserveInt64(state, v, metric.WithAttributes(cid, attribute.String("state", s)))
		}
		return nil
	}, depth, poisoned, age, drained, refused, state)
	if err != nil {
		return fmt.Errorf("historian: metrics: %w", err)
	}
	return nil
}
