package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// MeterName is the instrumentation scope of otopcua's instruments.
const MeterName = "github.com/otopcua/otopcua"

// Instrument names (OTel). Prometheus shows them with '.' as '_' and the
// counter suffix "_total", e.g. otopcua_redundancy_service_level_change_total.
const (
	ServiceLevelChangeName = "otopcua.redundancy.service_level_change"
	PrimaryGateDeniedName  = "otopcua.redundancy.primary_gate_denied"
	ApplyFailedName        = "otopcua.opcua.apply.failed"
	AuthThrottledName      = "otopcua.auth.throttled"
)

// Sites of the Primary gate (attribute "site" of primary_gate_denied): the
// Strings of gate.Site.
const (
	GateSiteWrite          = "write"
	GateSiteAck            = "ack"
	GateSiteAlarmEmit      = "alarm-emit"
	GateSiteHistorianDrain = "historian-drain"
)

// Reasons of a Primary gate denial (attribute "reason"): the Labels of
// gate.Reason.
const (
	GateReasonSecondary   = "secondary"
	GateReasonDetached    = "detached"
	GateReasonRoleUnknown = "role-unknown"
	// GateReasonNotMember: not a cluster member yet while a driver peer
	// may be the Primary (a restart into a running pair).
	GateReasonNotMember = "not-member"
	// GateReasonWoken: the process woke from a pause longer than the
	// acceptable heartbeat pause and has not heard every peer since.
	GateReasonWoken = "woken"
)

// Kinds of a failed address-space apply (attribute "kind" of apply.failed).
const (
	ApplyKindRebuild = "rebuild"
	ApplyKindNodes   = "nodes"
)

// Surfaces of a throttled login (attribute "surface" of auth.throttled):
// the admin/auth Surface constants.
const (
	AuthSurfaceAdmin = "admin" // the admin login page
	AuthSurfaceOpcUa = "opcua" // an OPC UA UserName identity token
)

// Known attribute values, recorded at zero on start-up so that every series
// a dashboard or alert rule refers to exists before its first event. Other
// values are still counted; their series appear on first use.
var (
	knownServiceLevels = []byte{0, 100, 200, 240, 250}
	knownGateSites     = []string{GateSiteWrite, GateSiteAck, GateSiteAlarmEmit, GateSiteHistorianDrain}
	knownGateReasons   = []string{GateReasonSecondary, GateReasonDetached, GateReasonRoleUnknown, GateReasonNotMember, GateReasonWoken}
	knownApplyKinds    = []string{ApplyKindRebuild, ApplyKindNodes}
	knownAuthSurfaces  = []string{AuthSurfaceAdmin, AuthSurfaceOpcUa}
)

// Metrics holds otopcua's instruments and the /metrics handler. The zero
// value is not usable; build it with NewMetrics or NopMetrics.
type Metrics struct {
	meter    metric.Meter
	handler  http.Handler
	shutdown func(context.Context) error

	serviceLevelChange metric.Int64Counter
	primaryGateDenied  metric.Int64Counter
	applyFailed        metric.Int64Counter
	authThrottled      metric.Int64Counter
}

// NewMetrics builds an OTel meter provider whose Prometheus exporter is
// registered, with the Go runtime and process collectors, on a registry of
// its own, creates the design's instruments and records their known series
// at zero.
func NewMetrics() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("telemetry: go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("telemetry: process collector: %w", err)
	}
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithoutScopeInfo(),  // no otel_scope_* labels on every series
		otelprom.WithoutTargetInfo(), // no target_info series
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	m, err := newMetrics(provider.Meter(MeterName))
	if err != nil {
		return nil, errors.Join(err, provider.Shutdown(context.Background()))
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	m.shutdown = provider.Shutdown
	m.registerKnownSeries()
	return m, nil
}

// NopMetrics returns Metrics whose instruments record nothing and whose
// Handler answers 404, for Telemetry:MetricsEnabled = false and for tests.
func NopMetrics() *Metrics {
	m, err := newMetrics(noop.NewMeterProvider().Meter(MeterName))
	if err != nil {
		panic("telemetry: invariant broken: noop instruments failed: " + err.Error())
	}
	m.handler = http.NotFoundHandler()
	m.shutdown = func(context.Context) error { return nil }
	return m
}

func newMetrics(meter metric.Meter) (*Metrics, error) {
	m := &Metrics{meter: meter}
	var err1, err2, err3, err4 error
	m.serviceLevelChange, err1 = meter.Int64Counter(ServiceLevelChangeName,
		metric.WithUnit("{change}"),
		metric.WithDescription("OPC UA Server.ServiceLevel transitions published by this node, by new level."))
	m.primaryGateDenied, err2 = meter.Int64Counter(PrimaryGateDeniedName,
		metric.WithUnit("{denial}"),
		metric.WithDescription("Operations denied by the Primary data-plane gate, by site and reason."))
	m.applyFailed, err3 = meter.Int64Counter(ApplyFailedName,
		metric.WithUnit("{apply}"),
		metric.WithDescription("Address-space apply passes that swallowed at least one failure, by kind."))
	m.authThrottled, err4 = meter.Int64Counter(AuthThrottledName,
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Logins refused without a password check because their user name from that address, or that address, must wait after failed logins, by surface."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("telemetry: instruments: %w", err)
	}
	return m, nil
}

// registerKnownSeries adds 0 to every known attribute combination. The SDK
// creates a cumulative data point on any Add, including 0, so each series
// is exported from the first scrape on.
func (m *Metrics) registerKnownSeries() {
	ctx := context.Background()
	for _, l := range knownServiceLevels {
		m.serviceLevelChange.Add(ctx, 0, levelAttr(l))
	}
	for _, s := range knownGateSites {
		for _, r := range knownGateReasons {
			m.primaryGateDenied.Add(ctx, 0, gateAttr(s, r))
		}
	}
	for _, k := range knownApplyKinds {
		m.applyFailed.Add(ctx, 0, kindAttr(k))
	}
	for _, sf := range knownAuthSurfaces {
		m.authThrottled.Add(ctx, 0, surfaceAttr(sf))
	}
}

func levelAttr(level byte) metric.AddOption {
	return metric.WithAttributes(attribute.String("level", strconv.Itoa(int(level))))
}

func gateAttr(site, reason string) metric.AddOption {
	return metric.WithAttributes(attribute.String("site", site), attribute.String("reason", reason))
}

func kindAttr(kind string) metric.AddOption {
	return metric.WithAttributes(attribute.String("kind", kind))
}

func surfaceAttr(surface string) metric.AddOption {
	return metric.WithAttributes(attribute.String("surface", surface))
}

// ServiceLevelChanged counts one published ServiceLevel transition to level.
func (m *Metrics) ServiceLevelChanged(level byte) {
	m.serviceLevelChange.Add(context.Background(), 1, levelAttr(level))
}

// PrimaryGateDenied counts one operation denied by the Primary gate at site
// (GateSite…) for reason (GateReason…).
func (m *Metrics) PrimaryGateDenied(site, reason string) {
	m.primaryGateDenied.Add(context.Background(), 1, gateAttr(site, reason))
}

// ApplyFailed counts one address-space apply pass that failed in part, of
// the given kind (ApplyKind…).
func (m *Metrics) ApplyFailed(kind string) {
	m.applyFailed.Add(context.Background(), 1, kindAttr(kind))
}

// AuthThrottled counts one login refused unchecked because it must wait
// after failed logins, from surface (AuthSurface…). Safe for concurrent
// use; it does not block.
func (m *Metrics) AuthThrottled(surface string) {
	m.authThrottled.Add(context.Background(), 1, surfaceAttr(surface))
}

// Meter is the meter for instruments other packages add (membership gauges,
// failover timings); they appear on the same /metrics.
func (m *Metrics) Meter() metric.Meter { return m.meter }

// Handler serves the Prometheus text format for /metrics.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Shutdown stops the meter provider; later recordings are dropped.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.shutdown(ctx) }

// Names of the information gauges (always 1; their labels carry the facts).
const (
	BuildInfoName = "otopcua.build_info"
	NodeInfoName  = "otopcua.node_info"
)

// NodeInfo is what otopcua_build_info and otopcua_node_info tell.
type NodeInfo struct {
	Version, Commit string // build
	ClusterID       string // Node:ClusterId
	NodeID          string // cluster NodeId, PublicHostname:Port
	ApplicationURI  string // OpcUa:ApplicationUri
}

// RegisterInfo exports otopcua_build_info{version,commit,go_version} and
// otopcua_node_info{cluster_id,node_id,application_uri}, both constant 1,
// so that dashboards can show what runs where and join any node series to
// its ClusterId (`* on(instance) group_left(cluster_id) otopcua_node_info`).
func (m *Metrics) RegisterInfo(info NodeInfo) error {
	build, e1 := m.meter.Int64ObservableGauge(BuildInfoName,
		metric.WithDescription("Always 1; the labels name the otopcua version and commit this node runs and the Go release it was built with."))
	node, e2 := m.meter.Int64ObservableGauge(NodeInfoName,
		metric.WithDescription("Always 1; the labels name this node's application ClusterId, cluster NodeId and OPC UA ApplicationUri."))
	if err := errors.Join(e1, e2); err != nil {
		return fmt.Errorf("telemetry: info gauges: %w", err)
	}
	commit := info.Commit
	if commit == "" {
		commit = "unknown"
	}
	buildAttrs := metric.WithAttributes(attribute.String("version", info.Version),
		attribute.String("commit", commit), attribute.String("go_version", runtime.Version()))
	nodeAttrs := metric.WithAttributes(attribute.String("cluster_id", info.ClusterID),
		attribute.String("node_id", info.NodeID), attribute.String("application_uri", info.ApplicationURI))
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(build, 1, buildAttrs)
		o.ObserveInt64(node, 1, nodeAttrs)
		return nil
	}, build, node)
	if err != nil {
		return fmt.Errorf("telemetry: info gauges: %w", err)
	}
	return nil
}
