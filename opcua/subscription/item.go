package subscription

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// item is one monitored item: a data item (an attribute's value) or an
// event item (the EventNotifier attribute with an EventFilter).
//
// The Source calls onChange (the EventSource onEvent) on the writer's
// goroutine; that path takes only mu and, when the item becomes pending,
// its subscription's pendMu. It never waits for the engine, the
// subscription or a client.
type item struct {
	id     uint32
	sub    *subscription
	node   *ua.NodeID
	attr   ua.AttributeID
	polled bool        // a data item on another attribute than Value: sampled by Source.Read
	ev     *eventState // an event item's state; nil for a data item
	cancel func()      // removes the Source registration; nil when polled

	// links and linkedFrom hold the triggering links (SetTriggering):
	// links are the items this one triggers, linkedFrom the items that
	// trigger this one. subscription.mu must be held.
	links      map[uint32]*item
	linkedFrom map[uint32]*item

	mu sync.Mutex
	// Everything below is guarded by mu.
	handle        uint32
	mode          ua.MonitoringMode
	interval      time.Duration // revised sampling interval; 0 = every change
	queueSize     int
	discardOldest bool
	ttr           ua.TimestampsToReturn
	filter        dataFilter
	triggers      bool // len(links) > 0, readable by the change path

	queue      valueQueue    // data items
	events     eventQueue    // event items
	latest     *ua.DataValue // newest change not yet sampled (interval > 0)
	last       *ua.DataValue // last value that passed the filter
	nextSample time.Time     // earliest sampling tick for latest
	inReport   bool          // in sub.report
	inSample   bool          // in sub.sample
	fresh      bool          // queued a value since the last publish (triggering)
	deleted    bool

	// Mirroring (replica.go). minQueue raises the queue bound of a
	// replica's item above the client's queue size until the values a
	// failover owes the client are sent; cursors are values the serving
	// member reported that this member has not sampled yet: a sample equal
	// to one of them was reported already and is not queued.
	minQueue int
	cursors  []*ua.DataValue
}

// qsize is the queue bound in force. it.mu must be held.
func (it *item) qsize() int { return max(it.queueSize, it.minQueue) }

// onChange is the Watch callback: it runs on the Source writer's goroutine.
func (it *item) onChange(dv *ua.DataValue) {
	if dv == nil {
		return
	}
	it.mu.Lock()
	switch {
	case !it.acceptsLocked():
	case it.interval > 0:
		it.latest = dv
		if !it.inSample {
			it.inSample = true
			it.sub.pushSample(it)
		}
	default:
		it.offerLocked(dv)
	}
	it.mu.Unlock()
}

// eventState is what an event item has beyond a data item.
type eventState struct {
	// filter is read without mu by onEvent and replaced whole by
	// ModifyMonitoredItems.
	filter atomic.Pointer[eventFilter]
	// queue holds the selected fields of queued events; the item's mu
	// must be held.
	queue eventQueue
}

// isEvent reports whether it is an event item.
func (it *item) isEvent() bool { return it.ev != nil }

// onEvent is the WatchEvents callback of an event item: it runs on the
// raiser's goroutine. The where clause and the select clauses are applied
// before mu is taken; they are pure.
func (it *item) onEvent(ev *events.Event) {
	f := it.ev.filter.Load()
	if ev == nil || f == nil || !f.passes(ev) {
		return
	}
	fields := f.fields(ev)
	it.mu.Lock()
	if it.acceptsLocked() {
		it.queueEventLocked(fields, ev.ReceiveTime)
	}
	it.mu.Unlock()
}

// acceptsLocked reports whether it takes new values or events: it is not
// deleted, its subscription not gone, and it is not Disabled. it.mu must
// be held.
func (it *item) acceptsLocked() bool {
	return !it.deleted && !it.sub.gone.Load() && it.mode != ua.MonitoringModeDisabled
}

// queueEventLocked queues one event's fields; an overflow inserts the
// EventQueueOverflowEventType event, stamped at, which passes whatever the
// where clause says: the client must learn that events were lost. it.mu
// must be held.
func (it *item) queueEventLocked(fields []*ua.Variant, at time.Time) {
	it.ev.queue.push(evEntry{fields: fields}, it.queueSize, it.discardOldest, it.overflowEntry(at))
	it.fresh = true
	it.markReportLocked()
}

// overflowEntry returns the maker of the item's overflow event entry.
func (it *item) overflowEntry(at time.Time) func() evEntry {
	return func() evEntry {
		return evEntry{fields: it.ev.filter.Load().fields(events.QueueOverflow(at)), overflow: true}
	}
}

// pending is the number of queued notifications. it.mu must be held.
func (it *item) pending() int {
	if it.ev != nil {
		return it.ev.queue.len()
	}
	return it.queue.len()
}

// offerLocked runs dv through the filter and queues it. it.mu must be held.
func (it *item) offerLocked(dv *ua.DataValue) {
	if it.queueLocked(dv) {
		it.sub.pushReport(it)
	}
}

// queueLocked is offerLocked for a caller that puts many items on the
// report list at once: when it reports true, the item is marked inReport
// and the caller must push it (subscription.pushReports) before the next
// publish takes the list. it.mu must be held.
func (it *item) queueLocked(dv *ua.DataValue) (push bool) {
	if !it.filter.passes(it.last, dv) {
		return false
	}
	it.last = dv
	if len(it.cursors) > 0 && it.reportedLocked(dv) {
		return false
	}
	it.queue.push(dv, it.qsize(), it.discardOldest)
	it.fresh = true
	return it.needsReportLocked()
}

// forceLocked queues dv without filtering (initial values, transfer).
// it.mu must be held.
func (it *item) forceLocked(dv *ua.DataValue) {
	it.last = dv
	it.queue.push(dv, it.qsize(), it.discardOldest)
	it.fresh = true
	it.markReportLocked()
}

// markReportLocked puts the item on its subscription's report list when it
// has something a publish cycle must look at. it.mu must be held.
func (it *item) markReportLocked() {
	if it.needsReportLocked() {
		it.sub.pushReport(it)
	}
}

// needsReportLocked marks the item inReport and reports true when it must
// be put on the report list. it.mu must be held.
func (it *item) needsReportLocked() bool {
	if it.inReport || it.pending() == 0 {
		return false
	}
	if it.mode != ua.MonitoringModeReporting && !it.triggers {
		return false
	}
	it.inReport = true
	return true
}

// sampleLocked moves the pending change into the queue if the item's
// sampling tick has come. It reports whether the item is done with this
// sampling round (false: keep it on the sample list), and, as queueLocked,
// whether the caller must push it on the report list. it.mu must be held.
func (it *item) sampleLocked(tick time.Time) (done, push bool) {
	if it.deleted || it.mode == ua.MonitoringModeDisabled || it.latest == nil {
		it.latest = nil
		it.inSample = false
		return true, false
	}
	if tick.Before(it.nextSample) {
		return false, false
	}
	dv := it.latest
	it.latest = nil
	it.inSample = false
	it.nextSample = tick.Add(it.interval)
	return true, it.queueLocked(dv)
}

// disableLocked stops sampling and drops queued values. it.mu must be held.
func (it *item) disableLocked() {
	it.queue.clear()
	if it.ev != nil {
		it.ev.queue.clear()
	}
	it.latest = nil
	it.last = nil
	it.fresh = false
}

// stamp applies TimestampsToReturn to a queued value. DataValues are shared
// with the Source and other items, so a value that needs a change is copied
// (into *slab when slab is not nil, which saves one allocation per copy);
// one that already has the right fields and mask is returned as is. A
// requested server timestamp the Source did not set is filled with now.
func stamp(dv *ua.DataValue, ttr ua.TimestampsToReturn, now time.Time, slab *[]ua.DataValue) *ua.DataValue {
	wantSrc := ttr == ua.TimestampsToReturnSource || ttr == ua.TimestampsToReturnBoth
	wantSrv := ttr == ua.TimestampsToReturnServer || ttr == ua.TimestampsToReturnBoth
	hasSrc, hasSrv := !dv.SourceTimestamp.IsZero(), !dv.ServerTimestamp.IsZero()
	if hasSrc == (wantSrc && hasSrc) && hasSrv == wantSrv && maskOK(dv) {
		return dv
	}
	var c *ua.DataValue
	if slab == nil {
		c = new(ua.DataValue)
	} else {
		if len(*slab) == 0 {
			// Copies are referenced by sent messages: a slab is replaced
			// once consumed, never reused.
			*slab = make([]ua.DataValue, dataValueSlab)
		}
		c = &(*slab)[0]
		*slab = (*slab)[1:]
	}
	*c = *dv
	if !wantSrc {
		c.SourceTimestamp, c.SourcePicoseconds = time.Time{}, 0
	}
	switch {
	case !wantSrv:
		c.ServerTimestamp, c.ServerPicoseconds = time.Time{}, 0
	case !hasSrv:
		c.ServerTimestamp = now
	}
	c.UpdateMask()
	return c
}

// dataValueSlab is the number of DataValue copies allocated at once.
const dataValueSlab = 256

// maskOK reports whether dv's EncodingMask announces exactly the fields it
// carries (a Good status may be announced or not).
func maskOK(dv *ua.DataValue) bool {
	m := dv.EncodingMask
	return (m&ua.DataValueValue != 0) == (dv.Value != nil) &&
		(dv.Status == 0 || m&ua.DataValueStatusCode != 0) &&
		(m&ua.DataValueSourceTimestamp != 0) == !dv.SourceTimestamp.IsZero() &&
		(m&ua.DataValueServerTimestamp != 0) == !dv.ServerTimestamp.IsZero() &&
		(m&ua.DataValueSourcePicoseconds != 0) == (dv.SourcePicoseconds != 0) &&
		(m&ua.DataValueServerPicoseconds != 0) == (dv.ServerPicoseconds != 0)
}
