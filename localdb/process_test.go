package localdb

// Tests that need other OS processes: the file opened by a second process,
// a process killed mid-save, and file permissions seen by a user that is
// not root. The helper processes are this test binary again, run with
// OTOPCUA_LOCALDB_HELPER set; POSIX file locks do not conflict within one
// process, so only separate processes show SQLite's real locking.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "OTOPCUA_LOCALDB_HELPER"

// probeResult is what the "probe" helper reports about a path.
type probeResult struct {
	Open, Load, Save string // "ok" or the error text
	Version          int64  // loaded
}

// probe opens path, loads cluster "site-a" and saves a version 99 of it.
func probe(ctx context.Context, path string) probeResult {
	r := probeResult{Open: "ok", Load: "ok", Save: "ok"}
	db, err := Open(ctx, path, nil)
	if err != nil {
		r.Open = err.Error()
		return r
	}
	defer db.Close()
	a, err := db.LoadArtifact(ctx, "site-a")
	if err != nil {
		r.Load = err.Error()
	} else if want := docOf(uint64(a.Version), len(a.Doc)); string(a.Doc) != string(want) {
		r.Load = "the document differs from the one saved"
	}
	r.Version = a.Version
	if err := db.SaveArtifact(ctx, "site-a", 99, docOf(99, 1000)); err != nil {
		r.Save = err.Error()
	}
	return r
}

// TestHelperProcess is the body of the helper processes; it does nothing
// in a normal run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("runs only as a helper process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := os.Getenv("LOCALDB_PATH")
	err := func() error {
		switch mode {
		case "probe":
			return json.NewEncoder(os.Stdout).Encode(probe(ctx, path))
		case "save":
			v, _ := strconv.ParseInt(os.Getenv("LOCALDB_VERSION"), 10, 64)
			db, err := Open(ctx, path, nil)
			if err != nil {
				return err
			}
			defer db.Close()
			return db.SaveArtifact(ctx, "site-a", v, docOf(uint64(v), 3*ChunkSize+int(v)))
		case "apply-loop":
			return applyLoop(ctx, path, os.Getenv("LOCALDB_SOURCE"))
		case "save-loop":
			db, err := Open(ctx, path, nil)
			if err != nil {
				return err
			}
			for v := int64(2); ; v++ {
				if err := db.SaveArtifact(ctx, "site-a", v, docOf(uint64(v), 1<<20+int(v))); err != nil {
					return err
				}
				fmt.Printf("saved %d\n", v)
			}
		}
		return fmt.Errorf("unknown helper mode %q", mode)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helper returns the command of a helper process in mode for path.
func helper(t *testing.T, exe, mode, path string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode, "LOCALDB_PATH=" + path}, env...)...)
	return cmd
}

// lineProc is a started helper process whose stdout is read by lines.
type lineProc struct {
	cmd    *exec.Cmd
	stdout io.Reader
	lines  *bufio.Scanner
	stderr *strings.Builder
}

// startLines starts cmd, its stdout read through lines and its stderr kept.
func startLines(t *testing.T, cmd *exec.Cmd) *lineProc {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &lineProc{cmd: cmd, stdout: stdout, lines: bufio.NewScanner(stdout), stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// kill SIGKILLs the process and reaps it.
func (p *lineProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, p.stdout)
	_ = p.cmd.Wait()
}

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func runProbe(t *testing.T, cmd *exec.Cmd) probeResult {
	t.Helper()
	out, err := cmd.Output()
	if errors.Is(err, syscall.EPERM) && cmd.SysProcAttr != nil {
		t.Skipf("cannot start a process as another user here: %v", err)
	}
	if err != nil {
		t.Fatalf("probe helper: %v: %s", err, out)
	}
	var r probeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("probe helper said %q: %v", out, err)
	}
	return r
}

// A restarted node's process opens the file while the old one still has it
// open: each sees what the other saved.
func TestTwoProcessesOnOneFile(t *testing.T) {
	path := newPath(t)
	db := openT(t, path)
	v1 := docOf(1, 1000)
	saveT(t, db, "site-a", 1, v1)
	// The other process loads version 1, then saves 99.
	r := runProbe(t, helper(t, testExe(t), "probe", path))
	if r.Open != "ok" || r.Load != "ok" || r.Version != 1 || r.Save != "ok" {
		t.Fatalf("the other process: %+v, want it to load version 1 and save 99", r)
	}
	loadT(t, db, "site-a", 99, docOf(99, 1000))
}

// Several processes open one new file at once (the WAL switch takes a lock
// SQLite does not wait for; Open retries it) and each saves: all succeed.
func TestConcurrentFirstOpenAcrossProcesses(t *testing.T) {
	exe := testExe(t)
	const rounds, procs = 8, 3
	for round := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("local-%d.db", round))
		var cmds []*exec.Cmd
		var outs []*strings.Builder
		for p := range procs {
			cmd := helper(t, exe, "save", path, fmt.Sprintf("LOCALDB_VERSION=%d", p+1))
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds, outs = append(cmds, cmd), append(outs, out)
		}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("round %d: process %d: %v: %s", round, i, err, outs[i])
			}
		}
		db := openT(t, path)
		a, err := db.LoadArtifact(ctxT(t), "site-a")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		loadT(t, db, "site-a", a.Version, docOf(uint64(a.Version), 3*ChunkSize+int(a.Version)))
	}
}

// The invariant of doc.go: a process SIGKILLed in the middle of a save
// leaves an artifact that loads whole at the next start — the last one it
// committed (the saver may have committed more than the parent has read
// when the kill lands).
func TestKilledMidSaveLeavesALoadableArtifact(t *testing.T) {
	exe := testExe(t)
	for round := range 5 {
		path := newPath(t)
		first, err := Open(ctxT(t), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		saveT(t, first, "site-a", 1, docOf(1, 1<<20+1))
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		saver := startLines(t, helper(t, exe, "save-loop", path))
		last := int64(1)
		for range round + 1 { // let it commit a few, then kill it mid-save
			if !saver.lines.Scan() {
				t.Fatalf("round %d: the saver stopped: %v %s", round, saver.lines.Err(), saver.stderr.String())
			}
			last, _ = strconv.ParseInt(strings.TrimPrefix(saver.lines.Text(), "saved "), 10, 64)
		}
		saver.kill(t)
		// The node's next start.
		db := openT(t, path)
		a, err := db.LoadArtifact(ctxT(t), "site-a")
		if err != nil {
			t.Fatalf("round %d: after the kill: %v", round, err)
		}
		if a.Version < last {
			t.Fatalf("round %d: loaded version %d, older than %d, which the saver reported committed", round, a.Version, last)
		}
		loadT(t, db, "site-a", a.Version, docOf(uint64(a.Version), 1<<20+int(a.Version)))
		if cv := chunkVersions(t, db, "site-a"); len(cv) != 1 {
			t.Fatalf("round %d: chunks of versions %v, want only version %d's", round, cv, a.Version)
		}
	}
}
