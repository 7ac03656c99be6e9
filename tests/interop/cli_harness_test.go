package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// Running `otopcua client`, the JSON it prints, and checks of that JSON.

// cliRead is one node of `otopcua client read --json`.
type cliRead struct {
	Node            string   `json:"node"`
	Value           jsonText `json:"value"`
	DataType        string   `json:"dataType"`
	Status          string   `json:"status"`
	SourceTimestamp string   `json:"sourceTimestamp"`
	ServerTimestamp string   `json:"serverTimestamp"`
	Server          string   `json:"server"`
	URL             string   `json:"url"`
}

// cliWrite is one node of `otopcua client write --json`.
type cliWrite struct {
	Node   string `json:"node"`
	Status string `json:"status"`
	Server string `json:"server"`
	URL    string `json:"url"`
}

// cliRef is one reference of `otopcua client browse --json`.
type cliRef struct {
	ReferenceType string `json:"referenceType"`
	NodeID        string `json:"nodeId"`
	BrowseName    string `json:"browseName"`
	DisplayName   string `json:"displayName"`
	NodeClass     string `json:"nodeClass"`
	Forward       bool   `json:"forward"`
}

// serverRef is a server as the subscribe events and redundancy name it.
type serverRef struct {
	URI string `json:"uri"`
	URL string `json:"url"`
}

// cliLine is one line of `otopcua client subscribe --json`: a notification
// or an event.
type cliLine struct {
	Type            string     `json:"type"`
	Time            string     `json:"time"`
	Node            string     `json:"node"`
	Value           jsonText   `json:"value"`
	DataType        string     `json:"dataType"`
	Status          string     `json:"status"`
	SourceTimestamp string     `json:"sourceTimestamp"`
	Server          string     `json:"server"`
	URL             string     `json:"url"`
	From            *serverRef `json:"from"`
	To              *serverRef `json:"to"`
	Reason          string     `json:"reason"`
	Interrupted     string     `json:"interrupted"`
	Resumed         string     `json:"resumed"`
	FailoverMs      float64    `json:"failoverMs"`
	Transferred     bool       `json:"transferred"`
}

// cliRedundancy is `otopcua client redundancy --json`.
type cliRedundancy struct {
	Active            serverRef   `json:"active"`
	RedundancySupport string      `json:"redundancySupport"`
	ServerArray       []string    `json:"serverArray"`
	ServerURIArray    []string    `json:"serverUriArray"`
	Servers           []cliServer `json:"servers"`
}

// cliServer is one server of `otopcua client redundancy --json`.
type cliServer struct {
	URI        string   `json:"uri"`
	URL        string   `json:"url"`
	URLs       []string `json:"urls"`
	Up         bool     `json:"up"`
	Level      int      `json:"level"`
	LevelKnown bool     `json:"levelKnown"`
	Active     bool     `json:"active"`
	Error      string   `json:"error"`
}

// cliTimeout bounds one short CLI run (read, write, browse, redundancy).
const cliTimeout = 30 * time.Second

// readNodes runs `read --json` on srv and returns one result per node, in
// order.
func readNodes(t *testing.T, srv *nodeServer, nodes ...string) []cliRead {
	t.Helper()
	r := runClient(t, cliTimeout, append(append([]string{"read"}, nodes...), "-u", srv.URL, "--json")...)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	reads := jsonValues[cliRead](t, r)
	if len(reads) != len(nodes) {
		t.Fatalf("%d results for %d nodes:\n%s", len(reads), len(nodes), r)
	}
	for i, n := range nodes {
		if reads[i].Node != n {
			t.Fatalf("result %d is for %q, want %q:\n%s", i, reads[i].Node, n, r)
		}
	}
	return reads
}

// checkRead checks one read result: Good, the data type, both timestamps,
// the server that answered, and that ok accepts the value (described by
// want).
func checkRead(t *testing.T, r cliRead, srv *nodeServer, node, dataType, want string, ok func(float64) bool) {
	t.Helper()
	if r.Node != node || r.Status != "Good" || r.DataType != dataType || r.Server != srv.URI || r.URL != srv.URL {
		t.Fatalf("read %s = %+v, want Good %s from %s %s", node, r, dataType, srv.URI, srv.URL)
	}
	recent(t, node+" sourceTimestamp", r.SourceTimestamp)
	recent(t, node+" serverTimestamp", r.ServerTimestamp)
	if !ok(number(t, r.Value)) {
		t.Fatalf("read %s = %s, want %s", node, r.Value, want)
	}
}

// equals is a checkRead predicate.
func equals(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

// writeNode runs `write --json ARG` on srv and checks the one result's
// status and the exit code.
func writeNode(t *testing.T, srv *nodeServer, arg, node, wantStatus string, wantCode int) {
	t.Helper()
	r := runClient(t, cliTimeout, "write", arg, "-u", srv.URL, "--json")
	if r.code != wantCode {
		t.Fatalf("write %s: want exit %d:\n%s", arg, wantCode, r)
	}
	ws := jsonValues[cliWrite](t, r)
	if len(ws) != 1 || ws[0] != (cliWrite{Node: node, Status: wantStatus, Server: srv.URI, URL: srv.URL}) {
		t.Fatalf("write %s: want one result %s for %s from %s %s:\n%s", arg, wantStatus, node, srv.URI, srv.URL, r)
	}
}

// browse runs `browse --json [NODE]` on srv.
func browse(t *testing.T, srv *nodeServer, node ...string) []cliRef {
	t.Helper()
	r := runClient(t, cliTimeout, append(append([]string{"browse"}, node...), "-u", srv.URL, "--json")...)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	return jsonValues[cliRef](t, r)
}

// checkNotification checks a Counter notification from srv.
func checkNotification(t *testing.T, l cliLine, srv *nodeServer) {
	t.Helper()
	if l.Node != "ns=1;s=Counter" || l.Status != "Good" || l.DataType != "Double" || l.Server != srv.URI || l.URL != srv.URL {
		t.Fatalf("notification %+v, want a Good Double for ns=1;s=Counter from %s %s", l, srv.URI, srv.URL)
	}
	recent(t, "notification time", l.Time)
	recent(t, "notification sourceTimestamp", l.SourceTimestamp)
}

// jsonText is a JSON value kept as its text; it prints as that text.
type jsonText []byte

func (j *jsonText) UnmarshalJSON(b []byte) error { *j = append(jsonText(nil), b...); return nil }
func (j jsonText) String() string                { return string(j) }

// number decodes a JSON number.
func number(t *testing.T, raw jsonText) float64 {
	t.Helper()
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("value %s is not a JSON number: %v", raw, err)
	}
	return v
}

func parseTime(t *testing.T, what, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %q is not RFC 3339: %v", what, s, err)
	}
	return ts
}

// recent checks that s is an RFC 3339 time within a minute of now: the
// servers and the CLI run on this machine, so their clocks agree.
func recent(t *testing.T, what, s string) {
	t.Helper()
	if d := time.Since(parseTime(t, what, s)); d.Abs() > time.Minute {
		t.Fatalf("%s %s is %v away from now", what, s, d)
	}
}

// cliResult is one finished `otopcua client` run.
type cliResult struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r cliResult) String() string {
	return fmt.Sprintf("otopcua %s\nexit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runClient runs `otopcua client ARGS…` to completion within total and
// returns its output and exit code.
func runClient(t testing.TB, total time.Duration, args ...string) cliResult {
	t.Helper()
	bin := procs.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	r := cliResult{args: append([]string{"client"}, args...)}
	cmd := exec.CommandContext(ctx, bin, r.args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r.stdout, r.stderr = out.String(), errb.String()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("still running after %v:\n%s", total, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", bin, err)
	}
	return r
}

// jsonValues decodes out as a sequence of JSON values (one object per line,
// or arrays of objects) into a list of T.
func jsonValues[T any](t testing.TB, r cliResult) []T {
	t.Helper()
	var out []T
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '[' {
			var list []T
			if err := json.Unmarshal(raw, &list); err != nil {
				t.Fatalf("decode %s: %v\n%s", raw, err, r)
			}
			out = append(out, list...)
			continue
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decode %s: %v\n%s", raw, err, r)
		}
		out = append(out, v)
	}
}

// clientStream is a running `otopcua client` whose stdout lines the test
// reads as they come.
type clientStream struct {
	t      testing.TB
	args   []string
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer // written by exec's copier until done is closed
	done   chan struct{}
	mu     sync.Mutex // guards seen, exit
	seen   []string   // every stdout line so far
	exit   error
}

// startClient starts `otopcua client ARGS…`; it is killed when the test
// ends.
func startClient(t testing.TB, args ...string) *clientStream {
	t.Helper()
	c := &clientStream{t: t, args: append([]string{"client"}, args...), lines: make(chan string, 1024), done: make(chan struct{})}
	c.cmd = exec.Command(procs.Binary(t), c.args...)
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.seen = append(c.seen, sc.Text())
			c.mu.Unlock()
			c.lines <- sc.Text()
		}
		close(c.lines)
		err := c.cmd.Wait()
		c.mu.Lock()
		c.exit = err
		c.mu.Unlock()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			go func() {
				for range c.lines { // unblock the reader if the test stopped reading
				}
			}()
			<-c.done
		}
		if t.Failed() {
			t.Logf("--- otopcua %s ---\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), c.output(), c.stderr.String())
		}
	})
	return c
}

// next decodes the next stdout line into v and returns it, failing the
// test when none comes by deadline or the client ends.
func (c *clientStream) next(deadline time.Time, what string, v any) string {
	c.t.Helper()
	line, ok := c.nextOrEnd(deadline, what, v)
	if !ok {
		c.t.Fatalf("otopcua client ended (%v) while waiting for %s", c.exitErr(), what)
	}
	return line
}

// nextOrEnd decodes the next stdout line into v and returns it and true,
// or returns false once the client has ended; it fails the test when
// neither happens by deadline.
func (c *clientStream) nextOrEnd(deadline time.Time, what string, v any) (string, bool) {
	c.t.Helper()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var line string
	var ok bool
	select {
	case line, ok = <-c.lines:
	case <-timer.C:
		c.t.Fatalf("no %s from otopcua client by the deadline", what)
	}
	if !ok {
		<-c.done
		return "", false
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		c.t.Fatalf("line %q is not JSON: %v", line, err)
	}
	return line, true
}

func (c *clientStream) exitErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

func (c *clientStream) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.seen, "\n")
}
