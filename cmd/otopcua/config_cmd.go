package main

import (
	"fmt"

	"github.com/otopcua/otopcua/config"
	"github.com/spf13/cobra"
)

func (c *cli) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with appsettings.json files",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for \"otopcua config\"", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(c.configCheckCmd(), c.configEffectiveCmd())
	return cmd
}

func (c *cli) configCheckCmd() *cobra.Command {
	var ignoreEnv bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Load and validate a configuration file",
		Long: `Load FILE exactly as "otopcua host" would (defaults, FILE, then OTOPCUA_
environment overrides) and validate it. Prints "ok: <summary>" and any
warnings, or every invalid setting with its key, value and accepted values.
Exits 0 when valid, 2 when not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			environ := c.environ
			if ignoreEnv {
				environ = nil
			}
			cfg, err := config.Load(args[0], environ)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			fmt.Fprintf(c.stdout, "ok: %s\n", cfg.Summary())
			fmt.Fprintf(c.stdout, "%s\n", cfg.LocalDbReplication().Reason())
			fmt.Fprintf(c.stdout, "%s\n", cfg.FloatingSummary())
			fmt.Fprintf(c.stdout, "%s\n", cfg.MirrorSummary())
			for _, w := range cfg.Warnings() {
				fmt.Fprintf(c.stdout, "warning: %s\n", w)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&ignoreEnv, "ignore-env", false, "check FILE alone, without OTOPCUA_ environment overrides")
	return cmd
}
