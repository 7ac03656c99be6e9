package configdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// opener opens a fresh, empty Config DB for a test; every call within one
// test returns a handle on the same database (another "node").
type opener func(t *testing.T, clock clockwork.Clock) *DB

var t0 = time.Date(2026, 3, 1, 8, 30, 0, 123456789, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runStoreSuite runs the provider-independent behaviour against open.
func runStoreSuite(t *testing.T, open opener) {
	t.Run("MigrateIsIdempotent", func(t *testing.T) { testMigrateIdempotent(t, open(t, nil)) })
	t.Run("MigrateConcurrently", func(t *testing.T) { testMigrateConcurrently(t, open) })
	t.Run("MigrateUpgradesAndRollsBack", func(t *testing.T) { testMigrateSteps(t, open(t, nil)) })
	t.Run("SchemaNewer", func(t *testing.T) { testSchemaNewer(t, open(t, nil)) })
	t.Run("ClusterNodes", func(t *testing.T) { testClusterNodes(t, open) })
	t.Run("Deployments", func(t *testing.T) { testDeployments(t, open) })
	t.Run("DeploymentsConcurrentPuts", func(t *testing.T) { testDeploymentsConcurrentPuts(t, open) })
	t.Run("DeploymentsMigratedFromVersion1", func(t *testing.T) { testDeploymentsFromV1(t, open(t, nil)) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("AlarmHistoryOncePerKey", func(t *testing.T) { testAlarmHistoryOncePerKey(t, open) })
	t.Run("AlarmHistoryRefusedRows", func(t *testing.T) { testAlarmHistoryRefusedRows(t, open(t, nil)) })
	t.Run("AlarmHistoryRead", func(t *testing.T) { testAlarmHistoryRead(t, open(t, nil)) })
	t.Run("AlarmHistoryKeys", func(t *testing.T) { testAlarmHistoryKeys(t, open(t, nil)) })
	t.Run("AlarmHistoryEpochFence", func(t *testing.T) { testAlarmHistoryEpochFence(t, open) })
	t.Run("Users", func(t *testing.T) { testUsers(t, open) })
	t.Run("UsersConcurrentAdd", func(t *testing.T) { testUsersConcurrentAdd(t, open) })
	t.Run("FloatingHeartbeats", func(t *testing.T) { testFloatingHeartbeats(t, open(t, nil)) })
	t.Run("FloatingIdentity", func(t *testing.T) { testFloatingIdentity(t, open) })
	t.Run("Ping", func(t *testing.T) {
		if err := open(t, nil).Ping(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	})
}

func migrated(t *testing.T, db *DB) *DB {
	t.Helper()
	if err := db.Migrate(ctxT(t)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func versionRows(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.sql.QueryRowContext(ctxT(t), "SELECT COUNT(*) FROM schema_version").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func testMigrateIdempotent(t *testing.T, db *DB) {
	ctx := ctxT(t)
	if v, err := db.Version(ctx); err != nil || v != 0 {
		t.Fatalf("Version before Migrate = %d, %v; want 0, nil", v, err)
	}
	for i := 0; i < 3; i++ {
		migrated(t, db)
	}
	if v, err := db.Version(ctx); err != nil || v != SchemaVersion {
		t.Fatalf("Version = %d, %v; want %d", v, err, SchemaVersion)
	}
	if n := versionRows(t, db); n != len(migrations) {
		t.Fatalf("schema_version rows = %d after three Migrate calls, want %d", n, len(migrations))
	}
	for _, table := range []string{"clusters", "cluster_nodes", "deployments", "audit_log", "alarm_history", "admin_users"} {
		var n int
		if err := db.sql.QueryRowContext(ctx, db.q.tableExists, table).Scan(&n); err != nil || n != 1 {
			t.Fatalf("table %s: count %d, %v", table, n, err)
		}
	}
}

// testMigrateConcurrently migrates one fresh database from several handles
// at once, as nodes starting together do.
func testMigrateConcurrently(t *testing.T, open opener) {
	const nodes = 4
	dbs := make([]*DB, nodes)
	for i := range dbs {
		dbs[i] = open(t, nil)
	}
	ctx := ctxT(t)
	start := make(chan struct{})
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = db.Migrate(ctx)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: Migrate: %v", i, err)
		}
	}
	if n := versionRows(t, dbs[0]); n != len(migrations) {
		t.Fatalf("schema_version rows = %d, want %d", n, len(migrations))
	}
}

// testMigrateSteps applies a step after this build's last one and checks
// that a failing step leaves nothing behind.
func testMigrateSteps(t *testing.T, db *DB) {
	ctx := ctxT(t)
	migrated(t, db)
	next, after := SchemaVersion+1, SchemaVersion+2
	extra := migration{next, "test: extra table", func(d *dialect) []string {
		return []string{"CREATE TABLE extra_next (n INTEGER NOT NULL)"}
	}, nil}
	broken := migration{after, "test: broken", func(d *dialect) []string {
		return []string{"CREATE TABLE extra_after (n INTEGER NOT NULL)", "THIS IS NOT SQL"}
	}, nil}
	if err := db.migrate(ctx, append(append([]migration{}, migrations...), extra)); err != nil {
		t.Fatalf("migrate to %d: %v", next, err)
	}
	if v, _ := db.Version(ctx); v != next {
		t.Fatalf("Version = %d after step %d, want %d", v, next, next)
	}
	err := db.migrate(ctx, append(append([]migration{}, migrations...), extra, broken))
	if err == nil {
		t.Fatal("a broken step migrated")
	}
	if v, _ := db.Version(ctx); v != next {
		t.Fatalf("Version = %d after a failed step %d, want %d", v, after, next)
	}
	var n int
	if err := db.sql.QueryRowContext(ctx, db.q.tableExists, "extra_after").Scan(&n); err != nil || n != 0 {
		t.Fatalf("extra_after after the failed step: count %d, %v; want it rolled back", n, err)
	}
	// A database past this build's last step is newer than its schema.
	if err := db.Migrate(ctx); !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("Migrate on a version-%d database = %v, want ErrSchemaNewer", next, err)
	}
}

func testSchemaNewer(t *testing.T, db *DB) {
	ctx := ctxT(t)
	migrated(t, db)
	if _, err := db.sql.ExecContext(ctx, db.q.insertVersion, 99, "from the future", db.now()); err != nil {
		t.Fatal(err)
	}
	err := db.Migrate(ctx)
	if !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("Migrate = %v, want ErrSchemaNewer", err)
	}
	if v, _ := db.Version(ctx); v != 99 {
		t.Fatalf("Version = %d, want 99 (untouched)", v)
	}
}

func testClusterNodes(t *testing.T, open opener) {
	clock := clockwork.NewFakeClockAt(t0)
	db := migrated(t, open(t, clock))
	ctx := ctxT(t)
	a := ClusterNode{ClusterID: "plant-1", NodeID: "node-a.lan:4053", ApplicationURI: "urn:node-a:otopcua", ServiceLevelBase: 200}
	if err := db.UpsertClusterNode(ctx, a); !errors.Is(err, ErrUnknownCluster) {
		t.Fatalf("node of an unknown cluster: %v, want ErrUnknownCluster", err)
	}
	if err := db.UpsertCluster(ctx, Cluster{ID: "plant-1", Name: "Plant 1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertCluster(ctx, Cluster{ID: "plant-2", Name: "Plant 2"}); err != nil {
		t.Fatal(err)
	}
	b := ClusterNode{ClusterID: "plant-1", NodeID: "10.0.0.7:4053", ApplicationURI: "urn:node-b:otopcua"}
	for _, n := range []ClusterNode{a, b} {
		if err := db.UpsertClusterNode(ctx, n); err != nil {
			t.Fatalf("UpsertClusterNode(%s): %v", n.NodeID, err)
		}
	}
	other := ClusterNode{ClusterID: "plant-2", NodeID: "node-c.lan:4053", ApplicationURI: "urn:node-c:otopcua"}
	if err := db.UpsertClusterNode(ctx, other); err != nil {
		t.Fatal(err)
	}

	created := dbTime(t0)
	got, err := db.ListClusterNodes(ctx, "plant-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []ClusterNode{
		{ClusterID: "plant-1", NodeID: "10.0.0.7:4053", ApplicationURI: "urn:node-b:otopcua", ServiceLevelBase: 0, CreatedAt: created, UpdatedAt: created},
		{ClusterID: "plant-1", NodeID: "node-a.lan:4053", ApplicationURI: "urn:node-a:otopcua", ServiceLevelBase: 200, CreatedAt: created, UpdatedAt: created},
	}
	checkNodes(t, got, want)

	// A second upsert changes the URI and updated_at, keeps created_at and
	// the operator's ServiceLevelBase.
	clock.Advance(90 * time.Second)
	a2 := a
	a2.ApplicationURI, a2.ServiceLevelBase = "urn:node-a:otopcua:v2", 17
	if err := db.UpsertClusterNode(ctx, a2); err != nil {
		t.Fatal(err)
	}
	want[1].ApplicationURI, want[1].UpdatedAt = "urn:node-a:otopcua:v2", dbTime(t0.Add(90*time.Second))
	got, err = db.ListClusterNodes(ctx, "plant-1")
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, got, want)

	clock.Advance(time.Second)
	if err := db.SetServiceLevelBase(ctx, "plant-1", "node-a.lan:4053", 255); err != nil {
		t.Fatal(err)
	}
	want[1].ServiceLevelBase, want[1].UpdatedAt = 255, dbTime(t0.Add(91*time.Second))
	got, _ = db.ListClusterNodes(ctx, "plant-1")
	checkNodes(t, got, want)

	if err := db.SetServiceLevelBase(ctx, "plant-1", "nowhere:1", 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetServiceLevelBase of a missing node: %v, want ErrNotFound", err)
	}
	if err := db.SetServiceLevelBase(ctx, "plant-1", "node-a.lan:4053", 256); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetServiceLevelBase(256): %v, want ErrInvalid", err)
	}
	if got, err := db.ListClusterNodes(ctx, "plant-9"); err != nil || len(got) != 0 {
		t.Fatalf("nodes of an unknown cluster: %v, %v; want none", got, err)
	}

	// Keys up to maxKeyLen characters (not bytes) fit every dialect.
	long := strings.Repeat("é", maxKeyLen)
	if err := db.UpsertCluster(ctx, Cluster{ID: long, Name: long}); err != nil {
		t.Fatalf("a %d-character cluster id: %v", maxKeyLen, err)
	}
	if err := db.UpsertCluster(ctx, Cluster{ID: long + "x", Name: "x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a %d-character cluster id: %v, want ErrInvalid", maxKeyLen+1, err)
	}

	// A second handle (another node) sees the same rows.
	peer := open(t, nil)
	got, err = peer.ListClusterNodes(ctx, "plant-2")
	if err != nil || len(got) != 1 || got[0].NodeID != "node-c.lan:4053" {
		t.Fatalf("peer sees %v, %v", got, err)
	}

	for _, bad := range []ClusterNode{
		{ClusterID: "plant-1", NodeID: "no-port", ApplicationURI: "urn:x"},
		{ClusterID: "plant-1", NodeID: ":4053", ApplicationURI: "urn:x"},
		{ClusterID: "plant-1", NodeID: "host:0", ApplicationURI: "urn:x"},
		{ClusterID: "plant-1", NodeID: "host:70000", ApplicationURI: "urn:x"},
		{ClusterID: "plant-1", NodeID: "host:4053"},
		{ClusterID: "", NodeID: "host:4053", ApplicationURI: "urn:x"},
		{ClusterID: "plant-1", NodeID: "host:4053", ApplicationURI: "urn:x", ServiceLevelBase: -1},
	} {
		if err := db.UpsertClusterNode(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("UpsertClusterNode(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}

func checkNodes(t *testing.T, got, want []ClusterNode) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d nodes %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ClusterID != w.ClusterID || g.NodeID != w.NodeID || g.ApplicationURI != w.ApplicationURI ||
			g.ServiceLevelBase != w.ServiceLevelBase || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Fatalf("node %d:\n got %+v\nwant %+v", i, g, w)
		}
		if g.CreatedAt.Location() != time.UTC {
			t.Fatalf("node %d: CreatedAt in %v, want UTC", i, g.CreatedAt.Location())
		}
	}
}

func testAudit(t *testing.T, open opener) {
	clock := clockwork.NewFakeClockAt(t0)
	db := migrated(t, open(t, clock))
	ctx := ctxT(t)
	if err := db.WriteAudit(ctx, AuditEntry{Actor: "admin", Action: "failover.manual", Target: "plant-1", Detail: "planned"}); err != nil {
		t.Fatal(err)
	}
	cet := time.FixedZone("CET", 3600)
	explicit := time.Date(2026, 2, 27, 23, 59, 59, 999_999_000, cet)
	if err := db.WriteAudit(ctx, AuditEntry{At: explicit, Actor: "node node-a.lan:4053", Action: "deploy", Target: "plant-1", Detail: "ünïcödé 設定"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := db.WriteAudit(ctx, AuditEntry{Actor: "admin", Action: "node.edit"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.RecentAudit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("RecentAudit(2) returned %d entries", len(got))
	}
	if got[0].Action != "node.edit" || !got[0].At.Equal(dbTime(t0.Add(time.Second))) || got[0].Target != "" {
		t.Fatalf("newest = %+v", got[0])
	}
	if got[1].Action != "deploy" || !got[1].At.Equal(explicit) || got[1].At.Location() != time.UTC || got[1].Detail != "ünïcödé 設定" {
		t.Fatalf("second = %+v (At want %v in UTC)", got[1], explicit.UTC())
	}
	if got[0].ID <= got[1].ID {
		t.Fatalf("ids %d, %d: want newest first", got[0].ID, got[1].ID)
	}
	all, err := db.RecentAudit(ctx, 10)
	if err != nil || len(all) != 3 || all[2].Action != "failover.manual" || !all[2].At.Equal(dbTime(t0)) {
		t.Fatalf("RecentAudit(10) = %+v, %v", all, err)
	}
	for i, bad := range []AuditEntry{{Action: "x"}, {Actor: "x"}} {
		if err := db.WriteAudit(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("bad entry %d: %v, want ErrInvalid", i, err)
		}
	}
	if _, err := db.RecentAudit(ctx, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("RecentAudit(0): %v, want ErrInvalid", err)
	}
}

func TestUnknownProviderNamesTheAcceptedValues(t *testing.T) {
	for _, p := range []string{"mysql", "", "sqlite3"} {
		_, err := Open(context.Background(), p, "x")
		if !errors.Is(err, ErrUnknownProvider) {
			t.Fatalf("Open(%q) = %v, want ErrUnknownProvider", p, err)
		}
		if want := fmt.Sprintf("%q: accepted values are sqlite, postgres, sqlserver", p); !contains(err.Error(), want) {
			t.Fatalf("Open(%q) error %q does not contain %q", p, err, want)
		}
	}
	if _, err := Open(context.Background(), "Postgres", ""); !errors.Is(err, ErrBadConnectionString) {
		t.Fatalf("an empty connection string: %v, want ErrBadConnectionString", err)
	}
}

func contains(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }
