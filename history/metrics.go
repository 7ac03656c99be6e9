package history

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// Instrument names (Prometheus shows '.' as '_' and counters with _total).
const (
	RecordedMetric = "otopcua.history.samples.recorded"
	DroppedMetric  = "otopcua.history.samples.dropped"
	TagsMetric     = "otopcua.history.tags"
	StoreMetric    = "otopcua.history.store.bytes"
	RemovedMetric  = "otopcua.history.samples.removed_by_size"
)

// RegisterMetrics observes r and its store on meter: samples recorded,
// dropped and removed by the size limit, the tags recorded now and the
// store's size on disk.
func RegisterMetrics(meter metric.Meter, r *Recorder) (metric.Registration, error) {
	rec, e1 := meter.Int64ObservableCounter(RecordedMetric, metric.WithUnit("{sample}"),
		metric.WithDescription("Samples the process history recorded (after each tag's deadband)."))
	drop, e2 := meter.Int64ObservableCounter(DroppedMetric, metric.WithUnit("{sample}"),
		metric.WithDescription("Samples the process history dropped because its store did not keep up or failed."))
	tags, e3 := meter.Int64ObservableGauge(TagsMetric, metric.WithUnit("{tag}"),
		metric.WithDescription("Tags the process history records under the current deployment."))
	size, e4 := meter.Int64ObservableGauge(StoreMetric, metric.WithUnit("By"),
		metric.WithDescription("Size of the process history store on disk."))
	removed, e5 := meter.Int64ObservableCounter(RemovedMetric, metric.WithUnit("{sample}"),
		metric.WithDescription("Samples the process history removed to keep its store under History:MaxSize."))
	if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
		return nil, fmt.Errorf("history: metrics: %w", err)
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := r.Status()
		o.ObserveInt64(rec, int64(st.Recorded))
		o.ObserveInt64(drop, int64(st.Dropped))
		o.ObserveInt64(tags, int64(st.Tags))
		o.ObserveInt64(size, r.s.Size())
		o.ObserveInt64(removed, int64(st.RemovedBySize))
		return nil
	}, rec, drop, tags, size, removed)
}

// Back-fill instrument names.
const (
	BackfillLagMetric     = "otopcua.history.backfill.lag"
	BackfillSamplesMetric = "otopcua.history.backfill.samples"
)

// RegisterBackfillMetrics observes b on meter: the back-fill lag (the
// longest span of history this node still has to fetch from its peer) and
// the samples back-filled.
func RegisterBackfillMetrics(meter metric.Meter, b *Backfiller) (metric.Registration, error) {
	lag, e1 := meter.Float64ObservableGauge(BackfillLagMetric, metric.WithUnit("s"),
		metric.WithDescription("Longest span of history this node has not yet back-filled from its peer (0: none)."))
	n, e2 := meter.Int64ObservableCounter(BackfillSamplesMetric, metric.WithUnit("{sample}"),
		metric.WithDescription("Samples this node back-filled from its peer's history."))
	if err := errors.Join(e1, e2); err != nil {
		return nil, fmt.Errorf("history: back-fill metrics: %w", err)
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := b.Status()
		o.ObserveFloat64(lag, st.Lag.Seconds())
		o.ObserveInt64(n, int64(st.Samples))
		return nil
	}, lag, n)
}
