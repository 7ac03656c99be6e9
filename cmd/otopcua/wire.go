package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/internal/mutation"
)

func init() {
	runHost = func(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
		host.Version, host.Commit = version, commit
		mut, err := mutation.Parse(os.Getenv(mutation.Env))
		if err != nil {
			return err
		}
		return host.Run(ctx, cfg, logger, host.Options{
			TestHooks: os.Getenv(host.EnvTestHooks) == "1", GCHook: os.Getenv(host.EnvGCHook) == "1",
			TestFloatingIdentityAddr: os.Getenv(host.EnvTestFloatingIdentityAddr), Mutations: mut})
	}
}
