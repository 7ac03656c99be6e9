package localdb

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

var eventT0 = time.Date(2026, 3, 1, 8, 0, 0, 123456789, time.UTC)

func event(alarm, transition string) QueuedEvent {
	return QueuedEvent{ClusterID: "site-a", Alarm: alarm, TransitionID: transition,
		Payload: []byte(fmt.Sprintf(`{"alarm":%q,"transitionId":%q}`, alarm, transition))}
}

func enqueueT(t testing.TB, db *DB, e QueuedEvent, maxRows int) bool {
	t.Helper()
	added, err := db.EnqueueEvent(ctxT(t), e, maxRows)
	if err != nil {
		t.Fatalf("EnqueueEvent(%s/%s): %v", e.Alarm, e.TransitionID, err)
	}
	return added
}

func peekT(t testing.TB, db *DB, limit int) []QueuedEvent {
	t.Helper()
	got, err := db.PeekEvents(ctxT(t), 0, limit)
	if err != nil {
		t.Fatalf("PeekEvents(%d): %v", limit, err)
	}
	return got
}

func transitions(evs []QueuedEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.TransitionID
	}
	return out
}

func statsT(t testing.TB, db *DB) (int, int, time.Time) {
	t.Helper()
	d, p, o, err := db.EventQueueStats(ctxT(t))
	if err != nil {
		t.Fatalf("EventQueueStats: %v", err)
	}
	return d, p, o
}

// The alerts topic delivers at least once: the same transition enqueued
// twice is one row, the first one, with its own payload.
func TestEnqueueTwiceIsOneRow(t *testing.T) {
	clock := clockwork.NewFakeClockAt(eventT0)
	db := openT(t, newPath(t), WithClock(clock))
	if !enqueueT(t, db, event("HighTemp", "t1"), 0) {
		t.Fatal("the first enqueue did not add the row")
	}
	clock.Advance(time.Second)
	again := event("HighTemp", "t1")
	again.Payload = []byte(`{"second":true}`)
	if enqueueT(t, db, again, 0) {
		t.Fatal("the second enqueue of the same key added a row")
	}
	// Another alarm or cluster with the same transition id is another key.
	other := event("LowTemp", "t1")
	otherCluster := event("HighTemp", "t1")
	otherCluster.ClusterID = "site-b"
	if !enqueueT(t, db, other, 0) || !enqueueT(t, db, otherCluster, 0) {
		t.Fatal("a different alarm or cluster with the same transition id was not added")
	}
	got := peekT(t, db, 10)
	if len(got) != 3 {
		t.Fatalf("queue holds %d rows, want 3: %+v", len(got), got)
	}
	first := got[0]
	if first.Key() != (EventKey{"site-a", "HighTemp", "t1"}) || string(first.Payload) != string(event("HighTemp", "t1").Payload) {
		t.Fatalf("first row %+v: want the first enqueue's key and payload", first)
	}
	if !first.EnqueuedAt.Equal(eventT0.Truncate(time.Microsecond)) || first.EnqueuedAt.Location() != time.UTC {
		t.Fatalf("EnqueuedAt = %v, want %v UTC (the first enqueue's time)", first.EnqueuedAt, eventT0.Truncate(time.Microsecond))
	}
	if first.Attempts != 0 || first.LastError != "" || first.Poisoned {
		t.Fatalf("a new row has attempts %d, last error %q, poisoned %v", first.Attempts, first.LastError, first.Poisoned)
	}
	if !(got[0].Seq < got[1].Seq && got[1].Seq < got[2].Seq) {
		t.Fatalf("seqs %d %d %d are not in enqueue order", got[0].Seq, got[1].Seq, got[2].Seq)
	}
}

func TestEnqueueRefusesBadRows(t *testing.T) {
	db := openT(t, newPath(t))
	for _, tc := range []struct {
		name string
		e    QueuedEvent
		says string
	}{
		{"no cluster", QueuedEvent{Alarm: "a", TransitionID: "t", Payload: []byte("{}")}, "must not be empty"},
		{"no alarm", QueuedEvent{ClusterID: "c", TransitionID: "t", Payload: []byte("{}")}, "must not be empty"},
		{"no transition", QueuedEvent{ClusterID: "c", Alarm: "a", Payload: []byte("{}")}, "must not be empty"},
		{"not JSON", QueuedEvent{ClusterID: "c", Alarm: "a", TransitionID: "t", Payload: []byte("{")}, "not JSON"},
		{"no payload", QueuedEvent{ClusterID: "c", Alarm: "a", TransitionID: "t"}, "not JSON"},
	} {
		_, err := db.EnqueueEvent(ctxT(t), tc.e, 0)
		wantErr(t, err, nil, tc.says)
	}
	if d, p, _ := statsT(t, db); d != 0 || p != 0 {
		t.Fatalf("refused rows were stored: depth %d, poisoned %d", d, p)
	}
}

// A full queue refuses the newest row and keeps the oldest; a transition
// already queued is still a no-op, not a refusal; poisoned rows count
// toward the limit (they take room in the file).
func TestQueueLimitKeepsTheOldest(t *testing.T) {
	db := openT(t, newPath(t))
	for i := range 3 {
		enqueueT(t, db, event("A", fmt.Sprint(i)), 3)
	}
	_, err := db.EnqueueEvent(ctxT(t), event("A", "3"), 3)
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("the fourth row at limit 3: %v, want ErrQueueFull", err)
	}
	wantErr(t, err, ErrQueueFull, "holds 3 rows, the limit is 3", db.Path())
	if added, err := db.EnqueueEvent(ctxT(t), event("A", "0"), 3); err != nil || added {
		t.Fatalf("a queued transition again at the limit: added %v, %v; want false, nil", added, err)
	}
	if got := transitions(peekT(t, db, 10)); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("queue %v, want the oldest three", got)
	}
	rows := peekT(t, db, 1)
	if err := db.MarkFailed(ctxT(t), rows[0].Seq, "refused", true); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnqueueEvent(ctxT(t), event("A", "3"), 3); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("with a poisoned row the queue still holds 3: %v, want ErrQueueFull", err)
	}
	if n, err := db.DeleteEvents(ctxT(t), []int64{rows[0].Seq}); err != nil || n != 1 {
		t.Fatalf("DeleteEvents = %d, %v", n, err)
	}
	if !enqueueT(t, db, event("A", "3"), 3) {
		t.Fatal("after a delete there is room, but the row was not added")
	}
}

// Two handles (two connections, as a restarted process beside the old one)
// enqueue the same transitions at once: each is stored once, and the limit
// holds across both.
func TestEnqueueConcurrentHandles(t *testing.T) {
	path := newPath(t)
	dbs := []*DB{openT(t, path), openT(t, path)}
	const n, limit = 60, 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for _, db := range dbs {
		wg.Go(func() {
			for i := range n {
				if _, err := db.EnqueueEvent(ctxT(t), event("A", fmt.Sprint(i)), limit); err != nil && !errors.Is(err, ErrQueueFull) {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := peekT(t, dbs[0], 1000)
	if len(got) != limit {
		t.Fatalf("queue holds %d rows, want the limit %d", len(got), limit)
	}
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.TransitionID] {
			t.Fatalf("transition %s queued twice", e.TransitionID)
		}
		seen[e.TransitionID] = true
	}
}

// A refused delivery keeps the row and counts the attempt; a poisoned row
// is skipped by PeekEvents, counted apart by EventQueueStats, and still
// listed by EventKeysAfter.
func TestMarkFailedAndPoison(t *testing.T) {
	clock := clockwork.NewFakeClockAt(eventT0)
	db := openT(t, newPath(t), WithClock(clock))
	for i := range 4 {
		enqueueT(t, db, event("A", fmt.Sprint(i)), 0)
		clock.Advance(time.Second)
	}
	rows := peekT(t, db, 10)
	if err := db.MarkFailed(ctxT(t), rows[0].Seq, "value too long", false); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkFailed(ctxT(t), rows[0].Seq, "value too long again", false); err != nil {
		t.Fatal(err)
	}
	head := peekT(t, db, 1)[0]
	if head.Seq != rows[0].Seq || head.Attempts != 2 || head.LastError != "value too long again" || head.Poisoned {
		t.Fatalf("after two refusals: %+v, want the same row, 2 attempts, the last error, not poisoned", head)
	}
	if err := db.MarkFailed(ctxT(t), rows[0].Seq, "poisoned now", true); err != nil {
		t.Fatal(err)
	}
	// A later refusal without poison does not un-poison.
	if err := db.MarkFailed(ctxT(t), rows[0].Seq, "later", false); err != nil {
		t.Fatal(err)
	}
	if got := transitions(peekT(t, db, 10)); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("PeekEvents after poisoning row 0 = %v, want 1 2 3", got)
	}
	depth, poisoned, oldest := statsT(t, db)
	if depth != 3 || poisoned != 1 || !oldest.Equal(eventT0.Add(time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("stats = depth %d, poisoned %d, oldest %v; want 3, 1, %v", depth, poisoned, oldest, eventT0.Add(time.Second))
	}
	all, err := db.EventKeysAfter(ctxT(t), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || !all[0].Poisoned || all[0].Attempts != 4 || all[0].Payload != nil {
		t.Fatalf("EventKeysAfter = %+v, want 4 rows, the first poisoned after 4 attempts, no payloads", all)
	}
	// A long error is cut; a missing row is no error.
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	if err := db.MarkFailed(ctxT(t), rows[1].Seq, string(long), false); err != nil {
		t.Fatal(err)
	}
	if got := peekT(t, db, 1)[0].LastError; len(got) != maxLastError {
		t.Fatalf("LastError kept %d bytes, want %d", len(got), maxLastError)
	}
	if err := db.MarkFailed(ctxT(t), 999_999, "gone", true); err != nil {
		t.Fatalf("MarkFailed of a row no longer queued: %v", err)
	}
}

func TestDeleteEventsAndByKey(t *testing.T) {
	db := openT(t, newPath(t))
	const n = 1200 // more than one DELETE chunk
	for i := range n {
		enqueueT(t, db, event("A", fmt.Sprint(i)), 0)
	}
	rows := peekT(t, db, n)
	var seqs []int64
	for _, r := range rows[:700] {
		seqs = append(seqs, r.Seq)
	}
	seqs = append(seqs, 999_999) // not queued: skipped
	if got, err := db.DeleteEvents(ctxT(t), seqs); err != nil || got != 700 {
		t.Fatalf("DeleteEvents = %d, %v; want 700", got, err)
	}
	var keys []EventKey
	for _, r := range rows[690:900] { // 10 already deleted
		keys = append(keys, r.Key())
	}
	keys = append(keys, EventKey{"site-b", "A", "800"}) // another cluster: not queued
	if got, err := db.DeleteEventsByKey(ctxT(t), keys); err != nil || got != 200 {
		t.Fatalf("DeleteEventsByKey = %d, %v; want 200", got, err)
	}
	left := peekT(t, db, n)
	if len(left) != 300 || left[0].TransitionID != "900" {
		t.Fatalf("left %d rows from %s, want 300 from 900", len(left), left[0].TransitionID)
	}
	if got, err := db.DeleteEvents(ctxT(t), nil); err != nil || got != 0 {
		t.Fatalf("DeleteEvents(nil) = %d, %v", got, err)
	}
	if _, err := db.DeleteEvents(ctxT(t), make([]int64, MaxEventBatch+1)); err == nil {
		t.Fatal("DeleteEvents took more than MaxEventBatch seqs")
	}
	if _, err := db.DeleteEventsByKey(ctxT(t), make([]EventKey, MaxEventBatch+1)); err == nil {
		t.Fatal("DeleteEventsByKey took more than MaxEventBatch keys")
	}
}

func TestEventKeysAfterPages(t *testing.T) {
	db := openT(t, newPath(t))
	for i := range 25 {
		enqueueT(t, db, event("A", fmt.Sprint(i)), 0)
	}
	var walked []string
	var after int64
	for {
		page, err := db.EventKeysAfter(ctxT(t), after, 10)
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, transitions(page)...)
		if len(page) < 10 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if len(walked) != 25 || walked[0] != "0" || walked[24] != "24" {
		t.Fatalf("walked %v, want 0 … 24", walked)
	}
	// PeekEvents pages the same way, skipping the poisoned.
	first := peekT(t, db, 3)
	if err := db.MarkFailed(ctxT(t), first[2].Seq+1, "x", true); err != nil { // poison "3"
		t.Fatal(err)
	}
	next, err := db.PeekEvents(ctxT(t), first[2].Seq, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := transitions(next); !slices.Equal(got, []string{"4", "5", "6"}) {
		t.Fatalf("PeekEvents after %d = %v, want 4 5 6", first[2].Seq, got)
	}
}

func TestQueueBatchLimits(t *testing.T) {
	db := openT(t, newPath(t))
	for _, limit := range []int{0, -1, MaxEventBatch + 1} {
		if _, err := db.PeekEvents(ctxT(t), 0, limit); err == nil {
			t.Errorf("PeekEvents(%d) succeeded", limit)
		}
		if _, err := db.EventKeysAfter(ctxT(t), 0, limit); err == nil {
			t.Errorf("EventKeysAfter(%d) succeeded", limit)
		}
	}
	if got := peekT(t, db, MaxEventBatch); len(got) != 0 {
		t.Fatalf("an empty queue peeked %d rows", len(got))
	}
	if d, p, o := statsT(t, db); d != 0 || p != 0 || !o.IsZero() {
		t.Fatalf("empty queue stats = %d, %d, %v", d, p, o)
	}
}

// The queue is in the file: closing and reopening (a process restart)
// keeps every row, its attempts and its order.
func TestQueueSurvivesReopen(t *testing.T) {
	path := newPath(t)
	db, err := Open(ctxT(t), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		enqueueT(t, db, event("A", fmt.Sprint(i)), 0)
	}
	if err := db.MarkFailed(ctxT(t), peekT(t, db, 1)[0].Seq, "refused", false); err != nil {
		t.Fatal(err)
	}
	before := peekT(t, db, 10)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := openT(t, path)
	after := peekT(t, db2, 10)
	if !slices.EqualFunc(before, after, func(a, b QueuedEvent) bool {
		return a.Seq == b.Seq && a.Key() == b.Key() && string(a.Payload) == string(b.Payload) &&
			a.Attempts == b.Attempts && a.LastError == b.LastError && a.EnqueuedAt.Equal(b.EnqueuedAt)
	}) {
		t.Fatalf("after reopening:\n%+v\nwant\n%+v", after, before)
	}
	// New rows still go after the old ones.
	enqueueT(t, db2, event("A", "5"), 0)
	if got := peekT(t, db2, 10); got[5].Seq <= got[4].Seq {
		t.Fatalf("a row enqueued after the restart sorts before the old ones: %+v", got)
	}
}

// A file of schema version 1 (the boot cache only) gains the queue and
// keeps its artifact.
func TestUpgradeFromVersion1KeepsTheArtifact(t *testing.T) {
	path := newPath(t)
	doc := docOf(7, 100_000)
	writeVersion1(t, path, "site-a", 3, doc)
	db2 := openT(t, path)
	loadT(t, db2, "site-a", 3, doc)
	if !enqueueT(t, db2, event("A", "1"), 0) {
		t.Fatal("the upgraded file does not queue")
	}
	var v int
	if err := db2.sql.QueryRowContext(ctxT(t), "SELECT MAX(version) FROM schema_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", v, err, SchemaVersion)
	}
}

// writeVersion1 writes a file as schema version 1 did, holding one artifact.
func writeVersion1(t *testing.T, path, cluster string, version int64, doc []byte) {
	t.Helper()
	raw := rawT(t, path)
	execT(t, raw, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	execT(t, raw, createSchemaVersion)
	for _, stmt := range migrations[0].stmts {
		execT(t, raw, stmt)
	}
	execT(t, raw, "INSERT INTO schema_version VALUES (1, 'v1', '2026-01-01T00:00:00.000000Z')")
	n := 0
	for ; n*ChunkSize < len(doc); n++ {
		execT(t, raw, "INSERT INTO deployment_artifacts VALUES (?, ?, ?, ?)", cluster, version, n, doc[n*ChunkSize:min((n+1)*ChunkSize, len(doc))])
	}
	sum := sha256.Sum256(doc)
	execT(t, raw, "INSERT INTO deployment_pointer VALUES (?, ?, ?, ?, ?, '2026-01-01T00:00:00.000000Z')",
		cluster, version, hex.EncodeToString(sum[:]), n, len(doc))
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
}
