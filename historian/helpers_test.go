package historian

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/tests/pg"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// wait bounds, in real time, anything a test waits for.
const wait = 20 * time.Second

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return ctx
}

// centralOpener opens a fresh, migrated Config DB; every call within one
// test returns a handle on the same database.
type centralOpener func(t *testing.T) *configdb.DB

func sqliteCentral() centralOpener {
	var mu sync.Mutex
	files := map[*testing.T]string{}
	return func(t *testing.T) *configdb.DB {
		mu.Lock()
		f, ok := files[t]
		if !ok {
			f = filepath.Join(t.TempDir(), "otopcua.db")
			files[t] = f
		}
		mu.Unlock()
		return openCentral(t, configdb.ProviderSQLite, "file:"+f)
	}
}

// pgCentral gives each test its own database on srv.
func pgCentral(srv *pg.Server) centralOpener {
	var mu sync.Mutex
	dsns := map[*testing.T]string{}
	return func(t *testing.T) *configdb.DB {
		mu.Lock()
		dsn, ok := dsns[t]
		if !ok {
			dsn = srv.CreateDatabase(fmt.Sprintf("h%d", len(dsns)+1))
			dsns[t] = dsn
		}
		mu.Unlock()
		return openCentral(t, configdb.ProviderPostgres, dsn)
	}
}

func openCentral(t *testing.T, provider, dsn string) *configdb.DB {
	t.Helper()
	db, err := configdb.Open(ctxT(t), provider, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return db
}

// logBuf collects log lines.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// node is one otopcua node's historian: its own LocalDb file, fake clock
// and Primary gate, on a shared Config DB.
type node struct {
	t       *testing.T
	name    string
	path    string
	clock   *clockwork.FakeClock
	local   *localdb.DB
	central *configdb.DB
	h       *Historian
	primary atomic.Bool
	epoch   atomic.Uint64 // the gate's epoch while primary (0: not fenced)
	ticks   chan struct{}
	logs    *logBuf
	stopped bool
}

// testOptions are small enough that a test walks through batches.
func testOptions(o *Options) {
	o.BatchSize = 10
}

// newNode opens (or reopens) the LocalDb at path and starts a historian on
// it; adjust changes the options before New. It waits for the first tick.
func newNode(t *testing.T, name, path string, central *configdb.DB, primary bool, adjust ...func(*Options)) *node {
	t.Helper()
	n := &node{t: t, name: name, path: path, clock: clockwork.NewFakeClockAt(t0), central: central,
		ticks: make(chan struct{}, 16), logs: &logBuf{}}
	n.primary.Store(primary)
	local, err := localdb.Open(ctxT(t), path, nil, localdb.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	n.local = local
	opts := Options{
		ClusterID: "site-a", Local: local, Central: central, Clock: n.clock,
		Gate: func() (bool, string, uint64) {
			if n.primary.Load() {
				return true, "", n.epoch.Load()
			}
			return false, "secondary", 0
		},
		Logger: slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	testOptions(&opts)
	for _, a := range adjust {
		a(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.ticked = func() { n.ticks <- struct{}{} }
	n.h = h
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	n.waitTick()
	return n
}

// stop stops the historian and closes the LocalDb (a process exit).
func (n *node) stop() {
	if n.stopped {
		return
	}
	n.stopped = true
	n.h.Stop()
	if err := n.local.Close(); err != nil {
		n.t.Errorf("%s: close the LocalDb: %v", n.name, err)
	}
}

func (n *node) waitTick() {
	n.t.Helper()
	select {
	case <-n.ticks:
	case <-time.After(wait):
		n.t.Fatalf("%s: no tick within %v", n.name, wait)
	}
}

// holdsTimers reports whether clock holds at least n timers and tickers
// that have not fired, without waiting.
func holdsTimers(clock *clockwork.FakeClock, n int) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return clock.BlockUntilContext(ctx, n) == nil
}

// tick moves the node's clock by DrainEvery and waits for the tick that
// follows. (One Advance over several periods may give one tick or two,
// depending on when the drain goroutine reads the ticker: step instead.)
func (n *node) tick() {
	n.t.Helper()
	n.clock.Advance(n.h.opts.DrainEvery)
	n.waitTick()
}

// advance moves the node's clock by d, one tick at a time.
func (n *node) advance(d time.Duration) {
	n.t.Helper()
	for range d / n.h.opts.DrainEvery {
		n.tick()
	}
}

// tickUntil ticks until cond holds on the status, at most max times.
func (n *node) tickUntil(max int, what string, cond func(Status) bool) {
	n.t.Helper()
	for range max {
		if cond(n.h.Status()) {
			return
		}
		n.tick()
	}
	if !cond(n.h.Status()) {
		n.t.Fatalf("%s: after %d ticks still not %s: %+v", n.name, max, what, n.h.Status())
	}
}

func (n *node) enqueue(evs ...Event) {
	n.t.Helper()
	for _, e := range evs {
		if err := n.h.Enqueue(ctxT(n.t), e); err != nil {
			n.t.Fatalf("%s: Enqueue(%s/%s): %v", n.name, e.Alarm, e.TransitionID, err)
		}
	}
}

// queued is every row of the node's LocalDb queue, poisoned ones too.
func (n *node) queued() []localdb.QueuedEvent {
	n.t.Helper()
	rows, err := n.local.EventKeysAfter(ctxT(n.t), 0, localdb.MaxEventBatch)
	if err != nil {
		n.t.Fatal(err)
	}
	return rows
}

// ev is transition i of alarm HighTemp (i even) or LowLevel (i odd).
func ev(i int) Event {
	alarm := "HighTemp"
	if i%2 == 1 {
		alarm = "LowLevel"
	}
	return Event{
		ClusterID: "site-a", Alarm: alarm, TransitionID: fmt.Sprintf("tr-%05d", i), Kind: KindActive,
		Time: t0.Add(time.Duration(i) * time.Millisecond), Severity: 700, Message: "above the limit",
		Source: "press1/Temperature", Value: fmt.Sprintf("%d.5", 80+i%10), User: "", Active: true, Enabled: true,
	}
}

func evs(from, to int) []Event {
	var out []Event
	for i := from; i < to; i++ {
		out = append(out, ev(i))
	}
	return out
}

// history is every alarm_history row of site-a, oldest first.
func history(t *testing.T, central *configdb.DB) []configdb.AlarmHistoryRow {
	t.Helper()
	rows, err := central.AlarmHistory(ctxT(t), "site-a", time.Time{}, time.Time{}, configdb.MaxAlarmHistoryBatch, false)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// wantExactlyOnce checks that alarm_history holds exactly the transitions
// of want, each once.
func wantExactlyOnce(t *testing.T, central *configdb.DB, want []Event) {
	t.Helper()
	rows := history(t, central)
	seen := map[configdb.AlarmKey]int{}
	for _, r := range rows {
		seen[r.Key()]++
	}
	for _, e := range want {
		k := configdb.AlarmKey{Alarm: e.Alarm, TransitionID: e.TransitionID}
		if seen[k] != 1 {
			t.Fatalf("alarm_history holds %s/%s %d times, want once", e.Alarm, e.TransitionID, seen[k])
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("alarm_history holds %d rows, want %d", len(rows), len(want))
	}
}
