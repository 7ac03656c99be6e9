package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/demo"
)

func (c *cli) demoCmd() *cobra.Command {
	var (
		killAfter time.Duration
		dir       string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a redundant pair on loopback and show its live ServiceLevel table",
		Long: `Start two otopcua nodes on 127.0.0.1 (free ports, both seeds on both,
roles admin and driver, ClusterId "demo", one embedded SQLite Config DB
shared by both), supervised like systemd Restart=always: a node that exits
is started again at the same ports. The demo subscribes to each node's
Server.ServiceLevel over OPC UA, reads its cluster view, and prints the
endpoint URLs, one line per event (who is Primary, failovers and how long
they took) and a table that follows the pair.

Once the pair is healthy the demo writes press1/Setpoint through the
Secondary in the default write mode (optimistic: Good, then reverted, the
device untouched), restarts the Secondary with OpcUa:WriteMode forward and
writes through it again (forwarded to the Primary: it lands once), then
writes through the Primary.

--kill-primary-after 20s sends SIGKILL to the Primary once, 20 s after
start (or later, once the pair is healthy and the writes are done): watch
the other node take over and the killed one rejoin.
Ctrl-C (SIGINT) or SIGTERM stops both nodes; no process is left behind.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return &exitError{code: exitFailure, err: fmt.Errorf("otopcua demo: find this program: %w", err)}
			}
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // a second signal ends the demo at once (the nodes die with it)
			}()
			err = demo.Run(ctx, demo.Options{
				Executable:       exe,
				Dir:              dir,
				KillPrimaryAfter: killAfter,
				Out:              c.stdout,
				Redraw:           isTerminal(c.stdout),
				Environ:          c.environ,
			})
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&killAfter, "kill-primary-after", 0, "send SIGKILL to the Primary once, this long after start (0: never)")
	cmd.Flags().StringVar(&dir, "dir", "", "keep configurations, Config DB and logs in this directory (default: a temporary directory, removed at the end)")
	return cmd
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
