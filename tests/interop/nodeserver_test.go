package interop_test

import (
	"bufio"
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

// serverStartTimeout bounds how long a node-opcua server may take to print
// its ready line: loading the standard nodeset and making a self-signed
// certificate take about 3 s on an idle 2-core machine.
const serverStartTimeout = 60 * time.Second

// interopDir is tests/interop, where server.mjs and node_modules live.
func interopDir() string { return filepath.Join(procs.RepoRoot(), "tests", "interop") }

// requireNode fails the test, saying what to install, when node or one of
// the npm packages server.mjs imports is missing.
func requireNode(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: install Node.js (Debian: apt-get install nodejs npm), then run `npm ci` in tests/interop; scripts/test.sh does both: %v", err)
	}
	for _, pkg := range []string{"node-opcua-server", "node-opcua-certificate-manager", "node-opcua-client"} {
		if _, err := os.Stat(filepath.Join(interopDir(), "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("npm package %s is not installed: run `npm ci` in tests/interop (scripts/test.sh does): %v", pkg, err)
		}
	}
}

// nodeServer is one `node server.mjs` process: a node-opcua OPC UA server.
type nodeServer struct {
	URI   string // its ApplicationUri
	URL   string // opc.tcp://127.0.0.1:port
	Level int    // the ServiceLevel it publishes

	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	ready   chan string   // the URL of the ready line
	done    chan struct{} // closed once the process has exited
	logPath string        // stdout and stderr of node
	mu      sync.Mutex    // guards exitErr
	exitErr error
}

// launchNodeServer starts `node server.mjs PORT URI LEVEL PKI` on a fresh
// loopback port without waiting for it; call waitReady. The process is
// killed when the test ends; its output is logged if the test failed.
func launchNodeServer(t testing.TB, uri string, level int) *nodeServer {
	t.Helper()
	requireNode(t)
	port := procs.UniquePort(t)
	dir := t.TempDir()
	s := &nodeServer{
		URI: uri, URL: fmt.Sprintf("opc.tcp://127.0.0.1:%d", port), Level: level, t: t,
		ready: make(chan string, 1), done: make(chan struct{}),
		logPath: filepath.Join(dir, "node.log"),
	}
	logf, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command("node", "server.mjs", fmt.Sprint(port), uri, fmt.Sprint(level), filepath.Join(dir, "pki"))
	s.cmd.Dir = interopDir()
	s.cmd.Stderr = logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// stdin stays open for the server's life: when this test binary dies,
	// it closes and server.mjs exits on its own.
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start node server.mjs: %v", err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if url, ok := strings.CutPrefix(line, "ready "); ok {
				select {
				case s.ready <- url:
				default:
				}
			}
			fmt.Fprintln(logf, "stdout:", line)
		}
	}()
	go func() {
		<-copied
		err := s.cmd.Wait()
		logf.Close()
		s.mu.Lock()
		s.exitErr = err
		s.mu.Unlock()
		close(s.done)
	}()
	t.Cleanup(s.cleanup)
	return s
}

// waitReady waits for the ready line and checks that it names s.URL.
func (s *nodeServer) waitReady() {
	s.t.Helper()
	select {
	case url := <-s.ready:
		if url != s.URL {
			s.t.Fatalf("server.mjs %s announced %q, want %q", s.URI, url, s.URL)
		}
	case <-s.done:
		s.t.Fatalf("server.mjs %s exited before it was ready (%v):\n%s", s.URI, s.exit(), s.log())
	case <-time.After(serverStartTimeout):
		s.t.Fatalf("server.mjs %s not ready within %v:\n%s", s.URI, serverStartTimeout, s.log())
	}
}

// startNodeServers launches one server per URI with the given levels and
// waits until all of them are ready.
func startNodeServers(t testing.TB, uris []string, levels []int) []*nodeServer {
	t.Helper()
	out := make([]*nodeServer, len(uris))
	for i := range uris {
		out[i] = launchNodeServer(t, uris[i], levels[i])
	}
	for _, s := range out {
		s.waitReady()
	}
	return out
}

// Kill SIGKILLs the node process (a real process death: the OS closes its
// sockets, nothing is said on the wire) and waits until it has exited.
func (s *nodeServer) Kill() {
	s.t.Helper()
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		s.t.Fatalf("SIGKILL server.mjs %s: %v", s.URI, err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("server.mjs %s still running 10 s after SIGKILL", s.URI)
	}
}

func (s *nodeServer) exit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitErr
}

func (s *nodeServer) log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

func (s *nodeServer) cleanup() {
	select {
	case <-s.done:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	}
	_ = s.stdin.Close()
	if s.t.Failed() {
		s.t.Logf("--- output of server.mjs %s (%s) ---\n%s", s.URI, s.URL, s.log())
	}
}
