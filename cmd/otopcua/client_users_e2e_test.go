package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/procs"
)

// These tests run `otopcua client --user` against real `otopcua host`
// processes whose users live in a shared SQLite Config DB and whose
// anonymous sessions have the node's default rights (read only), not the
// test rig's.

const (
	// userTimeout is the client's --timeout: the node checks a password
	// with bcrypt, which under -race on a loaded two-core machine takes
	// seconds.
	userTimeout      = "30s"
	operatorPassword = "otto-operator-pw"
	viewerPassword   = "vera-viewer-pw1"
)

// userNodeConfigs returns the configurations of the named nodes of one
// ClusterId "test": each seeds from all, generates its application
// instance certificate in its own PkiDir, shares one Config DB and polls
// deployments every 200 ms. edit changes OpcUa:Security.
func userNodeConfigs(t *testing.T, security map[string]any, names ...string) map[string]map[string]any {
	t.Helper()
	dir := t.TempDir()
	ports := map[string]procs.Ports{}
	var seeds []string
	for _, n := range names {
		ports[n] = procs.NewPorts(t)
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", ports[n].Cluster))
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		cfg := procs.BaseConfig(n, ports[n])
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		ua := cfg["OpcUa"].(map[string]any)
		var peers []string
		for _, o := range names {
			if o != n {
				peers = append(peers, "urn:"+o+":otopcua")
			}
		}
		ua["PeerApplicationUris"] = peers
		ua["Authorization"] = map[string]any{"Anonymous": []string{"read"}} // the node's default
		sec := map[string]any{"PkiDir": filepath.Join(dir, "pki-"+n)}
		for k, v := range security {
			sec[k] = v
		}
		ua["Security"] = sec
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		out[n] = cfg
	}
	// A writable holding register of a real Modbus TCP device, and the
	// two users.
	devAddr := fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))
	dev, err := fielddevice.Start(devAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	procs.Deploy(t, out[names[0]], fmt.Sprintf(`{"clusterId": "test", "devices": [{"name": "press1", "driver": "modbus-tcp",
		"address": %q, "unitId": 1, "pollInterval": "00:00:00.100", "timeout": "500ms",
		"tags": [{"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true}]}]}`, devAddr))
	procs.AddUser(t, out[names[0]], "otto", "Operator", operatorPassword)
	procs.AddUser(t, out[names[0]], "vera", "Viewer", viewerPassword)
	return out
}

// runAs runs `otopcua client ARGS` with OTOPCUA_PASSWORD=password ("":
// unset) and stdin not a terminal.
func runAs(t *testing.T, password string, args ...string) binaryRun {
	t.Helper()
	env := cleanEnv()
	if password != "" {
		env = append(env, passwordEnv+"="+password)
	}
	return runCommand(t, env, "", append([]string{"client"}, args...)...)
}

// setpointNode waits until the deployment's tag reads Good on url (read
// as readValue does) and returns its NodeId in the tag namespace.
func setpointNode(t *testing.T, url, password string) string {
	t.Helper()
	var node string
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		arr, _ := readValue(t, url, "i=2255", password).([]any)
		for i, u := range arr {
			if u == "urn:otopcua:cluster:test" {
				node = fmt.Sprintf("ns=%d;s=press1/Setpoint", i)
			}
		}
		if node == "" {
			return fmt.Errorf("no tag namespace in %v", arr)
		}
		if v := readValue(t, url, node, password); v == nil {
			return fmt.Errorf("%s is not Good yet", node)
		}
		return nil
	})
	return node
}

// readValue reads node (anonymously, or as otto when password is not
// ""): its value when Good, else nil.
func readValue(t *testing.T, url, node, password string) any {
	t.Helper()
	args := []string{"-u", url, "--no-discovery", "--json", "--timeout", userTimeout}
	if password != "" {
		args = append(args, "--user", "otto")
	}
	r := runAs(t, password, append(args, "read", node)...)
	lines := r.jsonLines(t)
	if r.code != 0 || len(lines) != 1 || lines[0]["status"] != "Good" {
		return nil
	}
	return lines[0]["value"]
}

// waitPrimary waits until url's ServiceLevel is 250.
func waitPrimary(t *testing.T, url string) {
	t.Helper()
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if v := readValue(t, url, "i=2267", ""); v != float64(250) {
			return fmt.Errorf("%s ServiceLevel %v, want 250", url, v)
		}
		return nil
	})
}

// TestClientUsers: with the node's default rights an Operator writes, a
// Viewer and an anonymous session are refused the write
// (BadUserAccessDenied, the value untouched), a wrong password is refused
// at activation, and a password is not taken from the command line.
func TestClientUsers(t *testing.T) {
	cfgs := userNodeConfigs(t, map[string]any{"Policies": []string{"None:None", "Basic256Sha256:SignAndEncrypt"}}, "solo")
	n := procs.Start(t, "solo", cfgs["solo"])
	n.WaitReady(30 * time.Second)
	url := n.Endpoint()
	u := []string{"-u", url, "--no-discovery", "--timeout", userTimeout}
	node := setpointNode(t, url, "")
	waitPrimary(t, url)

	// Operator: the write lands.
	r := runAs(t, operatorPassword, append(u, "--user", "otto", "--json", "write", node+"=42")...)
	if lines := r.jsonLines(t); r.code != 0 || len(lines) != 1 || lines[0]["status"] != "Good" {
		t.Fatalf("Operator write: want Good and exit 0; %s", r)
	}
	if v := readValue(t, url, node, ""); v != float64(42) {
		t.Fatalf("after the Operator's write %s reads %v, want 42", node, v)
	}
	r = runAs(t, operatorPassword, append(u, "--user", "otto", "--json", "read", node)...)
	if lines := r.jsonLines(t); r.code != 0 || len(lines) != 1 || lines[0]["value"] != float64(42) {
		t.Fatalf("Operator read: %s", r)
	}

	// Viewer and anonymous: the write is refused and changes nothing.
	for who, args := range map[string][]string{
		"Viewer":    append(append([]string{}, u...), "--user", "vera", "--json", "write", node+"=43"),
		"anonymous": append(append([]string{}, u...), "--json", "write", node+"=44"),
	} {
		r := runAs(t, viewerPassword, args...)
		lines := r.jsonLines(t)
		if r.code != exitFailure || len(lines) != 1 || lines[0]["status"] != "BadUserAccessDenied" {
			t.Errorf("%s write: want BadUserAccessDenied and exit 1; %s", who, r)
		}
		if v := readValue(t, url, node, ""); v != float64(42) {
			t.Fatalf("after the refused %s write %s reads %v, want 42 still", who, node, v)
		}
	}

	// A wrong password is refused at activation, with its status code.
	r = runAs(t, "not-ottos-password", append(u, "--user", "otto", "read", "i=2267")...)
	if r.code != exitFailure || r.stdout != "" || !strings.Contains(r.stderr, `the server refused user "otto": BadUserAccessDenied`) {
		t.Errorf("wrong password: want exit 1 naming BadUserAccessDenied; %s", r)
	}

	// No password: neither from argv nor from a non-terminal stdin.
	r = runAs(t, "", append(u, "--user", "otto", "read", "i=2267")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "no password: set OTOPCUA_PASSWORD") {
		t.Errorf("no password: want exit 2 asking for OTOPCUA_PASSWORD; %s", r)
	}
	for _, flag := range []string{"--password", "-p", "--pass"} {
		r = runAs(t, operatorPassword, append(u, "--user", "otto", flag, operatorPassword, "write", node+"=45")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "unknown") {
			t.Errorf("%s on argv: want a usage error (no such flag); %s", flag, r)
		}
	}
	if v := readValue(t, url, node, ""); v != float64(42) {
		t.Fatalf("%s reads %v after the refused command lines, want 42", node, v)
	}
}

// TestClientUserWithoutCertificate: a node serving None to anonymous
// clients only has no certificate, so no UserName token: the client
// refuses to send the password.
func TestClientUserWithoutCertificate(t *testing.T) {
	cfg := procs.BaseConfig("nocert", procs.NewPorts(t))
	cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{"PkiDir": filepath.Join(t.TempDir(), "pki")}
	n := procs.Start(t, "nocert", cfg)
	n.WaitReady(30 * time.Second)
	r := runAs(t, operatorPassword, "-u", n.Endpoint(), "--no-discovery", "--timeout", userTimeout, "--user", "otto", "read", "i=2267")
	if r.code != exitFailure || !strings.Contains(r.stderr, "the server offers no UserName token; it needs an application instance certificate") {
		t.Fatalf("want exit 1 explaining the missing UserName token; %s", r)
	}
}

// TestClientUserFollowsAFailover: on a pair that refuses anonymous
// sessions, `client -F a,b --user otto subscribe` keeps delivering from b
// after a is SIGKILLed — its session there is otto's — and a write as
// otto then lands on b.
func TestClientUserFollowsAFailover(t *testing.T) {
	cfgs := userNodeConfigs(t, map[string]any{"AllowAnonymous": false}, "a", "b")
	a := procs.Start(t, "a", cfgs["a"])
	a.WaitReady(30 * time.Second)
	b := procs.Start(t, "b", cfgs["b"])
	b.WaitReady(30 * time.Second)
	fu := []string{"-F", a.Endpoint() + "," + b.Endpoint(), "--timeout", userTimeout, "--lost-after", "2s"}

	r := runAs(t, "", append(fu, "read", "i=2267")...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "BadIdentityTokenRejected") {
		t.Fatalf("anonymous read on a pair that refuses anonymous sessions: want BadIdentityTokenRejected; %s", r)
	}
	level := func(n *procs.Node) any { return readValue(t, n.Endpoint(), "i=2267", operatorPassword) }
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if la, lb := level(a), level(b); la != float64(250) || lb != float64(240) {
			return fmt.Errorf("ServiceLevel a=%v b=%v, want 250 and 240", la, lb)
		}
		return nil
	})

	c := clientproc.StartEnv(t, cleanEnv(passwordEnv+"="+operatorPassword), append(fu, "--user", "otto", "--json", "subscribe", "i=2267", "--interval", "50ms")...)
	deadline := time.Now().Add(60 * time.Second)
	from := 0
	waitFor := func(what string, match func(l clientproc.Line) bool) {
		t.Helper()
		from = c.WaitFor(time.Until(deadline), from, what, match).Seq + 1
	}
	waitFor("notification from a", func(l clientproc.Line) bool {
		return l.Type == clientproc.Notification && l.Server == "urn:a:otopcua"
	})
	a.Signal(syscall.SIGKILL)
	waitFor("failover to b", func(l clientproc.Line) bool {
		return l.Type == clientproc.Failover && l.To.URI == "urn:b:otopcua"
	})
	waitFor("notification from b at 250", func(l clientproc.Line) bool {
		lv, ok := l.Level()
		return l.Type == clientproc.Notification && l.Server == "urn:b:otopcua" && ok && lv == 250
	})

	node := setpointNode(t, b.Endpoint(), operatorPassword)
	r = runAs(t, operatorPassword, append(fu, "--user", "otto", "--json", "write", node+"=77")...)
	if l := r.jsonLines(t); r.code != 0 || len(l) != 1 || l[0]["status"] != "Good" || l[0]["server"] != "urn:b:otopcua" {
		t.Fatalf("write as otto after the failover: want Good from b; %s", r)
	}
}
