package host

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/cluster/clustertls"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/health"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy/wire"
	"github.com/otopcua/otopcua/telemetry"
)

// HTTPShutdownTimeout bounds the HTTP server's graceful shutdown at the
// end of a run; requests still running then are cut off.
const HTTPShutdownTimeout = 5 * time.Second

// wiring is one run's wiring: each part's start fills the fields the later
// parts use. It is used by Run's goroutine only.
type wiring struct {
	ctx  context.Context
	cfg  *config.Config
	opts Options
	log  *slog.Logger

	metrics  *telemetry.Metrics
	sys      *actors.System
	creds    *clustertls.Credentials // nil without Cluster:Tls
	started  time.Time               // when the supervision tree started (GET /api/actors)
	tree     *actors.Tree
	db       *configdb.DB
	users    *auth.Service
	sec      opcuaSecurity
	srv      *opcua.Server
	space    *dataplane.Space
	deferred *opcua.DeferredServiceLevelPublisher
	shown    *levelPublisher
	pins     *levelPins
	keeper   *leaseKeeper // nil without Cluster:Lease:Provider
	exits    singleton.ExitGroup
	cluster  *clusterRuntime
	red      *redundancyRuntime
	dp       *dataPlane // nil on a node without the driver role
	failover *failoverReceiver
	backend  *adminBackend
	floating *floatingPart // nil without Redundancy:FloatingAddress
	// uid is this process's incarnation, drawn before anything starts:
	// the session mirror is named by it before the daemon starts with it.
	uid    uint64
	mirror *mirroring // nil unless OpcUa:RedundancySupport is HotAndMirrored
}

// partList is the node's parts in start order; they stop in reverse, the
// Config DB after the cluster transport (host/doc.go explains the order).
func (n *wiring) partList() []part {
	return []part{
		{name: "telemetry", start: n.startTelemetry},
		{name: "cluster transport", start: n.startTransport},
		{name: "supervision tree", start: n.startTree},
		{name: "Config DB", start: n.openConfigDb, under: "cluster transport"},
		{name: "OPC UA security", start: n.startSecurity},
		{name: "session mirror", start: n.newMirror},
		{name: "OPC UA server", start: n.newServer},
		{name: "OPC UA metrics", start: n.registerServerMetrics},
		{name: "ServiceLevel publisher", start: n.newLevels},
		{name: "floating address executor", start: n.prepareFloating},
		{name: "OPC UA endpoint", start: n.listenOpcUa},
		{name: "lease", start: n.openLease},
		{name: "membership daemon", start: n.startCluster},
		{name: "node info", start: n.registerInfo},
		{name: "redundancy runtime", start: n.startRedundancy},
		{name: "session mirror peers", start: n.bindMirror},
		{name: "data plane", start: n.startDataPlane},
		{name: "session mirror open", start: n.openMirror},
		{name: "manual failover", start: n.startFailover},
		{name: "RequestServerStateChange", start: n.registerStateChange},
		{name: "floating address", start: n.startFloating},
		{name: "HTTP", start: n.startHTTP},
	}
}

func (n *wiring) startTelemetry() (func() error, error) {
	n.metrics = telemetry.NopMetrics()
	if n.cfg.Telemetry.MetricsEnabled {
		m, err := telemetry.NewMetrics()
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		n.metrics = m
	}
	return func() error { return n.metrics.Shutdown(context.Background()) }, nil
}

// startTransport listens first, so that a used Cluster:Port stops start-up
// before anything else listens or joins. Its stop stops the membership
// daemon too, once that started: the daemon and the actor system stop
// together, after the OPC UA server and the supervision tree.
func (n *wiring) startTransport() (func() error, error) {
	sys, creds, err := startTransport(n.cfg, n.log)
	if err != nil {
		return nil, err
	}
	n.sys, n.creds = sys, creds
	return quiet(func() {
		if n.cluster != nil {
			n.cluster.stop()
			return
		}
		n.sys.Shutdown(false)
	}), nil
}

func (n *wiring) startTree() (func() error, error) {
	n.started = time.Now()
	tree, err := startTree(n.sys, n.opts.TestHooks, n.metrics.Meter(), n.log)
	if err != nil {
		return nil, err
	}
	n.tree = tree
	return quiet(tree.Shutdown), nil
}

// openConfigDb opens the Config DB before anything listens: a bad provider
// or connection string, or a database newer than this otopcua, stops
// start-up; an unreachable server does not (see openConfigDb).
func (n *wiring) openConfigDb() (func() error, error) {
	var opts []configdb.Option
	if n.opts.Mutations.HistorianDuplicates {
		opts = append(opts, configdb.WithoutAlarmHistoryKey())
	}
	db, closeDb, err := openConfigDb(n.ctx, n.cfg, n.log, opts...)
	if err != nil {
		return nil, err
	}
	n.db = db
	return quiet(closeDb), nil
}

// startSecurity loads the admin users, which serve the admin pages and the
// OPC UA UserName tokens, and the OPC UA security settings.
func (n *wiring) startSecurity() (func() error, error) {
	// Failures are counted in this node's memory only: a shared count in
	// the Config DB would let an attacker's failures on one node make the
	// name wait on the other too (see docs/security.md).
	users, err := auth.New(auth.Options{DB: n.db, Throttled: n.metrics.AuthThrottled})
	if err != nil {
		return nil, fmt.Errorf("admin users: %w", err)
	}
	n.users = users
	if n.sec, err = newOpcuaSecurity(n.cfg, users, n.log); err != nil {
		return nil, err
	}
	n.sec.identities, err = loadFloatingIdentity(n.ctx, n.cfg, n.db, n.opts.TestFloatingIdentityAddr, n.log)
	return nil, err
}

// newMirror builds the session mirror under OpcUa:RedundancySupport
// HotAndMirrored; it closes after the OPC UA server.
func (n *wiring) newMirror() (func() error, error) {
	if !n.cfg.OpcUa.Mirrored() {
		return nil, nil
	}
	self := membership.UniqueAddress{Host: n.cfg.Cluster.PublicHostname, Port: n.cfg.Cluster.Port, UID: n.uid}
	m, err := newMirroring(n.cfg, self, n.metrics.Meter(), n.log)
	if err != nil {
		return nil, fmt.Errorf("session mirror: %w", err)
	}
	n.mirror = m
	return quiet(m.close), nil
}

// bindMirror carries the mirror's batches over the redundancy runtime's
// mediator and keeps its peers current; it stops before the mediator.
func (n *wiring) bindMirror() (func() error, error) {
	if n.mirror == nil {
		return nil, nil
	}
	n.mirror.bind(n.red.med, n.cluster.d)
	return quiet(n.mirror.unbind), nil
}

// openMirror lets the peers' sessions in once the data plane applied its
// first deployment (mirroring.open).
func (n *wiring) openMirror() (func() error, error) {
	if n.mirror != nil {
		n.mirror.open()
	}
	return nil, nil
}

// newServer builds the OPC UA server. The tag namespace comes first after
// the server's own, so that it has the same index on every node of the
// set.
func (n *wiring) newServer() (func() error, error) {
	srv, err := opcua.New(opcuaConfig(n.cfg, n.sec, n.mirror, n.log))
	if err != nil {
		return nil, fmt.Errorf("OPC UA server: %w", err)
	}
	n.srv = srv
	n.space = newSpace(srv, n.cfg)
	return srv.Close, nil
}

// newLevels: until the server listens, computed levels wait in the deferred
// publisher; the first one reaches clients as soon as it starts. The
// pins (drain, test hook) are inputs of the one ServiceLevel function.
func (n *wiring) newLevels() (func() error, error) {
	n.deferred = &opcua.DeferredServiceLevelPublisher{}
	n.shown = newLevelPublisher(n.deferred, n.metrics, n.log)
	n.shown.claimPrimary = n.opts.Mutations.SecondaryClaimsPrimary
	n.shown.stuckLow = n.opts.Mutations.SecondaryStuckLow
	n.pins = newLevelPins(n.opts.TestHooks)
	return nil, nil
}

func (n *wiring) registerServerMetrics() (func() error, error) {
	if err := n.srv.RegisterMetrics(n.metrics.Meter()); err != nil {
		return nil, fmt.Errorf("OPC UA metrics: %w", err)
	}
	return nil, nil
}

func (n *wiring) listenOpcUa() (func() error, error) {
	if err := n.srv.Start(n.ctx); err != nil {
		return nil, fmt.Errorf("OPC UA server on port %d (OpcUa:Port): %w", n.cfg.OpcUa.Port, err)
	}
	n.deferred.Bind(opcua.NewServerServiceLevelPublisher(n.srv))
	return nil, nil
}

// openLease opens Cluster:Lease when it is set; the lease keeper starts
// with the redundancy runtime and stops with it.
func (n *wiring) openLease() (func() error, error) {
	if n.cfg.Cluster.Lease.Provider == "" {
		return nil, nil
	}
	l, err := openLease(n.cfg, n.db)
	if err != nil {
		return nil, fmt.Errorf("Cluster:Lease: %w", err)
	}
	n.keeper = newLeaseKeeper(l, n.cfg, n.tree.Clock(), n.log)
	return nil, nil
}

// startCluster starts the membership daemon; the cluster transport's stop
// stops it.
func (n *wiring) startCluster() (func() error, error) {
	c, err := startCluster(n.cfg, n.uid, n.sys, n.creds, n.keeper, n.metrics, &n.exits, n.log)
	if err != nil {
		return nil, err
	}
	n.cluster = c
	return nil, nil
}

func (n *wiring) registerInfo() (func() error, error) {
	return nil, n.metrics.RegisterInfo(telemetry.NodeInfo{Version: Version, Commit: Commit, ClusterID: n.cfg.Node.ClusterId,
		NodeID: n.cfg.Cluster.NodeID(), ApplicationURI: n.srv.ApplicationURI()})
}

// startRedundancy starts the redundancy runtime; it stops after the
// graceful leave (its singleton hands over during the leave).
func (n *wiring) startRedundancy() (func() error, error) {
	red, err := startRedundancy(n.cfg, n.sys, n.tree, n.cluster.lease, n.cluster.d, n.db, n.srv, n.shown, n.pins, n.metrics.Meter(), &n.exits, n.log)
	if err != nil {
		return nil, err
	}
	n.red = red
	return quiet(red.stop), nil
}

func (n *wiring) startDataPlane() (func() error, error) {
	newer := newNewerEpochs(n.cfg, n.red.view, n.cluster.d, n.red.tracker, n.keeper, n.log)
	dp, err := startDataPlane(n.cfg, n.tree, n.srv, n.db, n.space, n.red.view, n.red.med, n.cluster.d.Self().UID, n.metrics, n.log, n.opts.Mutations, newer, n.sec.driverIdentity())
	if err != nil {
		return nil, fmt.Errorf("data plane: %w", err)
	}
	n.dp = dp
	if dp == nil { // a node without the driver role has no data plane
		return nil, nil
	}
	n.red.devices.host.Store(dp.host)
	return quiet(dp.stop), nil
}

// startFailover: every node takes manual failover requests and follows the
// redundancy topic for the admin pages, whatever its roles. Both
// subscriptions stop with the redundancy runtime's mediator.
func (n *wiring) startFailover() (func() error, error) {
	n.failover = newFailoverReceiver(n.cluster.d.Self(), n.cfg.Node.ClusterId, n.log)
	n.red.follow(wire.FailoverTopic, n.failover.Handle)
	watch := newPanelWatcher(time.Now)
	n.red.follow(wire.Topic, watch.Handle)
	n.backend = newAdminBackend(n.cluster.d, n.red.med, n.db, watch, downingText(n.cluster.nc), n.cfg.Redundancy.ManualFailoverDrain, time.Now)
	n.red.devices.backend.Store(n.backend)
	if n.mirror != nil {
		n.backend.mirror = n.mirror.panelOf(n.cfg.Node.ClusterId, n.cfg.Cluster.NodeID())
	}
	return nil, nil
}

func (n *wiring) registerStateChange() (func() error, error) {
	if err := registerStateChange(n.srv, n.backend, n.cfg.Node.ClusterId, n.log); err != nil {
		return nil, fmt.Errorf("RequestServerStateChange: %w", err)
	}
	return nil, nil
}

// startHTTP serves Http:Port (off when Http:Port is unset): the probes,
// /metrics and routeTable.
func (n *wiring) startHTTP() (func() error, error) {
	addr := n.cfg.Http.Addr()
	if addr == "" {
		return nil, nil
	}
	tlsCfg, err := httpTLS(n.cfg.Http.Tls)
	if err != nil {
		return nil, err
	}
	web := health.NewHTTPServer(addr, health.HTTPOptions{
		ReadTimeout:  n.cfg.Http.ReadTimeout,
		WriteTimeout: n.cfg.Http.WriteTimeout,
		MaxBodyBytes: n.cfg.Http.MaxBodyBytes,
		TLS:          tlsCfg,
	}, probes(n.sys, n.cluster, n.srv, n.red.probe, n.shown), n.metrics.Handler(), n.log)
	mount(web, routeTable(n.site()))
	if err := web.Start(); err != nil {
		return nil, err
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), HTTPShutdownTimeout)
		defer cancel()
		return web.Shutdown(ctx)
	}, nil
}

// site gathers the handlers of routeTable, logging the test hooks it
// mounts.
func (n *wiring) site() site {
	s := site{
		members:       n.cluster.d.MembersHandler(),
		clusterConfig: clusterConfigHandler(n.cluster.nc, n.cluster.lease),
		actors:        actorsHandler(n.tree, n.cluster.d, n.started),
	}
	if dp := n.dp; dp != nil {
		s.deployment = dp.handler(n.cfg.Node.ClusterId)
		s.alerts = dp.alarms.alertsHandler()
		if dp.repl != nil {
			s.localDb = dp.repl.Handler()
		}
		if dp.alarms.hist != nil {
			s.historian = dp.alarms.hist.Handler()
		}
	}
	if fp := n.floating; fp != nil && fp.rt != nil {
		s.floating = fp.rt.handler()
	}
	if n.opts.GCHook {
		s.gc = gcHandler()
		n.log.Warn("test hook enabled: POST /debug/gc; never enable this in production", "env", EnvGCHook)
	}
	if n.opts.Mutations.Any() {
		n.log.Warn("test mutations enabled: this node breaks guarantees of the redundant pair on purpose; never enable this in production", "env", mutation.Env, "mutations", n.opts.Mutations.String())
	}
	if n.opts.TestHooks {
		s.serviceLevel = n.pins.debugHandler()
		s.actorFault = actorFaultHandler(n.tree)
		n.log.Warn("test hooks enabled: POST /debug/service-level owns Server.ServiceLevel until ?level=runtime hands it to the redundancy runtime, POST /debug/actor-fault?actor=PATH makes an actor panic; never enable this in production", "env", EnvTestHooks)
	}
	s.admin = newAdmin(n.backend, n.users, n.cfg.Http, n.log)
	s.anonymousRead = n.cfg.Http.AnonymousRead
	return s
}

// serve waits for the end of the run and ends it: every ending stops the
// parts (p) once, and its termination watchdog, when it has one, exits the
// process with the ending's code if the stop hangs.
func (n *wiring) serve(p *parts) error {
	n.log.Info("node ready", "endpoint", n.srv.EndpointURL(), "http", n.cfg.Http.Addr(),
		"nodeId", n.cfg.Cluster.NodeID(), "clusterId", n.cfg.Node.ClusterId, "roles", n.cfg.Cluster.Roles)
	n.releaseStartup()
	select {
	case <-n.ctx.Done():
		n.log.Info("stopping: leaving the cluster first")
		n.handOverFloating()
		n.cluster.leave(LeaveTimeout)
		p.stop()
		return exitWith(endStopped, nil)
	case <-n.cluster.d.Done():
		r := n.cluster.d.Result()
		n.log.Warn("the cluster ended this node's membership; coordinated shutdown", "reason", r.Reason.String(), "err", r.Err)
		stopWatchdog := startWatchdog(WatchdogTimeout, exitCode(endingOf(r)), n.log, exit)
		defer stopWatchdog()
		p.stop()
		return ended(r)
	case f := <-n.tree.Failed():
		return n.actorGaveUp(p, f)
	case m := <-n.failover.Requested():
		return manualFailover(n.ctx, m, n.cfg, n.cluster, n.pins, n.srv, p.stop, n.log)
	}
}

// releaseStartup returns to the operating system the heap that only
// start-up needed (the collector would keep it mapped until the heap grows
// back into it). The executable's own pages are left alone: dropping its
// read-only mappings would shrink the resident set only by pages that stay
// in the page cache, and would discard relocated read-only data of a
// position-independent build.
func (n *wiring) releaseStartup() {
	debug.FreeOSMemory()
}

// actorGaveUp ends the run after an actor failed past its restart limit:
// the node leaves the cluster and exits for the service supervisor to
// restart it.
func (n *wiring) actorGaveUp(p *parts, f actors.Failure) error {
	n.log.Error("an actor failed past its restart limit: leaving the cluster and exiting with code 1 for the service supervisor to restart this node",
		"actor", f.Path, "reason", f.Reason)
	stopWatchdog := startWatchdog(WatchdogTimeout, exitCode(endActorGaveUp), n.log, exit)
	defer stopWatchdog()
	n.cluster.leave(LeaveTimeout)
	p.stop()
	return exitWith(endActorGaveUp, fmt.Errorf("actor %s failed past its restart limit: %s", f.Path, f.Reason))
}
