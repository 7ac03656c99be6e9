package localdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/otopcua/otopcua/localdb/hlc"
	"pgregory.net/rapid"
)

var replT0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// pairT opens two files, node-a and node-b, on one fake clock.
func pairT(t *testing.T) (a, b *DB, clock *clockwork.FakeClock) {
	t.Helper()
	clock = clockwork.NewFakeClockAt(replT0)
	a = openT(t, newPath(t), WithClock(clock), WithNodeID("node-a"))
	b = openT(t, newPath(t), WithClock(clock), WithNodeID("node-b"))
	return a, b, clock
}

// changesT is every change of table on db.
func changesT(t *testing.T, db *DB, table string) []Change {
	t.Helper()
	var out []Change
	var after hlc.Stamp
	for {
		cs, _, err := db.Changes(ctxT(t), table, after, MaxChanges)
		if err != nil {
			t.Fatalf("Changes(%s): %v", table, err)
		}
		if len(cs) == 0 {
			return out
		}
		out = append(out, cs...)
		after = cs[len(cs)-1].Stamp
	}
}

// syncT copies every change of every table from src to dst, in table order.
func syncT(t *testing.T, src, dst *DB) (applied, skipped int) {
	t.Helper()
	for _, table := range ReplicatedTables() {
		cs := changesT(t, src, table)
		for start := 0; start < len(cs); start += MaxChanges {
			a, s, err := dst.ApplyRemote(ctxT(t), cs[start:min(start+MaxChanges, len(cs))])
			if err != nil {
				t.Fatalf("ApplyRemote(%s): %v", table, err)
			}
			applied, skipped = applied+a, skipped+s
		}
	}
	return applied, skipped
}

func countT(t *testing.T, db *DB, table string) int64 {
	t.Helper()
	n, err := db.RowCounts(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return n[table]
}

func originsT(t *testing.T, db *DB, table string) string {
	t.Helper()
	var s string
	if err := db.sql.QueryRowContext(ctxT(t), "SELECT COALESCE(group_concat(DISTINCT origin), '') FROM "+table).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReplicatedArtifactIsByteIdentical(t *testing.T) {
	a, b, _ := pairT(t)
	doc := docOf(3, 3*ChunkSize+17)
	saveT(t, a, "site-a", 3, doc)
	if applied, skipped := syncT(t, a, b); applied != 5 || skipped != 0 {
		t.Fatalf("applied %d skipped %d, want 4 chunks and 1 pointer", applied, skipped)
	}
	loadT(t, b, "site-a", 3, doc)
	if o := originsT(t, b, TableArtifacts) + "/" + originsT(t, b, TablePointer); o != "node-a/node-a" {
		t.Fatalf("origins on B = %s, want node-a", o)
	}
	// Again: nothing new, every change older or equal.
	if applied, skipped := syncT(t, a, b); applied != 0 || skipped != 5 {
		t.Fatalf("a repeated sync applied %d skipped %d", applied, skipped)
	}
	// A new version on A: the old chunks' tombstones and the new chunks.
	doc4 := docOf(4, ChunkSize+1)
	saveT(t, a, "site-a", 4, doc4)
	syncT(t, a, b)
	loadT(t, b, "site-a", 4, doc4)
	if cv := chunkVersions(t, b, "site-a"); len(cv) != 1 || cv[4] != 2 {
		t.Fatalf("chunks on B of versions %v, want only 4", cv)
	}
}

func TestLocalWritesAreStampedInCommitOrder(t *testing.T) {
	a, _, _ := pairT(t)
	saveT(t, a, "site-a", 1, docOf(1, 2*ChunkSize))
	enqueueT(t, a, event("A", "1"), 0)
	if err := a.MarkFailed(ctxT(t), 1, "down", false); err != nil {
		t.Fatal(err)
	}
	var last hlc.Stamp
	for _, table := range ReplicatedTables() {
		for _, c := range changesT(t, a, table) {
			if c.Stamp.Node != "node-a" {
				t.Fatalf("%s %s stamped by %q", table, c.Key, c.Stamp.Node)
			}
			if table != TableArtifacts && !last.Less(c.Stamp) { // artifacts precede the pointer in one save
				t.Fatalf("%s %s stamp %v not after %v", table, c.Key, c.Stamp, last)
			}
			last = c.Stamp
		}
	}
}

func TestQueuedEventAndItsDeleteReplicate(t *testing.T) {
	a, b, _ := pairT(t)
	enqueueT(t, a, event("A", "1"), 0)
	enqueueT(t, a, event("A", "2"), 0)
	syncT(t, a, b)
	got := peekT(t, b, 10)
	if len(got) != 2 || got[0].TransitionID != "1" || string(got[0].Payload) != string(event("A", "1").Payload) {
		t.Fatalf("B's queue = %+v", got)
	}
	// A delivers the first; its delete reaches B as a tombstone.
	if n, err := a.DeleteEventsByKey(ctxT(t), []EventKey{event("A", "1").Key()}); err != nil || n != 1 {
		t.Fatalf("DeleteEventsByKey = %d, %v", n, err)
	}
	tombs := changesT(t, a, TableEvents)
	if len(tombs) != 2 || !tombs[1].Deleted || tombs[1].Key != `["site-a","A","1"]` {
		t.Fatalf("A's changes = %+v", tombs)
	}
	syncT(t, a, b)
	if got := peekT(t, b, 10); len(got) != 1 || got[0].TransitionID != "2" {
		t.Fatalf("B's queue after the delete = %+v", got)
	}
	// The old row arriving late (from a third copy) does not come back.
	if applied, _, err := b.ApplyRemote(ctxT(t), changesT(t, a, TableEvents)[:1]); err != nil || applied != 0 {
		t.Fatalf("a stale row: applied %d, %v", applied, err)
	}
}

func TestLastWriterWinsBothWays(t *testing.T) {
	a, b, clock := pairT(t)
	enqueueT(t, a, event("A", "1"), 0)
	syncT(t, a, b)
	if err := a.MarkFailed(ctxT(t), 1, "from a", false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond)
	if err := b.MarkFailed(ctxT(t), 1, "from b", true); err != nil {
		t.Fatal(err)
	}
	syncT(t, a, b)
	syncT(t, b, a)
	for _, db := range []*DB{a, b} {
		got, err := db.EventKeysAfter(ctxT(t), 0, 10)
		if err != nil || len(got) != 1 || got[0].LastError != "from b" || !got[0].Poisoned {
			t.Fatalf("%s holds %+v, %v; want B's later write", db.NodeID(), got, err)
		}
	}
}

func TestApplyRemoteRefusesTheWholeBatch(t *testing.T) {
	a, b, clock := pairT(t)
	enqueueT(t, a, event("A", "1"), 0)
	good := changesT(t, a, TableEvents)[0]
	future := good
	future.Stamp.WallMs = clock.Now().Add(61 * time.Second).UnixMilli()
	withField := good
	withField.Row = bytes.Replace(good.Row, []byte(`{`), []byte(`{"extra":1,`), 1)
	wrongKey := good
	wrongKey.Key = `["site-a","A","2"]`
	pointerDelete := Change{Table: TablePointer, Key: `["site-a"]`, Stamp: good.Stamp, Deleted: true}
	badKey := Change{Table: TableEvents, Key: `["site-a","A"]`, Stamp: good.Stamp, Deleted: true}
	trailing := good
	trailing.Row = append(append([]byte(nil), good.Row...), []byte(" {}")...)
	for _, tc := range []struct {
		name   string
		bad    Change
		target error
	}{
		{"unknown table", Change{Table: "sqlite_schema", Key: "[1]", Stamp: good.Stamp, Row: good.Row}, ErrUnknownTable},
		{"future stamp", future, hlc.ErrSkew},
		{"unknown field", withField, ErrMalformedChange},
		{"key differs from row", wrongKey, ErrMalformedChange},
		{"pointer delete", pointerDelete, ErrMalformedChange},
		{"short key", badKey, ErrMalformedChange},
		{"trailing data", trailing, ErrMalformedChange},
		{"not JSON", Change{Table: TableEvents, Key: good.Key, Stamp: good.Stamp, Row: []byte("{")}, ErrMalformedChange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied, skipped, err := b.ApplyRemoteFrom(ctxT(t), "node-a", TableEvents, []Change{good, tc.bad}, good.Stamp)
			wantErr(t, err, tc.target)
			if applied != 0 || skipped != 0 || countT(t, b, TableEvents) != 0 {
				t.Fatalf("applied %d skipped %d, %d rows; want nothing", applied, skipped, countT(t, b, TableEvents))
			}
			if c, _ := b.Cursor(ctxT(t), "node-a", TableEvents); !c.IsZero() {
				t.Fatalf("the cursor moved to %v", c)
			}
		})
	}
	if b.Clock().Last().WallMs > clock.Now().UnixMilli() {
		t.Fatalf("a refused future stamp moved B's clock to %v", b.Clock().Last())
	}
}

func TestReplicatedPointerNeverMovesBack(t *testing.T) {
	a, b, clock := pairT(t)
	saveT(t, b, "site-a", 5, docOf(5, 100))
	clock.Advance(time.Second)
	saveT(t, a, "site-a", 4, docOf(4, 100)) // later stamp, older version
	syncT(t, a, b)
	loadT(t, b, "site-a", 5, docOf(5, 100))
}

func TestPointerBeforeItsChunksIsRefused(t *testing.T) {
	a, b, _ := pairT(t)
	doc := docOf(2, 2*ChunkSize)
	saveT(t, a, "site-a", 2, doc)
	ptr := changesT(t, a, TablePointer)
	_, _, err := b.ApplyRemote(ctxT(t), ptr)
	wantErr(t, err, ErrChunksMissing, `cluster "site-a" version 2`, "0 of 2 chunks")
	if _, err := b.LoadArtifact(ctxT(t), "site-a"); !errors.Is(err, ErrNoArtifact) {
		t.Fatalf("LoadArtifact after a refused pointer: %v", err)
	}
	// One chunk only: still refused.
	chunks := changesT(t, a, TableArtifacts)
	_, _, err = b.ApplyRemote(ctxT(t), append(append([]Change(nil), ptr...), chunks[0]))
	wantErr(t, err, ErrChunksMissing, "1 of 2 chunks")
	// Pointer listed first, chunks after it in one batch: chunks apply first.
	if applied, _, err := b.ApplyRemote(ctxT(t), append(ptr, chunks...)); err != nil || applied != 3 {
		t.Fatalf("ApplyRemote = %d, %v", applied, err)
	}
	loadT(t, b, "site-a", 2, doc)
}

// The tombstones of the old version's chunks arrive before the new pointer
// (they are in the artifacts table): B keeps the chunks its pointer names
// until the pointer moves, so it can boot at every point in between.
func TestOldChunksStayUntilThePointerMoves(t *testing.T) {
	a, b, _ := pairT(t)
	saveT(t, a, "site-a", 1, docOf(1, 1000))
	syncT(t, a, b)
	saveT(t, a, "site-a", 2, docOf(2, 1000))
	if _, _, err := b.ApplyRemote(ctxT(t), changesT(t, a, TableArtifacts)); err != nil {
		t.Fatal(err)
	}
	loadT(t, b, "site-a", 1, docOf(1, 1000))
	if _, _, err := b.ApplyRemote(ctxT(t), changesT(t, a, TablePointer)); err != nil {
		t.Fatal(err)
	}
	loadT(t, b, "site-a", 2, docOf(2, 1000))
	if cv := chunkVersions(t, b, "site-a"); len(cv) != 1 || cv[2] != 1 {
		t.Fatalf("chunks of versions %v, want only 2", cv)
	}
}

func TestChangesAreBoundedAndResumeFromTheCursor(t *testing.T) {
	a, b, _ := pairT(t)
	for i := range 25 {
		enqueueT(t, a, event("A", fmt.Sprint(i)), 0)
	}
	var after hlc.Stamp
	for round := 0; ; round++ {
		cs, more, err := a.Changes(ctxT(t), TableEvents, after, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := round < 2; more != want { // 25 changes: 10, 10, 5
			t.Fatalf("round %d: more = %v, want %v", round, more, want)
		}
		if len(cs) == 0 {
			break
		}
		if len(cs) > 10 {
			t.Fatalf("round %d: %d changes, limit 10", round, len(cs))
		}
		if _, _, err := b.ApplyRemoteFrom(ctxT(t), "node-a", TableEvents, cs, cs[len(cs)-1].Stamp); err != nil {
			t.Fatal(err)
		}
		if after, err = b.Cursor(ctxT(t), "node-a", TableEvents); err != nil || after != cs[len(cs)-1].Stamp {
			t.Fatalf("cursor %v, %v; want %v", after, err, cs[len(cs)-1].Stamp)
		}
	}
	if n := countT(t, b, TableEvents); n != 25 {
		t.Fatalf("B holds %d events, want 25", n)
	}
	// The cursor never moves back.
	if _, _, err := b.ApplyRemoteFrom(ctxT(t), "node-a", TableEvents, nil, hlc.Stamp{WallMs: 1, Node: "node-a"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := b.Cursor(ctxT(t), "node-a", TableEvents); c != after {
		t.Fatalf("cursor moved back to %v", c)
	}
	if _, _, err := a.Changes(ctxT(t), TableEvents, hlc.Stamp{}, MaxChanges+1); err == nil {
		t.Fatal("a limit over MaxChanges was accepted")
	}
	if _, _, err := a.Changes(ctxT(t), "schema_version", hlc.Stamp{}, 1); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("Changes of an unknown table: %v", err)
	}
}

func TestChangesBoundTheBytes(t *testing.T) {
	a, _, _ := pairT(t)
	saveT(t, a, "site-a", 1, docOf(1, 100*ChunkSize))
	cs, more, err := a.Changes(ctxT(t), TableArtifacts, hlc.Stamp{}, MaxChanges)
	if err != nil {
		t.Fatal(err)
	}
	if !more {
		t.Fatal("a batch cut by its bytes says there is no more")
	}
	size := 0
	for _, c := range cs {
		size += len(c.Row)
	}
	if len(cs) == 0 || len(cs) >= 100 || size > MaxChangesBytes {
		t.Fatalf("%d changes of %d bytes; want fewer than 100 and ≤ %d bytes", len(cs), size, MaxChangesBytes)
	}
}

func TestTombstonesAreCompactedAfterTheTTL(t *testing.T) {
	a, _, clock := pairT(t)
	enqueueT(t, a, event("A", "1"), 0)
	if _, err := a.DeleteEvents(ctxT(t), []int64{1}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.CompactTombstones(ctxT(t), 0); err != nil || n != 0 {
		t.Fatalf("compacted %d, %v before the TTL", n, err)
	}
	clock.Advance(DefaultTombstoneTTL + time.Second)
	if n, err := a.CompactTombstones(ctxT(t), 0); err != nil || n != 1 {
		t.Fatalf("compacted %d, %v after the TTL; want 1", n, err)
	}
	if cs := changesT(t, a, TableEvents); len(cs) != 0 {
		t.Fatalf("changes after compaction: %+v", cs)
	}
}

func TestUpgradeStampsExistingRows(t *testing.T) {
	path := newPath(t)
	doc := docOf(7, 2*ChunkSize)
	writeVersion1(t, path, "site-a", 3, doc)
	a := openT(t, path, WithNodeID("node-a"))
	b := openT(t, newPath(t), WithNodeID("node-b"))
	syncT(t, a, b)
	loadT(t, b, "site-a", 3, doc)
}

// applyLoop is the "apply-loop" helper: it copies src's events into path in
// batches of MaxChanges, printing "applied N" after each commit.
func applyLoop(ctx context.Context, path, src string) error {
	s, err := Open(ctx, src, nil, WithNodeID("src"))
	if err != nil {
		return err
	}
	defer s.Close()
	db, err := Open(ctx, path, nil, WithNodeID("dst"))
	if err != nil {
		return err
	}
	defer db.Close()
	total := 0
	for {
		after, err := db.Cursor(ctx, "src", TableEvents)
		if err != nil {
			return err
		}
		cs, _, err := s.Changes(ctx, TableEvents, after, MaxChanges)
		if err != nil || len(cs) == 0 {
			return err
		}
		if _, _, err := db.ApplyRemoteFrom(ctx, "src", TableEvents, cs, cs[len(cs)-1].Stamp); err != nil {
			return err
		}
		total += len(cs)
		fmt.Printf("applied %d\n", total)
	}
}

// A process SIGKILLed while applying batches leaves whole batches only,
// and the cursor says exactly which: a half-applied batch does not exist.
func TestKilledMidApplyLeavesWholeBatches(t *testing.T) {
	src := newPath(t)
	s := openT(t, src, WithNodeID("src"))
	const n = 8 * MaxChanges
	for i := range n {
		enqueueT(t, s, event("A", fmt.Sprint(i)), 0)
	}
	exe := testExe(t)
	for round := range 3 {
		path := newPath(t)
		applier := startLines(t, helper(t, exe, "apply-loop", path, "LOCALDB_SOURCE="+src))
		for range round + 1 {
			if !applier.lines.Scan() {
				t.Fatalf("round %d: the applier stopped: %v %s", round, applier.lines.Err(), applier.stderr.String())
			}
		}
		applier.kill(t)
		db := openT(t, path)
		got := countT(t, db, TableEvents)
		cursor, err := db.Cursor(ctxT(t), "src", TableEvents)
		if err != nil {
			t.Fatal(err)
		}
		var upTo int64
		if err := s.sql.QueryRowContext(ctxT(t), "SELECT COUNT(*) FROM alarm_sf_events WHERE hlc <= ?", afterText(cursor)).Scan(&upTo); err != nil {
			t.Fatal(err)
		}
		if got%MaxChanges != 0 || got != upTo || got < int64(round+1)*MaxChanges {
			t.Fatalf("round %d: %d rows after the kill, the cursor covers %d; want the same whole number of batches", round, got, upTo)
		}
	}
}

func TestChangeRowsAreJSONObjects(t *testing.T) {
	a, _, _ := pairT(t)
	enqueueT(t, a, event("A", "1"), 0)
	var row map[string]any
	if err := json.Unmarshal(changesT(t, a, TableEvents)[0].Row, &row); err != nil || row["alarm"] != "A" || row["seq"] != nil {
		t.Fatalf("row %v, %v", row, err)
	}
}

// eventState is a node's queue without the local seq, for comparing nodes.
func eventState(t *rapid.T, db *DB) string {
	got, err := db.EventKeysAfter(context.Background(), 0, MaxEventBatch)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]string, len(got))
	for i, e := range got {
		rows[i] = fmt.Sprintf("%s/%d/%s/%v", e.TransitionID, e.Attempts, e.LastError, e.Poisoned)
	}
	slices.Sort(rows) // seq, the queue order, is each node's own
	return strings.Join(rows, ";")
}

// Any interleaving of writes on both nodes and partial syncs in either
// direction ends, once both have synced both ways, with the same rows on
// both (last writer wins converges).
func TestRandomWritesAndSyncsConverge(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := clockwork.NewFakeClockAt(replT0)
		dir := t.TempDir()
		a, err := Open(context.Background(), dir+"/a.db", nil, WithClock(clock), WithNodeID("node-a"))
		if err != nil {
			rt.Fatal(err)
		}
		defer a.Close()
		b, err := Open(context.Background(), dir+"/b.db", nil, WithClock(clock), WithNodeID("node-b"))
		if err != nil {
			rt.Fatal(err)
		}
		defer b.Close()
		nodes := []*DB{a, b}
		key := func() EventKey {
			return EventKey{ClusterID: "site-a", Alarm: "A", TransitionID: fmt.Sprint(rapid.IntRange(0, 3).Draw(rt, "key"))}
		}
		for i, n := 0, rapid.IntRange(1, 25).Draw(rt, "ops"); i < n; i++ {
			db := nodes[rapid.IntRange(0, 1).Draw(rt, "node")]
			ctx := context.Background()
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				k := key()
				if _, err := db.EnqueueEvent(ctx, QueuedEvent{ClusterID: k.ClusterID, Alarm: k.Alarm, TransitionID: k.TransitionID, Payload: []byte(`{}`)}, 0); err != nil {
					rt.Fatal(err)
				}
			case 1:
				got, _ := db.EventKeysAfter(ctx, 0, 10)
				if len(got) > 0 {
					e := got[rapid.IntRange(0, len(got)-1).Draw(rt, "row")]
					if err := db.MarkFailed(ctx, e.Seq, db.NodeID(), rapid.Bool().Draw(rt, "poison")); err != nil {
						rt.Fatal(err)
					}
				}
			case 2:
				if _, err := db.DeleteEventsByKey(ctx, []EventKey{key()}); err != nil {
					rt.Fatal(err)
				}
			case 3:
				other := nodes[1-slices.Index(nodes, db)]
				syncRT(rt, other, db, "node-x")
			case 4:
				clock.Advance(time.Duration(rapid.IntRange(0, 3).Draw(rt, "ms")) * time.Millisecond)
			}
		}
		for range 2 {
			syncRT(rt, a, b, "node-a")
			syncRT(rt, b, a, "node-b")
		}
		if sa, sb := eventState(rt, a), eventState(rt, b); sa != sb {
			rt.Fatalf("diverged: A %s, B %s", sa, sb)
		}
	})
}

// syncRT pulls every events change from src into dst, resuming from dst's
// cursor for peer.
func syncRT(t *rapid.T, src, dst *DB, peer string) {
	ctx := context.Background()
	for {
		after, err := dst.Cursor(ctx, peer, TableEvents)
		if err != nil {
			t.Fatal(err)
		}
		cs, _, err := src.Changes(ctx, TableEvents, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			return
		}
		if _, _, err := dst.ApplyRemoteFrom(ctx, peer, TableEvents, cs, cs[len(cs)-1].Stamp); err != nil {
			t.Fatal(err)
		}
	}
}
