package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gopcua/opcua/ua"
	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/health"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// Config DB start-up bounds.
const (
	// ConfigDbOpenTimeout bounds opening the Config DB and the first
	// migration attempt at start-up.
	ConfigDbOpenTimeout = 10 * time.Second
	// MigrateRetryEvery is how often a migration that failed at start-up
	// (a networked Config DB that is down) is tried again in the
	// background. The node runs meanwhile; its DB probe reports the outage.
	MigrateRetryEvery = 5 * time.Second
)

// openConfigDb opens ConfigDb:Provider at ConfigDb:ConnectionString and
// migrates it. A database newer than this otopcua stops start-up; any
// other migration failure (the server is down) is retried in the
// background until it succeeds or ctx ends, because a Config DB outage must
// never stop a node. The SQLite default "file:otopcua.db" lands in the
// working directory.
func openConfigDb(ctx context.Context, cfg *config.Config, logger *slog.Logger, opts ...configdb.Option) (*configdb.DB, func(), error) {
	octx, cancel := context.WithTimeout(ctx, ConfigDbOpenTimeout)
	defer cancel()
	db, err := configdb.Open(octx, cfg.ConfigDb.Provider, cfg.ConfigDb.ConnectionString, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("Config DB (ConfigDb:Provider %s, ConfigDb:ConnectionString): %w", cfg.ConfigDb.Provider, err)
	}
	err = db.Migrate(octx)
	switch {
	case err == nil:
		return db, func() { _ = db.Close() }, nil
	case errors.Is(err, configdb.ErrSchemaNewer):
		_ = db.Close()
		return nil, nil, fmt.Errorf("Config DB: %w", err)
	}
	logger.Warn("Config DB migration failed; retrying in the background", "provider", cfg.ConfigDb.Provider, "err", err,
		"every", MigrateRetryEvery.String())
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(MigrateRetryEvery)
		defer t.Stop()
		for {
			select {
			case <-mctx.Done():
				return
			case <-t.C:
			}
			c, cancel := context.WithTimeout(mctx, ConfigDbOpenTimeout)
			err := db.Migrate(c)
			cancel()
			if err == nil {
				logger.Info("Config DB migrated")
				return
			}
			logger.Debug("Config DB migration failed again", "err", err)
		}
	}()
	return db, func() { stop(); <-done; _ = db.Close() }, nil
}

// StateSingletonName is the cluster singleton name of the
// RedundancyStateActor.
const StateSingletonName = "redundancy-state"

// redundancyRuntime is this node's part of the redundancy runtime: the DB
// probe, the pub/sub mediator and, by role, the admin singleton
// (RedundancyStateActor) and the driver node's peer probes and
// OpcUaPublishActor.
type redundancyRuntime struct {
	probe   *health.DbProbe
	med     *pubsub.Mediator
	tracker *redundancy.Tracker
	view    *redundancy.RoleView
	pub     *redundancy.PublishActor
	sup     *health.PeerProbeSupervisor
	devices *deviceHealth // Redundancy:DeviceHealth's sources, set as the data plane and the failover path start
	parts   *parts        // stop runs them backwards, the mediator last
}

// redundancyWiring is what startRedundancy's parts are started from.
type redundancyWiring struct {
	cfg    *config.Config
	sys    *actors.System
	tree   *actors.Tree
	keeper *leaseKeeper // nil without a shared lease
	d      *daemon.Daemon
	db     *configdb.DB
	srv    *opcua.Server
	levels opcua.ServiceLevelPublisher
	pins   *levelPins
	meter  metric.Meter
	exits  *singleton.ExitGroup
	log    *slog.Logger

	r       *redundancyRuntime
	licence func() gate.Licence // nil without a shared lease
	woken   *wokenFence
	// pubRef is the publish actor once it exists: the DB probe's and the
	// metrics' callbacks start before it.
	pubRef atomic.Pointer[redundancy.PublishActor]
	rm     *redundancy.Metrics
}

// startRedundancy starts the runtime on a node whose daemon runs. levels
// receives the computed ServiceLevels (the repeat-suppressing, counting
// publisher in front of the OPC UA server); pins are the drain and
// test-hook inputs of servicelevel.Of.
// The parts run on their own contexts and stop in stop(), after the
// graceful leave: a SIGTERM must not silence them while the node still
// hands its singleton over. exits is the daemon's exiting group.
func startRedundancy(cfg *config.Config, sys *actors.System, tree *actors.Tree, keeper *leaseKeeper, d *daemon.Daemon, db *configdb.DB,
	srv *opcua.Server, levels opcua.ServiceLevelPublisher, pins *levelPins, meter metric.Meter, exits *singleton.ExitGroup, logger *slog.Logger) (*redundancyRuntime, error) {
	w := &redundancyWiring{cfg: cfg, sys: sys, tree: tree, keeper: keeper, d: d, db: db, srv: srv, levels: levels, pins: pins, meter: meter,
		exits: exits, log: logger, r: &redundancyRuntime{parts: newParts(logger), devices: &deviceHealth{clusterID: cfg.Node.ClusterId, log: logger}}}
	if err := w.r.parts.startAll(w.partList()); err != nil {
		return nil, err
	}
	return w.r, nil
}

// partList is the runtime's parts in start order. The DB probe starts
// before the publish actor: the publish actor Asks it (DbAskTimeout), and
// its verdict changes wake the publish actor up. A node without the driver
// role serves ServiceLevel 0 (Detached) and runs no publish actor.
func (w *redundancyWiring) partList() []part {
	list := []part{
		{name: "pub/sub", start: w.startPubSub},
		{name: "redundancy-state tracker", start: w.startTracker},
		{name: "redundancy-state singleton", start: w.startStateSingleton},
		{name: "role view", start: w.startRoleView},
		{name: "woken fence", start: w.startWokenFence},
		{name: "lease keeper", start: w.startLeaseKeeper},
		{name: "DB probe", start: w.startDbProbe},
	}
	if !slices.Contains(w.cfg.Cluster.Roles, config.RoleDriver) {
		return append(list, part{name: "ServiceLevel 0", start: w.publishDetached})
	}
	return append(list,
		part{name: "redundancy metrics", start: w.registerMetrics},
		part{name: "publish actor", start: w.startPublishActor},
		part{name: "peer probes", start: w.startPeerProbes},
	)
}

func (w *redundancyWiring) startPubSub() (func() error, error) {
	med, err := pubsub.Start(pubsub.Options{System: w.sys, Membership: w.d, Logger: w.log})
	if err != nil {
		return nil, fmt.Errorf("pub/sub: %w", err)
	}
	w.r.med = med
	return quiet(med.Stop), nil
}

// isAdmin: the admin role runs the redundancy-state singleton and tracks
// its topic.
func (w *redundancyWiring) isAdmin() bool {
	return slices.Contains(w.cfg.Cluster.Roles, config.RoleAdmin)
}

func (w *redundancyWiring) startTracker() (func() error, error) {
	if !w.isAdmin() {
		return nil, nil
	}
	w.r.tracker = redundancy.NewTracker()
	return quiet(w.r.med.Subscribe(wire.Topic, w.r.tracker.Handle)), nil
}

func (w *redundancyWiring) startStateSingleton() (func() error, error) {
	if !w.isAdmin() {
		return nil, nil
	}
	d, med, tracker, logger := w.d, w.r.med, w.r.tracker, w.log
	m, err := singleton.Start(singleton.Options{
		Daemon: d, Mediator: med, Role: config.RoleAdmin, Name: StateSingletonName, Exit: w.exits, Logger: logger,
		Parent: w.tree,
		Child: func() (string, actor.Producer) {
			return redundancy.StateActorChild(redundancy.StateActorOptions{
				Membership: d, PubSub: med, Tracker: tracker, Logger: logger,
				Subscribers: func() []membership.UniqueAddress { return med.Registry().Nodes(wire.Topic) },
			})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("redundancy state singleton: %w", err)
	}
	return quiet(m.Stop), nil
}

func (w *redundancyWiring) startRoleView() (func() error, error) {
	w.r.view = redundancy.NewRoleView(w.d, w.cfg.Node.ClusterId)
	w.r.view.SetAlone(aloneByConfiguration(w.cfg))
	return nil, nil
}

// startWokenFence starts the woken-process fence (every strategy) and
// makes it an input of the role view; the publish actor reads it too.
func (w *redundancyWiring) startWokenFence() (func() error, error) {
	f, err := newWokenFence(w.cfg, w.d, w.tree.Clock(), w.log)
	if err != nil {
		return nil, fmt.Errorf("woken fence: %w", err)
	}
	if err := f.start(w.tree); err != nil {
		return nil, fmt.Errorf("woken fence: %w", err)
	}
	w.woken = f
	w.r.view.SetWoken(f.Woken)
	// A read served from the socket in the instant after a freeze, before
	// the publish actor has run, must not show the level of before it.
	w.srv.SetServiceLevelCeiling(servicelevel.Critical, f.Woken)
	tree := w.tree
	return quiet(func() { f.stop(tree) }), nil
}

func (w *redundancyWiring) startLeaseKeeper() (func() error, error) {
	keeper, tree := w.keeper, w.tree
	if keeper == nil {
		return nil, nil
	}
	if err := keeper.start(tree, w.r.view); err != nil {
		return nil, fmt.Errorf("lease keeper: %w", err)
	}
	w.r.view.SetLicence(keeper.licence)
	w.licence = keeper.licence
	return quiet(func() { keeper.stop(tree) }), nil
}

func (w *redundancyWiring) startDbProbe() (func() error, error) {
	probe, err := health.NewDbProbe(w.db, health.DbProbeConfig{
		Parent: w.tree,
		Logger: w.log,
		OnChange: func(health.DbProbeResult) {
			if pub := w.pubRef.Load(); pub != nil {
				pub.NotifyDbChanged()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if err := probe.RegisterMetrics(w.meter); err != nil {
		return nil, err
	}
	if err := probe.Start(context.Background()); err != nil {
		return nil, err
	}
	w.r.probe = probe
	if w.keeper != nil && w.cfg.Cluster.Lease.Provider == config.LeaseConfigDb {
		// The lease lives in the Config DB: a split of the set or a lease
		// call that fails (or one that succeeds while the probe says
		// unreachable) has the probe look now rather than at its next
		// tick, up to 5 s away. In a split with the Config DB down, this
		// takes the Secondary (which never calls the lease before the
		// split's decision) to 100 as soon as it sees the split.
		keeper := w.keeper
		keeper.setStoreHint(func(doubt bool) {
			if last, known := probe.Last(); doubt || (known && !last.Reachable) {
				probe.ProbeSoon()
			}
		})
		return quiet(func() { keeper.setStoreHint(nil); probe.Stop() }), nil
	}
	return quiet(probe.Stop), nil
}

func (w *redundancyWiring) publishDetached() (func() error, error) {
	detachedLevels(w.pins, w.levels)
	return nil, nil
}

func (w *redundancyWiring) registerMetrics() (func() error, error) {
	rm, err := redundancy.RegisterMetrics(w.meter, w.cfg.Node.ClusterId, func() (byte, bool) {
		if pub := w.pubRef.Load(); pub != nil {
			return pub.Level()
		}
		return 0, false
	}, w.r.view)
	w.rm = rm
	return nil, err
}

func (w *redundancyWiring) startPublishActor() (func() error, error) {
	cfg, srv, rm := w.cfg, w.srv, w.rm
	o := redundancy.PublishActorOptions{
		Parent:                w.tree,
		DbProbe:               w.r.probe.PID(),
		Licence:               w.licence,
		Woken:                 w.woken.Woken,
		Pin:                   w.pins.get,
		AfterMembershipChange: func(_ byte, since time.Duration) { rm.ObserveLatency(since) },
		Membership:            w.d, PubSub: w.r.med, Publisher: w.levels, RoleView: w.r.view,
		PeerStatus: func(uri string, level byte, alive bool) {
			state := ua.ServerStateUnknown
			if alive {
				state = ua.ServerStateRunning
			}
			srv.SetPeerStatus(uri, level, state)
		},
		PeerApplicationURIs: cfg.OpcUa.PeerApplicationUris,
		ConfiguredRoles:     cfg.Cluster.Roles, ClusterID: cfg.Node.ClusterId,
		ApplicationURI: srv.ApplicationURI(), OpcUaEndpoint: srv.EndpointURL(),
		Logger: w.log,
	}
	w.r.devices.publishOptions(cfg.Redundancy, &o)
	pub := redundancy.NewPublishActor(o)
	w.pubRef.Store(pub)
	w.pins.onChange(pub.NotifyPinChanged)
	if w.keeper != nil {
		w.keeper.setOnChange(pub.NotifyDbChanged)
	}
	w.woken.setOnChange(pub.NotifyDbChanged)
	pub.Start(context.Background())
	w.r.pub = pub
	return quiet(pub.Stop), nil
}

func (w *redundancyWiring) startPeerProbes() (func() error, error) {
	sup := health.NewPeerProbeSupervisor(health.PeerProbeOptions{Membership: w.d, PubSub: w.r.med, Logger: w.log, Parent: w.tree})
	sup.Start(context.Background())
	w.r.sup = sup
	return quiet(sup.Stop), nil
}

// follow subscribes fn to topic until the runtime stops (before the
// mediator and the parts started before the subscription).
func (r *redundancyRuntime) follow(topic string, fn pubsub.Handler) {
	cancel := r.med.Subscribe(topic, fn)
	_ = r.parts.start("subscription "+topic, func() (func() error, error) { return quiet(cancel), nil })
}

// stop stops everything in reverse start order (the mediator last). It
// runs once.
func (r *redundancyRuntime) stop() { r.parts.stop() }
