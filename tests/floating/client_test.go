package floating

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// event is one line of tests/interop/floating.mjs, stamped when the test
// read it.
type event struct {
	At      time.Time
	Event   string `json:"event"`
	Value   uint32 `json:"value"`
	Status  string `json:"status"`
	Message string `json:"message"`
	// Session and Subscription are the ids a value arrived on.
	Session      string `json:"session"`
	Subscription uint32 `json:"subscription"`
}

// uaClient is the independent client: node-opcua in the client namespace,
// subscribed to the tag through opc.tcp://FLOATING:4840 with its default
// reconnection; nothing in it knows of redundancy.
type uaClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr string
	// done is closed when the client's stdout ended (it exited).
	done chan struct{}

	mu     sync.Mutex
	events []event // mu must be held.
}

func startClient(t *testing.T, h *netem.Host, addr netip.Addr, args ...string) *uaClient {
	t.Helper()
	dir := filepath.Join(procs.RepoRoot(), "tests", "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-opcua-client")); err != nil {
		t.Fatalf("node-opcua-client is not installed (scripts/test.sh runs `npm ci` in tests/interop): %v", err)
	}
	url := "opc.tcp://" + netip.AddrPortFrom(addr, opcPort).String()
	if addr.Is6() {
		// node-opcua resolves the host of an opc.tcp URL by name and
		// does not take a bracketed IPv6 literal: the client host names
		// the address in its own hosts file (ip netns exec shows
		// /etc/netns/NS/hosts as /etc/hosts inside the namespace).
		url = fmt.Sprintf("opc.tcp://%s:%d", hostsName(t, h, addr), opcPort)
	}
	argv := append(append(h.Wrap(), "node", "floating.mjs", url, namespaceURI, tag), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
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
	done := make(chan struct{})
	c := &uaClient{cmd: cmd, stdin: stdin, stderr: stderr.Name(), done: done}
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			e := event{At: time.Now()}
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = c.stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(c.stderr)
			t.Logf("--- node client: %s\nstderr:\n%s", c.summary(time.Time{}), b)
		}
	})
	return c
}

// since returns the events read at or after from.
func (c *uaClient) since(from time.Time) []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event
	for _, e := range c.events {
		if !e.At.Before(from) {
			out = append(out, e)
		}
	}
	return out
}

// firstValueAbove is the first Good value above v read at or after from.
func (c *uaClient) firstValueAbove(v uint32, from time.Time) (event, bool) {
	for _, e := range c.since(from) {
		if e.Event == "error" {
			return e, false
		}
		if e.Event == "value" && e.Status == "Good" && e.Value > v {
			return e, true
		}
	}
	return event{}, false
}

// waitValueAbove waits until the client received a Good value above v
// (one the device held only after from) and returns it.
func (c *uaClient) waitValueAbove(t *testing.T, v uint32, from time.Time, total time.Duration) event {
	t.Helper()
	var got event
	poll.CheckFor(t, total, 20*time.Millisecond, func() error {
		if !c.running() {
			t.Fatalf("the node client exited: %s", c.summary(from))
		}
		e, ok := c.firstValueAbove(v, from)
		if !ok {
			return fmt.Errorf("no value above %d since %s: %s", v, from.Format("15:04:05.000"), c.summary(from))
		}
		got = e
		return nil
	})
	return got
}

func (c *uaClient) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// summary is the client's events since from, values folded, for messages.
func (c *uaClient) summary(from time.Time) string {
	var out []string
	values, last := 0, uint32(0)
	flush := func() {
		if values > 0 {
			out = append(out, fmt.Sprintf("%d values (last %d)", values, last))
			values = 0
		}
	}
	for _, e := range c.since(from) {
		if e.Event == "value" {
			values, last = values+1, e.Value
			continue
		}
		flush()
		s := e.At.Format("15:04:05.000") + " " + e.Event
		if e.Message != "" {
			s += ": " + e.Message
		}
		out = append(out, s)
	}
	flush()
	return strings.Join(out, "; ")
}

// hostsName gives addr a name in h's own hosts file and returns it; the
// file is removed when the test ends.
func hostsName(t *testing.T, h *netem.Host, addr netip.Addr) string {
	t.Helper()
	const name = "floating-address"
	dir := filepath.Join("/etc/netns", h.NS)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("127.0.0.1 localhost\n"+addr.String()+" "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}
