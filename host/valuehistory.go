package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/history"
	"github.com/otopcua/otopcua/history/aggregate"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/replication"
)

// historyPlane is the node's process history (docs/history.md): the store
// in History:Path, opened when a deployment first historizes a tag (a
// node that records nothing holds no store), the recorder fed by every
// poll, and the archive behind HistoryRead of values.
type historyPlane struct {
	cfg   *config.Config
	srv   *opcua.Server
	space *dataplane.Space
	meter metric.Meter
	log   *slog.Logger

	mu     sync.Mutex
	store  *history.Store            // nil until a deployment historizes a tag; mu must be held
	rec    *history.Recorder         // with store
	bf     *history.Backfiller       // with store
	peers  []history.Peer            // the pair peers' histories (LocalDb replication); mu must be held
	tags   map[string]deployment.Tag // "device/tag" → its definition, of the tags recorded now; mu must be held
	cancel context.CancelFunc
	done   sync.WaitGroup        // the recorder and the back-fill
	regs   []metric.Registration // the store's metrics; with store
}

func newHistoryPlane(cfg *config.Config, srv *opcua.Server, space *dataplane.Space, meter metric.Meter, log *slog.Logger) *historyPlane {
	return &historyPlane{cfg: cfg, srv: srv, space: space, meter: meter, log: log.With("component", "history"), tags: map[string]deployment.Tag{}}
}

// apply takes a deployment: the tags it historizes are recorded from now
// on (the store opened on the first), the others no longer.
func (h *historyPlane) apply(doc *deployment.Document) error {
	pol := history.Policies(doc)
	tags := map[string]deployment.Tag{}
	for _, d := range doc.Devices {
		for _, t := range d.Tags {
			if _, ok := pol[d.Name][t.Name]; ok {
				tags[d.Name+"/"+t.Name] = t
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.store == nil && len(tags) == 0 {
		return nil
	}
	if h.store == nil {
		if err := h.open(); err != nil {
			return err
		}
		kinds := aggregate.Kinds()
		aggs := make([]*ua.NodeID, len(kinds))
		for i, k := range kinds {
			aggs[i] = k.NodeID()
		}
		if err := h.srv.SetValueHistory(archive{h}, aggs); err != nil {
			return err
		}
		h.log.Info("history store opened", "path", h.cfg.History.Path, "tags", len(tags))
	}
	// The gaps of the tags recorded from now on open before the recorder
	// takes them: each starts at the tag's last sample stored.
	begin := map[string]time.Duration{}
	for key := range tags {
		if _, ok := h.tags[key]; !ok {
			dev, tag, _ := strings.Cut(key, "/")
			begin[key] = pol[dev][tag].Retention
			if begin[key] <= 0 {
				begin[key] = deployment.DefaultHistoryRetention
			}
		}
	}
	if len(h.peers) == 0 {
		if len(begin) > 0 {
			h.log.Info("history back-fill is off: no pair peer to ask (LocalDb replication is off); a time this node was down stays a gap in its own history", "tags", len(begin))
		}
	} else if start, err := h.bf.Begin(begin); err != nil {
		h.log.Error("history back-fill: the gaps of the tags recorded from now on are not known; they are not back-filled", "tags", len(begin), "err", err)
	} else {
		h.rec.StartAt(slices.Collect(maps.Keys(begin)), start)
	}
	h.tags = tags
	h.rec.Apply(doc)
	return nil
}

// open opens the store and starts its recorder and back-fill; mu must be
// held.
func (h *historyPlane) open() error {
	s, err := history.Open(history.StoreOptions{Dir: h.cfg.History.Path, Logger: h.log})
	if err != nil {
		return fmt.Errorf("history store (History:Path %s): %w", h.cfg.History.Path, err)
	}
	bf, err := history.NewBackfiller(s, history.BackfillOptions{Logger: h.log})
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("history store (History:Path %s): back-fill gaps: %w", h.cfg.History.Path, err)
	}
	bf.SetPeers(h.peers)
	h.store, h.rec, h.bf = s, history.NewRecorder(s, history.RecorderOptions{MaxSize: int64(h.cfg.History.MaxSizeMiB) << 20, Logger: h.log}), bf
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done.Add(2)
	go func() { defer h.done.Done(); h.rec.Run(ctx) }()
	go func() { defer h.done.Done(); bf.Run(ctx) }()
	reg, err := history.RegisterMetrics(h.meter, h.rec)
	if err != nil {
		return err
	}
	breg, err := history.RegisterBackfillMetrics(h.meter, bf)
	if err != nil {
		return err
	}
	h.regs = []metric.Registration{reg, breg}
	return nil
}

// setPeers gives the back-fill the pair peers' histories (LocalDb
// replication's connections).
func (h *historyPlane) setPeers(ps []replication.HistoryPeer) {
	peers := make([]history.Peer, len(ps))
	for i, p := range ps {
		peers[i] = historyPeer{p}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.peers = peers
	if h.bf != nil {
		h.bf.SetPeers(peers)
	}
}

// historyPeer is a peer's history over LocalDb replication.
type historyPeer struct{ p replication.HistoryPeer }

func (p historyPeer) Name() string { return p.p.Name() }

func (p historyPeer) Samples(ctx context.Context, tag string, after, before int64, limit int) ([]history.Sample, bool, error) {
	xs, more, err := p.p.Samples(ctx, tag, after, before, limit)
	out := make([]history.Sample, len(xs))
	for i, x := range xs {
		out[i] = history.Sample{At: x.At, Value: x.Value, Status: x.Status}
	}
	return out, more, err
}

// HistorySamples serves a peer's back-fill (replication.HistorySource):
// at most limit of tag's samples with after < time < before.
func (h *historyPlane) HistorySamples(ctx context.Context, tag string, after, before int64, limit int) ([]replication.Sample, bool, error) {
	h.mu.Lock()
	s := h.store
	h.mu.Unlock()
	if s == nil {
		return nil, false, errors.New("no history store open yet")
	}
	var out []replication.Sample
	more := false
	err := s.Read(tag, after+1, before, func(x history.Sample) bool {
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, replication.Sample{At: x.At, Value: x.Value, Status: x.Status})
		return ctx.Err() == nil
	})
	if err == nil {
		err = ctx.Err()
	}
	return out, more, err
}

// offer hands one poll's readings to the recorder (the driver host's
// OnReadings: it runs on the device's actor and never blocks).
func (h *historyPlane) offer(dev deployment.Device, readings []drivers.Reading) {
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	if rec == nil {
		return
	}
	rs := make([]history.Reading, 0, len(readings))
	for i, r := range readings {
		if i >= len(dev.Tags) {
			break
		}
		rs = append(rs, history.Reading{Tag: dev.Tags[i].Name, Value: r.Value, Status: uint32(r.Status), At: r.SourceTime})
	}
	rec.Offer(dev.Name, rs)
}

// stop ends the recorder (writing what it holds) and closes the store.
func (h *historyPlane) stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.store == nil {
		return nil
	}
	_ = h.srv.SetValueHistory(nil, nil)
	for _, r := range h.regs {
		_ = r.Unregister()
	}
	h.cancel()
	h.done.Wait()
	err := h.store.Close()
	h.store, h.rec, h.bf = nil, nil, nil
	return err
}

// archive is the store as HistoryRead reads it.
type archive struct{ h *historyPlane }

// tagOf is the "device/tag" of a tag's Variable, and its definition when
// the tag is recorded now.
func (a archive) tagOf(n *ua.NodeID) (string, deployment.Tag, bool) {
	if n == nil || n.Namespace() != a.h.space.Namespace() || n.Type() != ua.NodeIDTypeString {
		return "", deployment.Tag{}, false
	}
	key := n.StringID()
	if !strings.Contains(key, "/") {
		return "", deployment.Tag{}, false
	}
	a.h.mu.Lock()
	t, ok := a.h.tags[key]
	a.h.mu.Unlock()
	return key, t, ok
}

func (a archive) Historized(n *ua.NodeID) (opcua.HistorizedNode, bool) {
	key, t, ok := a.tagOf(n)
	if !ok {
		return opcua.HistorizedNode{}, false
	}
	a.h.mu.Lock()
	s := a.h.store
	a.h.mu.Unlock()
	info := opcua.HistorizedNode{DataType: dataplane.DataType(t), Stepped: dataplane.DataType(t) == id.Boolean}
	if s == nil {
		return info, false
	}
	if first, _, ok, err := s.Extent(key); ok && err == nil {
		// Recorded now: complete up to this moment (an unchanged value is
		// not written again).
		info.Start, info.End = history.TimeOf(first), time.Now()
	}
	return info, true
}

func (a archive) ReadValues(ctx context.Context, n *ua.NodeID, from, to time.Time, fn func(opcua.HistoryValue) bool) error {
	key, _, ok := a.tagOf(n)
	a.h.mu.Lock()
	s := a.h.store
	a.h.mu.Unlock()
	if !ok || s == nil {
		return ua.StatusBadHistoryOperationUnsupported
	}
	return s.Read(key, history.Ticks(from), history.Ticks(to), func(x history.Sample) bool {
		if ctx.Err() != nil {
			return false
		}
		return fn(opcua.HistoryValue{At: history.TimeOf(x.At), Value: x.Value, Status: ua.StatusCode(x.Status)})
	})
}
