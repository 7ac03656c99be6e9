package redundancy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names of a driver node's redundancy gauges (Prometheus shows
// '.' as '_', and the histogram with the suffix _seconds).
const (
	ServiceLevelMetric = "otopcua.redundancy.service_level"
	IsPrimaryMetric    = "otopcua.redundancy.is_primary"
	EpochMetric        = "otopcua.redundancy.epoch"
	RoleMetric         = "otopcua.redundancy.role"
	LatencyMetric      = "otopcua.redundancy.membership_to_service_level"
)

// LatencyBuckets are the histogram boundaries of LatencyMetric, seconds:
// fine below a second (the crash fast path), coarse up to the 15 s
// auto-down window and beyond.
var LatencyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 15, 20, 30}

// roles lists every Role, for the one-hot role gauge.
var roles = []Role{RolePrimary, RoleSecondary, RoleDetached, RoleUnknown}

// Metrics are a driver node's redundancy gauges, all labelled with its
// ClusterId (cluster_id):
//
//   - service_level: the Server.ServiceLevel byte this node last published
//     (255 before the first, as the server shows it);
//   - is_primary: 1 while the latest redundancy snapshot names this node
//     Primary of its ClusterId;
//   - epoch: the ownership epoch of its ClusterId in that snapshot (it
//     increases whenever the Primary changes; 0 while the role is unknown);
//   - role{role}: 1 for the current role (primary, secondary, detached,
//     unknown), 0 for the others;
//   - membership_to_service_level: the time from the last membership change
//     to the ServiceLevel change that followed it (ObserveLatency).
type Metrics struct {
	latency metric.Float64Histogram
	attrs   metric.MeasurementOption
}

// RegisterMetrics adds the gauges to meter. level returns the last
// published ServiceLevel (ok false before the first); view gives the role
// and epoch.
func RegisterMetrics(meter metric.Meter, clusterID string, level func() (byte, bool), view *RoleView) (*Metrics, error) {
	cid := attribute.String("cluster_id", clusterID)
	sl, e1 := meter.Int64ObservableGauge(ServiceLevelMetric,
		metric.WithDescription("This node's OPC UA Server.ServiceLevel byte: 250 healthy Primary, 240 healthy Secondary, 200 stale, 100 Config DB unreachable, 0 not serving, 255 not computed yet."))
	primary, e2 := meter.Int64ObservableGauge(IsPrimaryMetric,
		metric.WithDescription("1 while the redundancy snapshot names this node Primary of its ClusterId; exactly one node per ClusterId should report 1."))
	epoch, e3 := meter.Int64ObservableGauge(EpochMetric,
		metric.WithDescription("Ownership epoch of this node's ClusterId: increases by one or more each time the Primary changes (0 while this node's role is unknown)."))
	role, e4 := meter.Int64ObservableGauge(RoleMetric,
		metric.WithDescription("1 for this node's current redundancy role (primary, secondary, detached, unknown), 0 for the others."))
	latency, e5 := meter.Float64Histogram(LatencyMetric, metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(LatencyBuckets...),
		metric.WithDescription("Time from the last cluster membership change to the ServiceLevel change that followed it on this node (failover and recovery speed)."))
	if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
		return nil, fmt.Errorf("redundancy: metrics: %w", err)
	}
	attrs := metric.WithAttributes(cid)
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		l, ok := level()
		if !ok {
			l = 255
		}
		o.ObserveInt64(sl, int64(l), attrs)
		r := view.Role()
		p := int64(0)
		if r == RolePrimary {
			p = 1
		}
		o.ObserveInt64(primary, p, attrs)
		o.ObserveInt64(epoch, int64(view.Epoch()), attrs)
		for _, each := range roles {
			v := int64(0)
			if each == r {
				v = 1
			}
			o.ObserveInt64(role, v, metric.WithAttributes(cid, attribute.String("role", strings.ToLower(each.String()))))
		}
		return nil
	}, sl, primary, epoch, role)
	if err != nil {
		return nil, fmt.Errorf("redundancy: metrics: %w", err)
	}
	return &Metrics{latency: latency, attrs: attrs}, nil
}

// ObserveLatency records one membership-change-to-ServiceLevel time.
func (m *Metrics) ObserveLatency(d time.Duration) {
	m.latency.Record(context.Background(), d.Seconds(), m.attrs)
}
