package clientproc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// TestClientProcEndsWithoutServer: a subscribe with no server listening
// ends with exit 1 and prints no line; LineOrEnd reports the end rather
// than waiting out its deadline, and stderr says why.
func TestClientProcEndsWithoutServer(t *testing.T) {
	url := fmt.Sprintf("opc.tcp://127.0.0.1:%d", procs.UniquePort(t))
	p := Start(t, "subscribe", "i=2267", "-u", url, "--json", "--timeout", "2s")
	if l, ok := p.LineOrEnd(30*time.Second, 0, "the end"); ok {
		t.Fatalf("a line with no server listening: %s", l)
	}
	code, err := p.WaitExit(0)
	if code != 1 || err == nil {
		t.Fatalf("exit %d (%v), want 1", code, err)
	}
	if p.Exited() == "" || p.Next() != 0 || !strings.Contains(p.Stderr(), "reachable") {
		t.Fatalf("exited %q, %d lines, stderr %q; want an exit, no line, no reachable server", p.Exited(), p.Next(), p.Stderr())
	}
}

// TestClientRunUsageError: Run reports the exit code of a usage error (2)
// and its stderr.
func TestClientRunUsageError(t *testing.T) {
	r := Run(t, 30*time.Second, "read")
	if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, "arg") {
		t.Fatalf("want exit 2 and a usage message:\n%s", r)
	}
}
