package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/telemetry"
	"github.com/spf13/cobra"
)

// runHost runs the node until ctx is cancelled (SIGINT/SIGTERM) and returns
// nil after a graceful stop. It is host.Run; nil in a build without the
// host wiring.
var runHost func(ctx context.Context, cfg *config.Config, logger *slog.Logger) error

// defaultConfigFile is read when --config is not given, if it exists.
const defaultConfigFile = "appsettings.json"

func (c *cli) hostCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run this node until SIGINT or SIGTERM",
		Long: `Run one otopcua node. The configuration is --config (default
appsettings.json in the working directory; without that file, the defaults)
plus OTOPCUA_ environment overrides. An invalid configuration stops start-up
with exit code 2 and every problem listed; SIGINT or SIGTERM stops the node
gracefully: it leaves the cluster (at most 10 s) and exits 0; a second
signal kills it at once. When the cluster ends this node's membership
without a stop request (downed by the leader or by itself, removed, or a
requested leave such as a manual failover), the node shuts down and exits
with code 3 so that its supervisor restarts it and it rejoins as the
youngest member. Exit code 1 means a part failed (for example a used
Cluster:Port or OpcUa:Port).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("config") {
				if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
					path = ""
				}
			}
			return c.host(cmd.Context(), path)
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", defaultConfigFile, "appsettings.json of this node")
	return cmd
}

func (c *cli) host(parent context.Context, path string) error {
	cfg, err := config.Load(path, c.environ)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	logger := telemetry.NewLogger(c.stderr, cfg.Telemetry.LogLevel, cfg.Telemetry.LogFormat)
	source := path
	if source == "" {
		source = "(defaults and environment)"
	}
	logger.Info("otopcua starting", "version", version, "commit", commit, "config", source, "summary", cfg.Summary())
	for _, w := range cfg.Warnings() {
		logger.Warn("configuration warning", "warning", w)
	}
	if cfg.Cluster.AkkaConfigPath != "" {
		eff, warnings, err := effectiveCluster(cfg, path, c.environ)
		for _, w := range warnings {
			logger.Warn("akka.conf", "warning", w.String())
		}
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		eff.ApplyTo(&cfg.Cluster)
		if err := errors.Join(cfg.Validate(), cfg.FloatingStrategyError()); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		logger.Info("cluster settings read from akka.conf", "path", cfg.Cluster.AkkaConfigPath,
			"strategy", cfg.Cluster.SplitBrainResolverStrategy)
	}
	if runHost == nil {
		return &exitError{code: exitFailure, err: errors.New("otopcua: this build has no host wiring")}
	}

	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second signal kills the process
	}()

	if err := runHost(ctx, cfg, logger); err != nil {
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			logger.Warn("otopcua stopped", "reason", err.Error(), "exitCode", coded.ExitCode())
			return &exitError{code: coded.ExitCode()}
		}
		logger.Error("otopcua stopped with an error", "err", err)
		return &exitError{code: exitFailure}
	}
	logger.Info("otopcua stopped")
	return nil
}
