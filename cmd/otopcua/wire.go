package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/host"
)

func init() {
	runHost = func(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
		host.Version, host.Commit = version, commit
		return host.Run(ctx, cfg, logger, host.Options{
			TestHooks: os.Getenv(host.EnvTestHooks) == "1", GCHook: os.Getenv(host.EnvGCHook) == "1",
			TestFloatingIdentityAddr: os.Getenv(host.EnvTestFloatingIdentityAddr)})
	}
}
