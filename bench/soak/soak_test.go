package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uawire"
)

// TestSoakShort is the soak of the command, shortened: a real host
// process, 3 s warm-up, 20 s of abuse, 10 s of recovery, and the same
// checks (DefaultLimits).
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a host process under abuse for about 35 s")
	}
	if raceEnabled {
		t.Skip("the race detector slows the host several times over; the Publish-gap limit is for a normal build")
	}
	s := Run(t, Config{Warmup: 3 * time.Second, Duration: 20 * time.Second, Recover: 10 * time.Second,
		Items: 50000, Batch: 10000, Seed: 1})
	var b strings.Builder
	Print(&b, s)
	t.Log("\n" + b.String())
	for _, c := range Failed(s.Checks) {
		t.Errorf("%s: %s", c.Name, c.Detail)
	}
	for _, a := range s.Abusers {
		if a.Ops == 0 {
			t.Errorf("abuser %s did nothing", a.Abuser)
		}
	}
	// The abusers of the hardening ran too.
	if want := len((&Abuse{Hardening: &Hardening{}}).abusers()); len(s.Abusers) != want {
		t.Errorf("%d abusers counted, want %d", len(s.Abusers), want)
	}
}

func TestVerdict(t *testing.T) {
	const mb = 1 << 20
	base := Sample{RSS: 60 * mb, FDs: 16}
	ok := Summary{Good: GoodFigures{GapMax: 700 * time.Millisecond}, Baseline: &base,
		After:     &Sample{RSS: 170 * mb, FDs: 26},
		Newcomers: AbuserCount{Abuser: "newcomer", Ops: 2, Outcomes: []OutcomeCount{{Outcome: "Good", Count: 2}}}}
	cases := []struct {
		name   string
		edit   func(*Summary)
		failed []string
	}{
		{"at every limit", func(*Summary) {}, nil},
		{"a client error", func(s *Summary) { s.Good.Errors = 1; s.Good.ErrorTexts = []string{"Read: timeout"} }, []string{"well-behaved client errors"}},
		{"a gap 1 ms too long", func(s *Summary) { s.Good.GapMax = 701 * time.Millisecond }, []string{"largest Publish gap"}},
		{"one fd too many", func(s *Summary) { s.After = &Sample{RSS: 170 * mb, FDs: 27} }, []string{"open fds after recovery"}},
		{"RSS above 2 × baseline + 50 MiB", func(s *Summary) { s.After = &Sample{RSS: 170*mb + 1, FDs: 16} }, []string{"RSS after recovery"}},
		{"host gone", func(s *Summary) { s.HostExit = "exited with code 2" }, []string{"host process running"}},
		{"a newcomer locked out", func(s *Summary) {
			s.Newcomers = AbuserCount{Abuser: "newcomer", Ops: 2, Outcomes: []OutcomeCount{{Outcome: "Good", Count: 1}, {Outcome: "session: BadTooManySessions", Count: 1}}}
		}, []string{"newcomers during the abuse"}},
		{"no newcomer tried", func(s *Summary) { s.Newcomers = AbuserCount{} }, []string{"newcomers during the abuse"}},
		{"no samples", func(s *Summary) { s.Baseline = nil }, []string{"host samples"}},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		var got []string
		for _, f := range Failed(Verdict(s, DefaultLimits)) {
			got = append(got, f.Name)
		}
		if strings.Join(got, ",") != strings.Join(c.failed, ",") {
			t.Errorf("%s: failed %v, want %v", c.name, got, c.failed)
		}
	}
}

func TestTallyOrdersOutcomes(t *testing.T) {
	tl := NewTally()
	tl.Op("b")
	tl.Op("a")
	tl.Op("a")
	tl.Saw("a", "Good")
	tl.Saw("a", "BadTooManySessions")
	tl.Saw("a", "BadTooManySessions")
	tl.Saw("a", "ERR BadTCPMessageTooLarge")
	got := tl.Counts()
	if len(got) != 2 || got[0].Abuser != "a" || got[0].Ops != 2 || got[1].Abuser != "b" || got[1].Ops != 1 {
		t.Fatalf("counts %+v", got)
	}
	want := "BadTooManySessions ×2, ERR BadTCPMessageTooLarge ×1, Good ×1"
	if !strings.HasSuffix(got[0].String(), want) {
		t.Fatalf("line %q, want it to end with %q", got[0].String(), want)
	}
}

func TestParseThreads(t *testing.T) {
	n, err := parseThreads([]byte("Name:\tx\nVmRSS:\t 100 kB\nThreads:\t12\n"))
	if err != nil || n != 12 {
		t.Fatalf("parseThreads = %d, %v", n, err)
	}
	if _, err := parseThreads([]byte("Name:\tx\n")); err == nil {
		t.Fatal("no Threads line must be an error")
	}
	h, err := parseHeapAlloc("# HELP x\ngo_memstats_heap_alloc_bytes 1.2345678e+07\ngo_memstats_heap_alloc_bytes_total 9\n")
	if err != nil || h != 12345678 {
		t.Fatalf("parseHeapAlloc = %d, %v", h, err)
	}
	if _, err := parseHeapAlloc("go_goroutines 5\n"); err == nil {
		t.Fatal("no heap line must be an error")
	}
	s, err := readSample(os.Getpid())
	if err != nil || s.RSS == 0 || s.FDs == 0 || s.Threads == 0 {
		t.Fatalf("own process: %+v, %v", s, err)
	}
}

func TestOutcome(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, "Good"},
		{fmt.Errorf("x: %w", &uacp.Error{ErrorCode: uint32(ua.StatusBadTCPMessageTooLarge)}), "ERR BadTCPMessageTooLarge"},
		{fmt.Errorf("CreateSession: %w", ua.StatusBadTooManySessions), "BadTooManySessions"},
		{ua.StatusCode(0x8FFF0400), "0x8FFF0400"},
		{fmt.Errorf("%w: Read", uaclient.ErrTimeout), "no answer"},
		{os.ErrDeadlineExceeded, "no answer"},
		{io.EOF, "closed"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "closed"},
		{syscall.ECONNREFUSED, "connection refused"},
		{errors.New(strings.Repeat("x", 100)), "error: " + strings.Repeat("x", 60) + "…"},
	}
	for _, c := range cases {
		if got := outcome(c.err); got != c.want {
			t.Errorf("outcome(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if got := statusName(ua.StatusBadTooManySessions | 0x0001); got != "BadTooManySessions+0x0001" {
		t.Errorf("statusName with info bits = %q", got)
	}
}

func TestHoldBucket(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "< 1 s", 5 * time.Second: "5–10 s", 59 * time.Second: "30–60 s", time.Hour: "≥ 60 s"} {
		if got := holdBucket(d); got != want {
			t.Errorf("holdBucket(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestLyingRead checks that the patched word is the NodesToRead length:
// the same chunk unpatched says 1 there and passes the wire check, the
// patched one does not.
func TestLyingRead(t *testing.T) {
	rc := &rawConn{maxBody: 8192 - chunkHead}
	lie := lyingRead(rc)
	req := validRequests[0]().(*ua.ReadRequest)
	req.RequestHeader = requestHeader(nil, 1, opTimeout)
	at := nodesToReadAt(req)
	if got := binary.LittleEndian.Uint32(lie[at:]); got != 0x7fffffff {
		t.Fatalf("length word %#x", got)
	}
	binary.LittleEndian.PutUint32(lie[at:], 1)
	if code := uawire.CheckService(lie[chunkHead:]); code != ua.StatusOK {
		t.Fatalf("the unpatched Read fails the wire check: %v (wrong offset?)", code)
	}
	binary.LittleEndian.PutUint32(lie[at:], 0x7fffffff)
	if code := uawire.CheckService(lie[chunkHead:]); code == ua.StatusOK {
		t.Fatal("a Read claiming 2^31−1 nodes passed the wire check")
	}
}

func TestOverlongMessageIsOneRequest(t *testing.T) {
	rc := &rawConn{maxBody: 8192 - chunkHead}
	b := overlongMessage(rc)
	var total, chunks int
	var req uint32
	for len(b) > 0 {
		size := int(binary.LittleEndian.Uint32(b[4:]))
		if r := binary.LittleEndian.Uint32(b[20:]); chunks > 0 && r != req {
			t.Fatalf("chunk %d has request id %d, want %d", chunks, r, req)
		} else {
			req = r
		}
		final := b[3] == 'F'
		total += size - chunkHead
		chunks++
		b = b[size:]
		if final != (len(b) == 0) {
			t.Fatalf("chunk %d: final %v with %d bytes left", chunks, final, len(b))
		}
	}
	if total <= 4<<20 {
		t.Fatalf("%d body bytes in %d chunks: not beyond 4 MiB", total, chunks)
	}
}

// startServer starts an in-process otopcua server on a kernel-picked
// loopback port.
func startServer(t *testing.T) *opcua.Server {
	t.Helper()
	srv, err := opcua.New(opcua.Config{ListenHost: "127.0.0.1", Port: opcua.AnyPort, PublicHostname: "127.0.0.1",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestRawSessionReads(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	rc, err := (&Abuse{Endpoint: srv.EndpointURL()}).rawChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.drop()
	auth, err := rawSession(rc, srv.EndpointURL(), rand.New(rand.NewPCG(1, 1)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rc.call(validRequests[0](), auth, opTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*ua.ReadResponse).Results; len(r) != 1 || r[0].Status != ua.StatusOK {
		t.Fatalf("Read ServiceLevel: %+v", r)
	}
	// A second channel re-activates the same session.
	rc2, err := (&Abuse{Endpoint: srv.EndpointURL()}).rawChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.close()
	if err := rawActivate(rc2, auth); err != nil {
		t.Fatalf("re-activate on a new channel: %v", err)
	}
}

// TestAbusersRunAndStop runs every abuser for two seconds against an
// in-process server: each must do something, and Run must return soon
// after its context ends, with nothing left connected.
func TestAbusersRunAndStop(t *testing.T) {
	srv := startServer(t)
	vars := ns0Variables(t, srv.EndpointURL())
	tl := NewTally()
	a := &Abuse{Endpoint: srv.EndpointURL(), Tally: tl, Vars: vars, Items: 2000, Batch: 1000, Seed: 7}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(2*time.Second + 2*bigCallTimeout):
		t.Fatal("the abusers did not stop")
	}
	counts := tl.Counts()
	if len(counts) != len(a.abusers()) {
		t.Fatalf("%d abusers counted, want %d: %v", len(counts), len(a.abusers()), counts)
	}
	for _, c := range counts {
		if c.Ops == 0 || len(c.Outcomes) == 0 {
			t.Errorf("%s", c)
		}
		t.Log(c)
	}
	// The server keeps serving a newcomer.
	if got := freshClient(context.Background(), srv.EndpointURL()); got != "Good" {
		t.Fatalf("a new client after the abuse: %s", got)
	}
}
