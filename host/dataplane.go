package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/alarms"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/replication"
	"github.com/otopcua/otopcua/telemetry"
)

// dataPlane is a node's devices → tags → clients runtime: the driver host,
// the write router and the deployment follower, with the LocalDb cache.
type dataPlane struct {
	space    *dataplane.Space
	host     *dataplane.Host
	follower *dataplane.Follower
	cache    *localdb.DB // nil when the LocalDb could not be opened
	alarms   *alarmPlane
	repl     *replication.Replicator // nil unless LocalDb replication is on
	hist     *historyPlane
	parts    *parts
}

// DeploymentsTopic is the pub/sub topic of the deployments notice: a
// google.protobuf.StringValue holding the ClusterId whose newest
// deployment a node has just applied.
const DeploymentsTopic = "deployments"

// newSpace registers the ClusterId's tag namespace; call it right after
// opcua.New so that its index is the same on every node.
func newSpace(srv *opcua.Server, cfg *config.Config) *dataplane.Space {
	return dataplane.NewSpace(srv.AddressSpace(), cfg.Node.ClusterId)
}

// dataPlaneWiring is what startDataPlane's parts are started from.
type dataPlaneWiring struct {
	cfg     *config.Config
	tree    *actors.Tree
	srv     *opcua.Server
	db      *configdb.DB
	view    *redundancy.RoleView
	med     *pubsub.Mediator
	self    uint64
	metrics *telemetry.Metrics
	log     *slog.Logger
	mut     mutation.Set
	newer   *newerEpochs // nil without a cluster
	// identity is the node's certificate and PKI for the drivers' secured
	// upstream channels (opcua devices); nil when the node has none.
	identity *drivers.Identity

	dp     *dataPlane
	guard  *gate.Guard // the Primary gate every site of the data plane asks
	writes *dataplane.Writes
	fwd    *forwarding // serves peers' forwarded requests; sends under OpcUa:WriteMode forward; nil without a cluster
	dm     *dataplane.Metrics
	engine atomic.Pointer[alarms.Engine] // the alarm engine, once started: where the devices' upstream conditions go
}

// startDataPlane starts the driver host and follows the ClusterId's
// deployments (Config DB first, the LocalDb cache when it does not answer
// at start-up). A LocalDb that cannot be opened is reported and the node
// runs without the cache.
//
// A node without the driver role serves no devices: it returns nil.
func startDataPlane(cfg *config.Config, tree *actors.Tree, srv *opcua.Server, db *configdb.DB, space *dataplane.Space,
	view *redundancy.RoleView, med *pubsub.Mediator, self uint64, metrics *telemetry.Metrics, logger *slog.Logger, mut mutation.Set, newer *newerEpochs, identity *drivers.Identity) (*dataPlane, error) {
	if !cfg.Cluster.HasRole(config.RoleDriver) {
		return nil, nil
	}
	w := &dataPlaneWiring{cfg: cfg, tree: tree, srv: srv, db: db, view: view, med: med, self: self, metrics: metrics, log: logger, mut: mut, newer: newer, identity: identity,
		dp: &dataPlane{space: space, parts: newParts(logger)}}
	if err := w.dp.parts.startAll(w.partList()); err != nil {
		return nil, err
	}
	return w.dp, nil
}

// partList is the data plane's parts in start order. The LocalDb closes
// after the driver host stops; the follower stops first.
func (w *dataPlaneWiring) partList() []part {
	return []part{
		{name: "write router", start: w.newWrites},
		{name: "data plane metrics", start: w.newMetrics},
		{name: "history", start: w.newHistory},
		{name: "driver host", start: w.startHost},
		{name: "LocalDb", start: w.openLocalDb, under: "driver host"},
		{name: "LocalDb replication", start: w.startReplication},
		{name: "alarms", start: w.startAlarms},
		{name: "deployment follower", start: w.newFollower},
		{name: "deployments notice", start: w.follow},
	}
}

func (w *dataPlaneWiring) newWrites() (func() error, error) {
	mode := dataplane.Optimistic
	switch w.cfg.OpcUa.WriteMode {
	case config.WriteModeConfirmed:
		mode = dataplane.Confirmed
	case config.WriteModeForward:
		mode = dataplane.Forward
	}
	space := w.dp.space
	w.guard = newGuard(w.view, w.metrics, w.log)
	var fwd dataplane.Forwarder
	if w.med != nil {
		w.fwd = w.newForwarding(mode == dataplane.Forward)
		if mode == dataplane.Forward {
			fwd = w.fwd.sender
		}
	}
	w.writes = dataplane.NewWrites(dataplane.WritesOptions{
		Mode: mode, Gate: w.guard, Timeout: w.cfg.OpcUa.WriteTimeout, Logger: w.log,
		Auditor:   &dataplane.ServerAuditor{AS: space.AddressSpace(), ServerID: w.cfg.OpcUa.ApplicationUri, Logger: w.log},
		StatusOf:  drivers.StatusOf,
		Forwarder: fwd, Node: w.cfg.OpcUa.ApplicationUri, Nonce: forward.NewNonce(),
		SecondaryWrites: w.mut.SecondaryWrites, AckWithoutWrite: w.mut.AckWithoutWrite,
	})
	if w.fwd != nil {
		w.fwd.writes.Store(w.writes)
	}
	return quiet(w.fwd.stop), nil
}

func (w *dataPlaneWiring) newMetrics() (func() error, error) {
	dm, err := dataplane.NewMetrics(w.metrics.Meter())
	w.dm = dm
	return nil, err
}

// newHistory prepares the process history; its store opens with the
// first deployment that historizes a tag, and closes after the driver host
// stops.
func (w *dataPlaneWiring) newHistory() (func() error, error) {
	w.dp.hist = newHistoryPlane(w.cfg, w.srv, w.dp.space, w.metrics.Meter(), w.log)
	return w.dp.hist.stop, nil
}

func (w *dataPlaneWiring) startHost() (func() error, error) {
	host, err := dataplane.StartHost(dataplane.HostOptions{Root: w.tree.Root(), Parent: w.tree, Space: w.dp.space, Writes: w.writes,
		OnPoll: w.dm.OnPoll, OnReadings: w.dp.hist.offer, Identity: w.identity, Logger: w.log,
		// The engine starts after the host, before any device (the
		// follower applies the first deployment later).
		OnConditions: func(u drivers.ConditionUpdate) {
			if e := w.engine.Load(); e != nil {
				e.Upstream(u)
			}
		}})
	if err != nil {
		return nil, err
	}
	w.dp.host = host
	return quiet(host.Stop), nil
}

// openLocalDb never stops start-up: without the cache the node runs on.
func (w *dataPlaneWiring) openLocalDb() (func() error, error) {
	cache, err := openLocalDb(w.cfg, w.log)
	if err != nil {
		w.log.Error("LocalDb could not be opened; the node runs without its deployment boot cache", "path", w.cfg.LocalDb.Path, "err", err)
		return nil, nil
	}
	w.dp.cache = cache
	return cache.Close, nil
}

func (w *dataPlaneWiring) startReplication() (func() error, error) {
	if w.dp.cache == nil {
		return nil, nil
	}
	r, stop, err := startReplication(w.cfg, w.dp.cache, w.dp.hist, w.metrics, w.log)
	if err != nil || r == nil {
		return nil, err
	}
	w.dp.repl = r
	w.dp.hist.setPeers(r.HistoryPeers())
	return quiet(func() { w.dp.hist.setPeers(nil); stop() }), nil
}

func (w *dataPlaneWiring) startAlarms() (func() error, error) {
	ap, err := startAlarms(w.cfg, w.tree, w.srv, w.dp.space, w.db, w.dp.cache, w.guard, w.med, w.self, w.metrics, w.log, w.fwd, w.newer, w.mut.HistorianSilent, w.dp.host)
	if err != nil {
		return nil, fmt.Errorf("alarms: %w", err)
	}
	w.engine.Store(ap.engine)
	w.dp.alarms = ap
	return quiet(ap.stop), nil
}

// newFollower builds the deployment follower. The first node to apply a
// new version tells the others, which look at the Config DB at once
// instead of at their next poll.
func (w *dataPlaneWiring) newFollower() (func() error, error) {
	cfg, med, logger := w.cfg, w.med, w.log
	fo := dataplane.FollowerOptions{
		ClusterID: cfg.Node.ClusterId, Central: central{w.db}, Decode: deployment.Decode,
		Apply:        w.apply,
		PollInterval: cfg.Deployment.PollInterval, Logger: logger,
	}
	if w.dp.cache != nil {
		fo.Cache = cacheStore{w.dp.cache}
	}
	fo.OnApplied = func(int64) {
		if err := med.Publish(DeploymentsTopic, wrapperspb.String(cfg.Node.ClusterId)); err != nil {
			logger.Debug("deployments notice not published", "err", err)
		}
	}
	w.dp.follower = dataplane.NewFollower(fo)
	return nil, w.dm.Register(w.metrics.Meter(), w.dp.host, w.dp.follower)
}

// apply applies a deployment to the driver host, then its alarms: they
// follow the tags, after the devices, whatever part of them applied.
func (w *dataPlaneWiring) apply(doc *deployment.Document) error {
	_, err := w.dp.host.Apply(doc)
	if herr := w.dp.hist.apply(doc); herr != nil {
		w.log.Error("history of the deployment not recorded", "err", herr)
	}
	if aerr := w.dp.alarms.engine.Apply(doc); aerr != nil {
		w.log.Error("alarms of the deployment not applied", "err", aerr)
	}
	if errors.Is(err, dataplane.ErrApplyPartial) {
		w.metrics.ApplyFailed(telemetry.ApplyKindNodes)
		w.log.Error("deployment applied in part", "err", err)
		return nil // what could be applied serves
	}
	return err
}

// follow listens for the deployments notice and starts the follower; it
// stops the other way round.
func (w *dataPlaneWiring) follow() (func() error, error) {
	clusterID, follower := w.cfg.Node.ClusterId, w.dp.follower
	unsubscribe := w.med.Subscribe(DeploymentsTopic, func(_ membership.UniqueAddress, msg proto.Message) {
		if s, ok := msg.(*wrapperspb.StringValue); ok && s.GetValue() == clusterID {
			follower.Kick()
		}
	})
	follower.Start()
	return quiet(func() { unsubscribe(); follower.Stop() }), nil
}

// handler is GET /api/deployment.
func (dp *dataPlane) handler(clusterID string) http.Handler {
	return dataplane.DeploymentHandler(clusterID, dp.follower.Status, dp.host.Devices)
}

// stop stops the data plane: the follower first, the LocalDb last. A nil
// dataPlane (no driver role) has nothing to stop.
func (dp *dataPlane) stop() {
	if dp == nil {
		return
	}
	dp.parts.stop()
}

// central reads deployments from the Config DB.
type central struct{ db *configdb.DB }

func (c central) LatestDeployment(ctx context.Context, clusterID string) (int64, []byte, error) {
	d, err := c.db.LatestDeployment(ctx, clusterID)
	if errors.Is(err, configdb.ErrNotFound) {
		return 0, nil, fmt.Errorf("%w: %w", dataplane.ErrNoDeployment, err)
	}
	if err != nil {
		return 0, nil, err
	}
	return d.Version, d.Document, nil
}

// cacheStore is the LocalDb as the follower's boot cache.
type cacheStore struct{ db *localdb.DB }

func (c cacheStore) SaveArtifact(ctx context.Context, clusterID string, version int64, doc []byte) error {
	return c.db.SaveArtifact(ctx, clusterID, version, doc)
}

func (c cacheStore) LoadArtifact(ctx context.Context, clusterID string) (int64, []byte, string, error) {
	a, err := c.db.LoadArtifact(ctx, clusterID)
	if errors.Is(err, localdb.ErrNoArtifact) {
		return 0, nil, "", fmt.Errorf("%w: %w", dataplane.ErrNoDeployment, err)
	}
	if err != nil {
		return 0, nil, "", err
	}
	return a.Version, a.Doc, a.Origin, nil
}

// TombstoneCompactEvery is how often a replicating node compacts the
// LocalDb's tombstones older than their TTL.
const TombstoneCompactEvery = time.Hour

// startReplication starts LocalDb pair replication when LocalDb:SyncListenPort,
// LocalDb:Peers and LocalDb:Replication:ApiKey are all set; otherwise it
// says why it is off (once) and returns nil. It listens on
// Cluster:Hostname, over mutual TLS when Cluster:Tls is set, and serves
// hist (the process history) to the peers' back-fill.
func startReplication(cfg *config.Config, local *localdb.DB, hist replication.HistorySource, metrics *telemetry.Metrics, logger *slog.Logger) (*replication.Replicator, func(), error) {
	rc := cfg.LocalDbReplication()
	if !rc.On {
		if len(rc.Missing) > 0 {
			logger.Warn("LocalDb replication is off: "+rc.Reason(), "missing", rc.Missing)
		}
		return nil, nil, nil
	}
	opts := replication.Options{
		NodeID: cfg.Cluster.NodeID(), Local: local, Listen: rc.Listen, Peers: rc.Peers, APIKey: rc.APIKey,
		Logger: logger.With("component", "localdb-sync"), History: hist,
	}
	creds, err := clusterCredentials(cfg, "LocalDb replication", opts.Logger)
	if err != nil {
		return nil, nil, fmt.Errorf("LocalDb replication: %w", err)
	}
	if creds != nil {
		opts.ServerCredentials, opts.DialCredentials = creds.Server(), creds.Client()
	}
	r, err := replication.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("LocalDb replication: %w", err)
	}
	if err := r.RegisterMetrics(metrics.Meter()); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("LocalDb replication on %s (LocalDb:SyncListenPort): %w", rc.Listen, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(TombstoneCompactEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := local.CompactTombstones(ctx, 0); err != nil {
					logger.Warn("LocalDb tombstones not compacted", "err", err)
				}
			}
		}
	}()
	logger.Info("LocalDb replication on", "listen", rc.Listen, "peers", rc.Peers)
	return r, func() { cancel(); r.Stop(); <-done }, nil
}

// openLocalDb opens LocalDb:Path. A file that is not a LocalDb (damaged,
// truncated, overwritten) is moved aside to <path>.corrupt-<time> and a
// new one is started: with replication on, the pair peer fills it again
// (the boot cache and the alarm history queue); without, the next applied
// deployment does. It never stops the node.
func openLocalDb(cfg *config.Config, logger *slog.Logger) (*localdb.DB, error) {
	open := func() (*localdb.DB, error) {
		return localdb.Open(context.Background(), cfg.LocalDb.Path, logger, localdb.WithNodeID(cfg.Cluster.NodeID()))
	}
	db, err := open()
	if !errors.Is(err, localdb.ErrNotDatabase) {
		return db, err
	}
	aside := fmt.Sprintf("%s.corrupt-%s", cfg.LocalDb.Path, time.Now().UTC().Format("20060102T150405Z"))
	if rerr := os.Rename(cfg.LocalDb.Path, aside); rerr != nil {
		return nil, errors.Join(err, fmt.Errorf("moving it aside: %w", rerr))
	}
	for _, ext := range []string{"-wal", "-shm"} {
		_ = os.Rename(cfg.LocalDb.Path+ext, aside+ext)
	}
	logger.Error("LocalDb file is not a LocalDb: moved aside and started anew; the pair peer refills it when LocalDb replication is on",
		"path", cfg.LocalDb.Path, "movedTo", aside, "err", err)
	return open()
}
