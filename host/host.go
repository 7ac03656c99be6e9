package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/health"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
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
	// TestFloatingIdentityAddr is EnvTestFloatingIdentityAddr's value.
	TestFloatingIdentityAddr string
	// Mutations break guarantees on purpose for the chaos run's checker
	// (package internal/mutation); Run refuses them without TestHooks.
	Mutations mutation.Set
}

// Run runs the node until ctx is cancelled. It starts the node's parts in
// the order of partList and stops them in reverse; how the run ends sets
// what it returns (exitWith).
func Run(ctx context.Context, cfg *config.Config, logger *slog.Logger, opts Options) error {
	if opts.Mutations.Any() && !opts.TestHooks {
		return exitWith(endStartFailed, fmt.Errorf("%s=%s is a test-only switch and needs %s=1; unset it", mutation.Env, opts.Mutations, EnvTestHooks))
	}
	if opts.Mutations.RejoinLate {
		rejoinLate(ctx, cfg, logger)
	}
	n := &wiring{ctx: ctx, cfg: cfg, opts: opts, log: logger, uid: daemon.NewUID()}
	p := newParts(logger)
	defer p.stop()
	if err := p.startAll(n.partList()); err != nil {
		return exitWith(endStartFailed, err)
	}
	return n.serve(p)
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
	stopWatchdog := startWatchdog(WatchdogTimeout, exitCode(endManualFailover), logger, exit)
	defer stopWatchdog()
	stopAll()
	logger.Info("manual failover: left the cluster; exiting with code 0 for the supervisor to restart this node")
	return exitWith(endManualFailover, nil)
}

// opcuaConfig maps the configuration onto the OPC UA server's; mirror is
// nil unless OpcUa:RedundancySupport is HotAndMirrored.
func opcuaConfig(cfg *config.Config, sec opcuaSecurity, mirror *mirroring, logger *slog.Logger) opcua.Config {
	c := opcua.Config{
		ListenHost:          opcuaListenHost(cfg.Cluster.Hostname, cfg.Redundancy.FloatingAddress.Address),
		Port:                cfg.OpcUa.Port,
		PublicHostname:      cfg.Cluster.PublicHostname,
		ApplicationURI:      cfg.OpcUa.ApplicationUri,
		ApplicationName:     cfg.OpcUa.ApplicationName,
		PeerApplicationURIs: cfg.OpcUa.PeerApplicationUris,
		PeerDiscoveryURLs:   cfg.OpcUa.PeerDiscoveryUrls,
		RedundancySupport:   ua.RedundancySupportWarm,
		BuildInfo:           opcua.BuildInfo{SoftwareVersion: Version, BuildNumber: Commit},
		Logger:              logger,

		Security:                sec.channel,
		DisableAnonymous:        sec.noAnonymous,
		Users:                   sec.users,
		ValidateUserCertificate: sec.userCert,
		Authorization:           sec.authorization,
		Identities:              sec.identities,

		Limits: cfg.OpcUa.Limits,
	}
	switch cfg.OpcUa.RedundancySupport {
	case config.RedundancyHot:
		c.RedundancySupport = ua.RedundancySupportHot
	case config.RedundancyHotAndMirrored:
		if mirror == nil {
			panic("host: OpcUa:RedundancySupport is HotAndMirrored but no session mirror was built")
		}
		c.RedundancySupport, c.Mirror = ua.RedundancySupportHotAndMirrored, mirror.member
	}
	return c
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

// rejoinLate is the rejoin-late mutation: a node that started before (its
// marker next to the LocalDb) waits mutation.RejoinLateBy first.
func rejoinLate(ctx context.Context, cfg *config.Config, logger *slog.Logger) {
	marker := mutation.RejoinMarker(cfg.LocalDb.Path)
	if _, err := os.Stat(marker); err != nil {
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			logger.Warn("test mutation rejoin-late: marker not written", "err", err)
		}
		return
	}
	logger.Warn("test mutation rejoin-late: holding this restart back", "for", mutation.RejoinLateBy.String())
	select {
	case <-ctx.Done():
	case <-time.After(mutation.RejoinLateBy):
	}
}
