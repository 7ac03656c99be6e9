package nodescript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// Upstream is one `node upstream.mjs` process (tests/interop/upstream.mjs:
// an upstream device for the opcua driver) on a fixed port; Restart
// starts a new process on the same port. Its methods may be called from
// any goroutine.
type Upstream struct {
	t    testing.TB
	opts map[string]any
	URL  string
	dir  string

	mu    sync.Mutex
	lines []string // its stdout, every process start
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	runs  int
}

func interopDir() string { return filepath.Join(procs.RepoRoot(), "tests", "interop") }

// RequireNode fails the test when node or node-opcua-server is missing.
func RequireNode(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed (scripts/test.sh installs it and runs `npm ci` in tests/interop): %v", err)
	}
	if _, err := os.Stat(filepath.Join(interopDir(), "node_modules", "node-opcua-server", "package.json")); err != nil {
		t.Fatalf("node-opcua-server is not installed: run `npm ci` in tests/interop (scripts/test.sh does): %v", err)
	}
}

// StartUpstream starts upstream.mjs with opts (its usage lists them;
// port, uri and pki are added when absent) and waits for its ready line.
// The process is killed when the test ends.
func StartUpstream(t testing.TB, opts map[string]any) *Upstream {
	t.Helper()
	RequireNode(t)
	if opts["port"] == nil {
		opts["port"] = procs.UniquePort(t)
	}
	u := &Upstream{t: t, opts: opts, dir: t.TempDir(), URL: fmt.Sprintf("opc.tcp://127.0.0.1:%v", opts["port"])}
	if opts["uri"] == nil {
		opts["uri"] = fmt.Sprintf("urn:test:upstream:%v", opts["port"])
	}
	if opts["pki"] == nil {
		opts["pki"] = filepath.Join(u.dir, "pki")
	}
	u.start()
	t.Cleanup(func() { u.Kill() })
	return u
}

func (u *Upstream) start() {
	u.t.Helper()
	arg, _ := json.Marshal(u.opts)
	u.mu.Lock()
	u.runs++
	logf, err := os.Create(filepath.Join(u.dir, fmt.Sprintf("node-%d.log", u.runs)))
	u.mu.Unlock()
	if err != nil {
		u.t.Fatal(err)
	}
	cmd := exec.Command("node", "upstream.mjs", string(arg))
	cmd.Dir = interopDir()
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		u.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		u.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		u.t.Fatal(err)
	}
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			line := sc.Text()
			u.mu.Lock()
			u.lines = append(u.lines, line)
			u.mu.Unlock()
			if !once && strings.HasPrefix(line, "ready ") {
				once = true
				close(ready)
			}
		}
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	u.mu.Lock()
	u.cmd, u.stdin, u.done = cmd, stdin, done
	u.mu.Unlock()
	select {
	case <-ready:
	case <-done:
		b, _ := os.ReadFile(logf.Name())
		u.t.Fatalf("upstream.mjs exited before it was ready:\n%s", b)
	case <-time.After(60 * time.Second):
		u.t.Fatal("upstream.mjs not ready in 60 s")
	}
}

// Kill SIGKILLs the process (a crashed device) and waits for it.
func (u *Upstream) Kill() {
	u.mu.Lock()
	cmd, done := u.cmd, u.done
	u.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Restart starts the device again on the same port.
func (u *Upstream) Restart() { u.start() }

// Send writes a command line to its stdin.
func (u *Upstream) Send(cmd string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, err := io.WriteString(u.stdin, cmd+"\n"); err != nil {
		u.t.Fatalf("upstream stdin: %v", err)
	}
}

// Count is the number of stdout lines equal to line.
func (u *Upstream) Count(line string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, l := range u.lines {
		if l == line {
			n++
		}
	}
	return n
}

// PID is the process id of the running process.
func (u *Upstream) PID() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cmd.Process.Pid
}

// Lines returns every stdout line with prefix.
func (u *Upstream) Lines(prefix string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, l := range u.lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// WaitCount waits until line was printed want times (at most 10 s: a
// line printed before the upstream answered may reach us after the
// answer), then checks that it stays want for 300 ms; it fails the test
// otherwise. want 0 checks that the line does not appear for 300 ms.
func (u *Upstream) WaitCount(line string, want int) {
	u.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for u.Count(line) < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if got := u.Count(line); got != want {
		u.t.Fatalf("upstream %s printed %q %d times, want %d", u.URL, line, got, want)
	}
}
