package host

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/otopcua/otopcua/config"
)

// journal records what the parts of a test did, in order.
type journal struct {
	mu  sync.Mutex
	got []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.got = append(j.got, s)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.got)
}

// fakePart starts by recording "start NAME" and fails with fail when set;
// its stop records "stop NAME" and returns stopErr.
func fakePart(j *journal, name string, fail, stopErr error) part {
	return part{name: name, start: func() (func() error, error) {
		j.add("start " + name)
		if fail != nil {
			return nil, fail
		}
		return func() error { j.add("stop " + name); return stopErr }, nil
	}}
}

// logLines is a slog handler's output as lines.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestPartsStartInOrderAndStopInReverse(t *testing.T) {
	var j journal
	p := newParts(slog.New(slog.DiscardHandler))
	list := []part{fakePart(&j, "a", nil, nil), fakePart(&j, "b", nil, nil), fakePart(&j, "c", nil, nil)}
	if err := p.startAll(list); err != nil {
		t.Fatal(err)
	}
	p.stop()
	p.stop() // a second stop stops nothing
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if got := j.all(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPartsStopWhatStartedWhenALaterStartFails(t *testing.T) {
	var j journal
	p := newParts(slog.New(slog.DiscardHandler))
	boom := errors.New("port in use")
	list := []part{fakePart(&j, "a", nil, nil), fakePart(&j, "b", nil, nil), fakePart(&j, "c", boom, nil), fakePart(&j, "d", nil, nil)}
	if err := p.startAll(list); err != boom {
		t.Fatalf("startAll returned %v, want the failing start's error unchanged", err)
	}
	want := []string{"start a", "start b", "start c", "stop b", "stop a"}
	if got := j.all(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q (d never starts, c has nothing to stop)", got, want)
	}
	p.stop() // Run's deferred stop after a failed start-up
	if got := j.all(); !slices.Equal(got, want) {
		t.Fatalf("the deferred stop stopped again: %q", got)
	}
}

func TestPartsAStopThatFailsDoesNotStopTheOthers(t *testing.T) {
	var j journal
	var out logLines
	p := newParts(slog.New(slog.NewTextHandler(&out, nil)))
	list := []part{fakePart(&j, "a", nil, nil), fakePart(&j, "b", nil, errors.New("shutdown timed out")), fakePart(&j, "c", nil, nil)}
	if err := p.startAll(list); err != nil {
		t.Fatal(err)
	}
	p.stop()
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if got := j.all(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if log := out.String(); !strings.Contains(log, "part=b") || !strings.Contains(log, "shutdown timed out") {
		t.Fatalf("the failed stop is not logged with its part's name: %q", log)
	}
}

func TestPartsStartUnderStopsRightAfterUnder(t *testing.T) {
	var j journal
	p := newParts(slog.New(slog.DiscardHandler))
	db := fakePart(&j, "db", nil, nil)
	db.under = "transport"
	list := []part{fakePart(&j, "metrics", nil, nil), fakePart(&j, "transport", nil, nil), fakePart(&j, "tree", nil, nil), db, fakePart(&j, "server", nil, nil)}
	if err := p.startAll(list); err != nil {
		t.Fatal(err)
	}
	if got, want := p.names(), []string{"server", "tree", "transport", "db", "metrics"}; !slices.Equal(got, want) {
		t.Fatalf("stop order %q, want %q", got, want)
	}
	p.stop()
	want := []string{"start metrics", "start transport", "start tree", "start db", "start server",
		"stop server", "stop tree", "stop transport", "stop db", "stop metrics"}
	if got := j.all(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPartsWithoutAStopAreSkippedAndAStartAfterTheStopStopsAtOnce(t *testing.T) {
	var j journal
	p := newParts(slog.New(slog.DiscardHandler))
	if err := p.start("a", func() (func() error, error) { j.add("start a"); return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.startAll([]part{fakePart(&j, "b", nil, nil)}); err != nil {
		t.Fatal(err)
	}
	p.stop()
	if err := p.startAll([]part{fakePart(&j, "late", nil, nil)}); err != nil {
		t.Fatal(err)
	}
	want := []string{"start a", "start b", "stop b", "start late", "stop late"}
	if got := j.all(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPartsUnderAPartThatNeverStartedPanics(t *testing.T) {
	p := newParts(slog.New(slog.DiscardHandler))
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "nowhere") {
			t.Fatalf("recovered %v", r)
		}
	}()
	_ = p.startUnder("db", "nowhere", func() (func() error, error) { return nil, nil })
}

// stopOrder starts list with fake starts that each have a stop and returns
// the order the parts would stop in, and their start order.
func stopOrder(list []part) (starts, stops []string) {
	p := newParts(slog.New(slog.DiscardHandler))
	for _, pt := range list {
		starts = append(starts, pt.name)
		pt.start = func() (func() error, error) { return func() error { return nil }, nil }
		if err := p.startUnder(pt.name, pt.under, pt.start); err != nil {
			panic(err)
		}
	}
	return starts, p.names()
}

// TestRunPartsOrder pins the node's start order and its stop order: the
// HTTP server and the data plane first; the redundancy runtime after the
// graceful leave; the OPC UA server and the supervision tree before the
// membership daemon and the actor system (the cluster transport's stop);
// the Config DB, which the actors use, after them; telemetry last. A part
// without a stop (a nil stop) is skipped at run time, wherever it stands.
func TestRunPartsOrder(t *testing.T) {
	starts, stops := stopOrder((&wiring{}).partList())
	wantStarts := []string{"telemetry", "cluster transport", "supervision tree", "Config DB", "OPC UA security",
		"session mirror", "OPC UA server", "OPC UA metrics", "ServiceLevel publisher", "floating address executor", "OPC UA endpoint", "lease",
		"membership daemon", "node info", "redundancy runtime", "session mirror peers", "data plane", "session mirror open", "manual failover", "RequestServerStateChange",
		"floating address", "HTTP"}
	if !slices.Equal(starts, wantStarts) {
		t.Fatalf("start order %q, want %q", starts, wantStarts)
	}
	wantStops := []string{"HTTP", "floating address", "RequestServerStateChange", "manual failover", "session mirror open", "data plane", "session mirror peers",
		"redundancy runtime", "node info", "membership daemon", "lease", "OPC UA endpoint", "floating address executor", "ServiceLevel publisher",
		"OPC UA metrics", "OPC UA server", "session mirror", "OPC UA security", "supervision tree", "cluster transport", "Config DB", "telemetry"}
	if !slices.Equal(stops, wantStops) {
		t.Fatalf("stop order %q, want %q", stops, wantStops)
	}
}

// TestDataPlanePartsOrder: the follower stops first (its notice
// subscription with it), the LocalDb after the driver host, the history
// after the driver host (no poll offers samples to a closed store).
func TestDataPlanePartsOrder(t *testing.T) {
	_, stops := stopOrder((&dataPlaneWiring{}).partList())
	want := []string{"deployments notice", "deployment follower", "alarms", "LocalDb replication", "driver host", "LocalDb",
		"history", "data plane metrics", "write router"}
	if !slices.Equal(stops, want) {
		t.Fatalf("stop order %q, want %q", stops, want)
	}
}

// TestRedundancyPartsOrder: the mediator stops last; a node without the
// driver role publishes ServiceLevel 0 instead of running the publish
// actor and the peer probes.
func TestRedundancyPartsOrder(t *testing.T) {
	for _, tc := range []struct {
		roles []string
		want  []string
	}{
		{[]string{config.RoleDriver, config.RoleAdmin}, []string{"peer probes", "publish actor", "redundancy metrics",
			"DB probe", "lease keeper", "woken fence", "role view", "redundancy-state singleton", "redundancy-state tracker", "pub/sub"}},
		{[]string{config.RoleAdmin}, []string{"ServiceLevel 0",
			"DB probe", "lease keeper", "woken fence", "role view", "redundancy-state singleton", "redundancy-state tracker", "pub/sub"}},
	} {
		cfg := config.Default()
		cfg.Cluster.Roles = tc.roles
		if _, stops := stopOrder((&redundancyWiring{cfg: cfg}).partList()); !slices.Equal(stops, tc.want) {
			t.Errorf("roles %v: stop order %q, want %q", tc.roles, stops, tc.want)
		}
	}
}
