package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/opcua/mirror"
)

// Instrument names of session mirroring. Prometheus shows them as
// otopcua_mirror_ready{origin}, …_sessions{role}, …_peer_ready{peer},
// …_lag_bytes{peer}, …_dropped_total{reason}, …_takeovers_total{result},
// …_records_total{direction}, …_bytes_total{direction} and the histogram
// …_lag_seconds{peer}. Peers and origins are labelled by NodeId
// (host:port), so a restarted peer keeps its series.
const (
	mirrorReadyName     = "otopcua.mirror.ready"
	mirrorSessionsName  = "otopcua.mirror.sessions"
	mirrorPeerReadyName = "otopcua.mirror.peer_ready"
	mirrorLagBytesName  = "otopcua.mirror.lag_bytes"
	mirrorDroppedName   = "otopcua.mirror.dropped"
	mirrorTakeoversName = "otopcua.mirror.takeovers"
	mirrorRecordsName   = "otopcua.mirror.records"
	mirrorBytesName     = "otopcua.mirror.bytes"
	mirrorLagName       = "otopcua.mirror.lag"
)

// mirrorLagBuckets are the boundaries of the lag histogram, seconds: the
// acknowledgement of a batch on a LAN takes a millisecond or less; the
// default OpcUa:Mirror:AckTimeout is 50 ms.
var mirrorLagBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5}

// Takeover results and traffic directions recorded at zero from the
// start, so that alerts and panels find the series before the first event.
var (
	mirrorTakeoverResults = []string{"ok", "refused", "not-ready"}
	mirrorDirections      = []string{"out", "in"}
	mirrorRoles           = []string{"served", "replica"}
)

// mirrorMetrics are the otopcua_mirror_* instruments. The gauges and
// counters are read from the Member's Stats at scrape time (collect); only
// the lag histogram is fed as it happens (observeLag).
type mirrorMetrics struct {
	meter metric.Meter
	lag   metric.Float64Histogram
}

func newMirrorMetrics(meter metric.Meter) (*mirrorMetrics, error) {
	lag, err := meter.Float64Histogram(mirrorLagName, metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(mirrorLagBuckets...),
		metric.WithDescription("Time from handing a mirroring record to the cluster to the peer's acknowledgement, by peer NodeId."))
	if err != nil {
		return nil, fmt.Errorf("mirror metrics: %w", err)
	}
	return &mirrorMetrics{meter: meter, lag: lag}, nil
}

// observeLag is mirror.Options.ObserveLag: it must not block, and does not.
func (m *mirrorMetrics) observeLag(peer string, d time.Duration) {
	m.lag.Record(context.Background(), d.Seconds(), metric.WithAttributes(attribute.String("peer", mirrorNodeID(peer))))
}

// mirrorSample is one observation of a scrape: instrument, value, label.
type mirrorSample struct {
	name  string
	value int64
	label attribute.KeyValue
}

// mirrorSamples maps a Member's Stats onto the series of one scrape,
// sorted by instrument and label. Pure: the table test reads it.
func mirrorSamples(s mirror.Stats) []mirrorSample {
	var out []mirrorSample
	add := func(name string, v int64, k, val string) {
		out = append(out, mirrorSample{name, v, attribute.String(k, val)})
	}
	replica := 0
	for origin, o := range s.Origins {
		add(mirrorReadyName, b2i(o.Ready), "origin", mirrorNodeID(origin))
		replica += o.Sessions
	}
	add(mirrorSessionsName, int64(s.Served), "role", "served")
	add(mirrorSessionsName, int64(replica), "role", "replica")
	for peer, p := range s.Peers {
		add(mirrorPeerReadyName, b2i(p.Ready), "peer", mirrorNodeID(peer))
		add(mirrorLagBytesName, int64(p.LagBytes), "peer", mirrorNodeID(peer))
	}
	for reason, n := range s.Dropped {
		add(mirrorDroppedName, int64(n), "reason", reason)
	}
	for _, r := range mirrorTakeoverResults {
		add(mirrorTakeoversName, int64(s.Takeovers[r]), "result", r)
	}
	for r, n := range s.Takeovers {
		if !slices.Contains(mirrorTakeoverResults, r) {
			add(mirrorTakeoversName, int64(n), "result", r)
		}
	}
	add(mirrorRecordsName, int64(s.RecordsOut), "direction", "out")
	add(mirrorRecordsName, int64(s.RecordsIn), "direction", "in")
	add(mirrorBytesName, int64(s.BytesOut), "direction", "out")
	add(mirrorBytesName, int64(s.BytesIn), "direction", "in")
	slices.SortFunc(out, func(a, b mirrorSample) int {
		if a.name != b.name {
			return cmp.Compare(a.name, b.name)
		}
		return cmp.Compare(a.label.Value.AsString(), b.label.Value.AsString())
	})
	return out
}

// collect registers the scrape-time callback over stats (Member.Stats).
func (m *mirrorMetrics) collect(stats func() mirror.Stats) error {
	gauge := func(name, help string) (metric.Int64ObservableGauge, error) {
		return m.meter.Int64ObservableGauge(name, metric.WithDescription(help))
	}
	counter := func(name, help string) (metric.Int64ObservableCounter, error) {
		return m.meter.Int64ObservableCounter(name, metric.WithDescription(help))
	}
	ready, e1 := gauge(mirrorReadyName, "1 when the snapshot of the sessions of that origin member arrived whole here: this node is a hot standby for them (HotAndMirrored); 0 while it catches up.")
	sessions, e2 := gauge(mirrorSessionsName, "Mirrored sessions: served (this node serves and mirrors them) and replica (held here for other members).")
	peerReady, e3 := gauge(mirrorPeerReadyName, "1 when that peer acknowledged the snapshot of this node's sessions: it is a hot standby for them.")
	lagBytes, e4 := gauge(mirrorLagBytesName, "Mirroring bytes sent to that peer and not yet acknowledged.")
	dropped, e5 := counter(mirrorDroppedName, "Sessions put back to Warm (no longer mirrored: reasons lag, too-large, encode), peers that missed the ack timeout (ack-timeout), and batches or records refused on receipt (inbox-full, invalid-batch, not-a-peer, refused, id-conflict, invalid-session-id), by reason.")
	takeovers, e6 := counter(mirrorTakeoversName, "ActivateSessions of a mirrored session on this node after a failover, by result: ok, refused, not-ready.")
	records, e7 := counter(mirrorRecordsName, "Mirroring records sent (out) and received (in).")
	bytes, e8 := counter(mirrorBytesName, "Mirroring bytes sent (out) and received (in).")
	if err := errors.Join(e1, e2, e3, e4, e5, e6, e7, e8); err != nil {
		return fmt.Errorf("mirror metrics: %w", err)
	}
	instruments := map[string]metric.Int64Observable{mirrorReadyName: ready, mirrorSessionsName: sessions, mirrorPeerReadyName: peerReady,
		mirrorLagBytesName: lagBytes, mirrorDroppedName: dropped, mirrorTakeoversName: takeovers, mirrorRecordsName: records, mirrorBytesName: bytes}
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range mirrorSamples(stats()) {
			o.ObserveInt64(instruments[s.name], s.value, metric.WithAttributes(s.label))
		}
		return nil
	}, ready, sessions, peerReady, lagBytes, dropped, takeovers, records, bytes)
	if err != nil {
		return fmt.Errorf("mirror metrics: %w", err)
	}
	return nil
}
