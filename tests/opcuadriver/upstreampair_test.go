package opcuadriver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestFollowsAnUpstreamRedundantPair: a device whose "endpoints" are two
// upstream servers publishing ServiceLevel 250 and 240 mirrors the higher
// one; when it dies the tags come from the other (writes land there), and
// when that one leaves the healthy band while the first is back at 250 the
// driver moves back at once.
func TestFollowsAnUpstreamRedundantPair(t *testing.T) {
	began := time.Now()
	phase := func(what string) { t.Logf("%6v %s", time.Since(began).Round(time.Millisecond), what) }
	u1 := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100, "level": 250})
	u2 := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100, "level": 240})
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, deviceDoc(fmt.Sprintf(`"endpoints": [%q, %q],`, u1.URL, u2.URL), 5))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	setpoint, v0 := ua.NewStringNodeID(ns, "up/Setpoint"), ua.NewStringNodeID(ns, "up/V0")
	waitGood := func() {
		t.Helper()
		procs.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
			if st := c.read(v0)[0].Status; st != ua.StatusOK {
				return fmt.Errorf("V0 %v", st)
			}
			return nil
		})
	}
	// writeLands writes v and checks that exactly u took it.
	writeLands := func(v int32, want, other *nodescript.Upstream) {
		t.Helper()
		procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
			if st := c.write(setpoint, v); st != ua.StatusOK {
				return fmt.Errorf("write %d: %v", v, st)
			}
			return nil
		})
		line := fmt.Sprintf("write %d", v)
		want.WaitCount(line, 1)
		other.WaitCount(line, 0)
	}
	phase("rig up")
	waitGood()
	writeLands(1, u1, u2)
	phase("mirroring u1")

	u1.Kill()
	killed := time.Now()
	waitGood()
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(node.Log(), "opcua: upstream reconnected") {
			return fmt.Errorf("no failover logged yet")
		}
		return nil
	})
	t.Logf("upstream Primary killed: the driver follows the other after %v", time.Since(killed).Round(time.Millisecond))
	writeLands(2, u2, u1)
	phase("mirroring u2")

	u1.Restart() // back at 250; u2 leaves the healthy band
	u2.Send("level 100")
	phase("u1 restarted, u2 at 100")
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if strings.Count(node.Log(), "opcua: upstream reconnected") < 2 {
			return fmt.Errorf("no move back logged yet")
		}
		return nil
	})
	waitGood()
	writeLands(3, u1, u2)
	phase("mirroring u1 again")
}

// TestSecuredUpstream: an upstream that offers only Basic256Sha256
// SignAndEncrypt with UserName tokens. Until this node's PKI trusts its
// certificate the device is Bad and an Error log line says why; once the
// certificate is trusted (moved from rejected/ to trusted/, what `otopcua
// pki trust` does) the driver connects by itself, signs and encrypts,
// activates the session as the configured user, mirrors and writes.
func TestSecuredUpstream(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100, "secure": true, "users": map[string]string{"operator": "s3cret"}})
	p := procs.NewPorts(t)
	pki := t.TempDir()
	cfg := nodeConfig("a", p, t.TempDir(), []string{fmt.Sprintf("127.0.0.1:%d", p.Cluster)}, nil, "confirmed")
	cfg["OpcUa"].(map[string]any)["Security"] = map[string]any{"Policies": []string{"None:None", "Basic256Sha256:SignAndEncrypt"}, "PkiDir": pki}
	node := procs.Start(t, "a", cfg, "UPSTREAM_PASSWORD=s3cret")
	node.WaitReady(30 * time.Second)
	procs.Deploy(t, cfg, deviceDoc(endpoint(up.URL)+`"securityPolicy": "Basic256Sha256", "securityMode": "SignAndEncrypt", "username": "operator", "passwordEnv": "UPSTREAM_PASSWORD",`, 5))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	v0 := ua.NewStringNodeID(ns, "up/V0")

	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(node.Log(), "the upstream's certificate is not trusted by this node's PKI") {
			return fmt.Errorf("no refusal logged yet")
		}
		return nil
	})
	if st := c.read(v0)[0].Status; st != ua.StatusBadNoCommunication {
		t.Fatalf("V0 %v while the upstream is not trusted, want BadNoCommunication", st)
	}

	rejected, err := filepath.Glob(filepath.Join(pki, "rejected", "certs", "*"))
	if err != nil || len(rejected) == 0 {
		t.Fatalf("no rejected certificate in %s: %v", pki, err)
	}
	if err := os.MkdirAll(filepath.Join(pki, "trusted", "certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range rejected {
		if err := os.Rename(f, filepath.Join(pki, "trusted", "certs", filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if st := c.read(v0)[0].Status; st != ua.StatusOK {
			return fmt.Errorf("V0 %v after trusting the upstream", st)
		}
		return nil
	})
	if st := c.write(ua.NewStringNodeID(ns, "up/Setpoint"), int32(9)); st != ua.StatusOK {
		t.Fatalf("secured write: %v", st)
	}
	up.WaitCount("write 9", 1)
}
