package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the host stopped with an error
	exitUsage   = 2 // bad command line or invalid configuration
	exitRestart = 3 // host.ExitRestart: the cluster ended this node's membership; the supervisor restarts it
)

// exitError carries an exit code out of a command. A nil err means the
// problem has already been reported (logged or printed).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// cli is what every subcommand writes to and reads from.
type cli struct {
	stdout, stderr io.Writer
	environ        []string
}

// run executes one command line and returns the process exit code. Errors
// that are not exitErrors come from cobra (unknown command or flag, wrong
// number of arguments) and are usage errors.
func run(args []string, stdout, stderr io.Writer, environ []string) int {
	c := &cli{stdout: stdout, stderr: stderr, environ: environ}
	root := c.rootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "otopcua: %v\nRun 'otopcua --help' for usage.\n", err)
	return exitUsage
}

func (c *cli) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:               "otopcua",
		Short:             "Redundant OPC UA server host",
		Long:              "otopcua runs one node of a redundant OPC UA server set (Warm/Hot non-transparent redundancy).",
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.AddCommand(c.versionCmd(), c.configCmd(), c.hostCmd(), c.demoCmd(), c.clientCmd(), c.deployCmd(), c.healthCmd(), c.simulateCmd(), c.userCmd(), c.pkiCmd(), c.statusCmd(), c.doctorCmd())
	return root
}
