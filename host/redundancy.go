package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
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
func openConfigDb(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*configdb.DB, func(), error) {
	octx, cancel := context.WithTimeout(ctx, ConfigDbOpenTimeout)
	defer cancel()
	db, err := configdb.Open(octx, cfg.ConfigDb.Provider, cfg.ConfigDb.ConnectionString)
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
	stops   []func() // in start order; stop runs them backwards
	once    sync.Once
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
	ctx := context.Background()
	r := &redundancyRuntime{}
	med, err := pubsub.Start(pubsub.Options{System: sys, Membership: d, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("pub/sub: %w", err)
	}
	r.med = med
	r.stops = append(r.stops, med.Stop)

	roles := cfg.Cluster.Roles
	if slices.Contains(roles, config.RoleAdmin) {
		r.tracker = redundancy.NewTracker()
		r.stops = append(r.stops, med.Subscribe(wire.Topic, r.tracker.Handle))
		tracker := r.tracker
		m, err := singleton.Start(singleton.Options{
			Daemon: d, Mediator: med, Role: config.RoleAdmin, Name: StateSingletonName, Exit: exits, Logger: logger,
			Parent: tree,
			Child: func() (string, actor.Producer) {
				return redundancy.StateActorChild(redundancy.StateActorOptions{
					Membership: d, PubSub: med, Tracker: tracker, Logger: logger,
					Subscribers: func() []membership.UniqueAddress { return med.Registry().Nodes(wire.Topic) },
				})
			},
		})
		if err != nil {
			r.stop()
			return nil, fmt.Errorf("redundancy state singleton: %w", err)
		}
		r.stops = append(r.stops, m.Stop)
	}

	r.view = redundancy.NewRoleView(d, cfg.Node.ClusterId)
	r.view.SetAlone(aloneByConfiguration(cfg))
	var licence func() gate.Licence
	if keeper != nil {
		if err := keeper.start(tree, r.view); err != nil {
			r.stop()
			return nil, fmt.Errorf("lease keeper: %w", err)
		}
		r.stops = append(r.stops, func() { keeper.stop(tree) })
		r.view.SetLicence(keeper.licence)
		licence = keeper.licence
	}
	// The DB probe starts first: the publish actor Asks it (DbAskTimeout),
	// and its verdict changes wake the publish actor up.
	var pubRef atomic.Pointer[redundancy.PublishActor]
	probe, err := health.NewDbProbe(db, health.DbProbeConfig{
		Parent: tree,
		Logger: logger,
		OnChange: func(health.DbProbeResult) {
			if pub := pubRef.Load(); pub != nil {
				pub.NotifyDbChanged()
			}
		},
	})
	if err != nil {
		r.stop()
		return nil, err
	}
	if err := probe.RegisterMetrics(meter); err != nil {
		r.stop()
		return nil, err
	}
	if err := probe.Start(ctx); err != nil {
		r.stop()
		return nil, err
	}
	r.probe = probe
	r.stops = append(r.stops, probe.Stop)
	if !slices.Contains(roles, config.RoleDriver) {
		// A node without the driver role serves ServiceLevel 0 (Detached).
		detachedLevels(pins, levels)
		return r, nil
	}
	rm, err := redundancy.RegisterMetrics(meter, cfg.Node.ClusterId, func() (byte, bool) {
		if pub := pubRef.Load(); pub != nil {
			return pub.Level()
		}
		return 0, false
	}, r.view)
	if err != nil {
		r.stop()
		return nil, err
	}
	pub := redundancy.NewPublishActor(redundancy.PublishActorOptions{
		Parent:                tree,
		DbProbe:               probe.PID(),
		Licence:               licence,
		Pin:                   pins.get,
		AfterMembershipChange: func(_ byte, since time.Duration) { rm.ObserveLatency(since) },
		Membership:            d, PubSub: med, Publisher: levels, RoleView: r.view,
		PeerStatus: func(uri string, level byte, alive bool) {
			state := ua.ServerStateUnknown
			if alive {
				state = ua.ServerStateRunning
			}
			srv.SetPeerStatus(uri, level, state)
		},
		PeerApplicationURIs: cfg.OpcUa.PeerApplicationUris,
		ConfiguredRoles:     roles, ClusterID: cfg.Node.ClusterId,
		ApplicationURI: srv.ApplicationURI(), OpcUaEndpoint: srv.EndpointURL(),
		Logger: logger,
	})
	pubRef.Store(pub)
	pins.onChange(pub.NotifyPinChanged)
	if keeper != nil {
		keeper.setOnChange(pub.NotifyDbChanged)
	}
	pub.Start(ctx)
	r.pub = pub
	r.stops = append(r.stops, pub.Stop)
	sup := health.NewPeerProbeSupervisor(health.PeerProbeOptions{Membership: d, PubSub: med, Logger: logger, Parent: tree})
	sup.Start(ctx)
	r.sup = sup
	r.stops = append(r.stops, sup.Stop)
	return r, nil
}

// stop stops everything in reverse start order (the mediator last). It
// runs once.
func (r *redundancyRuntime) stop() {
	r.once.Do(func() {
		for _, fn := range slices.Backward(r.stops) {
			fn()
		}
	})
}
