package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/health"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
	"github.com/otopcua/otopcua/telemetry"
)

// Version and Commit fill Server.ServerStatus.BuildInfo; cmd/otopcua sets them.
var (
	Version = "dev"
	Commit  = ""
)

// EnvTestHooks, when set to 1 in the environment of `otopcua host`, mounts
// the test-only endpoint POST /debug/service-level on the HTTP port and
// gives it the ServiceLevel (servicelevel.Pin's test hook): from start-up
// the node shows 255 (and advertises it to its peers) whatever its health;
// ?level=N shows N, ?level=runtime hands ServiceLevel back to the runtime,
// which recomputes at once. Multi-process tests use it to drive
// ServiceLevel by hand. Never set it in production.
const EnvTestHooks = "OTOPCUA_TEST_HOOKS"

// EnvGCHook, when set to 1 in the environment of `otopcua host`, mounts the
// test-only endpoint POST /debug/gc: a full garbage collection that returns
// freed memory to the operating system, so that a soak can tell memory
// still held from memory the runtime has not yet given back. Never set it
// in production.
const EnvGCHook = "OTOPCUA_TEST_GC_HOOK"

// Options are the parts of a run that do not come from the configuration.
type Options struct {
	// TestHooks mounts the test-only HTTP endpoints (see EnvTestHooks).
	TestHooks bool
	// GCHook mounts POST /debug/gc (see EnvGCHook).
	GCHook bool
}

// Run runs the node until ctx is cancelled.
func Run(ctx context.Context, cfg *config.Config, logger *slog.Logger, opts Options) error {
	metrics := telemetry.NopMetrics()
	if cfg.Telemetry.MetricsEnabled {
		m, err := telemetry.NewMetrics()
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		metrics = m
	}
	defer metrics.Shutdown(context.Background())

	// The cluster transport listens first, so that a used Cluster:Port
	// stops start-up before anything else listens or joins.
	sys, creds, err := startTransport(cfg, logger)
	if err != nil {
		return err
	}
	var cluster *clusterRuntime
	defer func() {
		if cluster == nil {
			sys.Shutdown(false)
		}
	}()
	started := time.Now()
	tree, err := startTree(sys, opts.TestHooks, metrics.Meter(), logger)
	if err != nil {
		return err
	}

	// The Config DB opens before anything listens: a bad provider or
	// connection string, or a database newer than this otopcua, stops
	// start-up; an unreachable server does not (see openConfigDb).
	db, closeDb, err := openConfigDb(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeDb()

	// The admin users serve the admin pages and the OPC UA UserName tokens.
	users, err := auth.New(auth.Options{DB: db})
	if err != nil {
		return fmt.Errorf("admin users: %w", err)
	}
	sec, err := newOpcuaSecurity(cfg, users, logger)
	if err != nil {
		return err
	}
	srv, err := opcua.New(opcuaConfig(cfg, sec, logger))
	if err != nil {
		return fmt.Errorf("OPC UA server: %w", err)
	}
	defer srv.Close()
	// The tag namespace comes first after the server's own, so that it has
	// the same index on every node of the set.
	space := newSpace(srv, cfg)
	if err := srv.RegisterMetrics(metrics.Meter()); err != nil {
		return fmt.Errorf("OPC UA metrics: %w", err)
	}

	// Until the server listens, computed levels wait in the deferred
	// publisher; the first one reaches clients as soon as it starts. The
	// pins (drain, test hook) are inputs of the one ServiceLevel function.
	deferred := &opcua.DeferredServiceLevelPublisher{}
	shown := newLevelPublisher(deferred, metrics, logger)
	pins := newLevelPins(opts.TestHooks)

	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("OPC UA server on port %d (OpcUa:Port): %w", cfg.OpcUa.Port, err)
	}
	deferred.Bind(opcua.NewServerServiceLevelPublisher(srv))

	var keeper *leaseKeeper
	if cfg.Cluster.Lease.Provider != "" {
		l, err := openLease(cfg, db)
		if err != nil {
			return fmt.Errorf("Cluster:Lease: %w", err)
		}
		keeper = newLeaseKeeper(l, cfg, tree.Clock(), logger)
	}
	var exits singleton.ExitGroup
	cluster, err = startCluster(cfg, sys, creds, keeper, metrics, &exits, logger)
	if err != nil {
		return err
	}
	if err := metrics.RegisterInfo(telemetry.NodeInfo{Version: Version, Commit: Commit, ClusterID: cfg.Node.ClusterId,
		NodeID: cfg.Cluster.NodeID(), ApplicationURI: srv.ApplicationURI()}); err != nil {
		cluster.stop()
		return err
	}
	red, err := startRedundancy(cfg, sys, tree, cluster.lease, cluster.d, db, srv, shown, pins, metrics.Meter(), &exits, logger)
	if err != nil {
		cluster.stop()
		return err
	}
	dp, err := startDataPlane(cfg, tree, srv, db, space, red.view, red.med, cluster.d.Self().UID, metrics, logger)
	if err != nil {
		red.stop()
		cluster.stop()
		return fmt.Errorf("data plane: %w", err)
	}
	// Every node takes manual failover requests and follows the redundancy
	// topic for the admin pages, whatever its roles.
	failover := newFailoverReceiver(cluster.d.Self(), cfg.Node.ClusterId, logger)
	red.stops = append(red.stops, red.med.Subscribe(wire.FailoverTopic, failover.Handle))
	watch := newPanelWatcher(time.Now)
	red.stops = append(red.stops, red.med.Subscribe(wire.Topic, watch.Handle))
	backend := newAdminBackend(cluster.d, red.med, db, watch, downingText(cluster.nc), cfg.Redundancy.ManualFailoverDrain, time.Now)
	if err := registerStateChange(srv, backend, cfg.Node.ClusterId, logger); err != nil {
		dp.stop()
		red.stop()
		cluster.stop()
		return fmt.Errorf("RequestServerStateChange: %w", err)
	}

	var web *health.HTTPServer
	stopAll := func() {
		if web != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = web.Shutdown(sctx)
		}
		dp.stop()
		red.stop()
		_ = srv.Close()
		tree.Shutdown()
		cluster.stop()
	}
	if addr := cfg.Http.Addr(); addr != "" {
		tlsCfg, err := httpTLS(cfg.Http.Tls)
		if err != nil {
			stopAll()
			return err
		}
		web = health.NewHTTPServer(addr, health.HTTPOptions{
			ReadTimeout:  cfg.Http.ReadTimeout,
			WriteTimeout: cfg.Http.WriteTimeout,
			MaxBodyBytes: cfg.Http.MaxBodyBytes,
			TLS:          tlsCfg,
		}, probes(sys, cluster, srv, red.probe, shown), metrics.Handler(), logger)
		web.Handle("GET /api/cluster/members", cluster.d.MembersHandler())
		web.Handle("GET /api/cluster/config", clusterConfigHandler(cluster.nc, cluster.lease))
		web.Handle("GET /api/actors", actorsHandler(tree, cluster.d, started))
		if dp != nil {
			web.Handle("GET /api/deployment", dp.handler(cfg.Node.ClusterId))
			web.Handle("GET /alerts", dp.alarms.alertsHandler())
			if dp.repl != nil {
				web.Handle("GET /api/localdb", dp.repl.Handler())
			}
			if dp.alarms.hist != nil {
				web.Handle("GET /api/historian", dp.alarms.hist.Handler())
			}
		}
		if opts.GCHook {
			web.Handle("POST /debug/gc", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				debug.FreeOSMemory() // runs a full collection first
				fmt.Fprintln(w, "collected")
			}))
			logger.Warn("test hook enabled: POST /debug/gc; never enable this in production", "env", EnvGCHook)
		}
		if opts.TestHooks {
			web.Handle("POST /debug/service-level", pins.debugHandler())
			web.Handle("POST /debug/actor-fault", actorFaultHandler(tree))
			logger.Warn("test hooks enabled: POST /debug/service-level owns Server.ServiceLevel until ?level=runtime hands it to the redundancy runtime, POST /debug/actor-fault?actor=PATH makes an actor panic; never enable this in production", "env", EnvTestHooks)
		}
		mountAdmin(web, backend, users, cfg.Http, logger)
		if err := web.Start(); err != nil {
			web = nil
			stopAll()
			return err
		}
	}
	logger.Info("node ready", "endpoint", srv.EndpointURL(), "http", cfg.Http.Addr(),
		"nodeId", cfg.Cluster.NodeID(), "clusterId", cfg.Node.ClusterId, "roles", cfg.Cluster.Roles)

	select {
	case <-ctx.Done():
		logger.Info("stopping: leaving the cluster first")
		cluster.leave(LeaveTimeout)
		stopAll()
		return nil
	case <-cluster.d.Done():
		r := cluster.d.Result()
		logger.Warn("the cluster ended this node's membership; coordinated shutdown", "reason", r.Reason.String(), "err", r.Err)
		code := ExitRestart
		if r.Err != nil {
			code = 1
		}
		stopWatchdog := startWatchdog(WatchdogTimeout, code, logger, exit)
		defer stopWatchdog()
		stopAll()
		return ended(r)
	case f := <-tree.Failed():
		logger.Error("an actor failed past its restart limit: leaving the cluster and exiting with code 1 for the service supervisor to restart this node",
			"actor", f.Path, "reason", f.Reason)
		stopWatchdog := startWatchdog(WatchdogTimeout, 1, logger, exit)
		defer stopWatchdog()
		cluster.leave(LeaveTimeout)
		stopAll()
		return fmt.Errorf("actor %s failed past its restart limit: %s", f.Path, f.Reason)
	case m := <-failover.Requested():
		return manualFailover(ctx, m, cfg, cluster, pins, srv, stopAll, logger)
	}
}

// httpTLS loads Http:Tls's certificate and key; nil without Http:Tls.
func httpTLS(t config.HttpTLSConfig) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("Http:Tls:CertFile %s with Http:Tls:KeyFile %s: %w", t.CertFile, t.KeyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// manualFailover serves an accepted ManualFailover: ServiceLevel 0 and
// EstimatedReturnTime for Redundancy:ManualFailoverDrain so that clients
// move first, then the graceful leave (singletons hand over, coordinated
// shutdown) and exit code 0: the leave was requested, and the supervisor's
// restart policy brings the node back as the youngest member. A SIGTERM
// or the end of membership during the drain cuts it short.
func manualFailover(ctx context.Context, m *wire.ManualFailover, cfg *config.Config, cluster *clusterRuntime,
	pins *levelPins, srv *opcua.Server, stopAll func(), logger *slog.Logger) error {
	drain := cfg.Redundancy.ManualFailoverDrain
	logger.Warn("manual failover: ServiceLevel 0 while clients move, then leaving the cluster",
		"drain", drain.String(), "actor", m.GetActor(), "estimatedReturn", wire.FromUnixMs(m.GetEstimatedReturnUnixMs()))
	drainForFailover(ctx, m, pins, srv, clockwork.NewRealClock(), drain, cluster.d.Done())
	cluster.leave(LeaveTimeout)
	stopWatchdog := startWatchdog(WatchdogTimeout, 0, logger, exit)
	defer stopWatchdog()
	stopAll()
	logger.Info("manual failover: left the cluster; exiting with code 0 for the supervisor to restart this node")
	return nil
}

func opcuaConfig(cfg *config.Config, sec opcuaSecurity, logger *slog.Logger) opcua.Config {
	support := ua.RedundancySupportWarm
	if cfg.OpcUa.RedundancySupport == config.RedundancyHot {
		support = ua.RedundancySupportHot
	}
	return opcua.Config{
		ListenHost:          cfg.Cluster.Hostname,
		Port:                cfg.OpcUa.Port,
		PublicHostname:      cfg.Cluster.PublicHostname,
		ApplicationURI:      cfg.OpcUa.ApplicationUri,
		ApplicationName:     cfg.OpcUa.ApplicationName,
		PeerApplicationURIs: cfg.OpcUa.PeerApplicationUris,
		PeerDiscoveryURLs:   cfg.OpcUa.PeerDiscoveryUrls,
		RedundancySupport:   support,
		BuildInfo:           opcua.BuildInfo{SoftwareVersion: Version, BuildNumber: Commit},
		Logger:              logger,

		Security:                sec.channel,
		DisableAnonymous:        sec.noAnonymous,
		Users:                   sec.users,
		ValidateUserCertificate: sec.userCert,
		Authorization:           sec.authorization,

		Limits: cfg.OpcUa.Limits,
	}
}

// Readiness bounds.
const (
	// ActorPingTimeout bounds /healthz's round trip through the actor system.
	ActorPingTimeout = 2 * time.Second
	// ConfigDbAnswerMaxAge is how old the last Config DB answer may be for
	// /readyz (the ServiceLevel's own freshness window).
	ConfigDbAnswerMaxAge = redundancy.FreshFor
	// HealthyServiceLevel is the lowest ServiceLevel /readyz?healthy=1
	// accepts: the Healthy band of Part 4's ServiceLevel ranges.
	HealthyServiceLevel = 200
)

// probes are the checks of /healthz and /readyz (docs/operations.md
// §Health endpoints):
//
//   - /healthz: the actor system answers a ping and the membership daemon
//     runs: the process is worth keeping;
//   - /readyz: the OPC UA endpoint listens, this node is an Up cluster
//     member and the Config DB answered within ConfigDbAnswerMaxAge;
//     with ?healthy=1 also Server.ServiceLevel ≥ 200.
func probes(sys *actors.System, c *clusterRuntime, srv *opcua.Server, db *health.DbProbe, shown *levelPublisher) health.Probes {
	return health.Probes{
		Live: []health.Check{
			// One ping per half second however often /healthz is asked.
			{Name: "actors", Run: health.Cached(500*time.Millisecond, func() error { return sys.Alive(ActorPingTimeout) })},
			{Name: "membership", Run: func() error {
				select {
				case <-c.d.Done():
					return fmt.Errorf("the membership daemon has stopped (%s)", c.d.Result().Reason)
				default:
					return nil
				}
			}},
		},
		Ready: []health.Check{
			{Name: "opcua", Run: func() error {
				if !srv.Listening() {
					return errors.New("the OPC UA endpoint is not listening")
				}
				return nil
			}},
			{Name: "cluster", Run: func() error {
				self, ok := c.d.Snapshot().SelfMember()
				switch {
				case !ok:
					return errors.New("not a cluster member yet (joining through Cluster:SeedNodes)")
				case self.Status != membership.Up:
					return fmt.Errorf("cluster member status is %s, not Up", self.Status)
				}
				return nil
			}},
			{Name: "configdb", Run: func() error { return db.Ready(ConfigDbAnswerMaxAge) }},
			{Name: "service_level", HealthyOnly: true, Run: func() error {
				l, ok := shown.Last()
				switch {
				case !ok:
					return errors.New("no ServiceLevel published yet")
				case l < HealthyServiceLevel:
					return fmt.Errorf("ServiceLevel %d is below %d (the Healthy band)", l, HealthyServiceLevel)
				}
				return nil
			}},
		},
	}
}
