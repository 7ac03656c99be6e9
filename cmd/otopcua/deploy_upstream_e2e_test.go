package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// opcuaDocument is a document of one opcua device at endpoint with tags.
func opcuaDocument(endpoint string, tags ...string) string {
	return `{"clusterId": "site-a", "devices": [{"name": "up", "driver": "opcua", "endpoint": "` + endpoint +
		`", "tags": [` + "\n    " + strings.Join(tags, ",\n    ") + `]}]}`
}

// TestBinaryDeployAsksTheUpstream runs `otopcua deploy` against a
// node-opcua upstream (tests/interop/upstream.mjs) and an SQLite Config
// DB: type-less tags (by nodeId, nsu= and browsePath) are stored with the
// upstream's types; a wrong type and an unknown node are refused naming
// their paths; an upstream on a closed port refuses a type-less tag and
// only warns for typed ones; --no-upstream refuses a type-less tag.
func TestBinaryDeployAsksTheUpstream(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 1, "periodMs": 1000, "tree": true})
	f := newDeployFixture(t)

	typeless := f.file(t, "typeless.json", opcuaDocument(up.URL,
		`{"name": "V0", "nodeId": "ns=2;s=V0"}`,
		`{"name": "Setpoint", "nodeId": "nsu=urn:otopcua:test:upstream;s=Setpoint", "writable": true}`,
		`{"name": "Count", "browsePath": "/2:Line1/2:Count", "type": null}`,
		`{"name": "Flag", "nodeId": "ns=2;s=Flag", "type": "bool"}`))
	start := time.Now()
	r := runDeploy(t, cleanEnv(), typeless, "--config", f.config)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("type-less tags: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	t.Logf("deploy asking the upstream took %v", time.Since(start))
	for _, want := range []string{
		typeless + ": devices[0].tags[0] up/V0: type float64 (the upstream's DataType Double)\n",
		typeless + ": devices[0].tags[1] up/Setpoint: type int32 (the upstream's DataType Int32)\n",
		typeless + ": devices[0].tags[2] up/Count: type uint32 (the upstream's DataType UInt32)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	stored, ok := f.latest(t)
	if !ok {
		t.Fatal("nothing stored")
	}
	doc, err := deployment.Decode(stored.Document) // the nodes' decoder: every type given
	if err != nil {
		t.Fatalf("the stored document: %v\n%s", err, stored.Document)
	}
	var types []string
	for _, tag := range doc.Devices[0].Tags {
		types = append(types, tag.Type)
	}
	if got := strings.Join(types, " "); got != "float64 int32 uint32 bool" {
		t.Fatalf("stored types %s\n%s", got, stored.Document)
	}
	// --check asks too, and stores nothing new.
	if r := runDeploy(t, cleanEnv(), "--check", typeless); r.code != 0 || !strings.Contains(r.stdout, "ok: "+typeless) {
		t.Fatalf("--check: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}

	// A wrong type and an unknown node: refused, naming the tags' paths.
	wrong := f.file(t, "wrong.json", opcuaDocument(up.URL,
		`{"name": "Setpoint", "nodeId": "ns=2;s=Setpoint", "type": "float64"}`,
		`{"name": "Nope", "nodeId": "ns=2;s=Nope"}`,
		`{"name": "Gone", "browsePath": "/2:Line1/2:Gone", "type": "float64"}`))
	for _, args := range [][]string{{wrong, "--config", f.config}, {"--check", wrong}} {
		r = runDeploy(t, cleanEnv(), args...)
		want := "invalid deployment document in " + wrong + ": 3 problems\n" +
			`  devices[0].tags[0].type = "float64": the upstream's DataType is Int32: accepted values are int32` + "\n" +
			`  devices[0].tags[1].nodeId = "ns=2;s=Nope": accepted values are nodes the upstream resolves; the upstream answers `
		if r.code != 2 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, `  devices[0].tags[2].browsePath = "/2:Line1/2:Gone": accepted values are nodes the upstream resolves; `) {
			t.Fatalf("%q: exit %d\nstderr:\n%s\nwant exit 2 and, first:\n%s", args, r.code, r.stderr, want)
		}
	}

	// An upstream that does not answer (a closed port).
	closed := fmt.Sprintf("opc.tcp://127.0.0.1:%d", procs.UniquePort(t))
	noType := f.file(t, "closed.json", opcuaDocument(closed, `{"name": "A", "nodeId": "ns=2;s=A"}`))
	start = time.Now()
	r = runDeploy(t, cleanEnv(), noType, "--config", f.config, "--upstream-timeout", "2s")
	if want := "  devices[0].tags[0].type = (missing): type not given and the upstream " + closed + " did not answer ("; r.code != 2 ||
		!strings.Contains(r.stderr, want) || !strings.HasSuffix(r.stderr, "): give the type, or deploy when the upstream answers\n") {
		t.Fatalf("type-less tag, closed port: exit %d\nstderr %q\nwant exit 2 and %q", r.code, r.stderr, want)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("deploy against a closed port took %v with --upstream-timeout 2s", took)
	}
	typed := f.file(t, "closed-typed.json", opcuaDocument(closed, `{"name": "A", "nodeId": "ns=2;s=A", "type": "float64"}`))
	r = runDeploy(t, cleanEnv(), typed, "--config", f.config, "--upstream-timeout", "2s")
	if want := "warning: " + typed + `: devices[0] "up": the upstream ` + closed + " did not answer ("; r.code != 0 ||
		!strings.HasPrefix(r.stderr, want) || !strings.HasSuffix(r.stderr, "): 1 tag with a type deployed unchecked; each node checks them at connect\n") {
		t.Fatalf("typed tag, closed port: exit %d\nstdout %q\nstderr %q\nwant exit 0 and %q", r.code, r.stdout, r.stderr, want)
	}
	if stored, _ := f.latest(t); stored.Version != 2 || !strings.Contains(string(stored.Document), closed) {
		t.Fatalf("the typed document is not the newest version: %d\n%s", stored.Version, stored.Document)
	}

	// --no-upstream: a type-less tag is a problem, nothing is asked.
	r = runDeploy(t, cleanEnv(), typeless, "--config", f.config, "--no-upstream")
	if want := "  devices[0].tags[0].type = (missing): type not given and the upstream " + up.URL + " is not asked (--no-upstream): give the type\n"; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Fatalf("--no-upstream: exit %d\nstderr %q\nwant %q", r.code, r.stderr, want)
	}
}

// hostileListener accepts connections and answers each with reply (nil:
// nothing at all), then holds it open until the test ends.
func hostileListener(t *testing.T, reply []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if reply != nil {
				_, _ = c.Write(reply)
			}
		}
	}()
	return "opc.tcp://" + ln.Addr().String()
}

// TestBinaryDeployHostileUpstream: an upstream that says nothing, or
// garbage, cannot hold deploy beyond --upstream-timeout: a typed tag is
// deployed with a warning, a type-less one refused.
func TestBinaryDeployHostileUpstream(t *testing.T) {
	f := newDeployFixture(t)
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	for name, url := range map[string]string{"silent": hostileListener(t, nil), "garbage": hostileListener(t, garbage)} {
		typed := f.file(t, name+".json", opcuaDocument(url, `{"name": "A", "nodeId": "ns=2;s=A", "type": "float64"}`))
		start := time.Now()
		r := runDeploy(t, cleanEnv(), typed, "--config", f.config, "--upstream-timeout", "1s")
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("%s: deploy took %v with --upstream-timeout 1s", name, took)
		}
		if r.code != 0 || !strings.HasPrefix(r.stderr, "warning: "+typed+`: devices[0] "up": the upstream `+url+" did not answer (") {
			t.Fatalf("%s, typed: exit %d\nstdout %q\nstderr %q", name, r.code, r.stdout, r.stderr)
		}
		noType := f.file(t, name+"-notype.json", opcuaDocument(url, `{"name": "A", "nodeId": "ns=2;s=A"}`))
		r = runDeploy(t, cleanEnv(), "--check", noType, "--upstream-timeout", "1s")
		if r.code != 2 || !strings.Contains(r.stderr, "devices[0].tags[0].type = (missing): type not given and the upstream "+url+" did not answer (") {
			t.Fatalf("%s, type-less: exit %d\nstderr %q", name, r.code, r.stderr)
		}
	}
}
