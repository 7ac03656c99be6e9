package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/localdb/hlc"
	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
)

// hostile is the address the attacks come from; the pair talks on 127.0.0.1.
const hostile = "127.0.0.2"

// serveAlone starts a Replicator on loopback whose one peer never answers,
// with limits changed by tweak (nil: the defaults), and returns its address.
func serveAlone(t *testing.T, tweak func(*serverLimits)) string {
	t.Helper()
	db, err := localdb.Open(ctxT(t), filepath.Join(t.TempDir(), "alone.db"), nil, localdb.WithNodeID("node-alone"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	r, err := New(Options{Local: db, Listen: "127.0.0.1:0", Peers: []string{"127.0.0.1:1"}, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(&r.limits)
	}
	if err := r.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r.Addr().String()
}

// heapInUse is the Go heap in use after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

const mib = 1 << 20

// rss is this process's resident set size in bytes (Linux).
func rss(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// samplePeakHeap samples the Go heap in use every 5 ms, without forcing a
// collection, until stop is called; *peak is the largest sample (read it
// after stop).
func samplePeakHeap() (stop func(), peak *uint64) {
	peak = new(uint64)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			*peak = max(*peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-ended }, peak
}

// TestKeylessStreamsAnnouncing4MiBHoldNoMemory: 800 streams without the
// key, from 127.0.0.2 on 16 connections of 50, each announcing a 4 MiB
// message, sending its first KiB and holding the stream open, against a
// real replication server with a real peer. Every stream is answered
// Unauthenticated without waiting for its message, the server's Go heap
// in use stays within 30 MB of its baseline while the connections are
// held, the refusals are logged once, and the pair keeps syncing rows with
// the right key during and after the attack.
//
// Go heap in use, not RSS: the server runs in this test process (so that
// the pair's rows can be checked), and under -race the process's RSS
// carries the race detector's shadow memory; the heap is what a held
// 4 MiB message would occupy (gRPC allocates the announced length before
// reading it). Without the check at HEADERS (main before this change) the
// streams are never answered and the heap grows by 4 MiB a stream.
func TestKeylessStreamsAnnouncing4MiBHoldNoMemory(t *testing.T) {
	a, b := pair(t, testKey, testKey)
	enqueue(t, a.db, "warm-up")
	waitRows(t, b, 1)
	base, baseRSS := heapInUse(), rss(t)

	stopSampling, peak := samplePeakHeap()
	const conns, perConn = 16, 50
	clients := make([]*h2Client, conns)
	ids := make([][]uint32, conns)
	for i := range clients {
		c := dialH2(t, hostile, a.listen)
		clients[i] = c
		for range perConn {
			id, err := c.open(pullMethod, "x-otopcua-replication-nonce", "00112233445566778899aabbccddeeff")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.announce(id, 4*mib, 1024); err != nil {
				t.Fatal(err)
			}
			ids[i] = append(ids[i], id)
		}
	}
	for i, c := range clients {
		poll.CheckFor(t, 30*time.Second, 20*time.Millisecond, c.wantAnswers(ids[i], statusCode(int(codes.Unauthenticated))))
	}
	stopSampling()
	held := heapInUse()
	t.Logf("process RSS (for information; the race detector's shadow memory is in it): %.1f MB before, %.1f MB held",
		float64(baseRSS)/mib, float64(rss(t))/mib)
	t.Logf("Go heap in use: %.1f MB before, %.1f MB with %d keyless streams held (%+.1f MB), %.1f MB at most while they were sent (no forced collection)",
		float64(base)/mib, float64(held)/mib, conns*perConn, (float64(held)-float64(base))/mib, float64(*peak)/mib)
	if held > base+30*mib || *peak > base+30*mib {
		t.Fatalf("Go heap in use grew from %d to %d bytes (at most %d) with %d keyless streams, want at most 30 MB more", base, held, *peak, conns*perConn)
	}
	if got := refused(a, ReasonMissingKey); got < conns*perConn {
		t.Fatalf("A counted %d missing keys, want at least %d", got, conns*perConn)
	}
	if c := strings.Count(a.logs.String(), "refused a peer's request"); c > 1 {
		t.Fatalf("A logged %d refusal lines for one address in a minute, want at most 1:\n%s", c, a.logs.String())
	}
	if !strings.Contains(a.logs.String(), "peer="+hostile) {
		t.Fatalf("A's refusal line does not name %s:\n%s", hostile, a.logs.String())
	}

	enqueue(t, a.db, "during")
	enqueue(t, b.db, "during-b")
	waitRows(t, b, 3)
	waitRows(t, a, 3)
	for _, c := range clients {
		_ = c.conn.Close()
	}
	enqueue(t, a.db, "after")
	waitRows(t, b, 4)
}

// waitRows waits until n holds want queued events.
func waitRows(t *testing.T, n *node, want int) {
	t.Helper()
	poll.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if got := len(n.events(t)); got != want {
			return fmt.Errorf("%s holds %d rows, want %d", n.name, got, want)
		}
		return nil
	})
}

func TestServerAdvertisesItsLimits(t *testing.T) {
	c := dialH2(t, hostile, serveAlone(t, nil))
	want := map[http2.SettingID]uint32{
		http2.SettingMaxConcurrentStreams: defaultServerLimits.streams,
		http2.SettingMaxHeaderListSize:    maxHeaderBytes,
		http2.SettingInitialWindowSize:    64 << 10,
	}
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		got, _, _ := c.state()
		for id, v := range want {
			if got[id] != v {
				return fmt.Errorf("SETTINGS %v = %d, want %d (all: %v)", id, got[id], v, got)
			}
		}
		return nil
	})
}

// TestKeyHolderCannotAnnounceMoreThanTheLargestRequest: with the right key,
// a message announced one byte over the largest Pull, or 4 MiB, is refused
// from its length prefix (ResourceExhausted) without waiting for its bytes.
func TestKeyHolderCannotAnnounceMoreThanTheLargestRequest(t *testing.T) {
	c := dialH2(t, hostile, serveAlone(t, nil))
	var ids []uint32
	for _, n := range []uint32{maxRequestBytes + 1, 4 * mib} {
		id, err := c.open(pullMethod, keyHeader, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.announce(id, n, 16); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, c.wantAnswers(ids, statusCode(int(codes.ResourceExhausted))))
}

// TestStreamOverTheLimitIsRefused: with the right key, four streams wait
// for the rest of their messages; a fifth on the same connection is reset
// REFUSED_STREAM.
func TestStreamOverTheLimitIsRefused(t *testing.T) {
	c := dialH2(t, hostile, serveAlone(t, nil))
	for range defaultServerLimits.streams {
		id, err := c.open(pullMethod, keyHeader, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.announce(id, maxRequestBytes, 8); err != nil {
			t.Fatal(err)
		}
	}
	id, err := c.open(pullMethod, keyHeader, testKey)
	if err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, c.wantAnswers([]uint32{id}, "rst "+http2.ErrCodeRefusedStream.String()))
	for held := uint32(1); held < id; held += 2 {
		if got := c.answer(held); got != "" {
			t.Fatalf("held stream %d was answered %q", held, got)
		}
	}
}

// TestPingFloodIsDisconnected: pings on a connection without a stream get
// GOAWAY ENHANCE_YOUR_CALM at the third strike, and the connection ends.
func TestPingFloodIsDisconnected(t *testing.T) {
	c := dialH2(t, hostile, serveAlone(t, nil))
	for i := range 4 {
		if err := c.ping(byte(i)); err != nil {
			t.Fatal(err)
		}
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		_, goAway, closed := c.state()
		if !strings.Contains(goAway, "ENHANCE_YOUR_CALM too_many_pings") || !closed {
			return fmt.Errorf("GOAWAY %q, closed %v", goAway, closed)
		}
		return nil
	})
}

// TestIdleConnectionIsClosed: a connection that opens no stream is sent
// GOAWAY and closed once the idle limit passes (shortened here to 300 ms).
func TestIdleConnectionIsClosed(t *testing.T) {
	c := dialH2(t, hostile, serveAlone(t, func(l *serverLimits) { l.idle = 300 * time.Millisecond }))
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		_, goAway, closed := c.state()
		if !strings.HasPrefix(goAway, "NO_ERROR") || !closed {
			return fmt.Errorf("GOAWAY %q, closed %v", goAway, closed)
		}
		return nil
	})
}

// TestMaxRequestBytesIsTheLargestPull: the largest Pull and Ack the
// encoder makes fit maxRequestBytes, and the bound is loose only by the
// table name (maxName allowed, the longest replicated table shorter).
func TestMaxRequestBytesIsTheLargestPull(t *testing.T) {
	longNode := strings.Repeat("n", hlc.MaxNodeLen)
	longTable := ""
	for _, tb := range localdb.ReplicatedTables() {
		if len(tb) > len(longTable) {
			longTable = tb
		}
	}
	stamp := hlc.Stamp{WallMs: 999_999_999_999_999, Counter: ^uint32(0), Node: longNode}
	pull, err := Encode(&Pull{Node: longNode, Table: longTable, After: stamp, Limit: MaxBatchChanges})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := Encode(&Ack{Node: longNode, Table: longTable, Applied: stamp})
	if err != nil {
		t.Fatal(err)
	}
	if len(pull) > maxRequestBytes || len(ack) > len(pull) {
		t.Fatalf("largest Pull %d bytes, Ack %d, limit %d", len(pull), len(ack), maxRequestBytes)
	}
	if slack := maxRequestBytes - len(pull); slack != maxName-len(longTable) {
		t.Fatalf("limit %d is %d bytes over the largest Pull, want %d (the table name's bound)", maxRequestBytes, slack, maxName-len(longTable))
	}
}
