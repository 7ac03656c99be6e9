package historian

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/localdb"
)

// maxBatchesPerTick bounds one drain tick: after an outage a backlog is
// delivered BatchSize × maxBatchesPerTick rows per DrainEvery (4,096 per
// 500 ms with the defaults), and the gate and Stop are looked at between
// batches.
const maxBatchesPerTick = 16

// trimPagesPerTick bounds one trim: BatchSize × trimPagesPerTick rows are
// looked up per TrimEvery (10,240 per 10 s with the defaults); the next
// trim goes on from where this one stopped, and starts over at the end.
const trimPagesPerTick = 40

// tick is one turn of the drain goroutine.
func (h *Historian) tick(ctx context.Context) {
	ok, reason, epoch := h.opts.Gate()
	now := h.opts.Clock.Now()
	if ok && epoch != 0 && epoch < h.fenced {
		// The Config DB refused this epoch: a newer Primary drains. Queue
		// and trim like a Secondary until the gate names a newer epoch.
		ok, reason = false, fmt.Sprintf("stale epoch %d: the Config DB holds epoch %d", epoch, h.fenced)
		if h.opts.OnNewerEpoch != nil {
			// Told again every tick: the Primary takes a new epoch once
			// no other can rival it, which may be long after the refusal.
			h.opts.OnNewerEpoch(h.fenced)
		}
	}
	h.epoch = epoch
	if !ok {
		h.primary = false
		h.notPrimary(ctx, now, reason)
		return
	}
	if !h.primary { // just became Primary (or started as it): drain at once
		h.primary, h.failures, h.retryAt = true, 0, time.Time{}
		h.log.Info("historian: this node is Primary: draining the queue into alarm_history")
	}
	if now.Before(h.retryAt) {
		return // backing off after a failure
	}
	h.drain(ctx, now)
}

// notPrimary records the gate's denial and trims every TrimEvery.
func (h *Historian) notPrimary(ctx context.Context, now time.Time, reason string) {
	h.mu.Lock()
	was := h.st.State
	h.st.State, h.st.GateReason = StateNotPrimary, reason
	h.mu.Unlock()
	if was != StateNotPrimary {
		h.log.Info("historian: not Primary: queueing only, the Primary drains", "reason", reason)
	}
	if now.Before(h.nextTrim) {
		return
	}
	h.nextTrim = now.Add(h.opts.TrimEvery)
	removed, err := h.trim(ctx)
	if err != nil {
		h.setError(fmt.Errorf("trim: %w", err))
		h.log.Debug("historian: trim failed; the next one retries", "err", err)
	} else {
		h.mu.Lock()
		h.st.LastError = ""
		h.mu.Unlock()
	}
	if removed > 0 {
		h.log.Debug("historian: trimmed rows alarm_history already holds", "rows", removed)
	}
	h.refreshStats(ctx)
}

// batchResult is what one drain batch did.
type batchResult struct {
	peeked    int   // rows read from the queue
	last      int64 // the Seq of the last of them
	delivered int   // rows alarm_history now holds and the queue no longer does
	err       error // nil, or why the batch stopped
	state     string
	stale     bool // the Config DB refused the drain's epoch: stop
}

// drain delivers up to maxBatchesPerTick batches.
func (h *Historian) drain(ctx context.Context, now time.Time) {
	delivered := 0
	var res batchResult
	var after int64 // the batches of one tick page on, past a row just refused
	for b := 0; b < maxBatchesPerTick; b++ {
		if b > 0 {
			if ok, _, epoch := h.opts.Gate(); !ok || epoch != h.epoch || ctx.Err() != nil {
				break
			}
		}
		res = h.drainBatch(ctx, after)
		delivered += res.delivered
		after = res.last
		if res.err != nil || res.stale || res.peeked < h.opts.BatchSize {
			break
		}
	}
	if res.err != nil && ctx.Err() != nil {
		return // stopping: not a failure of the databases
	}
	if res.err != nil {
		h.failed(now, res.state, res.err)
	} else {
		h.recovered()
	}
	h.mu.Lock()
	h.st.Drained += uint64(delivered)
	if delivered > 0 {
		h.st.LastDrain, h.st.LastDrainRows = now.UTC(), delivered
	}
	h.mu.Unlock()
	if res.state != StateLocalDbError { // its error says more than the stats' would
		h.refreshStats(ctx)
	}
	if res.err == nil {
		h.mu.Lock()
		h.st.State, h.st.GateReason = StateDraining, ""
		if h.st.QueueDepth == 0 {
			h.st.State = StateIdle
		}
		h.mu.Unlock()
	}
}

// drainBatch delivers the oldest BatchSize waiting rows past Seq after: it
// writes them to alarm_history, deletes from the queue those alarm_history
// now holds, and records a refusal on each row the Config DB refused
// (poisoning it after MaxAttempts refusals; until then the next tick, which
// pages from the start again, retries it).
func (h *Historian) drainBatch(ctx context.Context, after int64) batchResult {
	var res batchResult
	rows, err := call(ctx, h.opts.CallTimeout, func(c context.Context) ([]localdb.QueuedEvent, error) {
		return h.opts.Local.PeekEvents(c, after, h.opts.BatchSize)
	})
	if err != nil {
		return batchResult{err: err, state: StateLocalDbError}
	}
	res.peeked = len(rows)
	if len(rows) == 0 {
		return res
	}
	res.last = rows[len(rows)-1].Seq
	hist := make([]configdb.AlarmHistoryRow, 0, len(rows))
	sent := make([]localdb.QueuedEvent, 0, len(rows)) // sent[i] is hist[i]'s queue row
	for _, q := range rows {
		e, err := decodeQueued(q)
		if err != nil { // no number of attempts will make it deliverable
			if res.err = h.poison(ctx, q, err, true); res.err != nil {
				res.state = StateLocalDbError
				return res
			}
			continue
		}
		hist = append(hist, e.row(q.Payload))
		sent = append(sent, q)
	}
	_, err = call(ctx, h.opts.CallTimeout, func(c context.Context) (int, error) {
		return h.opts.Central.DrainAlarmHistory(c, h.epoch, hist)
	})
	var stale *configdb.StaleEpochError
	if errors.As(err, &stale) {
		h.staleRefused(stale)
		res.stale = true
		return res
	}
	var refused *configdb.RowsRefusedError
	if err != nil && !errors.As(err, &refused) {
		res.err, res.state = err, StateCentralUnreachable
		return res
	}
	rejected := map[int]error{}
	if refused != nil {
		for _, r := range refused.Rows {
			rejected[r.Index] = r.Err
		}
	}
	var done []int64
	for i, q := range sent {
		if rerr, ok := rejected[i]; ok {
			poison := q.Attempts+1 >= h.opts.MaxAttempts
			if res.err = h.poison(ctx, q, rerr, poison); res.err != nil {
				res.state = StateLocalDbError
				return res
			}
			continue
		}
		done = append(done, q.Seq)
	}
	if _, err := call(ctx, h.opts.CallTimeout, func(c context.Context) (int, error) {
		return h.opts.Local.DeleteEvents(c, done)
	}); err != nil {
		// alarm_history holds them: delivering them again stores nothing.
		return batchResult{peeked: res.peeked, last: res.last, err: err, state: StateLocalDbError}
	}
	res.delivered = len(done)
	return res
}

// staleRefused records a drain the Config DB refused for its epoch: the
// rows belong to a replaced Primary and stay queued (not marked, not
// poisoned); the next tick stops draining under this epoch and trims, so
// they leave the queue once the newer Primary, which queued its own copy
// of every transition, has stored them.
func (h *Historian) staleRefused(e *configdb.StaleEpochError) {
	h.fenced = max(h.fenced, e.Newest)
	h.mu.Lock()
	h.st.StaleRefused += uint64(e.Rows)
	h.st.FencedBelow = h.fenced
	h.mu.Unlock()
	h.log.Warn("historian: the Config DB refused the drain: a newer Primary's epoch is stored; the rows stay queued for the trim, this node drains no more under its epoch",
		"epoch", e.Epoch, "newest", e.Newest, "rows", e.Rows)
	if h.opts.OnNewerEpoch != nil {
		h.opts.OnNewerEpoch(e.Newest)
	}
}

// poison records a refused delivery of q (poisoning it when poison is set)
// and logs it.
func (h *Historian) poison(ctx context.Context, q localdb.QueuedEvent, why error, poison bool) error {
	_, err := call(ctx, h.opts.CallTimeout, func(c context.Context) (struct{}, error) {
		return struct{}{}, h.opts.Local.MarkFailed(c, q.Seq, why.Error(), poison)
	})
	if err != nil {
		return err
	}
	attrs := []any{"alarm", q.Alarm, "transition_id", q.TransitionID, "seq", q.Seq, "attempts", q.Attempts + 1, "err", why}
	if poison {
		h.log.Error("historian: alarm event poisoned: the Config DB refuses it; it stays in the LocalDb queue, no longer delivered", attrs...)
	} else {
		h.log.Warn("historian: the Config DB refused an alarm event; it is retried", attrs...)
	}
	return nil
}

// failed records a drain failure and schedules the retry.
func (h *Historian) failed(now time.Time, state string, err error) {
	h.failures++
	delay := retryDelay(h.opts.DrainEvery, h.opts.MaxBackoff, h.failures)
	h.retryAt = now.Add(delay)
	h.mu.Lock()
	was := h.st.State
	h.st.State, h.st.GateReason, h.st.LastError = state, "", err.Error()
	h.mu.Unlock()
	if was != state {
		h.log.Warn("historian: drain failed: the rows stay queued and are retried", "state", state, "retry_in", delay, "err", err)
	} else {
		h.log.Debug("historian: drain failed again", "state", state, "retry_in", delay, "failures", h.failures, "err", err)
	}
}

// recovered ends a run of failures.
func (h *Historian) recovered() {
	if h.failures > 0 {
		h.log.Info("historian: drain works again", "after_failures", h.failures)
	}
	h.failures, h.retryAt = 0, time.Time{}
	h.mu.Lock()
	h.st.LastError = ""
	h.mu.Unlock()
}

// trim deletes the queued rows that alarm_history already holds, looking at
// up to trimPagesPerTick pages from where the last trim stopped.
func (h *Historian) trim(ctx context.Context) (removed int, err error) {
	for range trimPagesPerTick {
		page, err := call(ctx, h.opts.CallTimeout, func(c context.Context) ([]localdb.QueuedEvent, error) {
			return h.opts.Local.EventKeysAfter(c, h.trimAfter, h.opts.BatchSize)
		})
		if err != nil {
			return removed, err
		}
		present, err := h.stored(ctx, page)
		if err != nil {
			return removed, err
		}
		n, err := call(ctx, h.opts.CallTimeout, func(c context.Context) (int, error) {
			return h.opts.Local.DeleteEventsByKey(c, present)
		})
		removed += n
		if err != nil {
			return removed, err
		}
		if len(page) < h.opts.BatchSize { // the end of the queue: start over next time
			h.trimAfter = 0
			return removed, nil
		}
		h.trimAfter = page[len(page)-1].Seq
	}
	return removed, nil
}

// stored returns the keys of page that alarm_history holds.
func (h *Historian) stored(ctx context.Context, page []localdb.QueuedEvent) ([]localdb.EventKey, error) {
	byCluster := map[string][]configdb.AlarmKey{}
	for _, q := range page {
		byCluster[q.ClusterID] = append(byCluster[q.ClusterID], configdb.AlarmKey{Alarm: q.Alarm, TransitionID: q.TransitionID})
	}
	var present []localdb.EventKey
	for cluster, keys := range byCluster {
		found, err := call(ctx, h.opts.CallTimeout, func(c context.Context) (map[configdb.AlarmKey]bool, error) {
			return h.opts.Central.HasAlarmHistory(c, cluster, keys)
		})
		if err != nil {
			return nil, err
		}
		for k := range found {
			present = append(present, localdb.EventKey{ClusterID: cluster, Alarm: k.Alarm, TransitionID: k.TransitionID})
		}
	}
	return present, nil
}

// refreshStats reads the queue's own counts into Status.
func (h *Historian) refreshStats(ctx context.Context) {
	type stats struct {
		depth, poisoned int
		oldest          time.Time
	}
	s, err := call(ctx, h.opts.CallTimeout, func(c context.Context) (stats, error) {
		var s stats
		var err error
		s.depth, s.poisoned, s.oldest, err = h.opts.Local.EventQueueStats(c)
		return s, err
	})
	if err != nil {
		if ctx.Err() == nil {
			h.setError(err)
		}
		return
	}
	h.mu.Lock()
	h.st.QueueDepth, h.st.Poisoned, h.st.Oldest = s.depth, s.poisoned, s.oldest
	h.mu.Unlock()
}

func (h *Historian) setError(err error) {
	h.mu.Lock()
	h.st.LastError = err.Error()
	h.mu.Unlock()
}

// call runs f under a timeout derived from ctx.
func call[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(c)
}

// retryDelay is the wait before the next drain after failures (≥ 1) failed
// drains in a row: every, doubling with each failure, capped at max.
func retryDelay(every, max time.Duration, failures int) time.Duration {
	d := every
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
