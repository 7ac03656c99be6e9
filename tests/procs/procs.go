// Package procs runs real `otopcua` processes for multi-process tests: it
// builds the binary once, hands out free loopback ports, starts nodes with a
// generated appsettings.json, signals them (SIGKILL, SIGSTOP, SIGTERM) and
// polls with deadlines instead of sleeping.
//
// Every process a test starts is killed when the test ends.
package procs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/internal/ports"
)

// build is one build of ./cmd/otopcua, made once per test binary.
type build struct {
	once sync.Once
	path string
	err  error
}

var raceBuild, plainBuild build

// Binary builds ./cmd/otopcua once per test binary and returns its path.
// With -race in the test build, the binary is built with -race too.
func Binary(t testing.TB) string { return raceBuild.get(t, raceEnabled) }

// PlainBinary builds ./cmd/otopcua once per test binary without the race
// detector, also when the caller is built with -race (what a measurement
// runs: the binary as shipped), and returns its path.
func PlainBinary(t testing.TB) string { return plainBuild.get(t, false) }

// get builds the binary the first time (with -race when race) and fails
// t, then and on every later call, when the build failed.
func (b *build) get(t testing.TB, race bool) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "otopcua-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "otopcua")
		args := []string{"build", "-o", b.path}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/otopcua")...)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// RepoRoot returns the repository's top folder.
func RepoRoot() string { return repoRoot() }

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the kernel's ephemeral range (internal/ports says why).
func FreePort(t testing.TB) int {
	t.Helper()
	ps, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// CheckFor calls fn every `every` until it returns nil or total has passed;
// then the test fails with fn's last error. It is poll.CheckFor, named here
// so that the drills read procs.CheckFor beside the other process helpers.
func CheckFor(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	poll.CheckFor(t, total, every, fn)
}

// Node is one `otopcua host` process.
type Node struct {
	Name     string
	Config   map[string]any // the appsettings.json it was started with
	OpcPort  int
	HTTPPort int
	Env      []string
	// Token, when set, is sent as Authorization: Bearer on the node's
	// HTTP requests (Get, Post, Members): an API token from AddUser.
	Token string

	t       testing.TB
	bin     string       // the otopcua binary; "": Binary(t)
	wrap    []string     // command prefix, e.g. ip netns exec NS
	client  *http.Client // nil: http.DefaultClient
	quiet   bool         // Options.Quiet
	dir     string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	exit    *os.ProcessState
	mu      sync.Mutex
}

// Ports are a node's ports.
type Ports struct{ Cluster, OpcUa, HTTP int }

// NewPortSet picks the ports of n nodes (NewPorts n times).
func NewPortSet(t testing.TB, n int) []Ports {
	t.Helper()
	out := make([]Ports, n)
	for i := range out {
		out[i] = NewPorts(t)
	}
	return out
}

// NewPorts picks three free ports that no earlier call in this process
// returned (see UniquePort).
func NewPorts(t testing.TB) Ports {
	t.Helper()
	return Ports{Cluster: UniquePort(t), OpcUa: UniquePort(t), HTTP: UniquePort(t)}
}

// BaseConfig is a loopback appsettings.json for a node with the given
// ports. Anonymous OPC UA sessions get every right (OpcUa:Authorization),
// so that the tests' anonymous clients may write and acknowledge; tests of
// the rights set their own. Http:AnonymousRead is on: the rigs read
// /api/cluster/members, /api/deployment, /alerts … without a user, as a
// lab would; a test of the HTTP port's guards sets it to false and reads
// with a Viewer's token (Node.Token, AddUser).
func BaseConfig(name string, p Ports) map[string]any {
	return map[string]any{
		"Cluster": map[string]any{
			"Hostname": "127.0.0.1", "PublicHostname": "127.0.0.1", "Port": p.Cluster,
			"SeedNodes": []string{fmt.Sprintf("127.0.0.1:%d", p.Cluster)},
			"Roles":     []string{"admin", "driver"},
		},
		"Node": map[string]any{"ClusterId": "test"},
		"OpcUa": map[string]any{"Port": p.OpcUa, "ApplicationUri": "urn:" + name + ":otopcua", "ApplicationName": "otopcua " + name,
			// The test rig's clients write and acknowledge anonymously; a
			// node's default gives anonymous sessions read only.
			"Authorization": map[string]any{"Anonymous": []string{"read", "write", "acknowledge", "call"}}},
		"Http":      map[string]any{"Hostname": "127.0.0.1", "Port": p.HTTP, "AnonymousRead": true},
		"Telemetry": map[string]any{"LogLevel": "debug", "LogFormat": "json"},
	}
}

// Start writes cfg to a temp dir and starts `otopcua host --config` there.
func Start(t testing.TB, name string, cfg map[string]any, env ...string) *Node {
	t.Helper()
	return StartWith(t, name, cfg, Options{Env: env})
}

// Options are the less common ways to start a node.
type Options struct {
	// Env is added to the process environment.
	Env []string
	// Wrap prefixes the command line, e.g. {"ip", "netns", "exec", NS} to
	// run the node on a test host. The prefix must exec the binary (not
	// fork it), so that signals reach the node itself.
	Wrap []string
	// Client makes the node's HTTP requests (Get, Post, WaitReady,
	// Members); nil means http.DefaultClient. A node on a test host needs a
	// client that dials inside its namespace.
	Client *http.Client
	// Binary is the otopcua executable to run; "" means Binary(t) (built
	// with -race when the test is). A harness that measures the product as
	// shipped builds its own without the race detector.
	Binary string
	// Dir is the node's directory (its appsettings.json, its working
	// directory and one log file per process start); "" means a new
	// t.TempDir(). A directory the caller made outlives the test, so a
	// long run can keep its logs for the engineer who reads a failure.
	Dir string
	// Quiet: when the test fails, do not print the node's log (a long run
	// prints where its logs are instead of megabytes of them).
	Quiet bool
}

// StartWith is Start with Options.
func StartWith(t testing.TB, name string, cfg map[string]any, o Options) *Node {
	t.Helper()
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	n := &Node{Name: name, Config: cfg, Env: o.Env, t: t, dir: dir, wrap: o.Wrap, client: o.Client, bin: o.Binary, quiet: o.Quiet}
	n.OpcPort = intAt(cfg, "OpcUa", "Port")
	n.HTTPPort = intAt(cfg, "Http", "Port")
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "appsettings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	n.start()
	t.Cleanup(n.cleanup)
	return n
}

func intAt(cfg map[string]any, section, key string) int {
	if s, ok := cfg[section].(map[string]any); ok {
		if v, ok := s[key].(int); ok {
			return v
		}
	}
	return 0
}

func (n *Node) start() {
	n.t.Helper()
	logPath := filepath.Join(n.dir, fmt.Sprintf("%s-%d.log", n.Name, time.Now().UnixNano()))
	logf, err := os.Create(logPath)
	if err != nil {
		n.t.Fatal(err)
	}
	bin := n.bin
	if bin == "" {
		bin = Binary(n.t)
	}
	argv := append(append([]string{}, n.wrap...), bin, "host", "--config", filepath.Join(n.dir, "appsettings.json"))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), n.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	done := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.done, n.exit, n.logPath = cmd, done, nil, logPath
	n.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.exit = cmd.ProcessState
		n.mu.Unlock()
		close(done)
	}()
}

// Restart starts the node again at the same ports and config after it exited.
func (n *Node) Restart() {
	n.t.Helper()
	n.WaitExit(30 * time.Second)
	n.start()
}

// RestartWith starts the node again, after it exited, at the same ports,
// with the same config and directory, from the otopcua binary bin from now
// on (Restart too): an upgrade in place, the new binary finding the files
// the old one left.
func (n *Node) RestartWith(bin string) {
	n.t.Helper()
	n.WaitExit(30 * time.Second)
	n.bin = bin
	n.start()
}

// Done is closed when the current process has exited; a Restart starts a
// new process with a new channel.
func (n *Node) Done() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.done
}

// LogPath is the log file of the current process (each start has its
// own, in the node's directory).
func (n *Node) LogPath() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.logPath
}

// PID returns the current process id.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd.Process.Pid
}

// Signal sends sig to the node's process.
func (n *Node) Signal(sig syscall.Signal) {
	n.t.Helper()
	if err := syscall.Kill(n.PID(), sig); err != nil {
		n.t.Fatalf("%s: kill %v: %v", n.Name, sig, err)
	}
}

// WaitExit waits for the process to exit and returns its exit code (-1 when
// killed by a signal).
func (n *Node) WaitExit(total time.Duration) int {
	n.t.Helper()
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
	case <-time.After(total):
		n.t.Fatalf("%s did not exit within %v\n%s", n.Name, total, n.Log())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exit.ExitCode()
}

// Alive reports whether the process is still running.
func (n *Node) Alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Log returns everything the node has logged so far.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.LogPath())
	return string(b)
}

// Endpoint is the node's OPC UA endpoint URL.
func (n *Node) Endpoint() string { return fmt.Sprintf("opc.tcp://127.0.0.1:%d", n.OpcPort) }

// HTTP is the base URL of the node's HTTP port.
func (n *Node) HTTP() string { return fmt.Sprintf("http://127.0.0.1:%d", n.HTTPPort) }

// WaitReady polls /readyz, leaving out the cluster and Config DB checks,
// until it answers 200: the node's OPC UA endpoint listens. Drills start
// nodes that cannot join yet or whose Config DB is down; WaitFullyReady
// waits for every check.
func (n *Node) WaitReady(total time.Duration) {
	n.t.Helper()
	n.waitReadyz(total, "/readyz?exclude=cluster&exclude=configdb")
}

// WaitFullyReady polls /readyz until every check passes: OPC UA listens,
// the node is an Up member and its Config DB answers.
func (n *Node) WaitFullyReady(total time.Duration) {
	n.t.Helper()
	n.waitReadyz(total, "/readyz")
}

func (n *Node) waitReadyz(total time.Duration, path string) {
	n.t.Helper()
	CheckFor(n.t, total, 50*time.Millisecond, func() error {
		if !n.Alive() {
			n.t.Fatalf("%s exited before it was ready:\n%s", n.Name, n.Log())
		}
		resp, err := n.httpClient().Get(n.HTTP() + path)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %s", n.Name, path, resp.Status, body)
		}
		return nil
	})
}

// Post sends an empty POST to path on the node's HTTP port and returns the body.
func (n *Node) Post(path string) (string, error) {
	return n.do(http.MethodPost, path)
}

// Get fetches path on the node's HTTP port.
func (n *Node) Get(path string) (string, error) {
	return n.do(http.MethodGet, path)
}

func (n *Node) do(method, path string) (string, error) {
	req, err := http.NewRequest(method, n.HTTP()+path, nil)
	if err != nil {
		return "", err
	}
	setToken(req, n.Token)
	resp, err := n.httpClient().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return buf.String(), fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, buf.String())
	}
	return buf.String(), nil
}

// setToken adds token as Authorization: Bearer; none when token is "".
func setToken(req *http.Request, token string) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

func (n *Node) httpClient() *http.Client {
	if n.client != nil {
		return n.client
	}
	return http.DefaultClient
}

// Exited reports the exit code (-1 when killed by a signal) and true once
// the process has exited, without waiting.
func (n *Node) Exited() (int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.done:
		return n.exit.ExitCode(), true
	default:
		return 0, false
	}
}

// Holds calls fn every `every` for total and fails the test as soon as fn
// returns an error: it asserts that something stays true for a while (a
// node keeps waiting, nobody is downed). It is poll.Holds; see CheckFor.
func Holds(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	poll.Holds(t, total, every, fn)
}

func (n *Node) cleanup() {
	if n.Alive() {
		_ = syscall.Kill(-n.PID(), syscall.SIGKILL)
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
		}
	}
	if n.t.Failed() && !n.quiet {
		n.t.Logf("--- log of %s ---\n%s", n.Name, n.Log())
	}
}

// WaitStopped waits until the node's process is in the stopped state ('T'
// in /proc/PID/stat) after a SIGSTOP: kill returns before every thread of
// the process has stopped, and a request the process reads in between is
// served before the freeze.
func (n *Node) WaitStopped(total time.Duration) {
	n.t.Helper()
	pid := n.PID()
	CheckFor(n.t, total, time.Millisecond, func() error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return err
		}
		// The state follows the command name, which is in parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			return fmt.Errorf("unreadable /proc/%d/stat: %q", pid, s)
		}
		if st := s[i+2]; st != 'T' && st != 't' {
			return fmt.Errorf("%s (pid %d) in state %c, not stopped", n.Name, pid, st)
		}
		return nil
	})
}
