package host

import (
	"fmt"

	"github.com/otopcua/otopcua/cluster/daemon"
)

// ending is a way a run of `otopcua host` ends. exitCode maps each to the
// process exit code; it is the whole exit-code policy.
type ending int

const (
	// endStopped: SIGTERM or SIGINT; the node left the cluster gracefully
	// (at most LeaveTimeout).
	endStopped ending = iota
	// endManualFailover: a manual failover this node accepted; it drained,
	// left, and the supervisor's restart policy brings it back as the
	// youngest member.
	endManualFailover
	// endMembershipEnded: the cluster ended this node's membership without
	// a stop request (downed by the leader or by itself, removed, a leave
	// it did not ask for); the supervisor must restart it.
	endMembershipEnded
	// endMembershipFailed: the membership daemon stopped with an error.
	endMembershipFailed
	// endActorGaveUp: an actor of the supervision tree failed past its
	// restart limit.
	endActorGaveUp
	// endStartFailed: a part could not start (a used Cluster:Port or
	// OpcUa:Port, a Config DB newer than this otopcua, ...).
	endStartFailed
	// endInvalidConfig: the configuration did not load or validate;
	// `otopcua host` reports it before Run.
	endInvalidConfig
)

var endingNames = [...]string{
	endStopped:          "stopped",
	endManualFailover:   "manual failover",
	endMembershipEnded:  "membership ended",
	endMembershipFailed: "membership failed",
	endActorGaveUp:      "actor gave up",
	endStartFailed:      "start failed",
	endInvalidConfig:    "invalid configuration",
}

func (e ending) String() string {
	if e < 0 || int(e) >= len(endingNames) {
		return fmt.Sprintf("ending(%d)", int(e))
	}
	return endingNames[e]
}

// Exit codes of `otopcua host` (cmd/otopcua's exitOK, exitFailure,
// exitUsage and exitRestart are the same numbers).
const (
	exitOK      = 0
	exitFailure = 1
	exitConfig  = 2
	// ExitRestart is the process exit code after the cluster ended this
	// node's membership without a stop request: it was downed (by the
	// leader, or by itself under a split-brain strategy) or removed by the
	// others. (A manual failover's leave was requested: it exits 0, which
	// the supervisor's restart policy restarts as well.) The code is
	// non-zero so that the supervisor (systemd Restart=, Windows service
	// recovery, docker restart policy) starts the process again; it
	// rejoins as a new incarnation, the youngest member.
	ExitRestart = 3
)

// exitCode is the exit-code policy:
//
//	ending               code  why
//	stopped              0     the stop was asked for; the node left first
//	manual failover      0     the leave was asked for; the supervisor restarts it
//	membership ended     3     ExitRestart: the supervisor restarts it
//	membership failed    1     a part failed
//	actor gave up        1     a part failed; the supervisor restarts it
//	start failed         1     a part failed
//	invalid config       2     the configuration must change first
//
// The termination watchdog of an ending exits with the same code.
func exitCode(e ending) int {
	switch e {
	case endStopped, endManualFailover:
		return exitOK
	case endMembershipEnded:
		return ExitRestart
	case endInvalidConfig:
		return exitConfig
	default:
		return exitFailure
	}
}

// exitWith is what Run returns for an ending, err being its cause: nil for
// exit code 0, err itself for 1 (`otopcua host` exits 1 for an error that
// carries no code; err keeps a code it carries), an *ExitError otherwise.
func exitWith(e ending, err error) error {
	switch code := exitCode(e); code {
	case exitOK:
		return nil
	case exitFailure:
		return err
	default:
		return &ExitError{Code: code, Err: err}
	}
}

// ExitError is returned by Run when the process must exit with Code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the process exit code.
func (e *ExitError) ExitCode() int { return e.Code }

// ended turns the daemon's Result into Run's error when the membership
// ended without a stop request.
func ended(r daemon.Result) error {
	if r.Err != nil {
		return exitWith(endMembershipFailed, r.Err)
	}
	return exitWith(endMembershipEnded, fmt.Errorf("cluster membership ended (%s); exiting with code %d for the supervisor to restart this node", r.Reason, ExitRestart))
}

// endingOf is how a membership that ended without a stop request ends the
// run.
func endingOf(r daemon.Result) ending {
	if r.Err != nil {
		return endMembershipFailed
	}
	return endMembershipEnded
}
