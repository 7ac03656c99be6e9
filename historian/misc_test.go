package historian

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/telemetry"
	"github.com/otopcua/otopcua/tests/pg"
)

// TestPostgresOutage: with PostgreSQL stopped the drain reports
// CentralUnreachable, keeps every row (and queues new ones), backs off
// instead of retrying every tick, and delivers everything once the server
// is back.
func TestPostgresOutage(t *testing.T) {
	srv := pg.Start(t)
	central := pgCentral(srv)(t)
	n := newNode(t, "a", tempPath(t, "a"), central, true)
	n.enqueue(evs(0, 50)...)
	n.tick()
	wantExactlyOnce(t, central, evs(0, 50))

	srv.Stop()
	n.enqueue(evs(50, 80)...)
	n.tick()
	st := n.h.Status()
	if st.State != StateCentralUnreachable || st.QueueDepth != 30 || st.LastError == "" {
		t.Fatalf("with the Config DB stopped: %+v, want CentralUnreachable, 30 queued, the error", st)
	}
	t.Logf("LastError: %s", st.LastError)
	// 20 ticks (10 s) with the back-off (0.5, 1, 2, 4, 8 s): 4 more
	// attempts, not 20.
	for i := range 20 {
		n.tick()
		n.enqueue(ev(80 + i)) // queueing goes on during the outage
	}
	attempts := n.logs.count("historian: drain failed")
	if attempts < 4 || attempts > 6 {
		t.Fatalf("%d drain attempts in 10 s of outage, want about 5 (back-off 0.5 s doubling to 10 s):\n%s", attempts, n.logs)
	}
	if n.logs.count("drain failed: the rows stay queued") != 1 {
		t.Fatalf("the outage was not logged once at warning level:\n%s", n.logs)
	}
	if q := len(n.queued()); q != 50 {
		t.Fatalf("%d rows queued during the outage, want all 50", q)
	}
	if st := n.h.Status(); st.State != StateCentralUnreachable {
		t.Fatalf("still down: %+v", st)
	}

	srv.Start()
	n.tickUntil(40, "idle", func(s Status) bool { return s.State == StateIdle })
	wantExactlyOnce(t, central, evs(0, 100))
	if st := n.h.Status(); st.LastError != "" || st.Drained != 100 || st.QueueDepth != 0 {
		t.Fatalf("after the recovery: %+v, want no error, 100 drained, nothing queued", st)
	}
	if n.logs.count("drain works again") != 1 {
		t.Fatalf("the recovery was not logged:\n%s", n.logs)
	}
}

// TestPostgresNULIsPoisoned: PostgreSQL refuses a NUL byte in text (SQLite
// and SQL Server store it): the row is poisoned after 3 attempts, the rows
// after it are delivered.
func TestPostgresNULIsPoisoned(t *testing.T) {
	srv := pg.Start(t)
	testPoisoned(t, pgCentral(srv)(t), func(e Event) Event {
		e.Value = "bad\x00value"
		return e
	})
}

// TestQueueLimitRefuses: at MaxQueue the next event is refused with
// ErrQueueFull, counted and logged (once per 10 s), and the queued ones
// are kept; a transition already queued is still accepted (a no-op).
func TestQueueLimitRefuses(t *testing.T) {
	n := newNode(t, "a", tempPath(t, "a"), sqliteCentral()(t), false, func(o *Options) { o.MaxQueue = 5 })
	n.enqueue(evs(0, 5)...)
	for i := 5; i < 8; i++ {
		if err := n.h.Enqueue(ctxT(t), ev(i)); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("event %d at the limit: %v, want ErrQueueFull", i, err)
		}
	}
	n.enqueue(ev(2)) // already queued: accepted, nothing added
	st := n.h.Status()
	if st.Refused != 3 || st.QueueDepth != 5 || !strings.Contains(st.LastError, "queue is full") {
		t.Fatalf("status %+v: want 3 refused, 5 queued, the refusal as last error", st)
	}
	if got := n.logs.count("alarm event refused"); got != 1 {
		t.Fatalf("refusal log lines = %d within 10 s, want 1:\n%s", got, n.logs)
	}
	q := n.queued()
	if len(q) != 5 || q[0].TransitionID != "tr-00000" || q[4].TransitionID != "tr-00004" {
		t.Fatalf("queue %+v: want the oldest five kept", q)
	}
	n.advance(refusalLogEvery)
	if err := n.h.Enqueue(ctxT(t), ev(9)); !errors.Is(err, ErrQueueFull) {
		t.Fatal(err)
	}
	if got := n.logs.count("refused_since_last_line=3"); got != 1 {
		t.Fatalf("the next refusal line does not carry the refusals in between:\n%s", n.logs)
	}
}

func TestEnqueueChecksTheEvent(t *testing.T) {
	n := newNode(t, "a", tempPath(t, "a"), sqliteCentral()(t), false)
	other := ev(1)
	other.ClusterID = "site-b"
	if err := n.h.Enqueue(ctxT(t), other); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("another cluster's event: %v, want ErrOtherCluster", err)
	}
	for _, spoil := range []func(*Event){
		func(e *Event) { e.Alarm = "" },
		func(e *Event) { e.TransitionID = "" },
		func(e *Event) { e.Kind = "shelved" },
		func(e *Event) { e.Time = time.Time{} },
		func(e *Event) { e.Severity = 1001 },
		func(e *Event) { e.Severity = -1 },
	} {
		e := ev(2)
		spoil(&e)
		if err := n.h.Enqueue(ctxT(t), e); !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("event %+v: %v, want ErrInvalidEvent", e, err)
		}
	}
	if st := n.h.Status(); st.Refused != 6 || st.QueueDepth != 0 {
		t.Fatalf("status %+v: want 6 refused (not the other cluster's), nothing queued", st)
	}
}

// TestLocalDbFailure: a LocalDb that fails under the drain is reported as
// LocalDbError with back-off, not as the Config DB's fault.
func TestLocalDbFailure(t *testing.T) {
	n := newNode(t, "a", tempPath(t, "a"), sqliteCentral()(t), true)
	if err := n.local.Close(); err != nil {
		t.Fatal(err)
	}
	n.tick()
	st := n.h.Status()
	if st.State != StateLocalDbError || !strings.Contains(st.LastError, "peek the alarm event queue") {
		t.Fatalf("with the LocalDb closed: %+v, want LocalDbError naming the queue", st)
	}
	n.stopped = true // closed already
	n.h.Stop()
}

func TestRetryDelay(t *testing.T) {
	const every, max = 500 * time.Millisecond, 10 * time.Second
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{1, 500 * time.Millisecond}, {2, time.Second}, {3, 2 * time.Second}, {4, 4 * time.Second},
		{5, 8 * time.Second}, {6, 10 * time.Second}, {7, 10 * time.Second}, {1000, 10 * time.Second},
	} {
		if got := retryDelay(every, max, tc.failures); got != tc.want {
			t.Errorf("retryDelay(%v, %v, %d) = %v, want %v", every, max, tc.failures, got, tc.want)
		}
	}
	if got := retryDelay(3*time.Second, 2*time.Second, 1); got != 2*time.Second {
		t.Errorf("the cap applies from the first failure: %v", got)
	}
}

func TestNewChecksOptions(t *testing.T) {
	central := sqliteCentral()(t)
	local, err := localdb.Open(ctxT(t), tempPath(t, "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	gate := func() (bool, string, uint64) { return true, "", 0 }
	good := Options{ClusterID: "site-a", Local: local, Central: central, Gate: gate}
	h, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	o := h.Options()
	if o.DrainEvery != DefaultDrainEvery || o.BatchSize != DefaultBatchSize || o.TrimEvery != DefaultTrimEvery ||
		o.MaxQueue != DefaultMaxQueue || o.MaxAttempts != DefaultMaxAttempts || o.MaxBackoff != DefaultMaxBackoff ||
		o.CallTimeout != DefaultCallTimeout || o.Clock == nil || o.Logger == nil {
		t.Fatalf("defaults not filled in: %+v", o)
	}
	if h.Status().State != StateStopped {
		t.Fatalf("state before Start: %s", h.Status().State)
	}
	for _, tc := range []struct {
		spoil func(*Options)
		says  string
	}{
		{func(o *Options) { o.ClusterID = "" }, "ClusterID is empty"},
		{func(o *Options) { o.Local = nil }, "Local is nil"},
		{func(o *Options) { o.Central = nil }, "Central is nil"},
		{func(o *Options) { o.Gate = nil }, "Gate is nil"},
		{func(o *Options) { o.BatchSize = 10_001 }, "BatchSize 10001: accepted values are 1 to 10000"},
		{func(o *Options) { o.MaxQueue = -1 }, "MaxQueue -1"},
		{func(o *Options) { o.DrainEvery = -time.Second }, "DrainEvery -1s"},
	} {
		o := good
		tc.spoil(&o)
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("New: %v, want an error saying %q", err, tc.says)
		}
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	h.Stop()
	h.Stop()
}

func TestHandlerServesStatus(t *testing.T) {
	n := newNode(t, "a", tempPath(t, "a"), sqliteCentral()(t), false)
	n.enqueue(evs(0, 3)...)
	srv := httptest.NewServer(n.h.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + APIPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	for k, want := range map[string]any{"state": "NotPrimary", "gateReason": "secondary", "queueDepth": 3.0,
		"poisoned": 0.0, "drained": 0.0, "refused": 0.0, "oldest": t0.Format(time.RFC3339Nano)} {
		if fields[k] != want {
			t.Errorf("%s = %v, want %v in %s", k, fields[k], want, body)
		}
	}
	if _, ok := fields["lastDrain"]; ok {
		t.Errorf("lastDrain shown before any drain: %s", body)
	}
	var st Status
	if err := json.Unmarshal(body, &st); err != nil || st != n.h.Status() {
		t.Fatalf("the body %s does not decode to Status %+v (%v)", body, n.h.Status(), err)
	}
	resp, err = http.Post(srv.URL+APIPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestMetricsOnPrometheus(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Shutdown(context.Background()) }()
	n := newNode(t, "a", tempPath(t, "a"), sqliteCentral()(t), false, func(o *Options) { o.MaxQueue = 4 })
	if err := n.h.RegisterMetrics(m.Meter()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(m.Handler())
	defer web.Close()
	n.enqueue(evs(0, 4)...)
	_ = n.h.Enqueue(ctxT(t), ev(4)) // refused: full
	n.advance(30 * time.Second)
	body := scrape(t, web.URL)
	cid := `cluster_id="site-a"`
	want := map[string]float64{
		"otopcua_historian_queue_depth{" + cid + "}":                    4,
		"otopcua_historian_poisoned{" + cid + "}":                       0,
		"otopcua_historian_drained_total{" + cid + "}":                  0,
		"otopcua_historian_refused_total{" + cid + "}":                  1,
		"otopcua_historian_oldest_age_seconds{" + cid + "}":             30,
		"otopcua_historian_drain_state{" + cid + `,state="NotPrimary"}`: 1,
	}
	for _, s := range States {
		if s != StateNotPrimary {
			want["otopcua_historian_drain_state{"+cid+`,state="`+s+`"}`] = 0
		}
	}
	for series, v := range want {
		got, ok := sample(body, series)
		if !ok {
			t.Errorf("/metrics lacks %s", series)
		} else if got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	for _, f := range []struct{ name, typ string }{
		{"otopcua_historian_queue_depth", "gauge"}, {"otopcua_historian_poisoned", "gauge"},
		{"otopcua_historian_oldest_age_seconds", "gauge"}, {"otopcua_historian_drained_total", "counter"},
		{"otopcua_historian_refused_total", "counter"}, {"otopcua_historian_drain_state", "gauge"},
	} {
		if !strings.Contains(body, "# TYPE "+f.name+" "+f.typ+"\n") || !strings.Contains(body, "# HELP "+f.name+" ") {
			t.Errorf("/metrics lacks # TYPE %s %s or its # HELP", f.name, f.typ)
		}
	}
	// After a drain: the counter moves and the state is one-hot on Idle.
	n.primary.Store(true)
	n.tick()
	body = scrape(t, web.URL)
	for series, v := range map[string]float64{
		"otopcua_historian_drained_total{" + cid + "}":                  4,
		"otopcua_historian_queue_depth{" + cid + "}":                    0,
		"otopcua_historian_oldest_age_seconds{" + cid + "}":             0,
		"otopcua_historian_drain_state{" + cid + `,state="Idle"}`:       1,
		"otopcua_historian_drain_state{" + cid + `,state="NotPrimary"}`: 0,
	} {
		if got, ok := sample(body, series); !ok || got != v {
			t.Errorf("after the drain %s = %v (present %v), want %v", series, got, ok, v)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sample returns the value of series (name and labels as rendered).
func sample(body, series string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestPostgresFrozen: a Config DB that accepts connections but never
// answers holds one drain for CallTimeout, not longer; the rows stay.
func TestPostgresFrozen(t *testing.T) {
	srv := pg.Start(t)
	central := pgCentral(srv)(t)
	n := newNode(t, "a", tempPath(t, "a"), central, true, func(o *Options) { o.CallTimeout = time.Second })
	n.enqueue(evs(0, 5)...)
	srv.Freeze()
	start := time.Now()
	n.tick()
	took := time.Since(start)
	srv.Thaw()
	if st := n.h.Status(); st.State != StateCentralUnreachable || st.QueueDepth != 5 {
		t.Fatalf("against a frozen Config DB: %+v, want CentralUnreachable with 5 queued", st)
	}
	if took > 3*time.Second {
		t.Fatalf("the drain against a frozen Config DB took %v, CallTimeout 1s", took)
	}
	t.Logf("the frozen drain returned after %v: %s", took, n.h.Status().LastError)
	n.tickUntil(40, "idle", func(s Status) bool { return s.State == StateIdle })
	wantExactlyOnce(t, central, evs(0, 5))
}

// TestUndecodableRowIsPoisonedAtOnce: a queued payload that is JSON but not
// an event (written by something else into the file) can never be
// delivered: it is poisoned at the first drain, the others go.
func TestUndecodableRowIsPoisonedAtOnce(t *testing.T) {
	central := sqliteCentral()(t)
	n := newNode(t, "a", tempPath(t, "a"), central, false)
	n.enqueue(ev(0))
	if _, err := n.local.EnqueueEvent(ctxT(t), localdb.QueuedEvent{ClusterID: "site-a", Alarm: "HighTemp", TransitionID: "odd",
		Payload: []byte(`{"time": "not a time"}`)}, 0); err != nil {
		t.Fatal(err)
	}
	n.enqueue(ev(2))
	n.primary.Store(true)
	n.tick()
	wantExactlyOnce(t, central, []Event{ev(0), ev(2)})
	q := n.queued()
	if len(q) != 1 || !q[0].Poisoned || q[0].Attempts != 1 || !strings.Contains(q[0].LastError, "not an alarm event") {
		t.Fatalf("queue %+v: want the odd row poisoned after one attempt", q)
	}
	if st := n.h.Status(); st.Poisoned != 1 || st.State != StateIdle {
		t.Fatalf("status %+v: want Idle with 1 poisoned", st)
	}
}
