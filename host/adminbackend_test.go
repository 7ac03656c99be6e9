package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

var tNow = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func uaddr(host string, port int, uid uint64) membership.UniqueAddress {
	return membership.UniqueAddress{Host: host, Port: port, UID: uid}
}

func mem(a membership.UniqueAddress, st membership.Status, up int, cid string, roles ...string) membership.Member {
	m := membership.NewMember(a, roles, cid)
	m.Status, m.UpNumber = st, up
	return m
}

func stateOf(self membership.UniqueAddress, ms ...membership.Member) membership.State {
	g := membership.Gossip{}
	for _, m := range ms {
		g = g.AddMember(m)
	}
	return membership.State{Gossip: g, Self: self}
}

var (
	nodeA = uaddr("10.0.0.1", 4053, 1)
	nodeB = uaddr("10.0.0.2", 4053, 2)
	nodeC = uaddr("10.0.0.2", 4054, 3) // same host as B, another port
)

func TestBuildPanel(t *testing.T) {
	pair := stateOf(nodeB,
		mem(nodeA, membership.Up, 1, "pair", "admin", "driver"),
		mem(nodeB, membership.Up, 2, "pair", "admin", "driver"),
		mem(nodeC, membership.Joining, membership.NotUp, "pair", "driver"),
		mem(uaddr("10.0.0.9", 4053, 9), membership.Up, 3, "other", "driver"),
	)
	unreachable := pair
	unreachable.Gossip = unreachable.Gossip.WithReachability(unreachable.Gossip.Reachability.Unreachable(nodeB, nodeA))
	infos := map[string]redundancy.NodeInfo{
		"10.0.0.1:4053": {NodeID: "10.0.0.1:4053", UID: 1, ServiceLevel: 250, ConfigDb: redundancy.ConfigDbOk, ApplicationURI: "urn:a"},
		"10.0.0.2:4053": {NodeID: "10.0.0.2:4053", UID: 2, ServiceLevel: 200, ConfigDb: redundancy.ConfigDbUnreachable, ConfigDbError: "i/o timeout"},
		"10.0.0.2:4054": {NodeID: "10.0.0.2:4054", UID: 99, ServiceLevel: 240}, // an earlier incarnation of C
	}
	type row struct {
		id, role, configDb string
		level              int
		hasLevel, reach    bool
		self               bool
	}
	tests := []struct {
		name    string
		in      panelInput
		primary string
		rows    []row
		allowed bool
		target  string
		blocked string
		err     error
	}{
		{
			name: "a healthy pair", in: panelInput{ClusterID: "pair", State: pair, Infos: infos},
			primary: "10.0.0.1:4053", allowed: true, target: "10.0.0.1:4053",
			rows: []row{
				{"10.0.0.1:4053", "Primary", "ok", 250, true, true, false},
				{"10.0.0.2:4053", "Secondary", "unreachable: i/o timeout", 200, true, true, true},
				{"10.0.0.2:4054", "Secondary", "unknown", 0, false, true, false},
			},
		},
		{
			name: "an unreachable Primary is shown so", in: panelInput{ClusterID: "pair", State: unreachable, Infos: infos},
			primary: "10.0.0.1:4053", allowed: true, target: "10.0.0.1:4053",
			rows: []row{
				{"10.0.0.1:4053", "Primary", "ok", 250, true, false, false},
				{"10.0.0.2:4053", "Secondary", "unreachable: i/o timeout", 200, true, true, true},
				{"10.0.0.2:4054", "Secondary", "unknown", 0, false, true, false},
			},
		},
		{
			name: "one Up driver: blocked with the reason", in: panelInput{ClusterID: "other", State: pair},
			primary: "10.0.0.9:4053", blocked: "only one Up driver member (10.0.0.9:4053): a failover would be a shutdown",
			rows: []row{{"10.0.0.9:4053", "Primary", "unknown", 0, false, true, false}},
		},
		{name: "unknown ClusterId", in: panelInput{ClusterID: "nope", State: pair}, err: admin.ErrUnknownCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Epochs = redundancy.EpochBook{"pair": {Epoch: 7, Primary: "10.0.0.1:4053"}}
			tt.in.Downing, tt.in.Now = "keep-oldest", tNow
			p, err := buildPanel(tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if p.Primary != tt.primary || p.FailoverAllowed != tt.allowed || p.FailoverTarget != tt.target || p.FailoverBlocked != tt.blocked {
				t.Fatalf("panel primary %q allowed %v target %q blocked %q", p.Primary, p.FailoverAllowed, p.FailoverTarget, p.FailoverBlocked)
			}
			if p.Downing != "keep-oldest" || !p.AsOf.Equal(tNow) || (tt.in.ClusterID == "pair" && p.Epoch != 7) {
				t.Fatalf("downing %q, as of %v, epoch %d", p.Downing, p.AsOf, p.Epoch)
			}
			var got []row
			for _, m := range p.Members {
				got = append(got, row{m.NodeID, m.Role, m.ConfigDb, m.ServiceLevel, m.HasServiceLevel, m.Reachable, m.Self})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.rows) {
				t.Fatalf("members\n got %v\nwant %v", got, tt.rows)
			}
		})
	}
}

func TestBuildClusters(t *testing.T) {
	st := stateOf(nodeA,
		mem(nodeA, membership.Up, 1, "b-site", "driver"),
		mem(nodeB, membership.Up, 2, "a-site", "driver"),
		mem(nodeC, membership.Up, 3, "a-site", "admin"),
		mem(uaddr("10.0.0.3", 1, 4), membership.Down, 4, "gone", "driver"),
	)
	got := buildClusters(st, redundancy.EpochBook{"a-site": {Epoch: 3}})
	want := []admin.ClusterSummary{
		{ClusterID: "a-site", Primary: "10.0.0.2:4053", UpDrivers: 1, Members: 2, Epoch: 3},
		{ClusterID: "b-site", Primary: "10.0.0.1:4053", UpDrivers: 1, Members: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestFailoverRingBounds: at most MaxFailoversPerCluster records per
// ClusterId (the newest, newest first), at most MaxFailoverClusters
// ClusterIds (the one changed least recently goes), and a late snapshot
// with a lower epoch changes nothing.
func TestFailoverRingBounds(t *testing.T) {
	r := newFailoverRing()
	r.observe(redundancy.EpochBook{"pair": {Epoch: 1, Primary: "a:1", PrimaryUID: 1}}, tNow)
	r.observe(redundancy.EpochBook{"pair": {Epoch: 1, Primary: "a:1", PrimaryUID: 1}}, tNow) // a republish
	if got := r.of("pair"); len(got) != 1 || got[0].From != "" || got[0].To != "a:1" {
		t.Fatalf("first Primary: %v", got)
	}
	for i := 2; i <= 50; i++ {
		r.observe(redundancy.EpochBook{"pair": {Epoch: uint64(i), Primary: fmt.Sprintf("n:%d", i), PrimaryUID: uint64(i)}}, tNow.Add(time.Duration(i)*time.Second))
	}
	got := r.of("pair")
	if len(got) != MaxFailoversPerCluster || got[0].Epoch != 50 || got[0].From != "n:49" || got[len(got)-1].Epoch != 31 {
		t.Fatalf("%d records, newest %+v, oldest %+v", len(got), got[0], got[len(got)-1])
	}
	r.observe(redundancy.EpochBook{"pair": {Epoch: 10, Primary: "old:1", PrimaryUID: 1}}, tNow)
	if r.of("pair")[0].Epoch != 50 || r.last["pair"].Epoch != 50 {
		t.Fatal("a lower epoch was taken")
	}
	for i := range MaxFailoverClusters + 10 {
		r.observe(redundancy.EpochBook{fmt.Sprintf("c%03d", i): {Epoch: 1, Primary: "x:1", PrimaryUID: 1}}, tNow)
	}
	if len(r.last) != MaxFailoverClusters || len(r.records) > MaxFailoverClusters || len(r.touched) > MaxFailoverClusters {
		t.Fatalf("%d ClusterIds kept, %d with records", len(r.last), len(r.records))
	}
	if _, ok := r.last["pair"]; ok {
		t.Fatal("the ClusterId changed least recently was kept")
	}
	if _, ok := r.last[fmt.Sprintf("c%03d", MaxFailoverClusters+9)]; !ok {
		t.Fatal("the newest ClusterId was dropped")
	}
}

// TestPanelWatcherBoundsNodes: NodeStatus from ever new node ids keeps at
// most MaxWatchedNodes, forgetting the stalest.
func TestPanelWatcherBoundsNodes(t *testing.T) {
	w := newPanelWatcher(func() time.Time { return tNow })
	for i := range MaxWatchedNodes + 50 {
		w.Handle(nodeA, redundancy.NodeInfo{NodeID: fmt.Sprintf("10.1.%d.%d:4053", i/250, i%250), UID: 1, At: tNow.Add(time.Duration(i) * time.Millisecond)}.ToWire())
	}
	_, infos, _ := w.view("")
	if len(infos) != MaxWatchedNodes {
		t.Fatalf("%d nodes kept", len(infos))
	}
	if _, ok := infos["10.1.0.0:4053"]; ok {
		t.Fatal("the stalest node was kept")
	}
}

type fakeMembers struct{ st membership.State }

func (f *fakeMembers) Self() membership.UniqueAddress { return f.st.Self }
func (f *fakeMembers) Snapshot() membership.State     { return f.st }

// fakeSender records each send and whether the audit row was already in
// the Config DB when it was called.
type fakeSender struct {
	db        *configdb.DB
	sent      []*wire.ManualFailover
	to        []membership.UniqueAddress
	auditRows []int
}

func (s *fakeSender) SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error {
	if topic != wire.FailoverTopic {
		return fmt.Errorf("topic %q", topic)
	}
	rows, err := s.db.RecentAudit(context.Background(), 10)
	if err != nil {
		return err
	}
	s.auditRows = append(s.auditRows, len(rows))
	s.sent = append(s.sent, msg.(*wire.ManualFailover))
	s.to = append(s.to, to)
	return nil
}

func openTestConfigDb(t *testing.T) *configdb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := configdb.Open(ctx, "sqlite", "file:"+filepath.Join(t.TempDir(), "config.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func newTestBackend(t *testing.T, st membership.State, audit auditLog, db *configdb.DB) (*adminBackend, *fakeSender) {
	w := newPanelWatcher(func() time.Time { return tNow })
	w.Handle(nodeA, &wire.RedundancyStateChanged{
		Entries: map[string]*wire.NodeRedundancyState{
			"10.0.0.1:4053": {NodeId: "10.0.0.1:4053", Uid: 1, Role: wire.Role_ROLE_PRIMARY, IsDriverPrimary: true, ClusterId: "pair", Status: "Up"},
		},
		Epochs: map[string]*wire.ClusterEpoch{"pair": {ClusterId: "pair", Epoch: 5, Primary: "10.0.0.1:4053", PrimaryUid: 1}},
	})
	s := &fakeSender{db: db}
	return newAdminBackend(&fakeMembers{st}, s, audit, w, "auto-down", 2*time.Second, func() time.Time { return tNow }), s
}

func auditCount(t *testing.T, db *configdb.DB) int {
	t.Helper()
	rows, err := db.RecentAudit(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestFailoverAuditsBeforeSending: the audit row is in the Config DB when
// the request is sent, it names action, actor, target, uid and epoch, and
// the request goes to the Primary's incarnation; a second request while
// the first is under way is refused and writes nothing.
func TestFailoverAuditsBeforeSending(t *testing.T) {
	db := openTestConfigDb(t)
	st := stateOf(nodeB, mem(nodeA, membership.Up, 1, "pair", "driver"), mem(nodeB, membership.Up, 2, "pair", "driver"))
	b, s := newTestBackend(t, st, db, db)
	res, err := b.Failover(context.Background(), "pair", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if res.Target != "10.0.0.1:4053" || res.TargetUID != 1 || res.Epoch != 5 {
		t.Fatalf("result %+v", res)
	}
	if len(s.sent) != 1 || s.auditRows[0] != 1 || s.to[0] != nodeA {
		t.Fatalf("sends %d, audit rows at the send %v, to %v", len(s.sent), s.auditRows, s.to)
	}
	m := s.sent[0]
	if m.GetTargetNodeId() != "10.0.0.1:4053" || m.GetTargetUid() != 1 || m.GetActor() != "alice" || m.GetEpoch() != 5 ||
		m.GetClusterId() != "pair" || wire.FromUnixMs(m.GetEstimatedReturnUnixMs()).Before(tNow.Add(2*time.Second)) {
		t.Fatalf("request %v", m)
	}
	rows, err := b.Audit(context.Background(), 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("audit %v, %v", rows, err)
	}
	r := rows[0]
	if r.Action != ActionManualFailover || r.Actor != "alice" || r.Target != "10.0.0.1:4053" ||
		!strings.Contains(r.Detail, "clusterId=pair") || !strings.Contains(r.Detail, "uid=1") || !strings.Contains(r.Detail, "epoch=5") {
		t.Fatalf("audit row %+v", r)
	}
	var ref *admin.RefusedError
	if _, err := b.Failover(context.Background(), "pair", "bob"); !errors.As(err, &ref) || !strings.Contains(ref.Reason, "still under way") {
		t.Fatalf("second failover: %v", err)
	}
	if n := auditCount(t, db); n != 1 || len(s.sent) != 1 {
		t.Fatalf("after the refused second request: %d audit rows, %d sends", n, len(s.sent))
	}
}

// TestFailoverRefusalWritesNothing: with one Up driver member, an unknown
// ClusterId, an unreachable Primary or no actor nothing is written to the
// Config DB and nothing is sent.
func TestFailoverRefusalWritesNothing(t *testing.T) {
	lone := stateOf(nodeB, mem(nodeA, membership.Up, 1, "pair", "driver"), mem(nodeB, membership.Leaving, 2, "pair", "driver"))
	pair := stateOf(nodeB, mem(nodeA, membership.Up, 1, "pair", "driver"), mem(nodeB, membership.Up, 2, "pair", "driver"))
	cut := pair
	cut.Gossip = cut.Gossip.WithReachability(cut.Gossip.Reachability.Unreachable(nodeB, nodeA))
	tests := []struct {
		name, cid, actor string
		st               membership.State
		check            func(error) bool
	}{
		{"one Up driver", "pair", "alice", lone, func(err error) bool {
			var r *admin.RefusedError
			return errors.As(err, &r) && strings.Contains(r.Reason, "only one Up driver member (10.0.0.1:4053)")
		}},
		{"unknown ClusterId", "nope", "alice", pair, func(err error) bool { return errors.Is(err, admin.ErrUnknownCluster) }},
		{"unreachable Primary", "pair", "alice", cut, func(err error) bool {
			var r *admin.RefusedError
			return errors.As(err, &r) && strings.Contains(r.Reason, "unreachable")
		}},
		{"no actor", "pair", "", pair, func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTestConfigDb(t)
			b, s := newTestBackend(t, tt.st, db, db)
			if _, err := b.Failover(context.Background(), tt.cid, tt.actor); !tt.check(err) {
				t.Fatalf("Failover: %v", err)
			}
			if n := auditCount(t, db); n != 0 || len(s.sent) != 0 {
				t.Fatalf("a refusal wrote %d audit rows and sent %d requests", n, len(s.sent))
			}
		})
	}
}

type failingAudit struct{ *configdb.DB }

func (failingAudit) WriteAudit(context.Context, configdb.AuditEntry) error {
	return errors.New("database is locked")
}

// TestFailoverAuditFailureSendsNothing: when the audit row cannot be
// written the error is returned and no request goes out.
func TestFailoverAuditFailureSendsNothing(t *testing.T) {
	db := openTestConfigDb(t)
	st := stateOf(nodeB, mem(nodeA, membership.Up, 1, "pair", "driver"), mem(nodeB, membership.Up, 2, "pair", "driver"))
	b, s := newTestBackend(t, st, failingAudit{db}, db)
	if _, err := b.Failover(context.Background(), "pair", "alice"); err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("Failover: %v", err)
	}
	if len(s.sent) != 0 {
		t.Fatalf("%d requests sent after a failed audit write", len(s.sent))
	}
	if _, err := b.Audit(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "1..1000") {
		t.Fatalf("Audit(0): %v", err)
	}
}

// BenchmarkBuildPanel is the cost of one GET /api/clusters/{id}/redundancy
// on the node's side (every open panel asks once a second): a mesh of
// three pairs, the panel of one of them.
func BenchmarkBuildPanel(b *testing.B) {
	var ms []membership.Member
	infos := map[string]redundancy.NodeInfo{}
	for i, cid := range []string{"main", "site-a", "site-b"} {
		for j := range 2 {
			a := uaddr(fmt.Sprintf("10.0.%d.%d", i, j+1), 4053, uint64(10*i+j+1))
			ms = append(ms, mem(a, membership.Up, 2*i+j+1, cid, "admin", "driver"))
			infos[a.NodeID()] = redundancy.NodeInfo{NodeID: a.NodeID(), UID: a.UID, ServiceLevel: 240, ConfigDb: redundancy.ConfigDbOk}
		}
	}
	in := panelInput{ClusterID: "site-a", State: stateOf(ms[2].Address, ms...), Infos: infos,
		Failovers: make([]admin.FailoverRecord, 20), Downing: "keep-oldest"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildPanel(in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPlanBesideFailover: RequestServerStateChange's check calls plan
// without turn while a Failover may record its request; under -race this
// fails if sent is read and written unguarded.
func TestPlanBesideFailover(t *testing.T) {
	db := openTestConfigDb(t)
	st := stateOf(nodeB, mem(nodeA, membership.Up, 1, "pair", "driver"), mem(nodeB, membership.Up, 2, "pair", "driver"))
	b, _ := newTestBackend(t, st, db, db)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			_, _ = b.plan(st, "pair")
		}
	}()
	if _, err := b.Failover(context.Background(), "pair", "alice"); err != nil {
		t.Fatal(err)
	}
	<-done
}
