//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// demoOutput collects the demo's stdout line by line.
type demoOutput struct {
	mu    sync.Mutex
	lines []string
	next  chan string
}

func (o *demoOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

var (
	rowRe     = regexp.MustCompile(`^(a|b)\s+(\d+|-)\s+(\S+)\s+(.+?)\s+(\d+|-)\s+opc\.tcp://`)
	startedRe = regexp.MustCompile(` (a|b) started \(pid (\d+)\)$`)
	killRe    = regexp.MustCompile(` SIGKILL to Primary (a|b) \(pid (\d+)\)$`)
	movedRe   = regexp.MustCompile(` Primary moved from (a|b) to (a|b) after (\d+\.\d) s$`)
)

// other is the demo's node that is not name.
func other(name string) string {
	if name == "a" {
		return "b"
	}
	return "a"
}

// table is one printed rendering of the live table: node → ServiceLevel,
// node + " member" → its MEMBER column (from GET /api/cluster/members,
// read with the demo Viewer's token).
type table map[string]string

// TestDemoFailoverAndCleanStop runs `otopcua demo --kill-primary-after 5s`
// as a user would (stdout not a terminal), and checks what it prints: a
// table with a healthy Primary (250) and Secondary (240), the SIGKILL of
// the Primary, the failover line naming the other node, the killed node
// restarted by the demo and back at 240 beside the new Primary at 250;
// then SIGINT stops everything and no process the demo started is left.
func TestDemoFailoverAndCleanStop(t *testing.T) {
	cmd := exec.Command(binary, "demo", "--kill-primary-after", "5s")
	cmd.Env = os.Environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &demoOutput{next: make(chan string, 4096)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.mu.Lock()
			out.lines = append(out.lines, sc.Text())
			out.mu.Unlock()
			out.next <- sc.Text()
		}
		close(out.next)
	}()
	var pids []int
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		for _, p := range procs.LiveDescendants(pids...) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("demo output:\n%s\nstderr:\n%s", out, stderr.String())
		}
	})

	// wait reads lines until match says the step is done.
	var cur table
	wait := func(what string, total time.Duration, match func(line string, tbl table) bool) {
		t.Helper()
		deadline := time.After(total)
		for {
			select {
			case line, ok := <-out.next:
				if !ok {
					t.Fatalf("the demo ended before %s", what)
				}
				if strings.Contains(line, "\x1b[") {
					t.Fatalf("ANSI escape in output that is not a terminal: %q", line)
				}
				if m := startedRe.FindStringSubmatch(line); m != nil {
					pid, _ := strconv.Atoi(m[2])
					pids = append(pids, pid)
				}
				var done table
				switch {
				case strings.HasPrefix(line, "NODE "):
					cur = table{}
				case cur != nil && rowRe.MatchString(line):
					m := rowRe.FindStringSubmatch(line)
					cur[m[1]], cur[m[1]+" member"] = m[5], m[3]
				case cur != nil && strings.HasPrefix(line, "Primary:"):
					done, cur = cur, nil
				}
				if match(line, done) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within %v", what, total)
			}
		}
	}
	healthy := func(tbl table) (primary string, ok bool) {
		switch {
		case tbl["a member"] != "Up" || tbl["b member"] != "Up":
			return "", false
		case tbl["a"] == "250" && tbl["b"] == "240":
			return "a", true
		case tbl["b"] == "250" && tbl["a"] == "240":
			return "b", true
		}
		return "", false
	}

	var primary string
	wait("table with ServiceLevels 250 and 240", 90*time.Second, func(line string, tbl table) bool {
		if killRe.MatchString(line) {
			t.Fatalf("the demo killed the Primary before it printed a healthy table: %q", line)
		}
		p, ok := healthy(tbl)
		primary = p
		return ok
	})
	// The writes: denied through the Secondary in optimistic mode,
	// forwarded and landed once it runs forward mode, landed through the
	// Primary; all before the kill.
	for _, w := range []struct{ what, want string }{
		{"optimistic denial through the Secondary", "through " + other(primary) + " (the Secondary, in optimistic mode): answered Good, then reverted to 50"},
		{"the Secondary switched to forward mode", "switching " + other(primary) + " to OpcUa:WriteMode forward"},
		{"forwarded write through the Secondary", "through " + other(primary) + " (the Secondary, in forward mode): answered Good, forwarded to the Primary, landed on the device once (the tag reads 8)"},
		{"write through the Primary", "through " + primary + " (the Primary): answered Good, landed on the device (the tag reads 60)"},
	} {
		wait(w.what, 90*time.Second, func(line string, _ table) bool {
			if killRe.MatchString(line) || strings.Contains(line, "failed") {
				t.Fatalf("waiting for the %s: %q", w.what, line)
			}
			return strings.Contains(line, w.want)
		})
	}
	var killed string
	wait("SIGKILL of the Primary", 60*time.Second, func(line string, _ table) bool {
		if m := killRe.FindStringSubmatch(line); m != nil {
			killed = m[1]
			return true
		}
		return false
	})
	if killed != primary {
		t.Fatalf("the demo killed %s, but the table showed %s as Primary (250)", killed, primary)
	}
	var took float64
	wait("failover line", 60*time.Second, func(line string, _ table) bool {
		m := movedRe.FindStringSubmatch(line)
		if m == nil {
			return false
		}
		if m[1] != killed || m[2] == killed {
			t.Fatalf("failover line %q: want a move from the killed Primary %s to the other node", line, killed)
		}
		took, _ = strconv.ParseFloat(m[3], 64)
		return true
	})
	t.Logf("the demo reports the failover after %.1f s", took)
	wait("restart of the killed node", 30*time.Second, func(line string, _ table) bool {
		m := startedRe.FindStringSubmatch(line)
		return m != nil && m[1] == killed
	})
	wait("the restarted node at 240 beside the new Primary at 250", 90*time.Second, func(_ string, tbl table) bool {
		p, ok := healthy(tbl)
		return ok && p != killed
	})

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("demo after SIGINT: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not stop within 30 s of SIGINT")
	}
	if !strings.Contains(out.String(), "stopped: no node process is left") {
		t.Fatal("the demo did not report its stop")
	}
	if len(pids) < 3 {
		t.Fatalf("recorded node pids %v: want both nodes and the restarted one", pids)
	}
	if left := procs.LiveDescendants(append([]int{cmd.Process.Pid}, pids...)...); len(left) > 0 {
		t.Fatalf("processes left after the demo stopped: %+v", left)
	}
}
