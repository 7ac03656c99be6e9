package floatcloud

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating/aws/awsfake"
	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	floatIP = "10.0.1.100"
	region  = "eu-central-1"
	keyID   = "AKIDOTOPCUATEST"
	secret  = "otopcua-test-secret-key"
)

type awsPair struct {
	fake  *awsfake.Server
	nodes map[string]*procs.Node
	cfgs  map[string]map[string]any
	ids   map[string]string // node → NodeId (host:port)
}

func startAWSPair(t *testing.T) *awsPair {
	t.Helper()
	fake := awsfake.New(awsfake.Options{Region: region, AccessKey: keyID, SecretKey: secret, Lag: 200 * time.Millisecond})
	t.Cleanup(fake.Close)
	fake.AddENI(awsfake.ENI{ID: "eni-0aaaaaaaaaaaaaaa1", MAC: "02:00:00:00:00:0a", VPC: "vpc-1", Subnet: "subnet-1", Primary: "10.0.1.10"})
	fake.AddENI(awsfake.ENI{ID: "eni-0bbbbbbbbbbbbbbb2", MAC: "02:00:00:00:00:0b", VPC: "vpc-1", Subnet: "subnet-1", Primary: "10.0.1.11"})
	p := &awsPair{fake: fake, nodes: map[string]*procs.Node{}, cfgs: map[string]map[string]any{}, ids: map[string]string{}}
	pa, pb := procs.NewPorts(t), procs.NewPorts(t)
	db := "file:" + filepath.Join(t.TempDir(), "config.db")
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", pa.Cluster), fmt.Sprintf("127.0.0.1:%d", pb.Cluster)}
	for _, n := range []struct {
		name, peer, eni string
		ports           procs.Ports
	}{{"a", "b", "eni-0aaaaaaaaaaaaaaa1", pa}, {"b", "a", "eni-0bbbbbbbbbbbbbbb2", pb}} {
		cfg := procs.BaseConfig(n.name, n.ports)
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + n.peer + ":otopcua"}
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": db}
		cfg["Redundancy"] = map[string]any{"FloatingAddress": map[string]any{
			"Address": floatIP + "/32", "Provider": "aws",
			// auto-down (the default strategy) lets both sides of a
			// partition act: the operator accepts the dual claim.
			"AllowDualClaim": true,
			"Aws": map[string]any{"NetworkInterfaceId": n.eni, "Region": region, "Endpoint": fake.EC2URL,
				"MetadataEndpoint": fake.MetadataURL, "ConfirmTimeout": "5s"},
		}}
		p.cfgs[n.name] = cfg
		p.ids[n.name] = fmt.Sprintf("127.0.0.1:%d", n.ports.Cluster)
	}
	p.start(t, "a")
	p.nodes["a"].WaitReady(60 * time.Second)
	p.start(t, "b")
	p.nodes["b"].WaitReady(60 * time.Second)
	return p
}

func (p *awsPair) start(t *testing.T, name string) {
	t.Helper()
	p.nodes[name] = procs.Start(t, name, p.cfgs[name],
		"AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+secret, "AWS_REGION="+region, "AWS_EC2_METADATA_DISABLED=true")
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func floatingOf(n *procs.Node) (host.FloatingReport, error) {
	var r host.FloatingReport
	body, err := n.Get("/api/floating")
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal([]byte(body), &r)
}

func (p *awsPair) waitHolder(t *testing.T, eni string, total time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	procs.CheckFor(t, total, 10*time.Millisecond, func() error {
		if h := p.fake.Holder(floatIP); h != eni {
			return fmt.Errorf("EC2 shows %s on %q, want %q", floatIP, h, eni)
		}
		return nil
	})
	return time.Since(start)
}

// TestAWSFloatingAddressFollowsThePrimaryAcrossASIGKILL: the Primary's ENI
// gets the address; after its SIGKILL the survivor reassigns it to its own
// ENI (confirmed through instance metadata) and stamps its epoch; the
// killed node, restarted at the same address, comes back Secondary and
// never takes it back.
func TestAWSFloatingAddressFollowsThePrimaryAcrossASIGKILL(t *testing.T) {
	p := startAWSPair(t)
	p.waitHolder(t, "eni-0aaaaaaaaaaaaaaa1", 30*time.Second)
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		rb, err := floatingOf(p.nodes["b"])
		if err != nil {
			return err
		}
		if rb.Owner != p.ids["a"] || rb.Holds {
			return fmt.Errorf("b's report: owner %q holds %v, want owner %s", rb.Owner, rb.Holds, p.ids["a"])
		}
		return nil
	})
	epochA := p.fake.Tag("eni-0aaaaaaaaaaaaaaa1", "otopcua-floating-epoch")

	p.nodes["a"].Signal(syscall.SIGKILL)
	took := p.waitHolder(t, "eni-0bbbbbbbbbbbbbbb2", 20*time.Second)
	t.Logf("SIGKILL of the Primary → EC2 shows the address on the survivor's ENI after %v", took)
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		rb, err := floatingOf(p.nodes["b"])
		if err != nil {
			return err
		}
		if !rb.Holds || rb.Owner != p.ids["b"] {
			return fmt.Errorf("b's report: holds %v owner %q", rb.Holds, rb.Owner)
		}
		return nil
	})
	eb := p.fake.Tag("eni-0bbbbbbbbbbbbbbb2", "otopcua-floating-epoch")
	if nb, na := atoi(eb), atoi(epochA); nb <= na {
		t.Errorf("the survivor's ENI carries epoch %q, the old Primary's %q: want a newer one", eb, epochA)
	}
	metrics, err := p.nodes["b"].Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `otopcua_floating_address_owned{cluster_id="test"`) {
		t.Errorf("/metrics has no otopcua_floating_address_owned for cluster test")
	}
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "otopcua_floating_address_owned{") && !strings.HasSuffix(line, " 1") {
			t.Errorf("survivor's %s, want 1", line)
		}
	}

	p.nodes["a"].Restart()
	p.nodes["a"].WaitReady(60 * time.Second)
	procs.Holds(t, 5*time.Second, 50*time.Millisecond, func() error {
		if h := p.fake.Holder(floatIP); h != "eni-0bbbbbbbbbbbbbbb2" {
			return fmt.Errorf("the restarted node took the address back: EC2 shows it on %q", h)
		}
		ra, err := floatingOf(p.nodes["a"])
		if err == nil && ra.Holds {
			return fmt.Errorf("the restarted Secondary reports it holds the address")
		}
		return nil
	})
}
