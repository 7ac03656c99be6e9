package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
)

// binary is the otopcua executable built once by TestMain.
var binary string

const testVersion = "test-1.2.3"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "otopcua-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "otopcua")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(goTool, "build", "-o", binary, "-ldflags", "-X main.version="+testVersion+" -X main.commit=abc123", ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the test's environment without OTOPCUA_ variables.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTOPCUA_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runBinary runs the built binary and returns its exit code and combined output.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, ""
}

const (
	nodeA = "../../examples/pair/node-a.appsettings.json"
	nodeB = "../../examples/pair/node-b.appsettings.json"
)

func TestBinaryVersion(t *testing.T) {
	code, out := runBinary(t, cleanEnv(), "version")
	if code != 0 || !strings.HasPrefix(out, "otopcua "+testVersion+" (commit abc123, go") {
		t.Fatalf("version: exit %d, output %q", code, out)
	}
}

func TestBinaryConfigCheckExamples(t *testing.T) {
	for _, tc := range []struct{ file, node string }{{nodeA, "node=127.0.0.1:4053"}, {nodeB, "node=127.0.0.1:4054"}} {
		code, out := runBinary(t, cleanEnv(), "config", "check", tc.file)
		if code != 0 || !strings.HasPrefix(out, "ok: "+tc.node) {
			t.Errorf("config check %s: exit %d, output %q", tc.file, code, out)
		}
		if strings.Contains(out, "warning:") {
			t.Errorf("config check %s warns: %q", tc.file, out)
		}
	}
}

func TestBinaryConfigCheckReportsEveryProblem(t *testing.T) {
	code, out := runBinary(t, cleanEnv(), "config", "check", "testdata/bad.appsettings.json")
	if code != 2 {
		t.Fatalf("exit %d, want 2; output %q", code, out)
	}
	for _, want := range []string{
		"testdata/bad.appsettings.json: 3 problems",
		`Cluster:SeedNode = ["127.0.0.1:4053"]: unknown key (did you mean Cluster:SeedNodes?)`,
		`Cluster:SplitBrainResolverStrategy = "keep-newest": accepted values are auto-down, keep-oldest, keep-majority, static-quorum, lease-majority`,
		`OpcUa:Port = "70000": accepted values are 1..65535`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBinaryConfigCheckSyntaxError(t *testing.T) {
	code, out := runBinary(t, cleanEnv(), "config", "check", "testdata/syntax.appsettings.json")
	if code != 2 || !strings.Contains(out, "testdata/syntax.appsettings.json:5:11:") {
		t.Fatalf("exit %d, output %q; want 2 and file:line:column", code, out)
	}
}

func TestBinaryConfigCheckAppliesEnvironment(t *testing.T) {
	env := cleanEnv("OTOPCUA_OPCUA__PORT=4053")
	code, out := runBinary(t, env, "config", "check", nodeA)
	if code != 2 || !strings.Contains(out, `OpcUa:Port = "4053" (from OTOPCUA_OPCUA__PORT): accepted values are ports not already used by Cluster:Port`) {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if code, out := runBinary(t, env, "config", "check", "--ignore-env", nodeA); code != 0 {
		t.Fatalf("--ignore-env: exit %d, output %q", code, out)
	}
}

func TestBinaryUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"config", "check"},
		{"config", "check", "a.json", "b.json"},
		{"config", "frobnicate"},
		{"frobnicate"},
		{"host", "--no-such-flag"},
		{"version", "extra"},
	} {
		code, out := runBinary(t, cleanEnv(), args...)
		if code != 2 || !strings.Contains(out, "otopcua --help") {
			t.Errorf("%v: exit %d, output %q; want 2 and a usage hint", args, code, out)
		}
	}
	if code, out := runBinary(t, cleanEnv(), "config", "check", "testdata/missing.json"); code != 2 || !strings.Contains(out, "no such file") {
		t.Errorf("missing file: exit %d, output %q", code, out)
	}
}

func TestBinaryHostRejectsInvalidConfig(t *testing.T) {
	code, out := runBinary(t, cleanEnv(), "host", "--config", "testdata/bad.appsettings.json")
	if code != 2 || !strings.Contains(out, `Cluster:SplitBrainResolverStrategy = "keep-newest"`) || !strings.Contains(out, `OpcUa:Port = "70000"`) {
		t.Fatalf("exit %d, output %q", code, out)
	}
	code, out = runBinary(t, cleanEnv(), "host", "--config", "testdata/missing.json")
	if code != 2 || !strings.Contains(out, "missing.json") {
		t.Fatalf("missing --config: exit %d, output %q", code, out)
	}
}

// The tests below run the command in-process: they replace runHost.

func withRunHost(t *testing.T, f func(ctx context.Context, cfg *config.Config, logger *slog.Logger) error) {
	t.Helper()
	old := runHost
	runHost = f
	t.Cleanup(func() { runHost = old })
}

func TestHostStopsGracefullyOnSIGTERM(t *testing.T) {
	var got *config.Config
	cancelled := false
	withRunHost(t, func(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
		got = cfg
		logger.Info("host running")
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			cancelled = true
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("context not cancelled by SIGTERM")
		}
	})
	var stdout, stderr bytes.Buffer
	code := run([]string{"host", "--config", nodeB}, &stdout, &stderr, []string{"OTOPCUA_TELEMETRY__LOGFORMAT=text"})
	if code != 0 || !cancelled {
		t.Fatalf("exit %d cancelled=%v; stderr:\n%s", code, cancelled, stderr.String())
	}
	if got == nil || got.Cluster.Port != 4054 || got.Telemetry.LogFormat != "text" {
		t.Fatalf("runHost got config %+v", got)
	}
	logs := stderr.String()
	for _, want := range []string{`level=INFO msg="otopcua starting"`, "node=127.0.0.1:4054", `msg="host running"`, `msg="otopcua stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

func TestHostErrorExitsOne(t *testing.T) {
	withRunHost(t, func(context.Context, *config.Config, *slog.Logger) error {
		return errors.New("config db unreachable at start-up")
	})
	var stdout, stderr bytes.Buffer
	code := run([]string{"host", "--config", nodeA}, &stdout, &stderr, nil)
	if code != 1 || !strings.Contains(stderr.String(), "config db unreachable at start-up") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestHostWithoutWiringExitsOne(t *testing.T) {
	withRunHost(t, nil)
	var stdout, stderr bytes.Buffer
	code := run([]string{"host", "--config", nodeA}, &stdout, &stderr, nil)
	if code != 1 || !strings.Contains(stderr.String(), "no host wiring") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestHostWithoutConfigFileUsesDefaultsAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var port int
	withRunHost(t, func(_ context.Context, cfg *config.Config, _ *slog.Logger) error {
		port = cfg.OpcUa.Port
		return nil
	})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"host"}, &stdout, &stderr, []string{"OTOPCUA_OPCUA__PORT=4999"}); code != 0 || port != 4999 {
		t.Fatalf("exit %d port %d, stderr %q", code, port, stderr.String())
	}
}

// binaryRun is one finished run of the built otopcua binary.
type binaryRun struct {
	code           int
	stdout, stderr string
}

// runCommand runs the built binary with args, env as its whole
// environment and stdin as its standard input, for at most 60 s; a run
// that cannot start or times out fails the test.
func runCommand(t *testing.T, env []string, stdin string, args ...string) binaryRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := binaryRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.code = ee.ExitCode()
	default:
		t.Fatalf("otopcua %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, r.stdout, r.stderr)
	}
	return r
}
