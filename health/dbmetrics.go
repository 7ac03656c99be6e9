package health

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// ConfigDbReachableMetric is the gauge of the last Config DB probe
// (Prometheus: otopcua_configdb_reachable).
const ConfigDbReachableMetric = "otopcua.configdb.reachable"

// RegisterMetrics exports otopcua_configdb_reachable: 1 when the last probe
// answered, 0 when it failed or none has ended yet.
func (p *DbProbe) RegisterMetrics(meter metric.Meter) error {
	g, err := meter.Int64ObservableGauge(ConfigDbReachableMetric,
		metric.WithDescription("1 when this node's last Config DB probe (SELECT 1, every 5 s) answered; 0 when it failed or timed out."))
	if err != nil {
		return fmt.Errorf("health: metrics: %w", err)
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		v := int64(0)
		if r, ok := p.Last(); ok && r.Reachable {
			v = 1
		}
		o.ObserveInt64(g, v)
		return nil
	}, g)
	if err != nil {
		return fmt.Errorf("health: metrics: %w", err)
	}
	return nil
}

// Ready is the readiness check of the Config DB: nil when the last probe
// answered and is at most maxAge old (by the probe's clock), else why not.
func (p *DbProbe) Ready(maxAge time.Duration) error {
	r, ok := p.Last()
	switch {
	case !ok:
		return fmt.Errorf("no Config DB probe has finished yet")
	case !r.Reachable:
		return fmt.Errorf("Config DB unreachable since %s: %s", r.AsOf.UTC().Format(time.RFC3339), r.Err)
	}
	if age := p.cfg.Clock.Since(r.AsOf); age > maxAge {
		return fmt.Errorf("the last Config DB answer is %s old (more than %s): the probe is stuck", age.Round(time.Second), maxAge)
	}
	return nil
}
