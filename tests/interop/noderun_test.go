package interop_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// nodeScript is a running `node <script> <args>` of tests/interop that
// prints one JSON object per line; closing Stdin asks it to finish.
type nodeScript struct {
	t      *testing.T
	cmd    *exec.Cmd
	Stdin  io.WriteCloser
	lines  chan []byte
	stderr string
}

// startNodeScript starts script in tests/interop; it is killed when the
// test ends.
func startNodeScript(t *testing.T, script string, args ...string) *nodeScript {
	t.Helper()
	dir := filepath.Join(procs.RepoRoot(), "tests", "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-opcua-client")); err != nil {
		t.Fatalf("node-opcua-client is not installed (scripts/test.sh runs `npm ci` in tests/interop): %v", err)
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.CreateTemp(t.TempDir(), "node-stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &nodeScript{t: t, cmd: cmd, Stdin: stdin, lines: make(chan []byte, 64), stderr: stderr.Name()}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(s.lines)
	}()
	return s
}

// next decodes the script's next JSON line into v, failing the test when
// the script ended, reported an error, or said nothing for 30 s.
func (s *nodeScript) next(what string, v any) {
	s.t.Helper()
	for {
		select {
		case b, ok := <-s.lines:
			if !ok {
				e, _ := os.ReadFile(s.stderr)
				s.t.Fatalf("node client ended while waiting for %s; stderr:\n%s", what, e)
			}
			var head struct {
				Event, Message string
			}
			if json.Unmarshal(b, &head) != nil {
				continue // not a JSON line
			}
			if head.Event == "error" {
				s.t.Fatalf("node client error while waiting for %s: %s", what, head.Message)
			}
			if err := json.Unmarshal(b, v); err != nil {
				s.t.Fatalf("node client line %s: %v", b, err)
			}
			return
		case <-time.After(30 * time.Second):
			s.t.Fatalf("no %s from the node client in 30 s", what)
		}
	}
}

// Wait waits for the script to exit (after it printed its last line) and
// returns its exit error.
func (s *nodeScript) Wait() error { return s.cmd.Wait() }
