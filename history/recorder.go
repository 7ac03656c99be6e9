package history

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otopcua/otopcua/deployment"
)

// Policy is how one tag is recorded (deployment.History, resolved).
type Policy struct {
	// Deadband: a value is recorded when it differs from the last one
	// recorded by more than this; 0 records every change.
	Deadband float64
	// MaxInterval: an unchanged value is recorded again once this long has
	// passed since the last one recorded; 0: never.
	MaxInterval time.Duration
	// Retention: samples older than this are removed.
	Retention time.Duration
}

// Policies resolves which tags of doc are recorded, and how: device →
// tag → policy. A percentage deadband is taken of the tag's range.
func Policies(doc *deployment.Document) map[string]map[string]Policy {
	out := map[string]map[string]Policy{}
	for _, d := range doc.Devices {
		for _, t := range d.Tags {
			h := t.History.Effective(d.History)
			if !h.On() {
				continue
			}
			p := Policy{MaxInterval: h.MaxInterval.Std(), Retention: h.Retention.Std()}
			if db := h.Deadband; db != nil {
				p.Deadband = db.Value
				if db.Percent && t.Min != nil && t.Max != nil {
					p.Deadband = db.Value / 100 * (*t.Max - *t.Min)
				}
			}
			if out[d.Name] == nil {
				out[d.Name] = map[string]Policy{}
			}
			out[d.Name][t.Name] = p
		}
	}
	return out
}

// Reading is one tag's value as a poll read it.
type Reading struct {
	Tag    string
	Value  any // bool or a number; nil before the tag's first good read
	Status uint32
	At     time.Time // the source timestamp; zero: nothing read yet
}

// filter is one tag's recording decision (Decide). Its fields are the
// last sample recorded.
type filter struct {
	has  bool
	last Sample
	// notBefore: a sample older than this is not recorded (StartAt).
	notBefore int64
}

// decide reports whether x is recorded under p, and remembers it when it
// is: the first sample, a change of status, a value beyond the deadband
// (a change of any size when the deadband is 0), or MaxInterval since the
// last one. A sample not newer than the last one recorded (a repeated
// read of a Bad status keeps its time) is not.
func (f *filter) decide(p Policy, x Sample) bool {
	rec := false
	switch {
	case x.At < f.notBefore:
		return false
	case !f.has:
		rec = true
	case x.At <= f.last.At:
		return false
	case x.Status != f.last.Status:
		rec = true
	case p.Deadband == 0 && math.Float64bits(x.Value) != math.Float64bits(f.last.Value):
		rec = true
	case p.Deadband > 0 && math.Abs(x.Value-f.last.Value) > p.Deadband:
		rec = true
	case p.MaxInterval > 0 && x.At-f.last.At >= int64(p.MaxInterval/100):
		rec = true
	}
	if rec {
		f.has, f.last = true, x
	}
	return rec
}

// RecorderOptions configure NewRecorder.
type RecorderOptions struct {
	// Queue bounds the batches waiting for the store; a poll that finds it
	// full is dropped and counted (Status.Dropped), never waited for.
	// Default 256.
	Queue int
	// FlushEvery is how long the recorder gathers samples before it writes
	// them in one synced batch: what a crash of the node may lose (the
	// peer's back-fill brings it back). Default 100 ms.
	FlushEvery time.Duration
	// CompactEvery is how often heads are turned into blocks and saved
	// (Store.Due); a head is compacted when it holds a block's worth of
	// samples, or holds samples not saved yet and its oldest sample is
	// older than HeadAge. Defaults 5 s and 10 min.
	CompactEvery, HeadAge time.Duration
	// TrimEvery is how often retention is enforced, TrimTags how many tags
	// one turn trims at most. Defaults 1 min and 1,000.
	TrimEvery time.Duration
	TrimTags  int
	// MaxSize bounds the store's size on disk, in bytes (History:MaxSize):
	// every CompactEvery, while the store is over it, its oldest blocks
	// are removed (Store.Shrink), at most SizeBlocks blocks a turn. 0: no
	// limit. SizeBlocks default 10,000 (about 10 MB of blocks).
	MaxSize    int64
	SizeBlocks int
	Logger     *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Recorder records what the drivers read into a Store: each poll's
// readings pass each tag's filter (Policy) on the poll's goroutine, and
// the samples kept go to the store from the recorder's own goroutine
// (Run), so that a slow disk never holds back a poll.
type Recorder struct {
	s   *Store
	o   RecorderOptions
	q   chan []Record
	mu  sync.Mutex
	pol map[string]map[string]Policy // mu must be held
	fil map[string]*filter           // "device/tag" → filter; mu must be held

	recorded, dropped, removed atomic.Uint64
	// shrinking: the store was over MaxSize at the last turn; Run's
	// goroutine only.
	shrinking bool
}

// RecorderStatus is what a Recorder has done since it started.
type RecorderStatus struct {
	Recorded uint64 // samples written to the store
	Dropped  uint64 // samples dropped because the queue was full
	Tags     int    // tags recorded under the current policies
	// RemovedBySize is the samples removed to keep the store under
	// MaxSize.
	RemovedBySize uint64
}

// NewRecorder returns a recorder into s; Run starts it.
func NewRecorder(s *Store, o RecorderOptions) *Recorder {
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.CompactEvery <= 0 {
		o.CompactEvery = 5 * time.Second
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 100 * time.Millisecond
	}
	if o.HeadAge <= 0 {
		o.HeadAge = 10 * time.Minute
	}
	if o.TrimEvery <= 0 {
		o.TrimEvery = time.Minute
	}
	if o.TrimTags <= 0 {
		o.TrimTags = 1000
	}
	if o.SizeBlocks <= 0 {
		o.SizeBlocks = 10_000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Recorder{s: s, o: o, q: make(chan []Record, o.Queue), pol: map[string]map[string]Policy{}, fil: map[string]*filter{}}
}

// Apply takes the policies of a deployment: tags no longer recorded are
// forgotten (their history stays until its retention ends).
func (r *Recorder) Apply(doc *deployment.Document) {
	pol := Policies(doc)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pol = pol
	for k := range r.fil {
		dev, tag := splitTag(k)
		if _, ok := pol[dev][tag]; !ok {
			delete(r.fil, k)
		}
	}
}

// StartAt makes the recorder ignore samples of tags ("device/tag") older
// than at (ticks): a back-fill gap that ends at the tag's first sample at
// or after at asks the peer for the time before (Backfiller.Begin). Call
// it before Apply starts recording the tags, so that a poll read before
// at and handed over after Apply is not recorded inside the gap.
func (r *Recorder) StartAt(tags []string, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range tags {
		f := r.fil[k]
		if f == nil {
			f = &filter{}
			r.fil[k] = f
		}
		f.notBefore = at
	}
}

// Offer hands the recorder one poll of device. It never blocks.
func (r *Recorder) Offer(device string, readings []Reading) {
	r.mu.Lock()
	pol := r.pol[device]
	var batch []Record
	for _, rd := range readings {
		p, ok := pol[rd.Tag]
		if !ok || rd.At.IsZero() {
			continue
		}
		v, ok := number(rd.Value)
		if !ok {
			continue // nothing read yet
		}
		key := device + "/" + rd.Tag
		f := r.fil[key]
		if f == nil {
			f = &filter{}
			r.fil[key] = f
		}
		x := Sample{At: Ticks(rd.At), Value: v, Status: rd.Status}
		if f.decide(p, x) {
			batch = append(batch, Record{Tag: key, Sample: x})
		}
	}
	r.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	select {
	case r.q <- batch:
	default:
		if r.dropped.Add(uint64(len(batch))) == uint64(len(batch)) {
			r.o.Logger.Warn("history: the store does not keep up; samples are dropped (counted in otopcua_history_dropped_samples_total)", "device", device)
		}
	}
}

// Status reports what the recorder has done.
func (r *Recorder) Status() RecorderStatus {
	r.mu.Lock()
	n := 0
	for _, tags := range r.pol {
		n += len(tags)
	}
	r.mu.Unlock()
	return RecorderStatus{Recorded: r.recorded.Load(), Dropped: r.dropped.Load(), Tags: n, RemovedBySize: r.removed.Load()}
}

// Run writes the queued samples, compacts heads and enforces retention
// until ctx ends; then it writes what is queued and returns.
func (r *Recorder) Run(ctx context.Context) {
	compact := time.NewTicker(r.o.CompactEvery)
	defer compact.Stop()
	trim := time.NewTicker(r.o.TrimEvery)
	defer trim.Stop()
	var trimFrom string // where the next retention turn starts
	var pending []Record
	var flush <-chan time.Time // set while samples are pending
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case b := <-r.q:
					pending = append(pending, b...)
				default:
					r.write(pending)
					return
				}
			}
		case b := <-r.q:
			if len(pending) == 0 {
				flush = time.After(r.o.FlushEvery)
			}
			pending = append(pending, b...)
			if len(pending) >= maxFlush {
				r.write(pending)
				pending, flush = nil, nil
			}
		case <-flush:
			r.write(pending)
			pending, flush = nil, nil
		case <-compact.C:
			r.compact(ctx)
			r.shrink()
		case <-trim.C:
			trimFrom = r.trim(ctx, trimFrom)
		}
	}
}

// maxFlush bounds the samples of one synced batch.
const maxFlush = 1 << 16

// write appends the gathered samples in one synced batch.
func (r *Recorder) write(b []Record) {
	if len(b) == 0 {
		return
	}
	if err := r.s.Append(b); err != nil {
		r.dropped.Add(uint64(len(b)))
		r.o.Logger.Error("history: samples not recorded", "samples", len(b), "err", err)
		return
	}
	r.recorded.Add(uint64(len(b)))
}

// compact turns the heads that are due into blocks and saves them, then
// drops the journal they no longer need; it stops early when samples
// wait, so that recording comes first.
func (r *Recorder) compact(ctx context.Context) {
	defer func() {
		if err := r.s.DropJournal(); err != nil {
			r.o.Logger.Error("history: journal not trimmed", "err", err)
		}
	}()
	for _, tag := range r.s.Due(Ticks(r.o.Now().Add(-r.o.HeadAge))) {
		if ctx.Err() != nil || len(r.q) > cap(r.q)/2 {
			return
		}
		if err := r.s.Compact(tag, false); err != nil {
			r.o.Logger.Error("history: compaction failed", "tag", tag, "err", err)
		}
	}
}

// shrink removes the store's oldest blocks while it is over MaxSize, one
// slice a turn, and logs when that starts and ends.
func (r *Recorder) shrink() {
	if r.o.MaxSize <= 0 {
		return
	}
	res, err := r.s.Shrink(r.o.MaxSize, r.o.SizeBlocks)
	if err != nil {
		r.o.Logger.Error("history: History:MaxSize not enforced", "err", err)
		return
	}
	r.removed.Add(uint64(res.Samples))
	switch {
	case res.Blocks > 0 && !r.shrinking:
		r.shrinking = true
		r.o.Logger.Warn("history: the store is over History:MaxSize; its oldest samples are removed (counted in otopcua_history_samples_removed_by_size_total)",
			"max_bytes", r.o.MaxSize, "over_bytes", res.Over, "removed_up_to", TimeOf(res.Before))
	case res.Over <= 0 && r.shrinking:
		r.shrinking = false
		r.o.Logger.Info("history: the store is within History:MaxSize again", "max_bytes", r.o.MaxSize)
	}
}

// trim removes, for at most TrimTags tags from `from` on (in name order),
// the samples older than their retention; it returns where the next turn
// starts.
func (r *Recorder) trim(ctx context.Context, from string) string {
	r.mu.Lock()
	pol := r.pol
	r.mu.Unlock()
	tags := r.s.Tags()
	now := r.o.Now()
	n := 0
	for _, tag := range tags {
		if tag < from {
			continue
		}
		if n == r.o.TrimTags || ctx.Err() != nil {
			return tag
		}
		n++
		retention := deployment.DefaultHistoryRetention
		dev, name := splitTag(tag)
		if p, ok := pol[dev][name]; ok && p.Retention > 0 {
			retention = p.Retention
		}
		if err := r.s.Trim(tag, Ticks(now.Add(-retention))); err != nil {
			r.o.Logger.Error("history: retention not enforced", "tag", tag, "err", err)
		}
	}
	return ""
}

func splitTag(key string) (string, string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}

// number is a reading's value as a float64 (a bool as 0 or 1).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int16:
		return float64(x), true
	case uint16:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// uaEpochTicks is 1970-01-01 in OPC UA ticks (100 ns since 1601-01-01).
const uaEpochTicks = 116444736000000000

// uaEpochSeconds is 1970-01-01 in seconds since 1601-01-01.
const uaEpochSeconds = uaEpochTicks / 10_000_000

// Ticks is t as OPC UA DateTime ticks; every time from 1601 to 9999 (the
// range of an OPC UA DateTime) converts exactly to 100 ns.
func Ticks(t time.Time) int64 {
	return (t.Unix()+uaEpochSeconds)*10_000_000 + int64(t.Nanosecond()/100)
}

// TimeOf is the time of OPC UA ticks.
func TimeOf(ticks int64) time.Time {
	sec, rest := ticks/10_000_000, ticks%10_000_000
	if rest < 0 {
		sec, rest = sec-1, rest+10_000_000
	}
	return time.Unix(sec-uaEpochSeconds, rest*100).UTC()
}
