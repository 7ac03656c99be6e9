// Package nodescript runs the node-opcua scripts of tests/interop from
// Go tests and benchmarks: Run is one run with its JSON lines back;
// StartUpstream keeps upstream.mjs (an upstream device for the opcua
// driver) running, restartable on its port.
package nodescript

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// Run runs `node <script> <args>` in tests/interop until it exits (at most
// 60 s) and returns its stdout lines. It fails the test when node-opcua is
// not installed, the script fails or it does not finish.
func Run(t *testing.T, script string, args ...string) [][]byte {
	t.Helper()
	dir := filepath.Join(procs.RepoRoot(), "tests", "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-opcua-client")); err != nil {
		t.Fatalf("node-opcua-client is not installed (scripts/test.sh runs `npm ci` in tests/interop): %v", err)
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish in 60 s; stdout:\n%s\nstderr:\n%s", script, out, stderr.String())
	}
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", script, err, out, stderr.String())
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines
}
