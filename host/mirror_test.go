package host

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/forward/meshtransport"
	"github.com/otopcua/otopcua/opcua/mirror"
	"github.com/otopcua/otopcua/opcua/mirror/meshmirror"
	"github.com/otopcua/otopcua/telemetry"
)

func inc(host string, uid uint64) membership.UniqueAddress {
	return membership.UniqueAddress{Host: host, Port: 4053, UID: uid}
}

func member(addr membership.UniqueAddress, st membership.Status, cid string, roles ...string) membership.Member {
	m := membership.NewMember(addr, roles, cid)
	m.Status = st
	return m
}

func TestPeersOf(t *testing.T) {
	self, b, c, d, e, f := inc("a", 1), inc("b", 2), inc("c", 3), inc("d", 4), inc("e", 5), inc("f", 6)
	members := []membership.Member{
		member(self, membership.Up, "line-1", "admin", "driver"),
		member(b, membership.Up, "line-1", "driver"),           // a peer
		member(c, membership.Up, "line-2", "driver"),           // another ClusterId
		member(d, membership.Up, "line-1", "admin"),            // no driver role
		member(e, membership.Joining, "line-1", "driver"),      // not Up yet
		member(f, membership.Leaving, "line-1", "driver"),      // leaving
		member(inc("g", 7), membership.Up, "line-1", "driver"), // a second peer
	}
	g := membership.Gossip{}.WithMembers(members)
	for _, tc := range []struct {
		name  string
		reach membership.Reachability
		want  []string
	}{
		{"all reachable", membership.Reachability{}, []string{"b:4053#2", "g:4053#7"}},
		{"b unreachable from here", membership.Reachability{}.Unreachable(self, b), []string{"g:4053#7"}},
		{"b unreachable from g only", membership.Reachability{}.Unreachable(inc("g", 7), b), []string{"b:4053#2", "g:4053#7"}},
	} {
		st := membership.State{Gossip: g.WithReachability(tc.reach), Self: self}
		if got := peersOf(st, "line-1", self); !slices.Equal(got, tc.want) {
			t.Errorf("%s: peers %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := peersOf(membership.State{Self: self}, "line-1", self); len(got) != 0 {
		t.Errorf("no members: peers %q, want none", got)
	}
}

// setter records the peer lists a peerTracker sets.
type setter struct {
	mu    sync.Mutex
	calls [][]string
}

func (s *setter) SetPeers(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, names)
}

func (s *setter) all() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *setter) last() []string {
	all := s.all()
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

func TestPeerTrackerSetsOnlyChanges(t *testing.T) {
	self, b := inc("a", 1), inc("b", 2)
	s := &setter{}
	p := &peerTracker{clusterID: "line-1", self: self, set: s, log: slog.New(slog.DiscardHandler)}
	alone := membership.State{Self: self, Gossip: membership.Gossip{}.WithMembers([]membership.Member{member(self, membership.Up, "line-1", "driver")})}
	both := membership.State{Self: self, Gossip: alone.Gossip.AddMember(member(b, membership.Up, "line-1", "driver"))}
	for _, st := range []membership.State{alone, alone, both, both, alone} {
		p.update(st)
	}
	want := [][]string{nil, {"b:4053#2"}, nil}
	got := s.all()
	if len(got) != len(want) {
		t.Fatalf("SetPeers calls %q, want %q", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("SetPeers calls %q, want %q", got, want)
		}
	}
}

// TestMirrorPeersFollowMembership runs the binding on real cluster
// daemons and mediators (in memory): the peers are the other driver
// member of the ClusterId once it is Up, and none once it crashed and is
// unreachable.
func TestMirrorPeersFollowMembership(t *testing.T) {
	c := pubsubtest.New(t)
	c.Configure = func(name string, cfg *pubsubtest.Config) {
		if name == "c" {
			cfg.Node.ClusterID = "site-b"
		}
	}
	nodes := c.Form("a", "b", "c")
	a, b := nodes[0], nodes[1]
	s := &setter{}
	tr := meshmirror.New()
	m := &mirroring{member: mirror.New(mirror.Options{Self: meshmirrorName(a), Transport: tr}), tr: tr,
		peers: &peerTracker{clusterID: "site-a", self: a.Daemon.Self(), set: s, log: slog.New(slog.DiscardHandler)}}
	m.bind(a.Mediator, a.Daemon)
	t.Cleanup(func() { m.unbind(); m.close() })
	if got, want := s.last(), []string{meshmirrorName(b)}; !slices.Equal(got, want) {
		t.Fatalf("peers after bind %q, want %q (c is another ClusterId)", got, want)
	}
	c.Kill("b")
	c.Until(30*time.Second, "b dropped from the peers", func() bool { return len(s.all()) > 1 && len(s.last()) == 0 })
}

func meshmirrorName(n *pubsubtest.Node) string { return meshtransport.Name(n.Daemon.Self()) }

func TestMirrorSamples(t *testing.T) {
	got := mirrorSamples(mirror.Stats{
		Served:     3,
		Peers:      map[string]mirror.PeerStats{"b:4053#9": {Ready: true, LagBytes: 512}},
		Origins:    map[string]mirror.OriginStats{"b:4053#9": {Ready: false, Sessions: 4}, "c:4053#2": {Ready: true, Sessions: 1}},
		Dropped:    map[string]uint64{"lag": 2},
		Takeovers:  map[string]uint64{"ok": 5, "other": 1},
		RecordsOut: 10, BytesOut: 1000, RecordsIn: 20, BytesIn: 2000,
	})
	want := []string{
		"otopcua.mirror.bytes direction=in 2000", "otopcua.mirror.bytes direction=out 1000",
		"otopcua.mirror.dropped reason=lag 2",
		"otopcua.mirror.lag_bytes peer=b:4053 512",
		"otopcua.mirror.peer_ready peer=b:4053 1",
		"otopcua.mirror.ready origin=b:4053 0", "otopcua.mirror.ready origin=c:4053 1",
		"otopcua.mirror.records direction=in 20", "otopcua.mirror.records direction=out 10",
		"otopcua.mirror.sessions role=replica 5", "otopcua.mirror.sessions role=served 3",
		"otopcua.mirror.takeovers result=not-ready 0", "otopcua.mirror.takeovers result=ok 5",
		"otopcua.mirror.takeovers result=other 1", "otopcua.mirror.takeovers result=refused 0",
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, s.name+" "+string(s.label.Key)+"="+s.label.Value.AsString()+" "+strconv.FormatInt(s.value, 10))
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("samples:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// An idle member still shows its sessions, traffic and takeovers at 0.
	idle := mirrorSamples(mirror.Stats{})
	if len(idle) != 9 || idle[0].label != attribute.String("direction", "in") {
		t.Fatalf("idle samples %v, want 9 series at zero", idle)
	}
}

// TestMirrorMetricsOnTheEndpoint scrapes the Prometheus endpoint: the
// names, labels and values an operator's alert rules use.
func TestMirrorMetricsOnTheEndpoint(t *testing.T) {
	tm, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Shutdown(t.Context()) })
	mm, err := newMirrorMetrics(tm.Meter())
	if err != nil {
		t.Fatal(err)
	}
	stats := mirror.Stats{Served: 2, Peers: map[string]mirror.PeerStats{"b:4053#9": {Ready: true, LagBytes: 70}},
		Origins: map[string]mirror.OriginStats{"b:4053#9": {Ready: true, Sessions: 3}}, Dropped: map[string]uint64{"lag": 1},
		RecordsOut: 7, BytesOut: 700}
	if err := mm.collect(func() mirror.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	mm.observeLag("b:4053#9", 3*time.Millisecond)
	w := httptest.NewRecorder()
	tm.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Result().Body)
	for _, line := range []string{
		`otopcua_mirror_ready{origin="b:4053"} 1`,
		`otopcua_mirror_sessions{role="served"} 2`,
		`otopcua_mirror_sessions{role="replica"} 3`,
		`otopcua_mirror_peer_ready{peer="b:4053"} 1`,
		`otopcua_mirror_lag_bytes{peer="b:4053"} 70`,
		`otopcua_mirror_dropped_total{reason="lag"} 1`,
		`otopcua_mirror_takeovers_total{result="ok"} 0`,
		`otopcua_mirror_records_total{direction="out"} 7`,
		`otopcua_mirror_bytes_total{direction="out"} 700`,
		`otopcua_mirror_lag_seconds_bucket{peer="b:4053",le="0.005"} 1`,
		`otopcua_mirror_lag_seconds_count{peer="b:4053"} 1`,
		`# HELP otopcua_mirror_ready `,
	} {
		if !strings.Contains(string(body), line+"\n") && !strings.Contains(string(body), line) {
			t.Errorf("/metrics lacks %s\n%s", line, grepLines(string(body), "otopcua_mirror"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOpcuaConfigMirrored: HotAndMirrored hands the server the member and
// advertises 5; Hot and Warm hand it none.
func TestOpcuaConfigMirrored(t *testing.T) {
	cfg := config.Default()
	if c := opcuaConfig(cfg, opcuaSecurity{}, nil, slog.New(slog.DiscardHandler)); c.RedundancySupport != 2 || c.Mirror != nil {
		t.Fatalf("Warm: support %v mirror %v", c.RedundancySupport, c.Mirror)
	}
	cfg.OpcUa.RedundancySupport = config.RedundancyHotAndMirrored
	cfg.Cluster.SeedNodes = []string{"a:4053", "b:4053"}
	m, err := newMirroring(cfg, inc("a", 1), telemetry.NopMetrics().Meter(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if c := opcuaConfig(cfg, opcuaSecurity{}, m, slog.New(slog.DiscardHandler)); c.RedundancySupport != 5 || c.Mirror != m.member {
		t.Fatalf("HotAndMirrored: support %v mirror %v", c.RedundancySupport, c.Mirror)
	}
}

// The defaults of OpcUa:Mirror are the mirror package's.
func TestMirrorDefaultsMatchThePackage(t *testing.T) {
	if config.DefaultMirrorAckTimeout != mirror.DefaultAckTimeout || config.DefaultMirrorMaxLagBytes != mirror.DefaultMaxLagBytes ||
		config.DefaultMirrorQueueSize != mirror.DefaultQueueSize || config.DefaultMirrorMatchWindow != mirror.DefaultMatchWindow {
		t.Fatal("config's OpcUa:Mirror defaults differ from opcua/mirror's")
	}
}

func TestMirrorPanel(t *testing.T) {
	p := mirrorPanel(mirror.Stats{
		Served: 4,
		Peers:  map[string]mirror.PeerStats{"b:4053#9": {Ready: true, LagBytes: 100}, "c:4053#3": {Ready: false, LagBytes: 9000}},
		Origins: map[string]mirror.OriginStats{
			"b:4053#9": {Ready: true, Sessions: 2},
			"d:4053#1": {Ready: true, Sessions: 1}, "d:4053#5": {Ready: false, Sessions: 6}, // d restarted
		},
		Dropped: map[string]uint64{"lag": 1},
	}, "a:4053")
	want := []admin.MirrorMember{
		{NodeID: "b:4053", Holds: true, Held: 2, HeldReady: true, Standby: true, StandbyReady: true, LagBytes: 100},
		{NodeID: "c:4053", Standby: true, StandbyReady: false, LagBytes: 9000},
		{NodeID: "d:4053", Holds: true, Held: 7, HeldReady: false},
	}
	if p.Node != "a:4053" || p.Served != 4 || !slices.Equal(p.Members, want) || p.Dropped["lag"] != 1 || p.Takeovers == nil {
		t.Fatalf("panel %+v\nwant members %+v", p, want)
	}
	empty := mirrorPanel(mirror.Stats{}, "a:4053")
	if empty.Members == nil || len(empty.Members) != 0 || empty.Dropped == nil {
		t.Fatalf("idle panel %+v: want empty lists and maps (JSON [] and {})", empty)
	}
	m := &mirroring{member: mirror.New(mirror.Options{Self: "a:4053#1", Transport: meshmirror.New()})}
	defer m.close()
	of := m.panelOf("line-1", "a:4053")
	if of("line-2") != nil || of("line-1") == nil {
		t.Fatal("panelOf: want a table for this node's ClusterId only")
	}
}
