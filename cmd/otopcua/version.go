package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// Set with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = "dev"
)

func (c *cli) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(c.stdout, "otopcua %s (commit %s, %s %s/%s)\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
