package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// child runs one node's process like systemd's Restart=always: a process
// that exits for any reason is started again after a back-off, with the
// same command line (same configuration, same ports), until the context
// is cancelled; then the process is stopped (SIGTERM to its process group,
// SIGKILL after the grace period) and waited for.
type child struct {
	name    string
	argv    []string
	dir     string
	env     []string
	logPath string

	restartAfter time.Duration // first back-off
	maxBackoff   time.Duration // cap of the doubling back-off
	grace        time.Duration // SIGTERM → SIGKILL when stopping

	// onStart and onExit are called from run's goroutine, one at a time;
	// they must not block. restartIn is 0 when run is stopping.
	onStart func(pid int)
	onExit  func(how string, restartIn time.Duration)

	mu  sync.Mutex
	pid int // running process, 0 when none; mu must be held.
}

// quickExit: a process that ran for less than this doubles the back-off
// (a node that cannot start must not be restarted in a tight loop).
const quickExit = 5 * time.Second

// run supervises the process until ctx is cancelled and the process has
// been stopped.
func (c *child) run(ctx context.Context) {
	backoff := c.restartAfter
	for {
		started := time.Now()
		how, err := c.once(ctx)
		if ctx.Err() != nil {
			c.onExit(how, 0)
			return
		}
		if err != nil {
			how = err.Error()
		}
		if time.Since(started) < quickExit {
			c.onExit(how, backoff)
		} else {
			backoff = c.restartAfter
			c.onExit(how, backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if time.Since(started) < quickExit+backoff {
			backoff = min(2*backoff, c.maxBackoff)
		}
	}
}

// once starts the process and waits until it exits, or stops it when ctx
// is cancelled. It returns how the process ended.
func (c *child) once(ctx context.Context) (string, error) {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("log file: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	pid := cmd.Process.Pid
	c.mu.Lock()
	c.pid = pid
	c.mu.Unlock()
	c.onStart(pid)

	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
		_ = signalGroup(pid, sigTerm)
		select {
		case <-waited:
		case <-time.After(c.grace):
			_ = signalGroup(pid, sigKill)
			<-waited
		}
	}
	// Nothing of this process may outlive it: a node does not fork, but
	// its process group is ours to clean.
	_ = signalGroup(pid, sigKill)
	c.mu.Lock()
	c.pid = 0
	c.mu.Unlock()
	return describeExit(cmd.ProcessState), nil
}

// errNotRunning is returned by signal when no process runs.
var errNotRunning = errors.New("not running")

// signal sends sig to the running process's group and returns its pid.
func (c *child) signal(sig signal) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid == 0 {
		return 0, errNotRunning
	}
	return c.pid, signalGroup(c.pid, sig)
}

// PID is the running process's id, 0 when none.
func (c *child) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}
