package historian

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/tests/pg"
)

func TestSQLite(t *testing.T) { runSuite(t, sqliteCentral()) }

func TestPostgres(t *testing.T) { runSuite(t, pgCentral(pg.Start(t))) }

// runSuite is the behaviour that must hold on every Config DB.
func runSuite(t *testing.T, open centralOpener) {
	t.Run("EnqueueTwiceIsOneRow", func(t *testing.T) { testEnqueueTwice(t, open(t)) })
	t.Run("DrainsOnlyWhenPrimary", func(t *testing.T) { testDrainsOnlyWhenPrimary(t, open(t)) })
	t.Run("FailoverExactlyOnce", func(t *testing.T) { testFailoverExactlyOnce(t, open) })
	t.Run("BothPrimaryAtOnce", func(t *testing.T) { testBothPrimary(t, open) })
	t.Run("RefusedRowIsPoisonedAndSkipped", func(t *testing.T) { testPoisoned(t, open(t), longMessage) })
	t.Run("RestartKeepsTheQueue", func(t *testing.T) { testRestart(t, open(t)) })
	t.Run("TrimOnTheSecondary", func(t *testing.T) { testTrim(t, open) })
	t.Run("ReadEvents", func(t *testing.T) { testReadEvents(t, open(t)) })
	t.Run("StaleEpochRefusedAndTrimmed", func(t *testing.T) { testStaleEpoch(t, open) })
}

func tempPath(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name+".db") }

// The alerts topic delivers at least once: a transition enqueued twice is
// one queued row and one alarm_history row.
func testEnqueueTwice(t *testing.T, central *configdb.DB) {
	n := newNode(t, "a", tempPath(t, "a"), central, false)
	n.enqueue(ev(1), ev(1), ev(2))
	if q := n.queued(); len(q) != 2 {
		t.Fatalf("queue holds %d rows after enqueuing one transition twice and another once, want 2", len(q))
	}
	if st := n.h.Status(); st.QueueDepth != 2 || st.Refused != 0 {
		t.Fatalf("status %+v: want depth 2, nothing refused", st)
	}
	n.primary.Store(true)
	n.tick()
	n.enqueue(ev(1)) // once more, after the drain: the queue takes it again…
	n.tick()         // …and alarm_history keeps one row
	wantExactlyOnce(t, central, []Event{ev(1), ev(2)})
}

func testDrainsOnlyWhenPrimary(t *testing.T, central *configdb.DB) {
	n := newNode(t, "a", tempPath(t, "a"), central, false)
	n.enqueue(evs(0, 25)...)
	for range 5 {
		n.tick()
	}
	if rows := history(t, central); len(rows) != 0 {
		t.Fatalf("a node the gate denies wrote %d rows to alarm_history", len(rows))
	}
	st := n.h.Status()
	if st.State != StateNotPrimary || st.GateReason != "secondary" || st.QueueDepth != 25 || st.Drained != 0 {
		t.Fatalf("status while denied %+v: want NotPrimary (secondary), 25 queued, none drained", st)
	}
	if !st.Oldest.Equal(t0) {
		t.Fatalf("Oldest = %v, want %v", st.Oldest, t0)
	}

	n.primary.Store(true)
	n.tick() // 25 rows in batches of 10: one tick delivers them all
	wantExactlyOnce(t, central, evs(0, 25))
	st = n.h.Status()
	now := n.clock.Now()
	if st.State != StateIdle || st.QueueDepth != 0 || st.Drained != 25 || st.LastDrainRows != 25 ||
		!st.LastDrain.Equal(now) || !st.Oldest.IsZero() || st.LastError != "" {
		t.Fatalf("status after the drain %+v: want Idle, empty, 25 drained at %v", st, now)
	}
	if len(n.queued()) != 0 {
		t.Fatal("delivered rows are still queued")
	}

	n.primary.Store(false)
	n.enqueue(evs(25, 30)...)
	n.tick()
	if st := n.h.Status(); st.State != StateNotPrimary || st.QueueDepth != 5 {
		t.Fatalf("after losing the Primary role: %+v, want NotPrimary with 5 queued", st)
	}
	if rows := history(t, central); len(rows) != 25 {
		t.Fatalf("alarm_history holds %d rows, want 25: the node drained without the gate", len(rows))
	}
}

// testFailoverExactlyOnce: both nodes of a pair queue every transition;
// the Primary delivers part of them and dies (one of its deliveries lands
// in alarm_history but not in its queue's delete); the Secondary becomes
// Primary and delivers the rest. alarm_history holds each transition once.
// The old Primary comes back as Secondary and trims what is delivered.
func testFailoverExactlyOnce(t *testing.T, open centralOpener) {
	central := open(t)
	a := newNode(t, "a", tempPath(t, "a"), central, true)
	b := newNode(t, "b", tempPath(t, "b"), open(t), false)
	all := evs(0, 300)
	a.enqueue(all[:200]...)
	b.enqueue(all[:200]...)
	a.tick() // 16 batches of 10: 160 rows
	if got := len(history(t, central)); got != 160 {
		t.Fatalf("the Primary's tick delivered %d rows, want 160 (16 batches of 10)", got)
	}
	// The last delivery before the crash: stored, never deleted from a's queue.
	if _, err := central.InsertAlarmHistory(ctxT(t), []configdb.AlarmHistoryRow{all[160].row([]byte("{}"))}); err != nil {
		t.Fatal(err)
	}
	aPath := a.path
	a.stop() // the Primary's process ends
	b.enqueue(all[200:]...)

	b.primary.Store(true)
	b.tickUntil(10, "idle", func(s Status) bool { return s.State == StateIdle })
	wantExactlyOnce(t, central, all)
	if st := b.h.Status(); st.Drained != 300 {
		t.Fatalf("the new Primary removed %d rows from its queue, want all 300 (stored or found stored)", st.Drained)
	}

	// The old Primary restarts as Secondary with the 40 rows it had not
	// deleted (one of them it had stored): its first trim removes them all.
	a2 := newNode(t, "a2", aPath, central, false)
	if st := a2.h.Status(); st.QueueDepth != 0 {
		t.Fatalf("the restarted old Primary still queues %d rows after its first trim: %+v", st.QueueDepth, st)
	}
	if got := a2.logs.count("trimmed rows alarm_history already holds"); got != 1 {
		t.Fatalf("trim log lines = %d, want 1:\n%s", got, a2.logs)
	}
	wantExactlyOnce(t, central, all)
}

// testBothPrimary: a dual-Primary window (both gates open) with both nodes
// draining the same rows at the same time still stores each once.
func testBothPrimary(t *testing.T, open centralOpener) {
	central := open(t)
	a := newNode(t, "a", tempPath(t, "a"), central, true)
	b := newNode(t, "b", tempPath(t, "b"), open(t), true)
	all := evs(0, 400)
	a.enqueue(all...)
	b.enqueue(all...)
	for range 4 {
		var wg sync.WaitGroup
		wg.Go(a.tick)
		wg.Go(b.tick)
		wg.Wait()
	}
	wantExactlyOnce(t, central, all)
	if sa, sb := a.h.Status(), b.h.Status(); sa.QueueDepth != 0 || sb.QueueDepth != 0 || sa.Drained != 400 || sb.Drained != 400 {
		t.Fatalf("after both drained: a %+v, b %+v; want both empty with 400 delivered each", sa, sb)
	}
}

// longMessage is longer than alarm_history.message holds (4,000
// characters): every Config DB refuses it.
func longMessage(e Event) Event {
	e.Message = strings.Repeat("m", 4001)
	return e
}

// testPoisoned: the row the Config DB refuses is retried at each tick, the
// rows after it are delivered at the first; after 3 refusals it is
// poisoned: kept in the queue, counted, logged, no longer delivered.
func testPoisoned(t *testing.T, central *configdb.DB, spoil func(Event) Event) {
	n := newNode(t, "a", tempPath(t, "a"), central, true)
	bad := spoil(ev(1))
	n.enqueue(ev(0), bad)
	n.enqueue(evs(2, 25)...) // more than one batch after the bad row
	n.tick()
	good := slices.Concat(evs(0, 1), evs(2, 25))
	wantExactlyOnce(t, central, good)
	st := n.h.Status()
	if st.State != StateDraining || st.QueueDepth != 1 || st.Poisoned != 0 || st.Drained != 24 {
		t.Fatalf("after the first refusal: %+v, want Draining, 1 waiting, none poisoned, 24 drained", st)
	}
	for attempt := 2; attempt <= 3; attempt++ {
		n.tick()
	}
	st = n.h.Status()
	if st.State != StateIdle || st.QueueDepth != 0 || st.Poisoned != 1 || st.Drained != 24 {
		t.Fatalf("after three refusals: %+v, want Idle, 0 waiting, 1 poisoned", st)
	}
	q := n.queued()
	if len(q) != 1 || !q[0].Poisoned || q[0].Attempts != 3 || q[0].TransitionID != bad.TransitionID || q[0].LastError == "" {
		t.Fatalf("queue %+v: want the bad row kept, poisoned after 3 attempts, with its error", q)
	}
	if got := n.logs.count("alarm event poisoned"); got != 1 {
		t.Fatalf("poison log lines = %d, want 1:\n%s", got, n.logs)
	}
	if got := n.logs.count("refused an alarm event; it is retried"); got != 2 {
		t.Fatalf("retry log lines = %d, want 2", got)
	}
	t.Logf("poisoned with: %s", q[0].LastError)
	// Later transitions are delivered; the poisoned row is not tried again.
	n.enqueue(evs(25, 30)...)
	n.tick()
	n.tick()
	wantExactlyOnce(t, central, slices.Concat(good, evs(25, 30)))
	if q := n.queued(); len(q) != 1 || q[0].Attempts != 3 {
		t.Fatalf("the poisoned row was tried again: %+v", q)
	}
}

// testRestart: the queue is the LocalDb file; a new process on it drains
// what the old one queued.
func testRestart(t *testing.T, central *configdb.DB) {
	path := tempPath(t, "a")
	a := newNode(t, "a", path, central, false)
	a.enqueue(evs(0, 20)...)
	a.stop()
	a2 := newNode(t, "a2", path, central, false)
	if st := a2.h.Status(); st.QueueDepth != 20 {
		t.Fatalf("after the restart the queue holds %d, want 20: %+v", st.QueueDepth, st)
	}
	a2.primary.Store(true)
	a2.tick()
	wantExactlyOnce(t, central, evs(0, 20))
}

// testTrim: the Secondary's queue loses what alarm_history holds and keeps
// what it does not, over more than one trim page.
func testTrim(t *testing.T, open centralOpener) {
	central := open(t)
	a := newNode(t, "a", tempPath(t, "a"), central, true)
	b := newNode(t, "b", tempPath(t, "b"), open(t), false)
	a.enqueue(evs(0, 35)...)
	b.enqueue(evs(0, 40)...) // 35 … 39 never reached the Primary
	a.tick()
	wantExactlyOnce(t, central, evs(0, 35))
	if st := b.h.Status(); st.QueueDepth != 40 {
		t.Fatalf("the Secondary trimmed before TrimEvery: %+v", st)
	}
	b.advance(b.h.opts.TrimEvery)
	q := b.queued()
	var left []string
	for _, r := range q {
		left = append(left, r.TransitionID)
	}
	if want := []string{"tr-00035", "tr-00036", "tr-00037", "tr-00038", "tr-00039"}; !slices.Equal(left, want) {
		t.Fatalf("the Secondary's queue after the trim: %v, want %v", left, want)
	}
	if st := b.h.Status(); st.QueueDepth != 5 || st.State != StateNotPrimary {
		t.Fatalf("status after the trim %+v: want NotPrimary with 5 waiting", st)
	}
	// Taking over, it delivers exactly those.
	b.primary.Store(true)
	b.tick()
	wantExactlyOnce(t, central, evs(0, 40))
}

func testReadEvents(t *testing.T, central *configdb.DB) {
	n := newNode(t, "a", tempPath(t, "a"), central, true)
	want := evs(0, 12)
	want[3].Kind, want[3].Active, want[3].Acked, want[3].User, want[3].Comment = KindAcked, true, true, "operator", "seen"
	want[5].Time = t0.Add(5*time.Millisecond + 1234*time.Nanosecond) // kept to the microsecond
	n.enqueue(want...)
	n.tick()
	got, err := n.h.ReadEvents(ctxT(t), "site-a", t0, t0.Add(time.Second), 100, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ReadEvents returned %d events, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		w.Time = w.Time.Truncate(time.Microsecond)
		if !g.Time.Equal(w.Time) {
			t.Fatalf("event %d time %v, want %v", i, g.Time, w.Time)
		}
		g.Time, w.Time = time.Time{}, time.Time{}
		if g != w {
			t.Fatalf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	newest, err := n.h.ReadEvents(ctxT(t), "site-a", time.Time{}, time.Time{}, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(newest) != 2 || newest[0].TransitionID != "tr-00011" || newest[1].TransitionID != "tr-00010" {
		t.Fatalf("newest two: %+v", newest)
	}
	// Read backwards, the domain holds its later end and not its earlier.
	back, err := n.h.ReadEvents(ctxT(t), "site-a", t0, t0.Add(11*time.Millisecond), 100, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 11 || back[0].TransitionID != "tr-00011" || back[10].TransitionID != "tr-00001" {
		t.Fatalf("(t0, t0+11ms] newest first: %d events from %s to %s, want 11 from tr-00011 to tr-00001",
			len(back), back[0].TransitionID, back[len(back)-1].TransitionID)
	}
	if _, err := n.h.ReadEvents(ctxT(t), "site-a", time.Time{}, time.Time{}, 10_001, false); !errors.Is(err, configdb.ErrInvalid) {
		t.Fatalf("max 10,001: %v, want ErrInvalid", err)
	}
}

// testStaleEpoch: a Primary replaced while it was frozen still believes
// itself Primary under its old epoch. Its drain is refused by the Config
// DB once the newer Primary has drained; the refused rows are counted,
// not retried under that epoch, and leave its queue by the trim once the
// newer Primary stored its own copy: every transition once. Primary again
// under a newer epoch, it drains again.
func testStaleEpoch(t *testing.T, open centralOpener) {
	central := open(t)
	var told []uint64 // what a's OnNewerEpoch heard; a's drain goroutine, read after each tick
	var toldMu sync.Mutex
	a := newNode(t, "a", tempPath(t, "a"), central, true, func(o *Options) {
		o.OnNewerEpoch = func(newest uint64) { toldMu.Lock(); told = append(told, newest); toldMu.Unlock() }
	})
	a.epoch.Store(5)
	b := newNode(t, "b", tempPath(t, "b"), open(t), false)
	a.enqueue(evs(0, 5)...)
	b.enqueue(evs(0, 5)...)
	a.tick()
	wantExactlyOnce(t, central, evs(0, 5))
	b.tickUntil(int(b.h.opts.TrimEvery/b.h.opts.DrainEvery)+1, "trimmed", func(st Status) bool { return st.QueueDepth == 0 })

	// a freezes; b becomes Primary under epoch 7 and drains what both queued.
	a.enqueue(evs(5, 20)...)
	b.enqueue(evs(5, 20)...)
	b.epoch.Store(7)
	b.primary.Store(true)
	b.tick()
	wantExactlyOnce(t, central, evs(0, 20))

	// a wakes still Primary under epoch 5.
	a.tick()
	st := a.h.Status()
	if st.StaleRefused != 10 || st.FencedBelow != 7 || st.QueueDepth != 15 || st.Drained != 5 {
		t.Fatalf("after the stale drain: %+v; want 10 rows refused (one batch) below epoch 7, 15 queued, 5 drained", st)
	}
	a.advance(a.h.opts.TrimEvery + a.h.opts.DrainEvery)
	st = a.h.Status()
	if st.StaleRefused != 10 || st.State != StateNotPrimary || !strings.Contains(st.GateReason, "stale epoch 5") || st.QueueDepth != 0 {
		t.Fatalf("after the trim: %+v; want no retry under epoch 5, NotPrimary (stale epoch), the queue trimmed", st)
	}
	wantExactlyOnce(t, central, evs(0, 20))
	// OnNewerEpoch heard of epoch 7 at the refusal and at every tick since
	// under epoch 5 (the host makes a Primary that no other can rival
	// take a new epoch above it, which may be long after the refusal).
	toldMu.Lock()
	heard := slices.Clone(told)
	toldMu.Unlock()
	if len(heard) < 2 || slices.ContainsFunc(heard, func(e uint64) bool { return e != 7 }) {
		t.Fatalf("OnNewerEpoch heard %v; want 7 at the refusal and again at the ticks after it", heard)
	}

	// a is Primary again under a newer epoch: it drains again.
	b.primary.Store(false)
	a.epoch.Store(9)
	a.enqueue(ev(20))
	a.tick()
	wantExactlyOnce(t, central, evs(0, 21))
}
