package dataplane

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/drivers"
)

// Instrument names (Prometheus shows '.' as '_' and counters with _total).
const (
	DriverReadsMetric       = "otopcua.driver.reads"
	DriverWritesMetric      = "otopcua.driver.writes"
	DeviceConnectedMetric   = "otopcua.device.connected"
	DeviceDegradedMetric    = "otopcua.device.degraded"
	PollDurationMetric      = "otopcua.driver.poll.duration"
	DeploymentCacheMetric   = "otopcua.deployment.from_cache"
	DeploymentVersionMetric = "otopcua.deployment.version"
)

// Metrics are the data plane's instruments: per device reads and writes by
// result, connected, the poll-cycle duration histogram, and whether the
// node runs from the LocalDb cache.
type Metrics struct {
	poll metric.Float64Histogram
}

// NewMetrics creates the poll histogram on meter; Register adds the
// observed series once the host and follower exist.
func NewMetrics(meter metric.Meter) (*Metrics, error) {
	h, err := meter.Float64Histogram(PollDurationMetric, metric.WithUnit("s"),
		metric.WithDescription("Duration of one poll of a device (every request of its tags), by device."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
	if err != nil {
		return nil, fmt.Errorf("dataplane: metrics: %w", err)
	}
	return &Metrics{poll: h}, nil
}

// OnPoll records one poll; it is HostOptions.OnPoll.
func (m *Metrics) OnPoll(device string, p drivers.Poll) {
	m.poll.Record(context.Background(), p.Duration.Seconds(), metric.WithAttributes(attribute.String("device", device)))
}

// Register adds the observed series: reads and writes by device and
// result, connected and degraded by device, from_cache and the applied
// version. connected keeps its meaning (a connection is open now), so a
// degraded device is 1 there while its connection is open (a device that
// answers every request with an exception) and 0 between attempts (a
// silent one, whose connection each timeout drops); degraded is 1 exactly
// while /api/deployment shows the device degraded.
func (m *Metrics) Register(meter metric.Meter, host *Host, follower *Follower) error {
	reads, e1 := meter.Int64ObservableCounter(DriverReadsMetric, metric.WithUnit("{request}"),
		metric.WithDescription("Read requests to field devices, by device and result (ok, failed)."))
	writes, e2 := meter.Int64ObservableCounter(DriverWritesMetric, metric.WithUnit("{write}"),
		metric.WithDescription("Tag writes sent to field devices, by device and result (ok, failed)."))
	connected, e3 := meter.Int64ObservableGauge(DeviceConnectedMetric,
		metric.WithDescription("1 while this node holds a connection to the device."))
	cached, e4 := meter.Int64ObservableGauge(DeploymentCacheMetric,
		metric.WithDescription("1 while the applied deployment came from the LocalDb cache (the Config DB did not answer at start-up)."))
	version, e5 := meter.Int64ObservableGauge(DeploymentVersionMetric,
		metric.WithDescription("Version of the applied deployment (0: none)."))
	degraded, e6 := meter.Int64ObservableGauge(DeviceDegradedMetric,
		metric.WithDescription("1 while the device takes connections but its reads all fail (state degraded in /api/deployment)."))
	if err := errors.Join(e1, e2, e3, e4, e5, e6); err != nil {
		return fmt.Errorf("dataplane: metrics: %w", err)
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for name, s := range host.Stats() {
			dev := attribute.String("device", name)
			o.ObserveInt64(reads, int64(s.ReadsOK), metric.WithAttributes(dev, attribute.String("result", "ok")))
			o.ObserveInt64(reads, int64(s.ReadsFailed), metric.WithAttributes(dev, attribute.String("result", "failed")))
			o.ObserveInt64(writes, int64(s.WritesOK), metric.WithAttributes(dev, attribute.String("result", "ok")))
			o.ObserveInt64(writes, int64(s.WritesFailed), metric.WithAttributes(dev, attribute.String("result", "failed")))
			c := int64(0)
			if s.Connected {
				c = 1
			}
			o.ObserveInt64(connected, c, metric.WithAttributes(dev))
		}
		for _, d := range host.Devices() {
			g := int64(0)
			if d.State == drivers.StateDegraded.String() {
				g = 1
			}
			o.ObserveInt64(degraded, g, metric.WithAttributes(attribute.String("device", d.Name)))
		}
		st := follower.Status()
		c := int64(0)
		if st.Source == SourceCache {
			c = 1
		}
		o.ObserveInt64(cached, c)
		o.ObserveInt64(version, st.Version)
		return nil
	}, reads, writes, connected, degraded, cached, version)
	return err
}
