package host

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/clustertls"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/telemetry"
)

// Bounds of the cluster's part in a stop.
const (
	// LeaveTimeout bounds the graceful leave on SIGTERM (Leave → Exiting →
	// exit confirmed).
	LeaveTimeout = 10 * time.Second
	// WatchdogTimeout bounds the coordinated shutdown after the cluster
	// ended this node's membership (and after an actor gave up or a manual
	// failover left); the termination watchdog then exits the process with
	// the ending's exit code (exitCode) regardless.
	WatchdogTimeout = 15 * time.Second
)

// exit ends the process; tests replace it.
var exit = os.Exit

// clusterRuntime is this node's actor system and membership daemon.
type clusterRuntime struct {
	sys *actors.System
	d   *daemon.Daemon
	nc  node.Config // the settings the daemon was started with
	// lease is lease-majority's shared lease; nil under other strategies.
	lease *leaseKeeper
	log   *slog.Logger
}

// startTransport starts the actor system and its remote on Cluster:Port;
// a used port is an error naming the key.
// With Cluster:Tls set it runs over mutual TLS, and the credentials are
// returned for startCluster.
func startTransport(cfg *config.Config, logger *slog.Logger) (*actors.System, *clustertls.Credentials, error) {
	ac := actors.Config{
		BindHost:      cfg.Cluster.Hostname,
		Port:          cfg.Cluster.Port,
		AdvertiseHost: cfg.Cluster.PublicHostname,
		Logger:        logger,
	}
	creds, err := clusterCredentials(cfg, "cluster transport", logger)
	if err != nil {
		return nil, nil, err
	}
	if creds != nil {
		ac.ServerCredentials, ac.DialCredentials = creds.Server(), creds.Client()
	}
	sys, err := actors.Start(ac)
	return sys, creds, err
}

// clusterCredentials loads Cluster:Tls for the port named purpose; nil
// when Cluster:Tls is not set.
func clusterCredentials(cfg *config.Config, purpose string, logger *slog.Logger) (*clustertls.Credentials, error) {
	t := cfg.Cluster.Tls
	if !t.Enabled() {
		return nil, nil
	}
	return clustertls.Load(clustertls.Files{CA: t.CaFile, Cert: t.CertFile, Key: t.KeyFile}, purpose, logger, nil)
}

// startCluster starts the membership daemon on sys: it joins through
// Cluster:SeedNodes at once (a lone node, or the first seed finding no
// other, forms the cluster; others use the self-form fallback).
//
// uid is this process's incarnation (daemon.NewUID). exits is the group
// of this node's singleton managers: the daemon's
// graceful leave waits for their hand-over. creds (nil without
// Cluster:Tls) tell the daemon of peers whose certificate this node
// refused, which keeps it from forming a cluster of its own beside them.
func startCluster(cfg *config.Config, uid uint64, sys *actors.System, creds *clustertls.Credentials, keeper *leaseKeeper, metrics *telemetry.Metrics, exits *singleton.ExitGroup, logger *slog.Logger) (*clusterRuntime, error) {
	nc, err := daemon.NodeConfig(cfg, uid)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if nc.Downing.Strategy == node.LeaseMajority && cfg.Cluster.Lease.Provider == "" {
		// Cluster:AkkaConfigPath chose lease-majority; the appsettings
		// check covers Cluster:SplitBrainResolverStrategy.
		return nil, fmt.Errorf("cluster: Cluster:Lease:Provider is empty but the downing strategy is lease-majority (from %s): accepted values are configdb or etcd, a lease every node of the set shares", cfg.Cluster.AkkaConfigPath)
	}
	o := daemon.Options{Node: nc, System: sys, Logger: logger, Secret: cfg.Cluster.Secret,
		ExitingTasks: []func(context.Context) error{exits.Task}}
	if nc.Downing.Strategy != node.LeaseMajority {
		keeper = nil // Cluster:Lease is read by lease-majority only
	}
	if keeper != nil {
		o.Lease, o.FastPathLease, o.FormingLease = keeper, keeper.fastPath, keeper.forming
		logger.Info("lease-majority with a shared lease", "provider", keeper.l.Name(), "ttl", keeper.ttl.String(),
			"promotionHold", cfg.Redundancy.PromotionHold.String())
	}
	d, err := daemon.Start(o)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if keeper != nil {
		keeper.bind(d)
	}
	if creds != nil {
		creds.OnPeerRejected(func(authority string) {
			host, port, err := net.SplitHostPort(authority)
			if p, perr := strconv.Atoi(port); err == nil && perr == nil {
				d.PeerRefusedTLS(membership.Address{Host: host, Port: p})
			}
		})
	}
	if err := d.RegisterMetrics(metrics.Meter()); err != nil {
		d.Stop()
		return nil, err
	}
	return &clusterRuntime{sys: sys, d: d, nc: nc, lease: keeper, log: logger}, nil
}

// leave leaves the cluster gracefully, waiting at most timeout.
func (c *clusterRuntime) leave(timeout time.Duration) {
	c.d.Leave()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.d.Done():
		if r := c.d.Result(); r.Reason != node.ReasonLeft {
			c.log.Warn("cluster membership ended otherwise while leaving", "reason", r.Reason.String(), "err", r.Err)
		}
	case <-t.C:
		c.log.Warn("cluster leave did not complete in time; stopping anyway", "timeout", timeout.String())
	}
}

// stop stops the daemon and the actor system, non-gracefully when a peer
// is dead (protoactor's graceful stop waits while it retries that peer).
func (c *clusterRuntime) stop() {
	dead := c.d.DeadPeers()
	c.d.Stop()
	c.sys.Shutdown(len(dead) == 0)
}

// startWatchdog is the termination watchdog: unless stopped first, it
// exits the process with code after timeout, so that a coordinated
// shutdown that hangs cannot keep a node without membership alive. stop
// reports whether it stopped the watchdog before it fired.
func startWatchdog(timeout time.Duration, code int, logger *slog.Logger, exitFn func(int)) (stop func() bool) {
	t := time.AfterFunc(timeout, func() {
		logger.Error("termination watchdog: shutdown did not finish in time; exiting", "timeout", timeout.String(), "exitCode", code)
		exitFn(code)
	})
	return t.Stop
}
