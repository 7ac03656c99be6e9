package floatingidentity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/procs"
	"github.com/otopcua/otopcua/tests/uatrust"
)

const (
	clusterSecret = "floating-identity-test-secret"
	clientURI     = "urn:otopcua:test:scada"
	// The loopback addresses standing in for the floating address on
	// node A and on node B.
	floatingA = "127.0.0.21"
	floatingB = "127.0.0.22"
)

// nodeConfig is a node of the pair: OPC UA on every address of the node
// (so that it answers on its own 127.0.0.1 endpoint and on its stand-in
// floating address), Basic256Sha256 SignAndEncrypt offered, the shared
// Config DB and Cluster:Secret.
func nodeConfig(t *testing.T, name string, p procs.Ports, seeds []string, dbFile string) map[string]any {
	cfg := procs.BaseConfig(name, p)
	cl := cfg["Cluster"].(map[string]any)
	cl["Hostname"], cl["SeedNodes"], cl["Secret"] = "0.0.0.0", seeds, clusterSecret
	o := cfg["OpcUa"].(map[string]any)
	o["Security"] = map[string]any{
		"Policies":            []string{"None:None", "Basic256Sha256:SignAndEncrypt"},
		"AutoAcceptUntrusted": true,
		"PkiDir":              filepath.Join(t.TempDir(), "pki"),
	}
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + dbFile}
	return cfg
}

// TestSecuredClientTrustsTheFloatingIdentityOnce: `otopcua pki floating`
// stores the shared identity once; a client trusting only its certificate
// reads through node A's floating address, then, with A killed (SIGKILL),
// through node B's, without a new trust decision; B's own endpoint
// presents B's own certificate, which the same client refuses.
func TestSecuredClientTrustsTheFloatingIdentityOnce(t *testing.T) {
	dir := t.TempDir()
	dbFile := filepath.Join(dir, "config.db")
	ports := procs.NewPortSet(t, 2)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports[0].Cluster), fmt.Sprintf("127.0.0.1:%d", ports[1].Cluster)}
	cfgA := nodeConfig(t, "node-a", ports[0], seeds, dbFile)
	cfgB := nodeConfig(t, "node-b", ports[1], seeds, dbFile)

	certFile := filepath.Join(dir, "floating.der")
	procs.ProvisionFloating(t, cfgA, "--ip", floatingA, "--ip", floatingB, "--out", certFile)
	trusted, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey := testcert.RSA(t, clientURI, 2048)
	client := &uatrust.Client{Trusted: [][]byte{trusted}, Cert: cliCert, Key: cliKey, URI: clientURI}

	a := procs.Start(t, "node-a", cfgA, host.EnvTestFloatingIdentityAddr+"="+floatingA)
	b := procs.Start(t, "node-b", cfgB, host.EnvTestFloatingIdentityAddr+"="+floatingB)
	a.WaitReady(60 * time.Second)
	b.WaitReady(60 * time.Second)
	for _, n := range []*procs.Node{a, b} {
		if !strings.Contains(n.Log(), `"source":"Config DB"`) {
			t.Fatalf("%s did not load the shared identity from the Config DB:\n%s", n.Name, n.Log())
		}
	}

	urlA := fmt.Sprintf("opc.tcp://%s:%d", floatingA, ports[0].OpcUa)
	urlB := fmt.Sprintf("opc.tcp://%s:%d", floatingB, ports[1].OpcUa)
	if err := client.Read(urlA); err != nil {
		t.Fatalf("through node A's floating address: %v", err)
	}
	a.Signal(syscall.SIGKILL)
	a.WaitExit(30 * time.Second)
	if err := client.Read(urlB); err != nil {
		t.Fatalf("through node B's floating address after node A was killed: %v", err)
	}
	if err := client.Read(b.Endpoint()); !errors.Is(err, uatrust.ErrUntrusted) {
		t.Fatalf("node B's own endpoint: %v, want the client's refusal (untrusted)", err)
	}
}
