package clientproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// poll is how often the waits look at the lines read so far.
const poll = 10 * time.Millisecond

// Proc is one running `otopcua client` whose stdout is read live as
// subscribe lines. Its methods may be called from any goroutine; those
// that fail the test must be called from the test's.
type Proc struct {
	t      testing.TB
	argv   []string // the binary, "client", the arguments
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan struct{} // closed once stdout hit EOF and the process was waited for

	mu      sync.Mutex
	lines   []Line   // every parsed line, in order; mu must be held.
	bad     []string // lines that broke the contract, with why; mu must be held.
	exit    string   // how the process ended, "" while it runs; mu must be held.
	waitErr error    // cmd.Wait's error once done is closed; mu must be held.
}

// Start runs `otopcua client args…` (args[0] is the command, e.g.
// subscribe) in a process group of its own and reads its stdout live. The
// process group is killed when the test ends; if the test failed (or runs
// with -v), the command line, its stderr and every line it printed are
// logged, and a line that broke the JSON contract fails the test.
func Start(t testing.TB, args ...string) *Proc {
	t.Helper()
	return StartEnv(t, nil, args...)
}

// StartEnv is Start with the process environment env (nil: the test's).
func StartEnv(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, argv: append([]string{procs.Binary(t), "client"}, args...), done: make(chan struct{})}
	p.cmd = exec.Command(p.argv[0], p.argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stderr = &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", strings.Join(p.argv, " "), err)
	}
	go func() {
		rerr := ReadLines(stdout, time.Now, p.add, p.addBad)
		werr := p.cmd.Wait() // after the last read, as StdoutPipe requires
		p.mu.Lock()
		p.waitErr = werr
		p.exit = fmt.Sprintf("%v (stdout: %v)", p.cmd.ProcessState, rerr)
		if werr != nil && p.cmd.ProcessState == nil {
			p.exit = werr.Error()
		}
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(p.cleanup)
	return p
}

func (p *Proc) add(l Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.Seq = len(p.lines)
	p.lines = append(p.lines, l)
}

func (p *Proc) addBad(line string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bad = append(p.bad, fmt.Sprintf("%v: %s", err, line))
}

func (p *Proc) cleanup() {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.t.Errorf("the client process %d did not end after SIGKILL", p.cmd.Process.Pid)
		}
	}
	p.mu.Lock()
	bad := p.bad
	p.mu.Unlock()
	if len(bad) > 0 {
		p.t.Errorf("the client printed %d lines that break the JSON contract, first: %s", len(bad), bad[0])
	}
	if p.t.Failed() || testing.Verbose() {
		p.t.Logf("--- %s ---\nstderr:\n%s\nstdout (%s):\n%s", strings.Join(p.argv[1:], " "), p.stderr.String(), p.Exited(), p.Transcript())
	}
}

// Next is the Seq the next line will get: WaitFor(…, p.Next(), …) before
// an action waits for what the client printed after it.
func (p *Proc) Next() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// All are the lines printed so far.
func (p *Proc) All() []Line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Line(nil), p.lines...)
}

// Since are the lines from Seq from on.
func (p *Proc) Since(from int) []Line {
	p.mu.Lock()
	defer p.mu.Unlock()
	if from >= len(p.lines) {
		return nil
	}
	return append([]Line(nil), p.lines[from:]...)
}

// Events are the event lines (every type but Notification) of kind (""
// for all).
func (p *Proc) Events(kind string) []Line {
	var out []Line
	for _, l := range p.All() {
		if l.Type != Notification && (kind == "" || l.Type == kind) {
			out = append(out, l)
		}
	}
	return out
}

// First is the first line from Seq from on that satisfies ok.
func (p *Proc) First(from int, ok func(Line) bool) (Line, bool) {
	for _, l := range p.Since(from) {
		if ok(l) {
			return l, true
		}
	}
	return Line{}, false
}

// WaitFor polls for up to total for a line from Seq from on that
// satisfies ok (described by what), and returns it; it fails the test at
// once when the client exits.
func (p *Proc) WaitFor(total time.Duration, from int, what string, ok func(Line) bool) Line {
	p.t.Helper()
	var got Line
	procs.CheckFor(p.t, total, poll, func() error {
		p.MustLive()
		l, found := p.First(from, ok)
		if !found {
			return fmt.Errorf("the client printed no %s yet; its events: %v", what, p.Events(""))
		}
		got = l
		return nil
	})
	return got
}

// LineAt is the line with Seq seq, waited for up to total; it fails the
// test when the client ends without printing it, or at total.
func (p *Proc) LineAt(total time.Duration, seq int, what string) Line {
	p.t.Helper()
	l, ok := p.LineOrEnd(total, seq, what)
	if !ok {
		p.t.Fatalf("otopcua client ended (%s) while waiting for %s (line %d)", p.Exited(), what, seq)
	}
	return l
}

// LineOrEnd is the line with Seq seq and true, or false once the client
// has ended without printing it; it fails the test when neither happens
// within total.
func (p *Proc) LineOrEnd(total time.Duration, seq int, what string) (Line, bool) {
	p.t.Helper()
	var got Line
	var found bool
	procs.CheckFor(p.t, total, poll, func() error {
		ended := p.ended() // before the lines: none is added once it ended
		p.mu.Lock()
		defer p.mu.Unlock()
		if seq < len(p.lines) {
			got, found = p.lines[seq], true
			return nil
		}
		if ended {
			return nil
		}
		return fmt.Errorf("no %s (line %d) from otopcua client", what, seq)
	})
	return got, found
}

// MustLive fails the test now when the client has exited.
func (p *Proc) MustLive() {
	p.t.Helper()
	if e := p.Exited(); e != "" {
		p.t.Fatalf("the client exited: %s\nstderr:\n%s", e, p.stderr.String())
	}
}

// Signal sends sig to the client process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed once the client has ended and all it printed was read.
func (p *Proc) Done() <-chan struct{} { return p.done }

// WaitExit waits up to total for the client to end and returns its exit
// code (-1 when a signal ended it) and cmd.Wait's error (nil for exit 0);
// it fails the test when the client still runs after total.
func (p *Proc) WaitExit(total time.Duration) (int, error) {
	p.t.Helper()
	if !p.ended() {
		timer := time.NewTimer(total)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			p.t.Fatalf("otopcua %s still runs after %v", strings.Join(p.argv[1:], " "), total)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.ProcessState.ExitCode(), p.waitErr
}

// Exited is how the process ended, "" while it runs.
func (p *Proc) Exited() string {
	if !p.ended() {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

func (p *Proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stderr is what the client wrote to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Transcript is every line printed so far with the time the test read it,
// then the lines that broke the contract.
func (p *Proc) Transcript() string {
	var sb strings.Builder
	for _, l := range p.All() {
		fmt.Fprintf(&sb, "%s %s\n", l.Read.Format("15:04:05.000"), l.Raw)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.bad {
		fmt.Fprintf(&sb, "BAD %s\n", b)
	}
	return sb.String()
}

// lockedBuffer is a bytes.Buffer for a child's stderr, readable while the
// child writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer // mu must be held.
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
