package subscription

import (
	"context"
	"time"

	"github.com/gopcua/opcua/ua"
)

// itemParams are the validated, revised parameters of a monitored item.
type itemParams struct {
	handle        uint32
	interval      time.Duration
	queueSize     uint32
	discardOldest bool
	filter        dataFilter
	// filterResult is the FilterResult to answer (an EventFilterResult
	// saying what is wrong with an event filter); nil: a null one.
	filterResult *ua.ExtensionObject
}

// eventParams are the revised parameters of an event item and its parsed
// filter (nil unless the status is Good).
type eventParams struct {
	p      itemParams
	filter *eventFilter
	status ua.StatusCode
}

// reviseEventParams validates and revises MonitoringParameters for an event
// item. The filter must be an EventFilter (Part 4 §7.22.3); without one
// the item fails with BadEventFilterInvalid, as an event item without
// select clauses could report nothing. Without an EventSource event items
// are not supported. No engine lock may be held: the EventSource is asked.
func (e *Engine) reviseEventParams(p *ua.MonitoringParameters) eventParams {
	if p == nil {
		return eventParams{status: ua.StatusBadInvalidArgument}
	}
	if e.events == nil {
		return eventParams{status: ua.StatusBadMonitoredItemFilterUnsupported}
	}
	ef, ok := asEventFilter(p.Filter)
	switch {
	case !ok && isDataFilter(p.Filter):
		return eventParams{status: ua.StatusBadFilterNotAllowed}
	case !ok:
		return eventParams{status: ua.StatusBadMonitoredItemFilterInvalid}
	case ef == nil:
		return eventParams{status: ua.StatusBadEventFilterInvalid}
	}
	f, res, st := parseEventFilter(ef, e.events)
	if st != ua.StatusGood {
		return eventParams{p: itemParams{filterResult: ua.NewExtensionObject(res)}, status: st}
	}
	return eventParams{
		p: itemParams{
			handle:        p.ClientHandle,
			queueSize:     e.lim.reviseEventQueueSize(p.QueueSize),
			discardOldest: p.DiscardOldest,
			filter:        defaultFilter,
		},
		filter: f,
		status: ua.StatusGood,
	}
}

// isDataFilter reports whether eo holds a DataChangeFilter or an
// AggregateFilter: filters of data items.
func isDataFilter(eo *ua.ExtensionObject) bool {
	switch eo.Value.(type) {
	case *ua.DataChangeFilter, ua.DataChangeFilter, *ua.AggregateFilter, ua.AggregateFilter:
		return true
	}
	return false
}

// reviseParams validates and revises MonitoringParameters for an item on
// attr in a subscription publishing every publishing.
func (e *Engine) reviseParams(p *ua.MonitoringParameters, attr ua.AttributeID, publishing time.Duration) (itemParams, ua.StatusCode) {
	if p == nil {
		return itemParams{}, ua.StatusBadInvalidArgument
	}
	f, st := parseFilter(p.Filter, attr)
	if st != ua.StatusGood {
		return itemParams{}, st
	}
	polled := attr != ua.AttributeIDValue
	return itemParams{
		handle:        p.ClientHandle,
		interval:      e.lim.reviseSamplingInterval(p.SamplingInterval, publishing, polled),
		queueSize:     e.lim.reviseQueueSize(p.QueueSize),
		discardOldest: p.DiscardOldest,
		filter:        f,
	}, ua.StatusGood
}

func (p itemParams) filterResultOrNull() *ua.ExtensionObject {
	if p.filterResult == nil {
		return ua.NewExtensionObject(nil)
	}
	return p.filterResult
}

func (p itemParams) result(st ua.StatusCode) (float64, uint32) {
	if st != ua.StatusGood {
		return 0, 0
	}
	return durationToMS(p.interval), p.queueSize
}

// validRead checks the ReadValueID of a new item. Index ranges are not
// supported; data encodings other than the default binary one are refused.
func validRead(rv *ua.ReadValueID) ua.StatusCode {
	switch {
	case rv == nil || rv.NodeID == nil:
		return ua.StatusBadNodeIDInvalid
	case rv.AttributeID == ua.AttributeIDInvalid || rv.AttributeID > ua.AttributeIDAccessLevelEx:
		return ua.StatusBadAttributeIDInvalid
	case rv.IndexRange != "":
		return ua.StatusBadIndexRangeInvalid
	case rv.DataEncoding != nil && rv.DataEncoding.Name != "" && rv.DataEncoding.Name != "Default Binary":
		if rv.AttributeID != ua.AttributeIDValue {
			return ua.StatusBadDataEncodingInvalid
		}
		return ua.StatusBadDataEncodingUnsupported
	}
	return ua.StatusGood
}

// CreateMonitoredItems creates items in a subscription of sess (Part 4
// §5.12.2). The Value attribute is watched through Source.Watch; any other
// attribute is sampled by Source.Read at the item's sampling interval. The
// current value is queued at once for items created Sampling or Reporting.
// Items beyond MaxMonitoredItemsPerSubscription or MaxMonitoredItems get
// BadTooManyMonitoredItems.
//
// The Source is called with no engine lock held, so publishing and other
// sessions' requests go on while a large request is served. Should the
// subscription be deleted or transferred meanwhile, the new registrations
// are cancelled and the call fails with BadSubscriptionIdInvalid.
func (e *Engine) CreateMonitoredItems(sess SessionID, req *ua.CreateMonitoredItemsRequest) (*ua.CreateMonitoredItemsResponse, error) {
	return e.CreateMonitoredItemsContext(context.Background(), sess, req)
}

// cancelCheckEvery is how many items CreateMonitoredItemsContext creates
// between two looks at its context.
const cancelCheckEvery = 256

// CreateMonitoredItemsContext is CreateMonitoredItems for a caller that may
// give up: once ctx is done (the request's secure channel closed) it stops,
// cancels what it registered and returns BadRequestCancelledByClient, so a
// huge request of a client that went away does not keep the server busy.
func (e *Engine) CreateMonitoredItemsContext(ctx context.Context, sess SessionID, req *ua.CreateMonitoredItemsRequest) (*ua.CreateMonitoredItemsResponse, error) {
	return e.createItems(ctx, sess, req, nil, 0)
}

// createItems is CreateMonitoredItems; ids, when not nil, are the ids of
// the items to create, parallel to req.ItemsToCreate (a replica's items
// keep the serving member's ids), and minQueue their queue bound.
func (e *Engine) createItems(ctx context.Context, sess SessionID, req *ua.CreateMonitoredItemsRequest, ids []uint32, minQueue int) (*ua.CreateMonitoredItemsResponse, error) {
	if req == nil || len(req.ItemsToCreate) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	if req.TimestampsToReturn > ua.TimestampsToReturnNeither {
		return nil, ua.StatusBadTimestampsToReturnInvalid
	}
	now := e.clock.Now()
	s, publishing, room, err := e.itemTarget(sess, req.SubscriptionID, len(req.ItemsToCreate))
	if err != nil {
		return nil, err
	}
	defer e.unreserve(s, room)

	results := make([]*ua.MonitoredItemCreateResult, len(req.ItemsToCreate))
	created := make([]*item, 0, min(len(req.ItemsToCreate), room.n))
	left := room.n
	for i, r := range req.ItemsToCreate {
		if i%cancelCheckEvery == 0 && ctx.Err() != nil {
			e.retire(retired{items: created})
			return nil, ua.StatusBadRequestCancelledByClient
		}
		if left == 0 {
			results[i] = &ua.MonitoredItemCreateResult{StatusCode: ua.StatusBadTooManyMonitoredItems}
			room.refuse(&e.counts)
			continue
		}
		it, st, p := e.newItem(s, r, req.TimestampsToReturn, publishing, now)
		if it != nil && ids != nil {
			it.id, it.minQueue = ids[i], minQueue
		}
		res := &ua.MonitoredItemCreateResult{StatusCode: st, FilterResult: p.filterResultOrNull()}
		res.RevisedSamplingInterval, res.RevisedQueueSize = p.result(st)
		if it != nil {
			created = append(created, it)
			left--
		}
		results[i] = res
	}
	if err := e.insertItems(sess, s, created, now); err != nil {
		return nil, err
	}
	for i, j := 0, 0; i < len(results); i++ {
		if results[i].StatusCode == ua.StatusGood {
			results[i].MonitoredItemID = created[j].id
			j++
		}
	}
	return &ua.CreateMonitoredItemsResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}

// itemRoom is how many items one CreateMonitoredItems call may create, set
// aside (reserved) against the subscription's and the engine's limits until
// the call ends, so that concurrent calls cannot exceed them together.
type itemRoom struct {
	n         int
	bySubOnly bool // the subscription's limit, not the engine's, set n
}

func (r itemRoom) refuse(c *counters) {
	if r.bySubOnly {
		c.itemsPerSub.Add(1)
	} else {
		c.items.Add(1)
	}
}

// itemTarget returns the subscription items are created in, its publishing
// interval and the room reserved for up to want new items.
func (e *Engine) itemTarget(sess SessionID, id uint32, want int) (s *subscription, publishing time.Duration, room itemRoom, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, 0, room, ua.StatusBadShutdown
	}
	s = e.ownedLocked(e.sessions[sess], id)
	if s == nil {
		return nil, 0, room, ua.StatusBadSubscriptionIDInvalid
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bySub := max(min(e.opts.MaxMonitoredItemsPerSubscription, e.opts.MaxMonitoredItems)-len(s.items)-s.reserved, 0)
	byEngine := max(e.opts.MaxMonitoredItems-e.items-e.reserved, 0)
	room = itemRoom{n: min(want, bySub, byEngine), bySubOnly: bySub < byEngine}
	s.reserved += room.n
	e.reserved += room.n
	s.touch(e.clock.Now())
	return s, s.interval, room, nil
}

// unreserve returns the room itemTarget set aside. The call's end is
// client activity: a large call does not leave a subscription that expires
// the moment it returns.
func (e *Engine) unreserve(s *subscription, room itemRoom) {
	e.mu.Lock()
	s.mu.Lock()
	s.reserved -= room.n
	e.reserved -= room.n
	s.touch(e.clock.Now())
	s.mu.Unlock()
	e.mu.Unlock()
}

// insertItems assigns ids to the new items and adds them to s, unless s was
// deleted or changed hands since itemTarget: then their Source
// registrations are cancelled.
func (e *Engine) insertItems(sess SessionID, s *subscription, created []*item, now time.Time) error {
	e.mu.Lock()
	if e.closed || e.ownedLocked(e.sessions[sess], s.id) != s {
		e.mu.Unlock()
		e.retire(retired{items: created})
		return ua.StatusBadSubscriptionIDInvalid
	}
	var dup []*item
	defer func() {
		if len(dup) > 0 {
			e.retire(retired{items: dup})
		}
	}()
	defer e.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	e.items += len(created)
	s.byHandle = nil
	for _, it := range created {
		if it.id != 0 && s.items[it.id] != nil && s.replica {
			dup = append(dup, it) // a replica learnt of it twice (a snapshot and the live record)
			e.items--
			continue
		}
		if it.id == 0 || s.items[it.id] != nil {
			it.id = e.newItemIDLocked(s)
		}
		s.items[it.id] = it
		if it.polled {
			s.polled[it.id] = it
		}
		it.mu.Lock()
		d := it.interval
		it.mu.Unlock()
		s.addInterval(d, now)
	}
	e.sched.at(s, s.nextDeadline())
	return nil
}

// newItem validates r, registers the item with the Source and queues its
// initial value. No engine lock may be held: the Source is called.
func (e *Engine) newItem(s *subscription, r *ua.MonitoredItemCreateRequest, ttr ua.TimestampsToReturn, publishing time.Duration, now time.Time) (*item, ua.StatusCode, itemParams) {
	if r == nil {
		return nil, ua.StatusBadInvalidArgument, itemParams{}
	}
	if st := validRead(r.ItemToMonitor); st != ua.StatusGood {
		return nil, st, itemParams{}
	}
	if r.MonitoringMode > ua.MonitoringModeReporting {
		return nil, ua.StatusBadMonitoringModeInvalid, itemParams{}
	}
	rv := r.ItemToMonitor
	if rv.AttributeID == ua.AttributeIDEventNotifier {
		return e.newEventItem(s, r)
	}
	p, st := e.reviseParams(r.RequestedParameters, rv.AttributeID, publishing)
	if st != ua.StatusGood {
		return nil, st, itemParams{}
	}
	it := &item{
		sub:           s,
		node:          rv.NodeID,
		attr:          rv.AttributeID,
		polled:        rv.AttributeID != ua.AttributeIDValue,
		handle:        p.handle,
		mode:          r.MonitoringMode,
		interval:      p.interval,
		queueSize:     int(p.queueSize),
		discardOldest: p.discardOldest,
		ttr:           ttr,
		filter:        p.filter,
		nextSample:    now,
	}
	if !it.polled {
		cancel, st := e.src.Watch(it.node, it.onChange)
		if st != ua.StatusGood {
			if cancel != nil {
				cancel()
			}
			return nil, st, itemParams{}
		}
		it.cancel = cancel
	}
	dv := e.src.Read(it.node, it.attr)
	if dv == nil {
		dv = &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadNodeIDUnknown}
	}
	if it.polled && (dv.Status == ua.StatusBadNodeIDUnknown || dv.Status == ua.StatusBadAttributeIDInvalid) {
		return nil, dv.Status, itemParams{}
	}
	if p.filter.deadband > 0 && dv.Value != nil && !isNumeric(dv.Value.Value()) {
		if it.cancel != nil {
			it.cancel()
		}
		return nil, ua.StatusBadFilterNotAllowed, itemParams{}
	}
	it.mu.Lock()
	// A change that arrived since Watch is newer than dv.
	switch {
	case it.mode == ua.MonitoringModeDisabled || it.last != nil:
	case s.replica:
		// The serving member sends the initial value; a replica queues
		// only what changes from now on.
		it.last = dv
	default:
		it.forceLocked(dv)
	}
	if it.polled {
		it.nextSample = now.Add(it.interval)
	}
	it.mu.Unlock()
	return it, ua.StatusGood, p
}

// newEventItem validates an event item (the EventNotifier attribute) and
// registers it with the EventSource. Its sampling interval is 0: events are
// queued as they are raised. Nothing is queued at creation. No engine lock
// may be held.
func (e *Engine) newEventItem(s *subscription, r *ua.MonitoredItemCreateRequest) (*item, ua.StatusCode, itemParams) {
	ep := e.reviseEventParams(r.RequestedParameters)
	if ep.status != ua.StatusGood {
		return nil, ep.status, ep.p
	}
	rv := r.ItemToMonitor
	it := &item{
		sub:           s,
		node:          rv.NodeID,
		attr:          rv.AttributeID,
		ev:            &eventState{},
		handle:        ep.p.handle,
		mode:          r.MonitoringMode,
		queueSize:     int(ep.p.queueSize),
		discardOldest: ep.p.discardOldest,
		filter:        defaultFilter,
	}
	it.ev.filter.Store(ep.filter)
	cancel, st := e.events.WatchEvents(it.node, it.onEvent)
	if st != ua.StatusGood {
		if cancel != nil {
			cancel()
		}
		return nil, st, itemParams{}
	}
	it.cancel = cancel
	return it, ua.StatusGood, ep.p
}

// newItemIDLocked returns the next monitored item id. The counter is shared
// by all subscriptions and grows monotonically; after a wrap-around, ids in
// use in s are skipped. e.mu and s.mu must be held.
func (e *Engine) newItemIDLocked(s *subscription) uint32 {
	for {
		id := e.nextItemID
		e.nextItemID++
		if _, used := s.items[id]; id != 0 && !used {
			return id
		}
	}
}

// ModifyMonitoredItems revises items of a subscription of sess (Part 4
// §5.12.3). A reduced queue keeps the values its discard policy keeps.
func (e *Engine) ModifyMonitoredItems(sess SessionID, req *ua.ModifyMonitoredItemsRequest) (*ua.ModifyMonitoredItemsResponse, error) {
	if req == nil || len(req.ItemsToModify) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	if req.TimestampsToReturn > ua.TimestampsToReturnNeither {
		return nil, ua.StatusBadTimestampsToReturnInvalid
	}
	now := e.clock.Now()
	// Event filters are parsed before the locks are taken: parsing asks
	// the EventSource.
	evp := make([]*eventParams, len(req.ItemsToModify))
	for i, r := range req.ItemsToModify {
		if r == nil || r.RequestedParameters == nil {
			continue
		}
		if ef, ok := asEventFilter(r.RequestedParameters.Filter); ok && ef != nil {
			ep := e.reviseEventParams(r.RequestedParameters)
			evp[i] = &ep
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	s := e.ownedLocked(e.sessions[sess], req.SubscriptionID)
	if s == nil {
		return nil, ua.StatusBadSubscriptionIDInvalid
	}
	s.mu.Lock()
	results := make([]*ua.MonitoredItemModifyResult, len(req.ItemsToModify))
	for i, r := range req.ItemsToModify {
		results[i] = e.modifyItemLocked(s, r, req.TimestampsToReturn, now, evp[i])
	}
	s.touch(now)
	next := s.nextDeadline()
	s.mu.Unlock()
	e.sched.at(s, next)
	return &ua.ModifyMonitoredItemsResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}

// modifyItemLocked applies one modification; ep is the parsed event filter
// of the request, nil when it has none. s.mu must be held.
func (e *Engine) modifyItemLocked(s *subscription, r *ua.MonitoredItemModifyRequest, ttr ua.TimestampsToReturn, now time.Time, ep *eventParams) *ua.MonitoredItemModifyResult {
	if r == nil {
		return &ua.MonitoredItemModifyResult{StatusCode: ua.StatusBadInvalidArgument}
	}
	it := s.items[r.MonitoredItemID]
	if it == nil {
		return &ua.MonitoredItemModifyResult{StatusCode: ua.StatusBadMonitoredItemIDInvalid}
	}
	if it.isEvent() {
		return modifyEventItemLocked(it, r, ep, now)
	}
	p, st := e.reviseParams(r.RequestedParameters, it.attr, s.interval)
	if st != ua.StatusGood {
		return &ua.MonitoredItemModifyResult{StatusCode: st}
	}
	s.byHandle = nil
	it.mu.Lock()
	old := it.interval
	it.handle = p.handle
	it.interval = p.interval
	it.queueSize = int(p.queueSize)
	it.discardOldest = p.discardOldest
	it.filter = p.filter
	it.ttr = ttr
	it.queue.shrink(it.qsize(), it.discardOldest)
	if p.interval == 0 && it.latest != nil {
		// Switched to exception based: the unsampled change is queued now.
		it.offerLocked(it.latest)
		it.latest = nil
	}
	it.mu.Unlock()
	if old != p.interval {
		s.dropInterval(old)
		s.addInterval(p.interval, now)
	}
	rev, qs := p.result(ua.StatusGood)
	return &ua.MonitoredItemModifyResult{
		StatusCode:              ua.StatusGood,
		RevisedSamplingInterval: rev,
		RevisedQueueSize:        qs,
		FilterResult:            ua.NewExtensionObject(nil),
	}
}

// modifyEventItemLocked applies one modification to an event item: a new
// filter (required, as at creation), handle, queue size and discard
// policy. A reduced queue drops events by the new policy. The item's
// subscription's mu must be held.
func modifyEventItemLocked(it *item, r *ua.MonitoredItemModifyRequest, ep *eventParams, now time.Time) *ua.MonitoredItemModifyResult {
	switch {
	case r.RequestedParameters == nil:
		return &ua.MonitoredItemModifyResult{StatusCode: ua.StatusBadInvalidArgument}
	case ep == nil:
		st := ua.StatusBadEventFilterInvalid
		if _, ok := asEventFilter(r.RequestedParameters.Filter); !ok {
			st = ua.StatusBadFilterNotAllowed
			if !isDataFilter(r.RequestedParameters.Filter) {
				st = ua.StatusBadMonitoredItemFilterInvalid
			}
		}
		return &ua.MonitoredItemModifyResult{StatusCode: st}
	case ep.status != ua.StatusGood:
		return &ua.MonitoredItemModifyResult{StatusCode: ep.status, FilterResult: ep.p.filterResultOrNull()}
	}
	it.ev.filter.Store(ep.filter)
	it.mu.Lock()
	it.handle = ep.p.handle
	it.queueSize = int(ep.p.queueSize)
	it.discardOldest = ep.p.discardOldest
	it.ev.queue.shrink(it.queueSize, it.discardOldest, it.overflowEntry(now))
	it.mu.Unlock()
	return &ua.MonitoredItemModifyResult{
		StatusCode:       ua.StatusGood,
		RevisedQueueSize: ep.p.queueSize,
		FilterResult:     ua.NewExtensionObject(nil),
	}
}

// SetMonitoringMode changes the mode of items of a subscription of sess
// (Part 4 §5.12.4). Disabled drops queued values; leaving Disabled samples
// the current value again.
func (e *Engine) SetMonitoringMode(sess SessionID, req *ua.SetMonitoringModeRequest) (*ua.SetMonitoringModeResponse, error) {
	if req == nil || len(req.MonitoredItemIDs) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	if req.MonitoringMode > ua.MonitoringModeReporting {
		return nil, ua.StatusBadMonitoringModeInvalid
	}
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	s := e.ownedLocked(e.sessions[sess], req.SubscriptionID)
	if s == nil {
		return nil, ua.StatusBadSubscriptionIDInvalid
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	results := make([]ua.StatusCode, len(req.MonitoredItemIDs))
	for i, id := range req.MonitoredItemIDs {
		it := s.items[id]
		if it == nil {
			results[i] = ua.StatusBadMonitoredItemIDInvalid
			continue
		}
		e.setModeLocked(it, req.MonitoringMode, now)
	}
	s.touch(now)
	return &ua.SetMonitoringModeResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}

// setModeLocked switches it to mode. it.sub.mu must be held.
func (e *Engine) setModeLocked(it *item, mode ua.MonitoringMode, now time.Time) {
	it.mu.Lock()
	old := it.mode
	it.mode = mode
	if mode == ua.MonitoringModeDisabled {
		it.disableLocked()
	}
	if old != ua.MonitoringModeDisabled || mode == ua.MonitoringModeDisabled {
		// Sampling → Reporting reports what the queue holds.
		it.markReportLocked()
		it.mu.Unlock()
		return
	}
	it.mu.Unlock()
	if it.isEvent() {
		return // events are queued as they are raised; there is nothing to sample
	}
	// Leaving Disabled: sample the current value. The Source is not
	// called with the item's mu held.
	dv := e.src.Read(it.node, it.attr)
	it.mu.Lock()
	if dv != nil && it.mode == mode && it.last == nil {
		it.forceLocked(dv)
	}
	it.nextSample = now.Add(it.interval)
	it.mu.Unlock()
}

// SetTriggering adds and removes triggering links of an item (Part 4
// §5.12.5): when the triggering item queues a new value, the queued values
// of its linked items in Sampling mode are reported with the next message.
// Removals are processed before additions.
func (e *Engine) SetTriggering(sess SessionID, req *ua.SetTriggeringRequest) (*ua.SetTriggeringResponse, error) {
	if req == nil || len(req.LinksToAdd) == 0 && len(req.LinksToRemove) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	s := e.ownedLocked(e.sessions[sess], req.SubscriptionID)
	if s == nil {
		return nil, ua.StatusBadSubscriptionIDInvalid
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	trig := s.items[req.TriggeringItemID]
	if trig == nil {
		return nil, ua.StatusBadMonitoredItemIDInvalid
	}
	removed := make([]ua.StatusCode, len(req.LinksToRemove))
	for i, id := range req.LinksToRemove {
		l := trig.links[id]
		if l == nil {
			removed[i] = ua.StatusBadMonitoredItemIDInvalid
			continue
		}
		unlinkLocked(trig, l)
	}
	added := make([]ua.StatusCode, len(req.LinksToAdd))
	for i, id := range req.LinksToAdd {
		l := s.items[id]
		if l == nil {
			added[i] = ua.StatusBadMonitoredItemIDInvalid
			continue
		}
		linkLocked(trig, l)
	}
	s.touch(now)
	return &ua.SetTriggeringResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		AddResults:     added,
		RemoveResults:  removed,
	}, nil
}

// linkLocked and unlinkLocked maintain both directions of a triggering link
// and the triggering item's flag. The subscription's mu must be held.
func linkLocked(trig, l *item) {
	if trig.links == nil {
		trig.links = make(map[uint32]*item)
	}
	if l.linkedFrom == nil {
		l.linkedFrom = make(map[uint32]*item)
	}
	trig.links[l.id] = l
	l.linkedFrom[trig.id] = trig
	setTriggers(trig)
}

func unlinkLocked(trig, l *item) {
	delete(trig.links, l.id)
	delete(l.linkedFrom, trig.id)
	setTriggers(trig)
}

func setTriggers(trig *item) {
	trig.mu.Lock()
	trig.triggers = len(trig.links) > 0
	trig.mu.Unlock()
}

// DeleteMonitoredItems deletes items of a subscription of sess (Part 4
// §5.12.6) and their triggering links.
func (e *Engine) DeleteMonitoredItems(sess SessionID, req *ua.DeleteMonitoredItemsRequest) (*ua.DeleteMonitoredItemsResponse, error) {
	if req == nil || len(req.MonitoredItemIDs) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	now := e.clock.Now()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ua.StatusBadShutdown
	}
	s := e.ownedLocked(e.sessions[sess], req.SubscriptionID)
	if s == nil {
		e.mu.Unlock()
		return nil, ua.StatusBadSubscriptionIDInvalid
	}
	s.mu.Lock()
	s.byHandle = nil
	results := make([]ua.StatusCode, len(req.MonitoredItemIDs))
	var r retired
	for i, id := range req.MonitoredItemIDs {
		it := s.items[id]
		if it == nil {
			results[i] = ua.StatusBadMonitoredItemIDInvalid
			continue
		}
		for _, l := range it.links {
			unlinkLocked(it, l)
		}
		for _, t := range it.linkedFrom {
			unlinkLocked(t, it)
		}
		delete(s.items, id)
		delete(s.polled, id)
		e.items--
		it.mu.Lock()
		it.deleted = true
		d := it.interval
		it.mu.Unlock()
		s.dropInterval(d)
		r.items = append(r.items, it)
	}
	s.touch(now)
	s.mu.Unlock()
	e.mu.Unlock()
	e.retire(r)
	return &ua.DeleteMonitoredItemsResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}
