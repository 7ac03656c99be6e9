package configdb

import (
	"testing"
	"time"
)

// testFloatingHeartbeats: the database stamps every heartbeat with its own
// clock, whatever the sender's clock says; seq rises by 1 per heartbeat of
// a node; rows of another cluster are not listed.
func testFloatingHeartbeats(t *testing.T, db *DB) {
	migrated(t, db)
	ctx := ctxT(t)
	before := time.Now()
	skewed := before.Add(time.Hour) // a sender whose clock runs an hour ahead
	a1, err := db.PutFloatingHeartbeat(ctx, "c1", FloatingHeartbeat{Node: "a:1", EmittedAt: skewed, Claims: true, Epoch: 4, MAC: "02:00:00:00:00:0a"})
	if err != nil {
		t.Fatal(err)
	}
	if a1.Seq != 1 {
		t.Fatalf("first heartbeat seq %d, want 1", a1.Seq)
	}
	if d := a1.ObservedAt.Sub(before); d < -time.Minute || d > time.Minute {
		t.Fatalf("observed_at %v is not the database's clock (test started %v; sender said %v)", a1.ObservedAt, before, skewed)
	}
	if _, err := db.PutFloatingHeartbeat(ctx, "c1", FloatingHeartbeat{Node: "b:1", EmittedAt: before, MAC: "02:00:00:00:00:0b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutFloatingHeartbeat(ctx, "c2", FloatingHeartbeat{Node: "z:1", EmittedAt: before}); err != nil {
		t.Fatal(err)
	}
	a2, err := db.PutFloatingHeartbeat(ctx, "c1", FloatingHeartbeat{Node: "a:1", EmittedAt: skewed, Claims: false, Epoch: 5, MAC: "02:00:00:00:00:0a",
		Draining: true, Healthy: true})
	if err != nil {
		t.Fatal(err)
	}
	if a2.Seq != 2 || a2.ObservedAt.Before(a1.ObservedAt) {
		t.Fatalf("second heartbeat: seq %d observed %v; first observed %v", a2.Seq, a2.ObservedAt, a1.ObservedAt)
	}
	rows, err := db.FloatingHeartbeats(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Node != "a:1" || rows[1].Node != "b:1" {
		t.Fatalf("rows of c1: %+v", rows)
	}
	a := rows[0]
	if a.Seq != 2 || a.Claims || !a.Draining || !a.Healthy || a.Licensed || a.Epoch != 5 || a.MAC != "02:00:00:00:00:0a" || !a.ObservedAt.Equal(a2.ObservedAt) ||
		a.EmittedAt.Sub(skewed).Abs() > time.Millisecond {
		t.Fatalf("row of a: %+v, want the second heartbeat %+v", a, a2)
	}
	if _, err := db.PutFloatingHeartbeat(ctx, "", FloatingHeartbeat{Node: "a:1"}); err == nil {
		t.Fatal("a heartbeat without a cluster id was stored")
	}
}
