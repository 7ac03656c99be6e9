package localdb

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/otopcua/otopcua/localdb/hlc"
)

// FuzzApplyRemote feeds arbitrary keys and rows, as a peer could send
// them, to ApplyRemote beside a valid change: it never panics, a refused
// batch changes no row, and an accepted one leaves every cached artifact
// loadable or absent (never a pointer without its chunks).
//
//	go test -run '^$' -fuzz FuzzApplyRemote -fuzzminimizetime 1s ./localdb/
func FuzzApplyRemote(f *testing.F) {
	clock := clockwork.NewFakeClockAt(replT0)
	src, err := Open(context.Background(), f.TempDir()+"/src.db", nil, WithClock(clock), WithNodeID("src"))
	if err != nil {
		f.Fatal(err)
	}
	defer src.Close()
	if err := src.SaveArtifact(context.Background(), "site-a", 1, []byte("doc")); err != nil {
		f.Fatal(err)
	}
	if _, err := src.EnqueueEvent(context.Background(), QueuedEvent{ClusterID: "site-a", Alarm: "A", TransitionID: "1", Payload: []byte(`{}`)}, 0); err != nil {
		f.Fatal(err)
	}
	for i, table := range replicatedTables {
		cs, _, err := src.Changes(context.Background(), table, hlc.Stamp{}, 10)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range cs {
			f.Add(uint8(i), c.Key, c.Row, c.Deleted)
		}
	}
	dst, err := Open(context.Background(), f.TempDir()+"/dst.db", nil, WithClock(clock), WithNodeID("dst"))
	if err != nil {
		f.Fatal(err)
	}
	defer dst.Close()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, table uint8, key string, row []byte, deleted bool) {
		clock.Advance(time.Millisecond)
		good := Change{Table: TableEvents, Key: `["site-a","A","x"]`, Stamp: src.Clock().Now(),
			Row: []byte(`{"cluster_id":"site-a","alarm":"A","transition_id":"x","payload":"{}","enqueued_at":"2026-03-01T08:00:00.000000Z","attempts":0,"last_error":"","poisoned":false}`)}
		fuzzed := Change{Table: replicatedTables[int(table)%len(replicatedTables)], Key: key, Stamp: src.Clock().Now(), Deleted: deleted, Row: row}
		before, err := dst.RowCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = dst.ApplyRemote(ctx, []Change{good, fuzzed})
		after, cerr := dst.RowCounts(ctx)
		if cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil && !maps.Equal(before, after) {
			t.Fatalf("a refused batch changed rows: %v → %v (%v)", before, after, err)
		}
		rows, qerr := dst.sql.QueryContext(ctx, "SELECT cluster_id FROM deployment_pointer")
		if qerr != nil {
			t.Fatal(qerr)
		}
		var clusters []string
		for rows.Next() {
			var c string
			_ = rows.Scan(&c)
			clusters = append(clusters, c)
		}
		rows.Close()
		for _, c := range clusters {
			if _, err := dst.LoadArtifact(ctx, c); err != nil {
				t.Fatalf("an accepted pointer of %q does not load: %v", c, err)
			}
		}
	})
}
