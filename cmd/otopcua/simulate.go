package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/telemetry"
)

// simulateTick is how often a simulated device's moving values are stored.
const simulateTick = 100 * time.Millisecond

func (c *cli) simulateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run a built-in field device for demonstrations and test rigs",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for \"otopcua simulate\"", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(c.simulateModbusCmd())
	return cmd
}

func (c *cli) simulateModbusCmd() *cobra.Command {
	var listen, profile, logFormat string
	cmd := &cobra.Command{
		Use:   "modbus",
		Short: "Serve a Modbus TCP field device whose registers move, until SIGINT or SIGTERM",
		Long: `Serve a Modbus TCP field device on --listen (default 0.0.0.0:5020) with the
register map of --profile (default press), so that a rig or a demonstration
needs no other device. It answers every unit id. The moving values are
stored every 100 ms and follow the time since start; the writable points
get their initial value once and then keep what clients write. Addresses
are 0-based, as in deployment documents (docs/deployments.md); float32
takes two registers, the high word first (wordOrder "big").

Profiles:
` + profileHelp() + `
One log line at start names the address, the profile and its map; the
Modbus server's warnings and errors follow. SIGINT or SIGTERM stops the
device and exits 0. Exit codes: 2 an unknown --profile or a malformed
--listen; 1 the address cannot be listened on (for example a used port).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.simulateModbus(cmd.Context(), listen, profile, logFormat)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "0.0.0.0:5020", "host:port to serve Modbus TCP on")
	cmd.Flags().StringVar(&profile, "profile", "press", "register map: "+strings.Join(fielddevice.ProfileNames(), ", "))
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
}

// profileHelp lists every built-in profile's points, one line each.
func profileHelp() string {
	var b strings.Builder
	for _, name := range fielddevice.ProfileNames() {
		fmt.Fprintf(&b, "\n  %s\n", name)
		for _, pt := range fielddevice.Profiles[name].Points {
			fmt.Fprintf(&b, "    %s\n", pt)
		}
	}
	return b.String()
}

func (c *cli) simulateModbus(parent context.Context, listen, profileName, logFormat string) error {
	p, ok := fielddevice.Profiles[profileName]
	if !ok {
		return &exitError{code: exitUsage, err: fmt.Errorf("otopcua simulate modbus: --profile %q: accepted values are %s",
			profileName, strings.Join(fielddevice.ProfileNames(), ", "))}
	}
	if !slices.Contains([]string{"text", "json"}, logFormat) {
		return &exitError{code: exitUsage, err: fmt.Errorf("otopcua simulate modbus: --log-format %q: accepted values are text, json", logFormat)}
	}
	if err := checkListen(listen); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("otopcua simulate modbus: --listen %q: %v", listen, err)}
	}
	logger := telemetry.NewLogger(c.stderr, "info", logFormat)

	dev, err := fielddevice.StartWith(listen, fielddevice.Options{Logger: log.New(&slogLines{logger: logger}, "", 0)})
	if errors.Is(err, syscall.EADDRINUSE) {
		return &exitError{code: exitFailure, err: fmt.Errorf("otopcua simulate modbus: --listen %s: the address is already in use (another process listens there)", listen)}
	}
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("otopcua simulate modbus: %w", err)}
	}
	defer dev.Close()
	dev.Load(p)

	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { dev.Animate(ctx, p, simulateTick) })
	logger.Info("otopcua simulate modbus serving", "listen", listen, "unitId", "any", "profile", p.Name, "map", p.Map())
	<-ctx.Done()
	stop()
	wg.Wait()
	logger.Info("otopcua simulate modbus stopped")
	return nil
}

// checkListen accepts host:port with a port 1–65535 (0: any free port)
// and an empty host (every interface), an IP address or a name.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("the port must be a number 0–65535")
	}
	return nil
}

// slogLines turns the Modbus server's log lines into warnings: it logs
// nothing else (failed accepts, too many clients, unwritable responses).
type slogLines struct{ logger *slog.Logger }

func (s *slogLines) Write(b []byte) (int, error) {
	s.logger.Warn("modbus server", "detail", strings.TrimSpace(string(b)))
	return len(b), nil
}
