package failover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// This file runs the `otopcua client` CLI for the client drills
// (client_drills_test.go): the real binary as a child process, its
// stdout read live as JSON lines.

// The client's timings as the CLI's contract states them (its flag
// defaults); the drills pass them explicitly where they depend on them.
const (
	preferHold = 5 * time.Second // --prefer-hold
	lostAfter  = 3 * time.Second // --lost-after
)

// CLI line types.
const (
	lineNotification = "notification"
	lineConnected    = "connected"
	lineFailover     = "failover"
	lineLost         = "lost"
)

// cliRef names a server in a CLI event.
type cliRef struct {
	URI string `json:"uri"`
	URL string `json:"url"`
}

// cliLine is one JSON line of `otopcua client subscribe … --json`.
type cliLine struct {
	Seq  int       // its index among the lines that parsed, from 0
	Raw  string    // the line as printed
	Read time.Time // when the test read it
	Type string    // notification, connected, failover, lost
	Time time.Time // "time": when the CLI received it (notification) or decided (event)

	// Notification fields.
	Node            string
	Value           json.RawMessage
	DataType        string
	Status          string
	SourceTimestamp time.Time
	Server          string // ApplicationUri of the server that sent it
	URL             string

	// Event fields.
	From, To    cliRef
	Reason      string
	Interrupted time.Time
	Resumed     time.Time
	FailoverMs  float64
	HasMs       bool // failoverMs was present
	Transferred bool
}

// level is a notification's value as a ServiceLevel byte.
func (l cliLine) level() (byte, bool) {
	var v *float64
	if l.Type != lineNotification || json.Unmarshal(l.Value, &v) != nil || v == nil || *v < 0 || *v > 255 || *v != float64(int(*v)) {
		return 0, false
	}
	return byte(*v), true
}

func (l cliLine) String() string {
	if l.Type == lineNotification {
		return fmt.Sprintf("%s notification %s=%s from %s (read %s)", l.Time.Format("15:04:05.000"), l.Node, l.Value, l.Server, l.Read.Format("15:04:05.000"))
	}
	return fmt.Sprintf("%s %s %s → %s reason %q failoverMs %.1f (read %s)", l.Time.Format("15:04:05.000"), l.Type, l.From.URI, l.To.URI, l.Reason, l.FailoverMs, l.Read.Format("15:04:05.000"))
}

// cliWire is a line as encoded; times are strings so that an empty or
// absent one is the zero time rather than a decoding error.
type cliWire struct {
	Type            string          `json:"type"`
	Time            string          `json:"time"`
	Node            string          `json:"node"`
	Value           json.RawMessage `json:"value"`
	DataType        string          `json:"dataType"`
	Status          string          `json:"status"`
	SourceTimestamp string          `json:"sourceTimestamp"`
	Server          string          `json:"server"`
	URL             string          `json:"url"`
	From            cliRef          `json:"from"`
	To              cliRef          `json:"to"`
	Reason          string          `json:"reason"`
	Interrupted     string          `json:"interrupted"`
	Resumed         string          `json:"resumed"`
	FailoverMs      *float64        `json:"failoverMs"`
	Transferred     bool            `json:"transferred"`
}

// parseCLILine decodes one line against the CLI's contract: a known type,
// an RFC 3339 "time", a notification with a node, a value and a server,
// an event with a "to" server (a "lost" event with a "from" server).
func parseCLILine(b []byte, read time.Time) (cliLine, error) {
	var w cliWire
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return cliLine{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return cliLine{}, errors.New("more than one JSON value on the line")
	}
	l := cliLine{Raw: string(b), Read: read, Type: w.Type, Node: w.Node, Value: w.Value, DataType: w.DataType,
		Status: w.Status, Server: w.Server, URL: w.URL, From: w.From, To: w.To, Reason: w.Reason, Transferred: w.Transferred}
	var err error
	if l.Time, err = parseTime("time", w.Time, true); err != nil {
		return cliLine{}, err
	}
	switch w.Type {
	case lineNotification:
		if w.Node == "" || len(w.Value) == 0 || w.Server == "" {
			return cliLine{}, errors.New("notification without node, value or server")
		}
		if l.SourceTimestamp, err = parseTime("sourceTimestamp", w.SourceTimestamp, false); err != nil {
			return cliLine{}, err
		}
	case lineConnected, lineFailover, lineLost:
		if w.Type == lineLost && w.From.URI == "" && w.From.URL == "" {
			return cliLine{}, errors.New("lost event without a from server")
		}
		if w.Type != lineLost && w.To.URI == "" && w.To.URL == "" {
			return cliLine{}, fmt.Errorf("%s event without a to server", w.Type)
		}
		if l.Interrupted, err = parseTime("interrupted", w.Interrupted, false); err != nil {
			return cliLine{}, err
		}
		if l.Resumed, err = parseTime("resumed", w.Resumed, false); err != nil {
			return cliLine{}, err
		}
		if w.FailoverMs != nil {
			l.FailoverMs, l.HasMs = *w.FailoverMs, true
		}
	default:
		return cliLine{}, fmt.Errorf("unknown type %q", w.Type)
	}
	return l, nil
}

func parseTime(field, s string, required bool) (time.Time, error) {
	if s == "" {
		if required {
			return time.Time{}, fmt.Errorf("no %q", field)
		}
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", field, err)
	}
	return t, nil
}

// readCLILines reads r line by line until EOF or an error: every line that
// parses goes to add, every other non-blank line to bad. now stamps the
// lines. It returns the read error (nil at EOF).
func readCLILines(r io.Reader, now func() time.Time, add func(cliLine), bad func(line string, err error)) error {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes('\n')
		if line := bytes.TrimSpace(b); len(line) > 0 {
			if l, perr := parseCLILine(line, now()); perr != nil {
				bad(string(line), perr)
			} else {
				add(l)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lockedBuffer is a bytes.Buffer for a child's stderr, readable while the
// child writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer // mu must be held.
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// cliClient is one `otopcua client subscribe … --json` process. Its
// methods may be called from any goroutine; those that fail the test must
// be called from the test's.
type cliClient struct {
	t      *testing.T
	argv   []string
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan struct{} // closed once stdout hit EOF and the process was waited for

	mu    sync.Mutex
	lines []cliLine // every parsed line, in order; mu must be held.
	bad   []string  // lines that broke the contract, with why; mu must be held.
	exit  string    // how the process ended; mu must be held.
}

// startCLI runs `otopcua client subscribe args…` and reads its stdout
// live. The process is killed when the test ends; if the test failed (or
// runs with -v), the command line, its stderr and every line it printed
// are logged, and a
// line that broke the JSON contract fails the test.
func startCLI(t *testing.T, args ...string) *cliClient {
	t.Helper()
	c := &cliClient{t: t, argv: append([]string{procs.Binary(t), "client", "subscribe"}, args...), done: make(chan struct{})}
	c.cmd = exec.Command(c.argv[0], c.argv[1:]...)
	c.cmd.Stderr = &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", strings.Join(c.argv, " "), err)
	}
	go func() {
		rerr := readCLILines(stdout, time.Now, c.add, c.addBad)
		werr := c.cmd.Wait() // after the last read, as StdoutPipe requires
		c.mu.Lock()
		c.exit = fmt.Sprintf("%v (stdout: %v)", c.cmd.ProcessState, rerr)
		if werr != nil && c.cmd.ProcessState == nil {
			c.exit = werr.Error()
		}
		c.mu.Unlock()
		close(c.done)
	}()
	t.Cleanup(c.cleanup)
	return c
}

func (c *cliClient) add(l cliLine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.Seq = len(c.lines)
	c.lines = append(c.lines, l)
}

// next is the Seq the next line will get: wait(…, c.next(), …) before an
// action waits for what the client printed after it.
func (c *cliClient) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

func (c *cliClient) addBad(line string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bad = append(c.bad, fmt.Sprintf("%v: %s", err, line))
}

func (c *cliClient) cleanup() {
	select {
	case <-c.done:
	default:
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			c.t.Errorf("the client process %d did not end after SIGKILL", c.cmd.Process.Pid)
		}
	}
	c.mu.Lock()
	bad := c.bad
	c.mu.Unlock()
	if len(bad) > 0 {
		c.t.Errorf("the client printed %d lines that break the JSON contract, first: %s", len(bad), bad[0])
	}
	if c.t.Failed() || testing.Verbose() {
		c.t.Logf("--- %s ---\nstderr:\n%s\nstdout (%s):\n%s", strings.Join(c.argv[1:], " "), c.stderr.String(), c.exited(), c.transcript())
	}
}

// exited is how the process ended, "" while it runs.
func (c *cliClient) exited() string {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.exit
	default:
		return ""
	}
}

// transcript is every line printed so far with the time the test read it.
func (c *cliClient) transcript() string {
	var sb strings.Builder
	for _, l := range c.all() {
		fmt.Fprintf(&sb, "%s %s\n", l.Read.Format("15:04:05.000"), l.Raw)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bad {
		fmt.Fprintf(&sb, "BAD %s\n", b)
	}
	return sb.String()
}

// mustLive fails the test now when the client has exited.
func (c *cliClient) mustLive() {
	c.t.Helper()
	if e := c.exited(); e != "" {
		c.t.Fatalf("the client exited: %s\nstderr:\n%s", e, c.stderr.String())
	}
}

func (c *cliClient) all() []cliLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cliLine(nil), c.lines...)
}

// events are the event lines (every type but notification) of kind ("" for
// all).
func (c *cliClient) events(kind string) []cliLine {
	var out []cliLine
	for _, l := range c.all() {
		if l.Type != lineNotification && (kind == "" || l.Type == kind) {
			out = append(out, l)
		}
	}
	return out
}

// since are the lines from Seq from on.
func (c *cliClient) since(from int) []cliLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from >= len(c.lines) {
		return nil
	}
	return append([]cliLine(nil), c.lines[from:]...)
}

// first is the first line from Seq from on that satisfies ok.
func (c *cliClient) first(from int, ok func(cliLine) bool) (cliLine, bool) {
	for _, l := range c.since(from) {
		if ok(l) {
			return l, true
		}
	}
	return cliLine{}, false
}

// wait polls every 10 ms for up to total for a line from Seq from on that
// satisfies ok, and returns it; it fails the test at once when the client
// exits.
func (c *cliClient) wait(total time.Duration, from int, what string, ok func(cliLine) bool) cliLine {
	c.t.Helper()
	var got cliLine
	procs.CheckFor(c.t, total, 10*time.Millisecond, func() error {
		c.mustLive()
		l, found := c.first(from, ok)
		if !found {
			return fmt.Errorf("the client printed no %s yet; its events: %v", what, c.events(""))
		}
		got = l
		return nil
	})
	return got
}

// isEvent matches an event of kind to the server with ApplicationUri to
// ("" for any).
func isEvent(kind, to string) func(cliLine) bool {
	return func(l cliLine) bool { return l.Type == kind && (to == "" || l.To.URI == to) }
}

// isNote matches a notification from server (ApplicationUri) whose value
// satisfies ok (nil for any).
func isNote(server string, ok func(byte) bool) func(cliLine) bool {
	return func(l cliLine) bool {
		v, isLevel := l.level()
		return l.Type == lineNotification && l.Server == server && (ok == nil || isLevel && ok(v))
	}
}

func levelIs(want byte) func(byte) bool { return func(v byte) bool { return v == want } }

// uriOf is the ApplicationUri of a rig node (procs.BaseConfig).
func uriOf(name string) string { return "urn:" + name + ":otopcua" }
