package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// These tests run the built otopcua binary as `otopcua client` against a
// real single `otopcua host` on loopback.

// runClientBinary runs `otopcua client ARGS` (at most 60 s).
func runClientBinary(t *testing.T, args ...string) binaryRun {
	t.Helper()
	return runCommand(t, cleanEnv(), "", append([]string{"client"}, args...)...)
}

func (r binaryRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// jsonLines decodes every stdout line as one JSON object.
func (r binaryRun) jsonLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v\n%s", l, err, r)
		}
		out = append(out, m)
	}
	return out
}

// startClientTestHost starts one `otopcua host` with the test hooks on.
func startClientTestHost(t *testing.T) (*procs.Node, string) {
	t.Helper()
	cfg := procs.BaseConfig("client-e2e", procs.NewPorts(t))
	n := procs.Start(t, "client-e2e", cfg, "OTOPCUA_TEST_HOOKS=1")
	n.WaitReady(30 * time.Second)
	return n, cfg["OpcUa"].(map[string]any)["ApplicationUri"].(string)
}

func TestClientAgainstHost(t *testing.T) {
	n, uri := startClientTestHost(t)
	u := []string{"-u", n.Endpoint(), "--timeout", "5s"}

	t.Run("read", func(t *testing.T) {
		r := runClientBinary(t, append(u, "--json", "read", "i=2267", "i=2256", "ns=0;i=999999")...)
		lines := r.jsonLines(t)
		if r.code != exitFailure || len(lines) != 3 {
			t.Fatalf("want exit 1 (one node is not Good) after 3 lines; %s", r)
		}
		level, status, unknown := lines[0], lines[1], lines[2]
		if _, ok := level["value"].(float64); !ok || level["node"] != "i=2267" || level["dataType"] != "Byte" ||
			level["status"] != "Good" || level["server"] != uri || level["url"] != n.Endpoint() {
			t.Errorf("ServiceLevel line %v", level)
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(level["serverTimestamp"])); err != nil {
			t.Errorf("ServiceLevel serverTimestamp: %v", err)
		}
		if v, ok := status["value"].(map[string]any); !ok || status["status"] != "Good" || status["dataType"] != "ServerStatusDataType" {
			t.Errorf("ServerStatus line %v", status)
		} else if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v["CurrentTime"])); err != nil || v["State"] != float64(0) {
			t.Errorf("ServerStatus value %v (want CurrentTime and State 0 = Running): %v", v, err)
		}
		if unknown["node"] != "i=999999" || unknown["status"] != "BadNodeIdUnknown" || unknown["value"] != nil {
			t.Errorf("unknown node line %v", unknown)
		}

		r = runClientBinary(t, append(u, "read", "i=2267")...)
		f := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "  ")
		if r.code != 0 || len(f) != 5 || f[0] != "i=2267" || f[2] != "Byte" || f[3] != "Good" || !regexp.MustCompile(`^\d+$`).MatchString(f[1]) {
			t.Errorf("text read: want NODE  VALUE  TYPE  STATUS  SOURCE_TIMESTAMP; %s", r)
		}
	})

	t.Run("browse", func(t *testing.T) {
		r := runClientBinary(t, append(u, "browse")...)
		if r.code != 0 || !regexp.MustCompile(`(?m)^Organizes  i=2253  Server  Object$`).MatchString(r.stdout) {
			t.Errorf("browse i=85 lacks the Server object; %s", r)
		}
		r = runClientBinary(t, append(u, "--json", "browse", "i=2253")...)
		found := map[string]map[string]any{}
		for _, l := range r.jsonLines(t) {
			found[fmt.Sprint(l["browseName"])] = l
		}
		sl, red := found["ServiceLevel"], found["ServerRedundancy"]
		if r.code != 0 || sl == nil || red == nil {
			t.Fatalf("browse i=2253 lacks ServiceLevel or ServerRedundancy; %s", r)
		}
		if sl["nodeId"] != "i=2267" || sl["nodeClass"] != "Variable" || sl["forward"] != true || sl["displayName"] != "ServiceLevel" ||
			red["nodeId"] != "i=2296" || red["nodeClass"] != "Object" {
			t.Errorf("ServiceLevel %v, ServerRedundancy %v", sl, red)
		}
	})

	t.Run("redundancy", func(t *testing.T) {
		r := runClientBinary(t, append(u, "redundancy")...)
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(uri) + `\s+` + regexp.QuoteMeta(n.Endpoint()) + `\s+(\d+)\s+yes\s+yes$`)
		if r.code != 0 || !row.MatchString(r.stdout) || !strings.Contains(r.stdout, "ServerUriArray     "+uri) {
			t.Errorf("redundancy: want the server's URI, URL, a level, up and active; %s", r)
		}
		r = runClientBinary(t, append(u, "--json", "redundancy")...)
		lines := r.jsonLines(t)
		if r.code != 0 || len(lines) != 1 {
			t.Fatalf("redundancy --json: want one object; %s", r)
		}
		servers, _ := lines[0]["servers"].([]any)
		if len(servers) == 0 {
			t.Fatalf("no servers; %s", r)
		}
		s0, _ := servers[0].(map[string]any)
		if s0["uri"] != uri || s0["levelKnown"] != true || s0["active"] != true || lines[0]["redundancySupport"] == "" {
			t.Errorf("redundancy --json: %s", r.stdout)
		}
	})

	t.Run("write-denied", func(t *testing.T) {
		for _, arg := range []string{"i=2267=5", "i=2267=5:byte"} {
			r := runClientBinary(t, append(u, "--json", "write", arg)...)
			lines := r.jsonLines(t)
			if r.code != exitFailure || len(lines) != 1 || lines[0]["node"] != "i=2267" ||
				!strings.HasPrefix(fmt.Sprint(lines[0]["status"]), "Bad") || lines[0]["server"] != uri {
				t.Errorf("write %s: want a Bad status and exit 1; %s", arg, r)
			}
		}
	})

	t.Run("subscribe-count", func(t *testing.T) {
		r := runClientBinary(t, append(u, "--json", "subscribe", "i=2267", "--count", "1", "--interval", "100ms")...)
		var notes []map[string]any
		for _, l := range r.jsonLines(t) {
			if l["type"] == "notification" {
				notes = append(notes, l)
			}
		}
		if r.code != 0 || len(notes) != 1 {
			t.Fatalf("want exit 0 and one notification; %s", r)
		}
		if _, ok := notes[0]["value"].(float64); !ok || notes[0]["server"] != uri || notes[0]["node"] != "i=2267" || notes[0]["status"] != "Good" {
			t.Errorf("notification %v", notes[0])
		}
		if !strings.Contains(r.stdout, `"type":"connected"`) {
			t.Errorf("no connected event; %s", r)
		}
	})

	t.Run("subscribe-live", func(t *testing.T) { subscribeLive(t, n, uri) })
}

// subscribeLive reads the text output through a pipe while the command
// runs: each change of ServiceLevel must arrive as its own line at once,
// and SIGINT must end the command with exit 0.
func subscribeLive(t *testing.T, n *procs.Node, uri string) {
	cmd := exec.Command(binary, "client", "-u", n.Endpoint(), "subscribe", "i=2267", "--interval", "50ms")
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	waitFor := func(re *regexp.Regexp) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before a line matching %s; stderr:\n%s", re, stderr.String())
				}
				if re.MatchString(l) {
					return
				}
			case <-deadline:
				t.Fatalf("no line matching %s in time; stderr:\n%s", re, stderr.String())
			}
		}
	}
	stamp := `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  `
	waitFor(regexp.MustCompile(stamp + `CONNECTED ` + regexp.QuoteMeta(uri)))
	waitFor(regexp.MustCompile(stamp + `i=2267  \d+  Good  ` + regexp.QuoteMeta(uri) + `$`))
	if _, err := n.Post("/debug/service-level?level=123"); err != nil {
		t.Fatal(err)
	}
	waitFor(regexp.MustCompile(stamp + `i=2267  123  Good  ` + regexp.QuoteMeta(uri) + `$`))
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines { // drain until stdout closes
	}
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("after SIGINT: %v (want exit 0); stderr:\n%s", err, stderr.String())
	}
}

func TestClientUsageErrorsBinary(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"read", "i=2267"}, "give a server: -u URL or -F URL1,URL2"},
		{[]string{"-u", "opc.tcp://127.0.0.1:4840", "--security", "sign", "read", "i=2267"}, `--security "sign": accepted values are none or Policy:Mode`},
		{[]string{"-u", "opc.tcp://127.0.0.1:4840", "write", "Tank=5"}, `write "Tank=5": want NODE=VALUE[:type]`},
		{[]string{"-u", "opc.tcp://127.0.0.1:4840", "write", "ns=2;s=Tank=five:int32"}, `write ns=2;s=Tank: value "five" does not convert to int32`},
		{[]string{"-F", "opc.tcp://127.0.0.1:4840,tcp://127.0.0.1:4841", "read", "i=2267"}, `"tcp://127.0.0.1:4841" is not an opc.tcp:// URL`},
	} {
		r := runClientBinary(t, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: want exit 2 and %q; %s", tc.args, tc.want, r)
		}
	}
}

func TestClientNoServerReachable(t *testing.T) {
	a := fmt.Sprintf("opc.tcp://127.0.0.1:%d", procs.UniquePort(t))
	b := fmt.Sprintf("opc.tcp://127.0.0.1:%d", procs.UniquePort(t))
	start := time.Now()
	r := runClientBinary(t, "-F", a+","+b, "--timeout", "2s", "read", "i=2267")
	if r.code != exitFailure || r.stdout != "" || !strings.Contains(r.stderr, "no server of the redundant set is reachable") ||
		!strings.Contains(r.stderr, a) || !strings.Contains(r.stderr, b) {
		t.Fatalf("want exit 1 naming both URLs; %s", r)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v with --timeout 2s", d)
	}
}
