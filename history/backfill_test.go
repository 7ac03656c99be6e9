package history

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
)

// storePeer is a peer served from a Store, as the host serves one; fail
// makes its next calls fail, answer replaces its answer.
type storePeer struct {
	s      *Store
	mu     sync.Mutex
	fail   int
	calls  int
	answer func(after, before int64) []Sample
}

func (p *storePeer) Name() string { return "peer" }

func (p *storePeer) Samples(ctx context.Context, tag string, after, before int64, limit int) ([]Sample, bool, error) {
	p.mu.Lock()
	p.calls++
	fail, answer := p.fail > 0, p.answer
	if fail {
		p.fail--
	}
	p.mu.Unlock()
	if fail {
		return nil, false, errors.New("connection refused")
	}
	if answer != nil {
		return answer(after, before), false, nil
	}
	var out []Sample
	more := false
	err := p.s.Read(tag, after+1, before, func(x Sample) bool {
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, x)
		return true
	})
	return out, more, err
}

func (p *storePeer) callsMade() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// at is a clock stopped at t seconds.
func at(t int64) func() time.Time { return func() time.Time { return TimeOf(t * sec) } }

func newBackfiller(t *testing.T, s *Store, now func() time.Time, slice int) *Backfiller {
	t.Helper()
	b, err := NewBackfiller(s, BackfillOptions{Slice: slice, Settle: 2 * time.Second, Idle: 5 * time.Millisecond,
		Retry: 5 * time.Millisecond, MaxRetry: 20 * time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func run(t *testing.T, b *Backfiller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFilled(t *testing.T, b *Backfiller) {
	t.Helper()
	poll.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if st := b.Status(); st.Gaps > 0 {
			return errors.New("gaps left")
		}
		return nil
	})
}

// pairStores is the scenario of the back-fill: node a recorded 0–39 s,
// was down, and records again from 70.2 s; its peer recorded every
// second at a half-second offset all along, 0.5–99.5 s.
func pairStores(t *testing.T) (a, b *Store, peerXs []Sample) {
	t.Helper()
	a, b = open(t, t.TempDir(), 16), open(t, t.TempDir(), 16)
	t.Cleanup(func() { a.Close(); b.Close() })
	if err := a.Append(records("d/t", samples(0, 40, func(i int) float64 { return float64(i) }))); err != nil {
		t.Fatal(err)
	}
	if err := a.Compact("d/t", true); err != nil {
		t.Fatal(err)
	}
	peerXs = samples(0, 100, func(i int) float64 { return float64(i) })
	for i := range peerXs {
		peerXs[i].At += sec / 2
	}
	if err := b.Append(records("d/t", peerXs)); err != nil {
		t.Fatal(err)
	}
	return a, b, peerXs
}

// ownAfterRestart records a's own samples from 70.2 s, one a second.
func ownAfterRestart(t *testing.T, a *Store) []Sample {
	t.Helper()
	own := samples(70, 20, func(i int) float64 { return float64(70 + i) })
	for i := range own {
		own[i].At += sec / 5
	}
	if err := a.Append(records("d/t", own)); err != nil {
		t.Fatal(err)
	}
	return own
}

func window(xs []Sample, from, to int64) []Sample {
	var out []Sample
	for _, x := range xs {
		if x.At > from && x.At < to {
			out = append(out, x)
		}
	}
	return out
}

// TestBackfillFillsTheGapFromThePeer: the restarted node gets exactly the
// peer's samples between its last sample before the restart and its first
// own one after, a slice at a time; before and after, its own stay.
func TestBackfillFillsTheGapFromThePeer(t *testing.T) {
	a, bs, peerXs := pairStores(t)
	peer := &storePeer{s: bs}
	bf := newBackfiller(t, a, at(70), 7)
	if _, err := bf.Begin(map[string]time.Duration{"d/t": time.Hour}); err != nil {
		t.Fatal(err)
	}
	own := ownAfterRestart(t, a)
	bf.o.Now = at(100)
	bf.SetPeers([]Peer{peer})
	if st := bf.Status(); st.Gaps != 1 || st.Lag != 61*time.Second { // (39 s, now) while the end is unknown
		t.Fatalf("before: %+v", st)
	}
	run(t, bf)
	waitFilled(t, bf)
	want := samples(0, 40, func(i int) float64 { return float64(i) })
	// The peer's first sample of the gap repeats this node's last one
	// before it (39, half a second later): TrimEdges drops it.
	want = append(want, window(peerXs, 39*sec, own[0].At)[1:]...)
	want = append(want, own...)
	if got := readAll(t, a, "d/t", math.MinInt64, math.MaxInt64); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	// 31 samples in (39 s, 70.2 s), 7 a slice: 5 requests; 30 stored.
	if st, calls := bf.Status(), peer.callsMade(); st.Samples != 30 || calls != 5 || st.Lag != 0 {
		t.Fatalf("%+v after %d calls", st, calls)
	}
	if gs, err := a.Gaps(); err != nil || len(gs) != 0 {
		t.Fatalf("gaps stored: %v %v", gs, err)
	}
}

// TestBackfillWaitsForThePeerAndResumesAfterARestart: while the peer does
// not answer the gap stays (stored, retried); a node restarted in the
// middle resumes where it was; a second back-fill of the same samples
// changes nothing.
func TestBackfillWaitsForThePeerAndResumesAfterARestart(t *testing.T) {
	a, bs, _ := pairStores(t)
	peer := &storePeer{s: bs, fail: 3}
	bf := newBackfiller(t, a, at(70), 5)
	if _, err := bf.Begin(map[string]time.Duration{"d/t": time.Hour}); err != nil {
		t.Fatal(err)
	}
	ownAfterRestart(t, a)
	bf.o.Now = at(100)
	bf.SetPeers([]Peer{peer})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); bf.Run(ctx) }()
	poll.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if bf.Status().Samples < 10 {
			return errors.New("not two slices yet")
		}
		return nil
	})
	cancel()
	<-done
	if peer.callsMade() < 5 {
		t.Fatalf("%d calls: the failures were not retried", peer.callsMade())
	}
	gs, err := a.Gaps()
	if err != nil || len(gs) != 1 || gs[0].From < 39*sec || gs[0].End != 70*sec+sec/5 {
		t.Fatalf("gap stored mid-way: %+v %v", gs, err)
	}
	mid := readAll(t, a, "d/t", math.MinInt64, math.MaxInt64)

	again := newBackfiller(t, a, at(100), 5) // the restarted node
	again.SetPeers([]Peer{peer})
	run(t, again)
	waitFilled(t, again)
	full := readAll(t, a, "d/t", math.MinInt64, math.MaxInt64)
	if len(full) != 40+30+20 || !slices.Equal(full[:len(mid)-20], mid[:len(mid)-20]) {
		t.Fatalf("%d samples after resuming (%d mid-way)", len(full), len(mid))
	}
	// The same gap again: nothing new.
	if err := a.PutGaps(Gap{Tag: "d/t", Start: 70 * sec, From: 39 * sec, End: 70*sec + sec/5}); err != nil {
		t.Fatal(err)
	}
	third := newBackfiller(t, a, at(100), 5)
	third.SetPeers([]Peer{peer})
	run(t, third)
	waitFilled(t, third)
	if got := readAll(t, a, "d/t", math.MinInt64, math.MaxInt64); !slices.Equal(got, full) {
		t.Fatalf("a second back-fill changed the history: %d samples, %d before", len(got), len(full))
	}
}

// TestBackfillRefusesAHostilePeer: samples outside the window asked, or
// out of order, are refused whole: nothing stored, the gap stays.
func TestBackfillRefusesAHostilePeer(t *testing.T) {
	a, bs, _ := pairStores(t)
	for name, answer := range map[string]func(after, before int64) []Sample{
		"outside the window": func(after, before int64) []Sample { return []Sample{{At: after + 1}, {At: before}} },
		"out of order":       func(after, before int64) []Sample { return []Sample{{At: after + 2}, {At: after + 1}} },
		"over the limit":     func(after, before int64) []Sample { return samples(40, 6, func(int) float64 { return 0 }) },
	} {
		t.Run(name, func(t *testing.T) {
			peer := &storePeer{s: bs, answer: answer}
			bf := newBackfiller(t, a, at(70), 5)
			if _, err := bf.Begin(map[string]time.Duration{"d/t": time.Hour}); err != nil {
				t.Fatal(err)
			}
			bf.o.Now = at(100)
			bf.SetPeers([]Peer{peer})
			run(t, bf)
			poll.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
				if peer.callsMade() < 3 {
					return errors.New("not asked thrice yet")
				}
				return nil
			})
			if st := bf.Status(); st.Gaps == 0 || st.Samples != 0 {
				t.Fatalf("%+v", st)
			}
			if got := readAll(t, a, "d/t", 39*sec+1, 70*sec); len(got) != 0 {
				t.Fatalf("stored from a hostile peer: %v", got)
			}
		})
	}
}

// TestBeginClosesAnEarlierGapWhoseEndWasNotSeen: a process that never
// recorded the tag leaves its gap open; the next start closes it at its
// first sample, or at the new start.
func TestBeginClosesAnEarlierGapWhoseEndWasNotSeen(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	if err := s.PutGaps(Gap{Tag: "d/t", Start: 50 * sec, From: 10 * sec, End: EndUnknown}); err != nil {
		t.Fatal(err)
	}
	bf := newBackfiller(t, s, at(80), 5)
	if _, err := bf.Begin(map[string]time.Duration{"d/t": time.Hour}); err != nil {
		t.Fatal(err)
	}
	gs, err := s.Gaps()
	want := []Gap{{Tag: "d/t", Start: 50 * sec, From: 10 * sec, End: 80 * sec}, {Tag: "d/t", Start: 80 * sec, From: 80*sec - 3600*sec - 1, End: EndUnknown}}
	if err != nil || !slices.Equal(gs, want) {
		t.Fatalf("%+v %v", gs, err)
	}
}
