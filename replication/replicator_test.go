package replication

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/internal/ports"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/telemetry"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "0123456789abcdef-pair-key"

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// node is one side of a test pair: a real LocalDb file and a Replicator.
type node struct {
	name, path, listen string
	db                 *localdb.DB
	r                  *Replicator
	logs               *logBuf
}

// pair makes nodes a and b on loopback ports, each peering the other.
func pair(t *testing.T, keyA, keyB string) (a, b *node) {
	t.Helper()
	p, err := ports.Free(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a = &node{name: "node-a", path: filepath.Join(dir, "a.db"), listen: "127.0.0.1:" + strconv.Itoa(p[0])}
	b = &node{name: "node-b", path: filepath.Join(dir, "b.db"), listen: "127.0.0.1:" + strconv.Itoa(p[1])}
	a.open(t)
	b.open(t)
	a.start(t, b.listen, keyA)
	b.start(t, a.listen, keyB)
	return a, b
}

func (n *node) open(t *testing.T) {
	t.Helper()
	db, err := localdb.Open(ctxT(t), n.path, nil, localdb.WithNodeID(n.name))
	if err != nil {
		t.Fatal(err)
	}
	n.db = db
	t.Cleanup(func() { _ = db.Close() })
}

func (n *node) start(t *testing.T, peerAddr, key string) { n.startWith(t, peerAddr, key, nil) }

func (n *node) startWith(t *testing.T, peerAddr, key string, tweak func(*Options)) {
	t.Helper()
	n.logs = &logBuf{}
	o := Options{Local: n.db, Listen: n.listen, Peers: []string{peerAddr}, APIKey: key,
		Logger: slog.New(slog.NewTextHandler(n.logs, nil)), Interval: 20 * time.Millisecond}
	if tweak != nil {
		tweak(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.r = r
	t.Cleanup(r.Stop)
}

func (n *node) events(t *testing.T) []localdb.QueuedEvent {
	t.Helper()
	got, err := n.db.EventKeysAfter(ctxT(t), 0, localdb.MaxEventBatch)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func enqueue(t *testing.T, db *localdb.DB, transition string) {
	t.Helper()
	if _, err := db.EnqueueEvent(ctxT(t), localdb.QueuedEvent{ClusterID: "site-a", Alarm: "A", TransitionID: transition,
		Payload: []byte(`{"t":"` + transition + `"}`)}, 0); err != nil {
		t.Fatal(err)
	}
}

func TestArtifactSavedOnAAppearsByteIdenticalOnB(t *testing.T) {
	a, b := pair(t, testKey, testKey)
	doc := bytes.Repeat([]byte("otopcua-deployment "), 20_000) // 380 kB, 6 chunks
	if err := a.db.SaveArtifact(ctxT(t), "site-a", 7, doc); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		got, err := b.db.LoadArtifact(ctxT(t), "site-a")
		if err != nil {
			return err
		}
		if got.Version != 7 || !bytes.Equal(got.Doc, doc) {
			return fmt.Errorf("B holds version %d, %d bytes", got.Version, len(got.Doc))
		}
		return nil
	})
	// And back: B's later deployment reaches A.
	doc8 := append(doc, "v8"...)
	if err := b.db.SaveArtifact(ctxT(t), "site-a", 8, doc8); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		got, err := a.db.LoadArtifact(ctxT(t), "site-a")
		if err != nil || got.Version != 8 || !bytes.Equal(got.Doc, doc8) {
			return fmt.Errorf("A holds version %d, %v", got.Version, err)
		}
		return nil
	})
}

func TestQueuedEventAndItsDeleteReplicate(t *testing.T) {
	a, b := pair(t, testKey, testKey)
	enqueue(t, a.db, "1")
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := b.events(t); len(got) != 1 || got[0].TransitionID != "1" {
			return fmt.Errorf("B's queue: %+v", got)
		}
		return nil
	})
	if _, err := a.db.DeleteEventsByKey(ctxT(t), []localdb.EventKey{{ClusterID: "site-a", Alarm: "A", TransitionID: "1"}}); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := b.events(t); len(got) != 0 {
			return fmt.Errorf("B's queue still holds %+v", got)
		}
		return nil
	})
	if got := a.events(t); len(got) != 0 {
		t.Fatalf("the row came back to A: %+v", got)
	}
}

func refused(n *node, reason string) int64 { return n.r.Status().Refused[reason] }

func TestWrongKeyIsRefusedOnBothSidesAndFixingItResumes(t *testing.T) {
	a, b := pair(t, testKey, "another-key-of-16+chars")
	enqueue(t, a.db, "1")
	enqueue(t, b.db, "2")
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if refused(a, ReasonWrongKey) < 2 || refused(a, ReasonPeerRefusedKey) < 2 ||
			refused(b, ReasonWrongKey) < 2 || refused(b, ReasonPeerRefusedKey) < 2 {
			return fmt.Errorf("refused: A %v, B %v", a.r.Status().Refused, b.r.Status().Refused)
		}
		return nil
	})
	if len(a.events(t)) != 1 || len(b.events(t)) != 1 {
		t.Fatalf("rows crossed with a wrong key: A %+v, B %+v", a.events(t), b.events(t))
	}
	for _, n := range []*node{a, b} {
		st := n.r.Status()
		if st.Peers[0].Connected || len(st.Served) != 0 || st.Peers[0].Refused == 0 {
			t.Fatalf("%s status with a wrong key: %+v", n.name, st)
		}
		logs := n.logs.String()
		if c := strings.Count(logs, "refused a peer's request"); c != 1 {
			t.Fatalf("%s logged the refusal %d times, want once a minute:\n%s", n.name, c, logs)
		}
		if strings.Contains(logs, testKey) || strings.Contains(logs, "another-key") {
			t.Fatalf("%s logged a key:\n%s", n.name, logs)
		}
	}
	// Fix B's key without restarting A.
	if err := b.r.SetAPIKey(testKey); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 40*time.Second, 10*time.Millisecond, func() error { // A's back-off is at most 30 s
		if len(a.events(t)) != 2 || len(b.events(t)) != 2 {
			return fmt.Errorf("A %d rows, B %d rows", len(a.events(t)), len(b.events(t)))
		}
		return nil
	})
}

func TestMissingKeyIsRefused(t *testing.T) {
	a, _ := pair(t, testKey, testKey)
	// A bare client without the key.
	r, err := New(Options{Local: a.db, Listen: "127.0.0.1:0", Peers: []string{a.listen}, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	p := r.peers[a.listen]
	var out Batch
	err = p.conn.Invoke(ctxT(t), pullMethod, &Pull{Node: "x", Table: localdb.TableEvents, Limit: 1}, &out)
	if classify(err) != ReasonPeerRefusedKey {
		t.Fatalf("Pull without a key: %v", err)
	}
	if refused(a, ReasonMissingKey) == 0 {
		t.Fatalf("A did not count the missing key: %v", a.r.Status().Refused)
	}
}

// B is stopped while A queues 1,000 rows; B restarted on the same file
// pulls exactly those from A (its cursor survived the restart).
func TestRestartedPeerCatchesUpWithOnlyTheMissingRows(t *testing.T) {
	a, b := pair(t, testKey, testKey)
	enqueue(t, a.db, "before")
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if len(b.events(t)) != 1 {
			return errors.New("B has not the first row")
		}
		return nil
	})
	sentBefore := sentTo(a, "node-b")
	b.r.Stop()
	for i := range 1000 {
		enqueue(t, a.db, fmt.Sprint(i))
	}
	b.start(t, a.listen, testKey)
	poll.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if n := len(b.events(t)); n != 1001 {
			return fmt.Errorf("B holds %d rows, want 1001", n)
		}
		return nil
	})
	if got := sentTo(a, "node-b") - sentBefore; got != 1000 {
		t.Fatalf("A sent B %d rows after the restart, want exactly 1000", got)
	}
}

func sentTo(n *node, peerNode string) int64 {
	for _, s := range n.r.Status().Served {
		if s.Node == peerNode {
			return s.RowsSent[localdb.TableEvents]
		}
	}
	return 0
}

// A row stamped far in the future (a peer whose clock is wrong) is
// refused: counted, nothing applied, and the peer's later rows wait.
func TestFutureStampedRowIsRefused(t *testing.T) {
	p, err := ports.Free(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := &node{name: "node-a", path: filepath.Join(dir, "a.db"), listen: "127.0.0.1:" + strconv.Itoa(p[0])}
	b := &node{name: "node-b", path: filepath.Join(dir, "b.db"), listen: "127.0.0.1:" + strconv.Itoa(p[1])}
	// A's clock runs two minutes ahead.
	ahead := newAheadClock(2 * time.Minute)
	db, err := localdb.Open(ctxT(t), a.path, nil, localdb.WithNodeID(a.name), localdb.WithClock(ahead))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	a.db = db
	b.open(t)
	enqueue(t, a.db, "1")
	a.start(t, b.listen, testKey)
	b.start(t, a.listen, testKey)
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if refused(b, ReasonFutureStamp) == 0 {
			return fmt.Errorf("B refused: %v", b.r.Status().Refused)
		}
		return nil
	})
	if got := b.events(t); len(got) != 0 {
		t.Fatalf("B applied a future-stamped row: %+v", got)
	}
	if last := b.db.Clock().Last(); last.WallMs > time.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("B's clock adopted the future stamp: %v", last)
	}
	if st := b.r.Status(); !strings.Contains(st.Peers[0].LastError, "future") {
		t.Fatalf("B's status does not say why: %+v", st.Peers[0])
	}
}

func TestStatusHandlerAndMetrics(t *testing.T) {
	a, b := pair(t, testKey, testKey)
	enqueue(t, a.db, "1")
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if len(b.events(t)) != 1 || !b.r.Status().Peers[0].Connected {
			return errors.New("not synced")
		}
		return nil
	})
	srv := httptest.NewServer(b.r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + APIPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st Status
	if err := json.Unmarshal(body, &st); err != nil || st.Node != "node-b" || st.Rows[localdb.TableEvents] != 1 ||
		st.Peers[0].Addr != a.listen || st.Peers[0].RowsReceived[localdb.TableEvents] != 1 {
		t.Fatalf("GET %s = %s, %v", APIPath, body, err)
	}
	if strings.Contains(string(body), testKey) {
		t.Fatal("the status shows the key")
	}
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Shutdown(context.Background()) }()
	if err := b.r.RegisterMetrics(m.Meter()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(m.Handler())
	defer web.Close()
	resp, err = http.Get(web.URL)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`otopcua_localdb_sync_lag_seconds{peer="` + a.listen + `"`,
		`otopcua_localdb_sync_refused_total{reason="wrong_key"`,
		`otopcua_localdb_rows{table="alarm_sf_events"`,
		"# HELP otopcua_localdb_sync_lag_seconds Time since",
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {3, 8 * time.Second}, {5, 30 * time.Second}, {100, 30 * time.Second}} {
		if got := backoff(time.Second, tc.n); got != tc.want {
			t.Errorf("backoff(1s, %d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

func TestNewRefusesMissingOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a LocalDb")
	}
	db, err := localdb.Open(ctxT(t), filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, o := range []Options{
		{Local: db, Peers: []string{"b:1"}, APIKey: testKey},
		{Local: db, Listen: ":0", APIKey: testKey},
		{Local: db, Listen: ":0", Peers: []string{"b:1"}, APIKey: "short"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// aheadClock is the real clock moved on by d.
type aheadClock struct {
	clockwork.Clock
	d time.Duration
}

func newAheadClock(d time.Duration) *aheadClock {
	return &aheadClock{Clock: clockwork.NewRealClock(), d: d}
}

func (c *aheadClock) Now() time.Time { return time.Now().Add(c.d) }
