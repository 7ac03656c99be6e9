package opcua

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Instrument names of the OPC UA load metrics. Prometheus shows '.' as '_'
// and adds "_total" to the counter: otopcua_opcua_channels,
// otopcua_opcua_sessions{state}, otopcua_opcua_limit_refusals_total{limit}.
// Their units are annotations ("{session}"), which the exporter does not
// turn into name suffixes.
const (
	ChannelsMetric       = "otopcua.opcua.channels"
	ConnectionsMetric    = "otopcua.opcua.connections"
	SessionsMetric       = "otopcua.opcua.sessions"
	SubscriptionsMetric  = "otopcua.opcua.subscriptions"
	MonitoredItemsMetric = "otopcua.opcua.monitored_items"
	LimitRefusalsMetric  = "otopcua.opcua.limit_refusals"
)

// Values of the attribute "state" of otopcua.opcua.sessions.
const (
	SessionActivated   = "activated"
	SessionUnactivated = "unactivated"
)

// LimitNames returns every value of the attribute "limit" of
// otopcua.opcua.limit_refusals: the service layer's limits
// (uaserver.Limits), then the subscription engine's (subscription.Limits).
// The two lists share no name.
func LimitNames() []string {
	names := slices.Concat(uaserver.Limits, subscription.Limits)
	seen := make(map[string]bool, len(names))
	for _, l := range names {
		if seen[l] {
			panic("opcua: the limit name " + l + " is listed twice in uaserver.Limits and subscription.Limits; its refusal series would be observed twice")
		}
		seen[l] = true
	}
	return names
}

// RegisterMetrics adds the OPC UA load instruments to meter, observed at
// every collection from one Stats of the service layer and one of the
// subscription engine:
//
//   - otopcua.opcua.connections: TCP connections held, handshakes included;
//   - otopcua.opcua.channels: open secure channels;
//   - otopcua.opcua.sessions{state=activated|unactivated}: sessions held;
//   - otopcua.opcua.subscriptions and otopcua.opcua.monitored_items: what
//     the engine holds, orphaned subscriptions included;
//   - otopcua.opcua.limit_refusals{limit}: clients, channels, subscriptions
//     and items refused because of each limit (LimitNames), every series
//     present, at 0, from the first collection.
//
// Call it once per meter; a no-op meter (telemetry.NopMetrics) is fine.
// Collections after Close report the closed server's counts.
func (s *Server) RegisterMetrics(meter metric.Meter) error {
	connections, e1 := meter.Int64ObservableGauge(ConnectionsMetric, metric.WithUnit("{connection}"),
		metric.WithDescription("OPC UA TCP connections held by this node, handshakes in progress included."))
	channels, e2 := meter.Int64ObservableGauge(ChannelsMetric, metric.WithUnit("{channel}"),
		metric.WithDescription("Open OPC UA secure channels on this node."))
	sessions, e3 := meter.Int64ObservableGauge(SessionsMetric, metric.WithUnit("{session}"),
		metric.WithDescription("OPC UA sessions held by this node, by state (activated, unactivated)."))
	subscriptions, e4 := meter.Int64ObservableGauge(SubscriptionsMetric, metric.WithUnit("{subscription}"),
		metric.WithDescription("OPC UA subscriptions held by this node, those of closed sessions awaiting transfer included."))
	items, e5 := meter.Int64ObservableGauge(MonitoredItemsMetric, metric.WithUnit("{item}"),
		metric.WithDescription("OPC UA monitored items of the subscriptions held by this node."))
	refusals, e6 := meter.Int64ObservableCounter(LimitRefusalsMetric, metric.WithUnit("{refusal}"),
		metric.WithDescription("OPC UA clients, channels, subscriptions and monitored items refused or closed by this node, by the limit that refused them."))
	if err := errors.Join(e1, e2, e3, e4, e5, e6); err != nil {
		return fmt.Errorf("opcua: metrics: %w", err)
	}
	activated := metric.WithAttributeSet(attribute.NewSet(attribute.String("state", SessionActivated)))
	unactivated := metric.WithAttributeSet(attribute.NewSet(attribute.String("state", SessionUnactivated)))
	names := LimitNames()
	limitAttrs := make([]metric.ObserveOption, len(names))
	for k, l := range names {
		limitAttrs[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("limit", l)))
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		u, e := s.ua.Stats(), s.engine.Stats()
		o.ObserveInt64(connections, int64(u.Connections))
		o.ObserveInt64(channels, int64(u.Channels))
		o.ObserveInt64(sessions, int64(u.SessionsActivated), activated)
		o.ObserveInt64(sessions, int64(u.SessionsUnactivated), unactivated)
		o.ObserveInt64(subscriptions, int64(e.Subscriptions))
		o.ObserveInt64(items, int64(e.MonitoredItems))
		for k, l := range names {
			n, ok := u.Refusals[l]
			if !ok {
				n = e.Refusals[l]
			}
			o.ObserveInt64(refusals, clampInt64(n), limitAttrs[k])
		}
		return nil
	}, connections, channels, sessions, subscriptions, items, refusals)
	if err != nil {
		return fmt.Errorf("opcua: metrics: %w", err)
	}
	return nil
}

func clampInt64(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}
