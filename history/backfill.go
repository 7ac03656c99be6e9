package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Peer is another node's history as the back-fill asks for it.
type Peer interface {
	// Name identifies the peer in logs (its address).
	Name() string
	// Samples returns at most limit of tag's samples with after < time <
	// before, oldest first, and more when the peer holds more of them
	// after the last one. It returns when ctx ends.
	Samples(ctx context.Context, tag string, after, before int64, limit int) (xs []Sample, more bool, err error)
}

// MaxBackfillSlice is the most samples one back-fill request asks for.
const MaxBackfillSlice = 10_000

// BackfillOptions configure NewBackfiller.
type BackfillOptions struct {
	// Slice is the most samples asked for in one request,
	// 1..MaxBackfillSlice. Default MaxBackfillSlice.
	Slice int
	// Timeout bounds one request to a peer. Default 10 s.
	Timeout time.Duration
	// Settle: only history at least this old is asked for, so that the
	// peer has stored what it read (its recorder writes every 100 ms).
	// Default 2 s.
	Settle time.Duration
	// Idle is the pause between rounds when nothing can be asked (no gap,
	// or a gap not settled yet). Default 1 s.
	Idle time.Duration
	// Retry is the pause after a round no peer answered, doubled per
	// failure up to MaxRetry. Defaults 1 s and 30 s.
	Retry, MaxRetry time.Duration
	Logger          *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Backfiller fills this node's gaps (Gap) from its peers' histories: one
// slice of one gap at a time, oldest gap first, each slice written in one
// synced batch beside the recorder's, so that neither recording nor
// HistoryRead waits for more than one slice's write. A sample already
// stored (the same tag and time) is stored once (Store.Append).
//
// Begin and SetPeers may be called from any goroutine; Run from one.
type Backfiller struct {
	s *Store
	o BackfillOptions

	mu    sync.Mutex
	peers []Peer         // mu must be held
	gaps  map[gapKey]Gap // the gaps not filled yet (stored too); mu must be held
	kick  chan struct{}

	samples atomic.Uint64 // samples received from peers and stored
}

type gapKey struct {
	tag   string
	start int64
}

// BackfillStatus is what a Backfiller reports.
type BackfillStatus struct {
	Gaps    int           // gaps not filled yet
	Lag     time.Duration // Lag of those gaps
	Samples uint64        // samples back-filled since the start
}

// NewBackfiller returns a back-fill into s, resuming the gaps s holds;
// Run starts it.
func NewBackfiller(s *Store, o BackfillOptions) (*Backfiller, error) {
	if o.Slice <= 0 || o.Slice > MaxBackfillSlice {
		o.Slice = MaxBackfillSlice
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	if o.Idle <= 0 {
		o.Idle = time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	if o.MaxRetry <= 0 {
		o.MaxRetry = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	gs, err := s.Gaps()
	if err != nil {
		return nil, err
	}
	b := &Backfiller{s: s, o: o, gaps: map[gapKey]Gap{}, kick: make(chan struct{}, 1)}
	for _, g := range gs {
		b.gaps[gapKey{g.Tag, g.Start}] = g
	}
	return b, nil
}

// SetPeers sets the peers asked, in order (the first that answers
// serves a slice).
func (b *Backfiller) SetPeers(ps []Peer) {
	b.mu.Lock()
	b.peers = slices.Clone(ps)
	b.mu.Unlock()
	b.wake()
}

// Begin opens the gaps of tags, whose recording starts now in this
// process (retention per tag: how far back a node with nothing stored
// asks), and returns their start. Call it before the recorder records the
// tags, and give the recorder the start (Recorder.StartAt, then Apply):
// each gap runs from the tag's last sample stored before the start to its
// first own sample at or after it.
func (b *Backfiller) Begin(tags map[string]time.Duration) (start int64, err error) {
	start = Ticks(b.o.Now())
	if len(tags) == 0 {
		return start, nil
	}
	b.mu.Lock()
	var unknown []Gap // gaps of an earlier start whose End was never seen
	for _, g := range b.gaps {
		if _, ok := tags[g.Tag]; ok && g.End == EndUnknown {
			unknown = append(unknown, g)
		}
	}
	b.mu.Unlock()
	var gs []Gap
	for _, g := range unknown {
		// Whatever that process recorded is after its start: the gap ends
		// at its first sample, or at this start when it recorded none.
		first, ok, err := b.s.First(g.Tag, g.Start)
		if err != nil {
			return start, err
		}
		g.End = start
		if ok && first.At < start {
			g.End = first.At
		}
		gs = append(gs, g)
	}
	for tag, retention := range tags {
		last, has, err := b.s.Before(tag, start)
		if err != nil {
			return start, err
		}
		gs = append(gs, NewGap(tag, start, last.At, has, int64(retention/100)))
	}
	if err := b.s.PutGaps(gs...); err != nil {
		return start, err
	}
	b.mu.Lock()
	for _, g := range gs {
		b.gaps[gapKey{g.Tag, g.Start}] = g
	}
	b.mu.Unlock()
	b.o.Logger.Info("history back-fill: gaps opened", "tags", len(tags), "gaps", len(gs))
	b.wake()
	return start, nil
}

func (b *Backfiller) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Status reports the gaps left and what was back-filled.
func (b *Backfiller) Status() BackfillStatus {
	b.mu.Lock()
	gs := make([]Gap, 0, len(b.gaps))
	for _, g := range b.gaps {
		gs = append(gs, g)
	}
	b.mu.Unlock()
	return BackfillStatus{Gaps: len(gs), Lag: time.Duration(Lag(gs, Ticks(b.o.Now()))) * 100, Samples: b.samples.Load()}
}

// Run fills the gaps until ctx ends.
func (b *Backfiller) Run(ctx context.Context) {
	failures := 0
	for {
		moved, err := b.round(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := b.o.Idle
		switch {
		case err != nil:
			failures++
			wait = retryAfter(b.o.Retry, b.o.MaxRetry, failures)
			if failures == 1 {
				b.o.Logger.Warn("history back-fill: no peer answered; retrying with back-off", "err", err)
			}
		case moved:
			if failures > 0 {
				b.o.Logger.Info("history back-fill: a peer answers again", "failures", failures)
			}
			failures, wait = 0, 0
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		case <-time.After(wait):
		}
	}
}

// retryAfter is the pause after n failed rounds in a row: retry doubled
// per failure, at most limit.
func retryAfter(retry, limit time.Duration, n int) time.Duration {
	d := retry
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// round fills one slice of each gap that can be asked for, oldest first;
// moved reports that a slice was stored or a gap closed.
func (b *Backfiller) round(ctx context.Context) (moved bool, err error) {
	b.mu.Lock()
	gs := make([]Gap, 0, len(b.gaps))
	for _, g := range b.gaps {
		gs = append(gs, g)
	}
	peers := b.peers
	b.mu.Unlock()
	slices.SortFunc(gs, func(x, y Gap) int { return cmp.Or(cmp.Compare(x.Start, y.Start), cmp.Compare(x.Tag, y.Tag)) })
	for _, g := range gs {
		if ctx.Err() != nil {
			return moved, nil
		}
		m, err := b.step(ctx, g, peers)
		if err != nil {
			return moved, err
		}
		moved = moved || m
	}
	if moved && len(gs) > 0 {
		if st := b.Status(); st.Gaps == 0 {
			b.o.Logger.Info("history back-fill: every gap filled", "samples", st.Samples)
		}
	}
	return moved, nil
}

// step moves gap g by one slice from the first of peers that answers.
func (b *Backfiller) step(ctx context.Context, g Gap, peers []Peer) (moved bool, err error) {
	if g.End == EndUnknown {
		// The first sample at or after Start is this node's own: nothing
		// at or after Start is back-filled before End is known.
		first, ok, err := b.s.First(g.Tag, g.Start)
		if err != nil {
			return false, err
		}
		if ok {
			g.End = first.At
			if err := b.save(g); err != nil {
				return false, err
			}
		}
	}
	after, before, ok := g.Window(Ticks(b.o.Now()), int64(b.o.Settle/100))
	if !ok {
		if g.Filled() {
			return true, b.save(g)
		}
		return false, nil
	}
	if len(peers) == 0 {
		return false, nil // the gap waits for a peer (SetPeers)
	}
	var errs []error
	for _, p := range peers {
		xs, more, err := b.ask(ctx, p, g.Tag, after, before)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
			continue
		}
		kept, err := b.trim(g, after, before, xs, more)
		if err != nil {
			return false, err
		}
		if len(kept) > 0 {
			recs := make([]Record, len(kept))
			for i, x := range kept {
				recs[i] = Record{Tag: g.Tag, Sample: x}
			}
			if err := b.s.Append(recs); err != nil {
				return false, err
			}
			b.samples.Add(uint64(len(kept)))
		}
		return true, b.save(g.Advance(after, before, xs, more))
	}
	return false, errors.Join(errs...)
}

// trim applies TrimEdges to a slice of the window (after, before): the
// sample stored at after (the node's last sample before the gap for the
// first slice; the last back-filled one when a gap takes several slices,
// so a repeat at a slice's edge goes too) and, when the peer has no more
// before End, the node's first own sample at End.
func (b *Backfiller) trim(g Gap, after, before int64, xs []Sample, more bool) ([]Sample, error) {
	if len(xs) == 0 {
		return xs, nil
	}
	prev, hasPrev, err := b.s.Before(g.Tag, after+1)
	if err != nil {
		return nil, err
	}
	hasPrev = hasPrev && prev.At == after
	var next Sample
	hasNext := false
	if !more && g.End != EndUnknown && before == g.End {
		if next, hasNext, err = b.s.First(g.Tag, g.End); err != nil {
			return nil, err
		}
	}
	return TrimEdges(xs, prev, hasPrev, next, hasNext), nil
}

// ask asks p for one slice of tag within the request's deadline and
// checks the answer.
func (b *Backfiller) ask(ctx context.Context, p Peer, tag string, after, before int64) ([]Sample, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	xs, more, err := p.Samples(ctx, tag, after, before, b.o.Slice)
	if err != nil {
		return nil, false, err
	}
	if !CheckSlice(after, before, b.o.Slice, xs, more) {
		return nil, false, fmt.Errorf("history back-fill: the peer answered %d samples of %s outside the window asked, out of order or over the limit; refused", len(xs), tag)
	}
	return xs, more, nil
}

// save stores g, or removes it once filled.
func (b *Backfiller) save(g Gap) error {
	k := gapKey{g.Tag, g.Start}
	if g.Filled() {
		if err := b.s.DeleteGap(g); err != nil {
			return err
		}
		b.mu.Lock()
		delete(b.gaps, k)
		b.mu.Unlock()
		return nil
	}
	if err := b.s.PutGaps(g); err != nil {
		return err
	}
	b.mu.Lock()
	b.gaps[k] = g
	b.mu.Unlock()
	return nil
}
