package demo

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func pairModel() *model {
	return newModel([]Node{
		{Name: "a", Ports: NodePorts{Cluster: 4001, OpcUa: 4002, HTTP: 4003}},
		{Name: "b", Ports: NodePorts{Cluster: 4011, OpcUa: 4012, HTTP: 4013}},
	})
}

func known(level byte) Reading { return Reading{Known: true, Level: level} }

func lostReading() Reading { return Reading{Err: errors.New("connection closed")} }

func TestFailoverLineAfterKill(t *testing.T) {
	m := pairModel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.started("a", 100)
	m.started("b", 101)
	if ev := m.sawLevel("a", known(250), t0); !slices.Contains(ev, "Primary is a") {
		t.Fatalf("first 250: events %q, want \"Primary is a\"", ev)
	}
	m.sawLevel("b", known(240), t0)
	if ev := m.killed("a", 100, "SIGKILL", t0.Add(time.Second)); !slices.Equal(ev, []string{"SIGKILL to Primary a (pid 100)"}) {
		t.Fatalf("kill events %q", ev)
	}
	if ev := m.sawLevel("a", lostReading(), t0.Add(1010*time.Millisecond)); len(ev) != 1 || !strings.Contains(ev[0], "unknown") {
		t.Fatalf("loss after the kill: events %q, want only the unknown reading", ev)
	}
	if !strings.Contains(m.table(), "Primary: none since a was lost") {
		t.Fatalf("table without a Primary:\n%s", m.table())
	}
	ev := m.sawLevel("b", known(250), t0.Add(2200*time.Millisecond))
	if !slices.Contains(ev, "Primary moved from a to b after 1.2 s") {
		t.Fatalf("take-over events %q, want the failover line timed from the kill", ev)
	}
	if !strings.Contains(m.table(), "Primary: b (opc.tcp://127.0.0.1:4012)") {
		t.Fatalf("table after the take-over:\n%s", m.table())
	}
}

func TestFailoverTimedFromTheLossWithoutKill(t *testing.T) {
	m := pairModel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.sawLevel("a", known(250), t0)
	m.sawLevel("b", known(240), t0)
	ev := m.sawLevel("a", known(0), t0.Add(time.Second))
	if !slices.Contains(ev, "Primary a lost: ServiceLevel 0") {
		t.Fatalf("events %q, want the loss of a", ev)
	}
	ev = m.sawLevel("b", known(250), t0.Add(1500*time.Millisecond))
	if !slices.Contains(ev, "Primary moved from a to b after 0.5 s") {
		t.Fatalf("events %q", ev)
	}
	// The same node coming back is not a move.
	m.sawLevel("b", lostReading(), t0.Add(2*time.Second))
	ev = m.sawLevel("b", known(250), t0.Add(5*time.Second))
	if !slices.Contains(ev, "Primary b is back after 3.0 s") {
		t.Fatalf("events %q", ev)
	}
}

func TestTwoPrimariesWarnOnce(t *testing.T) {
	m := pairModel()
	t0 := time.Now()
	m.sawLevel("a", known(250), t0)
	ev := m.sawLevel("b", known(250), t0)
	if len(ev) != 2 || !strings.HasPrefix(ev[1], "WARNING: a, b all read ServiceLevel 250") {
		t.Fatalf("events %q", ev)
	}
	if ev := m.sawLevel("b", Reading{Known: true, Level: 250, At: t0}, t0); len(ev) != 0 {
		t.Fatalf("repeat warned again: %q", ev)
	}
}

func TestRoleFromLevelThenFromView(t *testing.T) {
	m := pairModel()
	view := &clusterView{SelfStatus: "Up", Members: []member{
		{Address: "127.0.0.1:4001", Status: "Up", Roles: []string{"admin", "driver"}, ClusterID: ClusterID, UpNumber: 1},
		{Address: "127.0.0.1:4011", Status: "Up", Roles: []string{"admin", "driver"}, ClusterID: ClusterID, UpNumber: 2},
	}}
	va, vb := *view, *view
	va.Self.Address, vb.Self.Address = "127.0.0.1:4001", "127.0.0.1:4011"
	m.sawView("a", &va)
	m.sawView("b", &vb)
	if ra, rb := m.node("a").role(), m.node("b").role(); ra != "Primary (by age)" || rb != "Secondary (by age)" {
		t.Fatalf("roles by age: a %q, b %q", ra, rb)
	}
	m.sawLevel("a", known(240), time.Now())
	m.sawLevel("b", known(250), time.Now())
	if ra, rb := m.node("a").role(), m.node("b").role(); ra != "Secondary" || rb != "Primary" {
		t.Fatalf("roles by ServiceLevel: a %q, b %q", ra, rb)
	}
	rows := strings.Split(m.table(), "\n")
	if rows[0] != tableHeader || !strings.HasPrefix(rows[1], "a ") || !strings.Contains(rows[1], " 240 ") ||
		!strings.Contains(rows[2], " 250 ") || !strings.Contains(rows[1], " Up ") {
		t.Fatalf("table:\n%s", m.table())
	}
}

func TestOldestDriverPerClusterIdAndAddressOrder(t *testing.T) {
	v := &clusterView{Members: []member{
		{Address: "127.0.0.1:900", Status: "Up", Roles: []string{"driver"}, ClusterID: "other", UpNumber: 1},
		{Address: "127.0.0.1:1000", Status: "Up", Roles: []string{"driver"}, ClusterID: "x", UpNumber: 3},
		{Address: "127.0.0.1:999", Status: "Up", Roles: []string{"driver"}, ClusterID: "x", UpNumber: 3},
		{Address: "127.0.0.1:5", Status: "Leaving", Roles: []string{"driver"}, ClusterID: "x", UpNumber: 2},
		{Address: "127.0.0.1:6", Status: "Up", Roles: []string{"admin"}, ClusterID: "x", UpNumber: 1},
	}}
	v.Self.Address = "127.0.0.1:1000"
	if got := v.oldestDriver(); got != "127.0.0.1:999" {
		t.Fatalf("oldest driver = %q, want 127.0.0.1:999 (same up-number, lower port as a number)", got)
	}
}

func TestNodeConfigPair(t *testing.T) {
	nodes := []Node{
		{Name: "a", Ports: NodePorts{Cluster: 1, OpcUa: 2, HTTP: 3}},
		{Name: "b", Ports: NodePorts{Cluster: 4, OpcUa: 5, HTTP: 6}},
	}
	cfg := NodeConfig("/d", nodes, 1)
	c := cfg["Cluster"].(map[string]any)
	if s := c["SeedNodes"].([]string); !slices.Equal(s, []string{"127.0.0.1:1", "127.0.0.1:4"}) {
		t.Fatalf("seeds %v", s)
	}
	ua := cfg["OpcUa"].(map[string]any)
	if p := ua["PeerApplicationUris"].([]string); !slices.Equal(p, []string{"urn:otopcua-demo:a"}) || ua["ApplicationUri"] != "urn:otopcua-demo:b" {
		t.Fatalf("b's OPC UA identity: %v", ua)
	}
	if db := cfg["ConfigDb"].(map[string]any); db["ConnectionString"] != "file:/d/config.db" || db["Provider"] != "sqlite" {
		t.Fatalf("ConfigDb %v", db)
	}
	if cfg["Node"].(map[string]any)["ClusterId"] != "demo" {
		t.Fatal("ClusterId is not demo")
	}
}

func TestChildEnvDropsConfigOverrides(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "OTOPCUA_ROLES=admin", "OTOPCUA_OPCUA__PORT=1", "otopcua_http__port=2", "OTOPCUA_TEST_HOOKS=1"})
	if !slices.Equal(got, []string{"PATH=/bin", "OTOPCUA_TEST_HOOKS=1"}) {
		t.Fatalf("childEnv = %q", got)
	}
}

func TestHealthySecondary(t *testing.T) {
	m := pairModel()
	now := time.Now()
	m.sawLevel("a", known(250), now)
	m.sawLevel("b", known(200), now)
	if m.healthySecondary() {
		t.Fatal("b at 200 counted as a healthy Secondary")
	}
	m.sawLevel("b", known(240), now)
	if !m.healthySecondary() {
		t.Fatal("b at 240 not counted as a healthy Secondary")
	}
}
