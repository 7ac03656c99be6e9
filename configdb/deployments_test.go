package configdb

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// put stores doc and checks the version and whether a row was written.
func put(t *testing.T, db *DB, cluster string, doc []byte, wantVersion int64, wantCreated bool) Deployment {
	t.Helper()
	d, created, err := db.PutDeployment(ctxT(t), cluster, doc)
	if err != nil {
		t.Fatalf("PutDeployment(%s, %d bytes): %v", cluster, len(doc), err)
	}
	if d.Version != wantVersion || created != wantCreated {
		t.Fatalf("PutDeployment(%s, %.20q) = version %d, created %v; want %d, %v", cluster, doc, d.Version, created, wantVersion, wantCreated)
	}
	if d.ClusterID != cluster || d.SHA256 != hexSum(doc) || !bytes.Equal(d.Document, doc) {
		t.Fatalf("PutDeployment returned %q, sha256 %s, %d bytes", d.ClusterID, d.SHA256, len(d.Document))
	}
	if d.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt in %v, want UTC", d.CreatedAt.Location())
	}
	return d
}

func clusterName(t *testing.T, db *DB, id string) (string, bool) {
	t.Helper()
	var name string
	err := db.sql.QueryRowContext(ctxT(t), db.d.bind("SELECT name FROM clusters WHERE id = $1"), id).Scan(&name)
	if err != nil {
		return "", false
	}
	return name, true
}

func testDeployments(t *testing.T, open opener) {
	// The node's clock is far from now: created_at must come from the
	// database's clock, not from this one.
	db := migrated(t, open(t, clockwork.NewFakeClockAt(t0)))
	ctx := ctxT(t)
	if _, err := db.LatestDeployment(ctx, "plant-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestDeployment with none: %v, want ErrNotFound", err)
	}
	if _, _, err := db.LatestDeploymentVersion(ctx, "plant-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestDeploymentVersion with none: %v, want ErrNotFound", err)
	}
	if _, err := db.DeploymentVersion(ctx, "plant-1", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeploymentVersion with none: %v, want ErrNotFound", err)
	}
	if err := db.UpsertCluster(ctx, Cluster{ID: "plant-1", Name: "Plant 1"}); err != nil {
		t.Fatal(err)
	}

	a := []byte(`{"clusterId": "plant-1", "devices": []}`)
	b := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, '\'', '"', '\\'}, 125_000) // 1 MB with NUL bytes
	before := time.Now()
	v1 := put(t, db, "plant-1", a, 1, true)
	if v1.CreatedAt.Before(before.Add(-5*time.Second)) || v1.CreatedAt.After(time.Now().Add(5*time.Second)) {
		t.Fatalf("CreatedAt %v is not the database's clock (now %v; the handle's clock says %v)", v1.CreatedAt, time.Now().UTC(), t0)
	}
	// The same bytes again: no new version.
	again := put(t, db, "plant-1", bytes.Clone(a), 1, false)
	if !again.CreatedAt.Equal(v1.CreatedAt) {
		t.Fatalf("unchanged put: CreatedAt %v, want the stored %v", again.CreatedAt, v1.CreatedAt)
	}
	v2 := put(t, db, "plant-1", b, 2, true)
	// Back to the first document: a change from the newest, so a version.
	v3 := put(t, db, "plant-1", a, 3, true)
	if v2.CreatedAt.Before(v1.CreatedAt) || v3.CreatedAt.Before(v2.CreatedAt) {
		t.Fatalf("created_at goes back: %v, %v, %v", v1.CreatedAt, v2.CreatedAt, v3.CreatedAt)
	}
	// Versions count per cluster; a cluster without a clusters row gets one.
	if _, ok := clusterName(t, db, "plant-2"); ok {
		t.Fatal("plant-2 exists before its first deployment")
	}
	put(t, db, "plant-2", b, 1, true)
	if name, ok := clusterName(t, db, "plant-2"); !ok || name != "plant-2" {
		t.Fatalf("clusters row of plant-2: %q, %v; want it created, named after its id", name, ok)
	}
	if name, _ := clusterName(t, db, "plant-1"); name != "Plant 1" {
		t.Fatalf("plant-1 renamed to %q by a deployment", name)
	}

	got, err := db.LatestDeployment(ctx, "plant-1")
	if err != nil {
		t.Fatal(err)
	}
	checkDeployment(t, got, v3)
	got, err = db.DeploymentVersion(ctx, "plant-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	checkDeployment(t, got, v2)
	if _, err := db.DeploymentVersion(ctx, "plant-1", 4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeploymentVersion(4): %v, want ErrNotFound", err)
	}
	if v, sum, err := db.LatestDeploymentVersion(ctx, "plant-1"); err != nil || v != 3 || sum != hexSum(a) {
		t.Fatalf("LatestDeploymentVersion = %d, %s, %v; want 3, %s", v, sum, err, hexSum(a))
	}

	// Another node's handle continues the numbering.
	peer := open(t, nil)
	put(t, peer, "plant-1", []byte("{}"), 4, true)
	if v, _, _ := db.LatestDeploymentVersion(ctx, "plant-1"); v != 4 {
		t.Fatalf("after the peer's put: newest version %d, want 4", v)
	}

	for _, bad := range []struct {
		cluster string
		doc     []byte
	}{{"plant-1", nil}, {"plant-1", []byte{}}, {"", a}, {strings.Repeat("x", maxKeyLen+1), a}} {
		if _, _, err := db.PutDeployment(ctx, bad.cluster, bad.doc); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutDeployment(%.10q, %d bytes) = %v, want ErrInvalid", bad.cluster, len(bad.doc), err)
		}
	}
}

func checkDeployment(t *testing.T, got, want Deployment) {
	t.Helper()
	if got.ClusterID != want.ClusterID || got.Version != want.Version || !bytes.Equal(got.Document, want.Document) ||
		got.SHA256 != want.SHA256 || !got.CreatedAt.Equal(want.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("read %s v%d (%d bytes, %s, %v); want %s v%d (%d bytes, %s, %v)",
			got.ClusterID, got.Version, len(got.Document), got.SHA256, got.CreatedAt,
			want.ClusterID, want.Version, len(want.Document), want.SHA256, want.CreatedAt)
	}
}

// testDeploymentsConcurrentPuts: two writers (two handles, as two
// "otopcua deploy" runs) store different documents at once, round after
// round; every put gets its own version, together 1..n without a gap, each
// writer's in the order it stored them.
func testDeploymentsConcurrentPuts(t *testing.T, open opener) {
	const perWriter = 30
	writers := []*DB{migrated(t, open(t, nil)), open(t, nil)}
	ctx := ctxT(t)
	// Each round starts both writers' puts together.
	rounds := make([]sync.WaitGroup, perWriter)
	for i := range rounds {
		rounds[i].Add(len(writers))
	}
	versions := make([][]int64, len(writers))
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for w, db := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				rounds[i].Done()
				rounds[i].Wait()
				d, created, err := db.PutDeployment(ctx, "plant-1", fmt.Appendf(nil, `{"writer": %d, "n": %d}`, w, i))
				if err == nil && !created {
					err = fmt.Errorf("put %d reported unchanged", i)
				}
				if err != nil {
					errs[w] = err
					for j := i + 1; j < perWriter; j++ {
						rounds[j].Done() // release the other writer
					}
					return
				}
				versions[w] = append(versions[w], d.Version)
			}
		}()
	}
	wg.Wait()
	var all []int64
	for w := range writers {
		if errs[w] != nil {
			t.Fatalf("writer %d: %v", w, errs[w])
		}
		if !sort.SliceIsSorted(versions[w], func(i, j int) bool { return versions[w][i] < versions[w][j] }) {
			t.Fatalf("writer %d got versions %v out of order", w, versions[w])
		}
		all = append(all, versions[w]...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i, v := range all {
		if v != int64(i+1) {
			t.Fatalf("versions %v: want 1..%d, each once", all, len(all))
		}
	}
	// Each version holds the document its writer stored.
	for w := range writers {
		for i, v := range versions[w] {
			d, err := writers[0].DeploymentVersion(ctx, "plant-1", v)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`{"writer": %d, "n": %d}`, w, i); string(d.Document) != want {
				t.Fatalf("version %d holds %s, want %s", v, d.Document, want)
			}
		}
	}
	t.Logf("writer versions: %v and %v", versions[0], versions[1])
}

// testDeploymentsFromV1: rows of the schema version 1 deployments table
// (id, cluster_id, artifact, created_at) survive the migration, numbered
// per cluster in id order, hashed, with their created_at.
func testDeploymentsFromV1(t *testing.T, db *DB) {
	ctx := ctxT(t)
	if err := db.migrate(ctx, migrations[:1]); err != nil {
		t.Fatalf("migrate to version 1: %v", err)
	}
	for _, c := range []string{"c1", "c2"} {
		if err := db.UpsertCluster(ctx, Cluster{ID: c, Name: c}); err != nil {
			t.Fatal(err)
		}
	}
	rows := []struct {
		cluster string
		doc     string
	}{{"c1", "x"}, {"c2", "z"}, {"c1", "y"}, {"c1", "w"}}
	insert := db.d.bind("INSERT INTO deployments (cluster_id, artifact, created_at) VALUES ($1, $2, $3)")
	for i, r := range rows {
		if _, err := db.sql.ExecContext(ctx, insert, r.cluster, []byte(r.doc), dbTime(t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatalf("version-1 row %d: %v", i, err)
		}
	}
	migrated(t, db)
	if v, _ := db.Version(ctx); v != SchemaVersion {
		t.Fatalf("Version = %d, want %d", v, SchemaVersion)
	}
	want := []Deployment{
		{ClusterID: "c1", Version: 1, Document: []byte("x"), CreatedAt: dbTime(t0)},
		{ClusterID: "c1", Version: 2, Document: []byte("y"), CreatedAt: dbTime(t0.Add(2 * time.Minute))},
		{ClusterID: "c1", Version: 3, Document: []byte("w"), CreatedAt: dbTime(t0.Add(3 * time.Minute))},
		{ClusterID: "c2", Version: 1, Document: []byte("z"), CreatedAt: dbTime(t0.Add(time.Minute))},
	}
	for _, w := range want {
		w.SHA256 = hexSum(w.Document)
		got, err := db.DeploymentVersion(ctx, w.ClusterID, w.Version)
		if err != nil {
			t.Fatalf("%s v%d after the migration: %v", w.ClusterID, w.Version, err)
		}
		checkDeployment(t, got, w)
	}
	put(t, db, "c1", []byte("w"), 3, false)
	put(t, db, "c1", []byte("v"), 4, true)
}
