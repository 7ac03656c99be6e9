package procs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Deploy stores the deployment document doc with `otopcua deploy`, run
// with cfg as its appsettings.json (a node's configuration: deploy reads
// its ConfigDb section), and returns the command's output. It fails the
// test when the command fails.
//
// It passes --no-upstream: the tests' documents name upstream OPC UA tags
// that are wrong on purpose, to show the nodes' own checks at connect;
// `otopcua deploy`'s upstream check has its own tests (cmd/otopcua).
func Deploy(t testing.TB, cfg map[string]any, doc string) string {
	t.Helper()
	return deploy(t, Binary(t), cfg, doc, "--no-upstream")
}

// DeployWith is Deploy run from the otopcua binary bin (PlainBinary, for
// a harness that measures the binary as shipped; an earlier release for
// the upgrade test), with no flag a release before the upstream check
// would refuse.
func DeployWith(t testing.TB, bin string, cfg map[string]any, doc string) string {
	t.Helper()
	return deploy(t, bin, cfg, doc)
}

func deploy(t testing.TB, bin string, cfg map[string]any, doc string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "deployment.json")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append([]string{"deploy", file, "--config", writeConfig(t, cfg)}, flags...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("otopcua deploy: %v\n%s", err, out)
	}
	return string(out)
}

// ProvisionFloating runs `otopcua pki floating` with cfg as its
// configuration: the shared application identity of cfg's ClusterId's
// floating address, stored in its Config DB (args: --out FILE, --ip …).
func ProvisionFloating(t testing.TB, cfg map[string]any, args ...string) string {
	t.Helper()
	out, err := exec.Command(Binary(t), append([]string{"pki", "floating", "--config", writeConfig(t, cfg)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("otopcua pki floating: %v\n%s", err, out)
	}
	return string(out)
}

// WaitDeployed waits up to a minute until the node's GET /api/deployment
// reports deployment version v applied.
func (n *Node) WaitDeployed(v int64) {
	n.t.Helper()
	CheckFor(n.t, 60*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/api/deployment")
		if err != nil {
			return err
		}
		var rep struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		if rep.Version != v {
			return fmt.Errorf("%s: deployment version %d, want %d", n.Name, rep.Version, v)
		}
		return nil
	})
}
