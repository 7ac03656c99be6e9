package replication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// APIPath is where the host mounts Handler.
const APIPath = "/api/localdb"

// Status is what GET /api/localdb shows.
type Status struct {
	// Node is this node's id.
	Node string
	// Listen is the address served.
	Listen string
	// Peers is one entry per configured peer (LocalDb:Peers), pulled from.
	Peers []PeerStatus
	// Served is one entry per node that pulled from this one.
	Served []ServedStatus
	// Refused counts refusals by reason, on both sides (refused callers,
	// refused answers).
	Refused map[string]int64
	// Rows is this node's row count per replicated table.
	Rows map[string]int64
}

// PeerStatus is this node's view of pulling from one peer.
type PeerStatus struct {
	Addr string
	// Connected is true after a round that completed.
	Connected bool
	// LastSync is when a round last left nothing to pull (zero: never).
	LastSync time.Time
	// LagSeconds is the time since LastSync (since Start when never).
	LagSeconds float64
	// LastError is the error of the last failed round ("" after success).
	LastError string
	// Refused counts rounds refused (key, proof, stamp, malformed).
	Refused int64
	// RowsReceived counts changes received per table; RowsApplied those
	// that changed a row (the others were not newer than this node's).
	RowsReceived map[string]int64
	RowsApplied  map[string]int64
}

// ServedStatus is what this node served to one puller.
type ServedStatus struct {
	Node string
	// RowsSent counts changes sent per table.
	RowsSent map[string]int64
	// Acked is the last stamp the puller reported applied, per table.
	Acked    map[string]string
	LastPull time.Time
}

// Status reports the replication state. It reads the LocalDb only for the
// row counts (Rows is empty when that fails).
func (r *Replicator) Status() Status {
	rows, _ := r.opts.Local.RowCounts(context.Background())
	now := r.opts.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Status{Node: r.opts.NodeID, Refused: maps.Clone(r.refused), Rows: rows}
	if r.lis != nil {
		st.Listen = r.lis.Addr().String()
	}
	for _, addr := range r.opts.Peers {
		p := r.peers[addr]
		since := p.lastSync
		if since.IsZero() {
			since = r.started
		}
		lag := 0.0
		if !since.IsZero() {
			lag = max(0, now.Sub(since).Seconds())
		}
		st.Peers = append(st.Peers, PeerStatus{Addr: addr, Connected: p.connected, LastSync: p.lastSync, LagSeconds: lag,
			LastError: p.lastErr, Refused: p.refused, RowsReceived: maps.Clone(p.received), RowsApplied: maps.Clone(p.applied)})
	}
	for node, s := range r.served {
		acked := map[string]string{}
		for t, a := range s.acked {
			acked[t] = a.String()
		}
		st.Served = append(st.Served, ServedStatus{Node: node, RowsSent: maps.Clone(s.sent), Acked: acked, LastPull: s.lastPull})
	}
	sort.Slice(st.Served, func(i, j int) bool { return st.Served[i].Node < st.Served[j].Node })
	return st
}

// Handler serves GET (and HEAD) APIPath: Status as JSON; other methods get
// 405. The API key is never shown.
func (r *Replicator) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r.Status())
	})
}

// Instrument names (Prometheus shows '.' as '_', counters with _total and
// the lag with _seconds).
const (
	LagMetric     = "otopcua.localdb.sync_lag"
	RefusedMetric = "otopcua.localdb.sync_refused"
	RowsMetric    = "otopcua.localdb.rows"
)

// RegisterMetrics adds, read from Status at every collection:
//
//   - otopcua_localdb_sync_lag_seconds{peer}: time since this node last
//     pulled everything the peer had;
//   - otopcua_localdb_sync_refused_total{reason}: refusals, on either side;
//   - otopcua_localdb_rows{table}: rows of each replicated table here.
func (r *Replicator) RegisterMetrics(meter metric.Meter) error {
	lag, e1 := meter.Float64ObservableGauge(LagMetric, metric.WithUnit("s"),
		metric.WithDescription("Time since this node last pulled everything its LocalDb replication peer had (growing: the peer is down, refuses this node's key, or sends what this node refuses)."))
	refused, e2 := meter.Int64ObservableCounter(RefusedMetric, metric.WithUnit("{request}"),
		metric.WithDescription("LocalDb replication requests refused by reason: missing_key or wrong_key (a peer called with a bad LocalDb:Replication:ApiKey), peer_refused_key, peer_bad_proof, future_stamp, malformed. Nothing of a refused request is applied."))
	rows, e3 := meter.Int64ObservableGauge(RowsMetric, metric.WithUnit("{row}"),
		metric.WithDescription("Rows of each replicated LocalDb table on this node (deployment_artifacts, deployment_pointer, alarm_sf_events)."))
	if err := errors.Join(e1, e2, e3); err != nil {
		return fmt.Errorf("replication: metrics: %w", err)
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := r.Status()
		for _, p := range st.Peers {
			o.ObserveFloat64(lag, p.LagSeconds, metric.WithAttributes(attribute.String("peer", p.Addr)))
		}
		for _, reason := range reasons {
			o.ObserveInt64(refused, st.Refused[reason], metric.WithAttributes(attribute.String("reason", reason)))
		}
		for t, n := range st.Rows {
			o.ObserveInt64(rows, n, metric.WithAttributes(attribute.String("table", t)))
		}
		return nil
	}, lag, refused, rows)
	if err != nil {
		return fmt.Errorf("replication: metrics: %w", err)
	}
	return nil
}

var reasons = []string{ReasonMissingKey, ReasonWrongKey, ReasonPeerRefusedKey, ReasonBadProof, ReasonFutureStamp, ReasonMalformed}
