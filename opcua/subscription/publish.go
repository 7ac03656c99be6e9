package subscription

import (
	"time"

	"github.com/gopcua/opcua/ua"
)

// Publish queues a Publish request. The engine answers it later through out
// from its own goroutines: with a NotificationMessage or keep-alive when a
// subscription of the session has one ready, with a StatusChangeNotification
// owed to the session, or with a ServiceFault (BadNoSubscription,
// BadTooManyPublishRequests). Publish itself never calls out. The
// acknowledgements are processed at once; their results travel in the
// response that finally answers this request.
func (e *Engine) Publish(sess SessionID, out Sender, reqID uint32, req *ua.PublishRequest) {
	if req == nil {
		return
	}
	now := e.clock.Now()
	handle := requestHandle(req.RequestHeader)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	ss := e.sessionLocked(sess)
	var results []ua.StatusCode
	if len(req.SubscriptionAcknowledgements) > 0 {
		results = make([]ua.StatusCode, len(req.SubscriptionAcknowledgements))
		for i, a := range req.SubscriptionAcknowledgements {
			results[i] = ua.StatusBadSubscriptionIDInvalid
			if a == nil {
				continue
			}
			if s := e.ownedLocked(ss, a.SubscriptionID); s != nil {
				results[i] = s.ack(a.SequenceNumber)
			}
		}
	}
	pr := &publishReq{out: out, reqID: reqID, handle: handle, results: results}

	ss.mu.Lock()
	ss.lastPublish = now
	switch {
	case len(ss.status) > 0:
		e.answerStatusLocked(ss, pr)
	case len(ss.subs) == 0:
		e.deliverLocked(ss, out, reqID, e.fault(handle, ua.StatusBadNoSubscription))
	default:
		ss.requests = append(ss.requests, pr)
		if len(ss.requests) > e.opts.MaxPublishRequestsPerSession {
			old := ss.requests[0]
			ss.requests[0] = nil
			ss.requests = ss.requests[1:]
			e.deliverLocked(ss, old.out, old.reqID, e.fault(old.handle, ua.StatusBadTooManyPublishRequests))
		}
	}
	ss.mu.Unlock()

	var late []*subscription
	for _, s := range ss.subs {
		if s.late.Load() {
			late = append(late, s)
		}
	}
	if len(late) > 0 {
		e.sched.atAll(now, late...)
	}
}

// answerStatusLocked answers pr with the oldest StatusChangeNotification
// owed to ss. ss.mu must be held and ss.status non-empty.
func (e *Engine) answerStatusLocked(ss *session, pr *publishReq) {
	st := ss.status[0]
	ss.status = ss.status[1:]
	msg := &ua.NotificationMessage{
		SequenceNumber: st.seq,
		PublishTime:    e.clock.Now(),
		NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.StatusChangeNotification{
			Status:         st.status,
			DiagnosticInfo: &ua.DiagnosticInfo{},
		})},
	}
	e.deliverLocked(ss, pr.out, pr.reqID, &ua.PublishResponse{
		ResponseHeader:      e.header(pr.handle, ua.StatusGood),
		SubscriptionID:      st.subID,
		NotificationMessage: msg,
		Results:             pr.results,
	})
}

// oweStatusLocked hands a StatusChangeNotification to ss: to a queued
// Publish request at once, or to the next one. When ss has no subscription
// left, its other queued requests are answered BadNoSubscription (Part 4
// §5.13.5). e.mu must be held.
func (e *Engine) oweStatusLocked(ss *session, st statusMsg) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return
	}
	ss.status = append(ss.status, st)
	for len(ss.requests) > 0 && len(ss.status) > 0 {
		pr := ss.requests[0]
		ss.requests = ss.requests[1:]
		e.answerStatusLocked(ss, pr)
	}
	if len(ss.subs) == 0 {
		e.failRequestsLocked(ss, ua.StatusBadNoSubscription)
	}
}

// failRequestsLocked answers every queued request of ss with status.
// ss.mu must be held.
func (e *Engine) failRequestsLocked(ss *session, status ua.StatusCode) {
	for _, pr := range ss.requests {
		e.deliverLocked(ss, pr.out, pr.reqID, e.fault(pr.handle, status))
	}
	ss.requests = nil
}

// work runs the ticks of s that are due at now and, when s is late and a
// Publish request is queued, answers it. It returns the next deadline, or
// expired when the subscription's lifetime has run out.
func (e *Engine) work(s *subscription, now time.Time) (next time.Time, expired bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return time.Time{}, false
	}
	if s.sampleEvery > 0 && !now.Before(s.nextSample) {
		tick := s.nextSample.Add(now.Sub(s.nextSample) / s.sampleEvery * s.sampleEvery)
		s.nextSample = tick.Add(s.sampleEvery)
		e.sampleTick(s, tick)
	}
	cycles := 0
	if !now.Before(s.nextPublish) {
		cycles = int(now.Sub(s.nextPublish)/s.interval) + 1
		s.nextPublish = s.nextPublish.Add(time.Duration(cycles) * s.interval)
	}
	if e.publishCycle(s, now, cycles) {
		return time.Time{}, true
	}
	return s.nextDeadline(), false
}

// sampleTick moves pending changes of items whose sampling tick has come
// into their queues and polls the items that are sampled by Read. s.mu must
// be held.
func (e *Engine) sampleTick(s *subscription, tick time.Time) {
	list := s.takeSample()
	var keep []*item
	report := s.reportBatch[:0]
	for _, it := range list {
		it.mu.Lock()
		done, push := it.sampleLocked(tick)
		it.mu.Unlock()
		if !done {
			keep = append(keep, it)
		}
		if push {
			report = append(report, it)
		}
	}
	// One pendMu round for the whole tick instead of one per item.
	s.pushReports(report)
	clear(report)
	s.reportBatch = report[:0]
	s.putBackSample(list, keep)

	for _, it := range s.polled {
		it.mu.Lock()
		due := it.mode != ua.MonitoringModeDisabled && !tick.Before(it.nextSample)
		if due {
			it.nextSample = tick.Add(it.interval)
		}
		it.mu.Unlock()
		if !due {
			continue
		}
		// Source methods are never called with an item's mu held.
		dv := e.src.Read(it.node, it.attr)
		it.mu.Lock()
		if !it.deleted && it.mode != ua.MonitoringModeDisabled && dv != nil {
			it.offerLocked(dv)
		}
		it.mu.Unlock()
	}
}

// publishCycle is the publishing state machine of Part 4 §5.13.1.2 run for
// cycles elapsed publishing intervals (0: a Publish request arrived for a
// late subscription). s.mu must be held. It reports whether the lifetime
// expired.
func (e *Engine) publishCycle(s *subscription, now time.Time, cycles int) (expired bool) {
	if s.replica {
		s.late.Store(false)
		return false // the serving member publishes; the lifetime runs there
	}
	if !s.catchUp.IsZero() {
		if now.Before(s.catchUp) {
			return false // a takeover's client is catching up (replica.go)
		}
		s.catchUp = time.Time{}
	}
	if cycles == 0 && !s.late.Load() {
		return false
	}
	dataReady := s.enabled && s.hasReport()
	if cycles > 0 && !dataReady {
		s.keepAlives += uint32(cycles)
	}
	keepAliveDue := !s.sentOnce || s.keepAlives >= s.keepAlive
	if !dataReady && !keepAliveDue {
		s.late.Store(false)
		return cycles > 0 && e.lifetimeOver(s, now)
	}
	// late is raised before the request queue is looked at. Publish
	// queues its request under session.mu and then reads late, so a
	// request that the look misses finds late set and schedules s at once.
	// Raised after the look, a request queued in between found late still
	// clear and waited for the next publishing tick: a whole interval,
	// up to MaxPublishingInterval.
	s.late.Store(true)
	var pr *publishReq
	if s.sess != nil {
		pr = s.sess.popRequest()
	}
	if pr == nil {
		if e.hookNoRequest != nil {
			e.hookNoRequest()
		}
		return cycles > 0 && e.lifetimeOver(s, now)
	}
	s.late.Store(false)
	s.touch(now)
	if dataReady {
		msg, more := e.buildMessage(s, now)
		if msg != nil {
			e.sendMessage(s, pr, msg, more)
			if more {
				s.late.Store(true)
				if s.sess.hasRequest() {
					e.sched.at(s, now)
				}
			}
			return false
		}
		if !keepAliveDue {
			s.sess.pushFront(pr)
			return false
		}
	}
	e.sendKeepAlive(s, pr)
	return false
}

// lifetimeOver reports whether s has gone LifetimeCount publishing intervals
// without client activity and without a Publish request it could use. A
// CreateMonitoredItems call in progress counts as activity until it ends.
// s.mu must be held.
func (e *Engine) lifetimeOver(s *subscription, now time.Time) bool {
	if s.reserved > 0 {
		return false // a CreateMonitoredItems call in progress is client activity
	}
	last := time.Unix(0, s.lastActivity.Load())
	if s.sess != nil {
		if s.sess.hasRequest() {
			return false
		}
		if lp := s.sess.lastPublishTime(); lp.After(last) {
			last = lp
		}
	}
	return now.Sub(last) >= time.Duration(s.lifetime)*s.interval
}

// buildMessage drains reportable values into a NotificationMessage of at most
// s.maxNotif notifications. It returns nil when nothing was reportable, and
// more when values were left for the next message. s.mu must be held.
func (e *Engine) buildMessage(s *subscription, now time.Time) (msg *ua.NotificationMessage, more bool) {
	list := s.takeReport()
	budget := int(s.maxNotif)
	if budget == 0 {
		budget = int(^uint(0) >> 1)
	}
	b := notifBuilder{slab: s.slab, dvSlab: s.dvSlab, now: now}
	b.grow(min(len(list), budget))
	var triggered []*item
	leftover := 0
	for i, it := range list {
		if b.n() >= budget {
			leftover = len(list) - i
			break
		}
		it.mu.Lock()
		if it.fresh && it.triggers {
			for _, l := range it.links {
				triggered = append(triggered, l)
			}
		}
		it.fresh = false
		if it.mode == ua.MonitoringModeReporting && !it.deleted {
			b.drain(it, budget)
			if it.minQueue > 0 && it.pending() == 0 {
				it.minQueue = 0 // what a failover owed the client is sent
			}
		}
		if it.pending() > 0 && it.mode == ua.MonitoringModeReporting && !it.deleted {
			leftover = len(list) - i
			it.mu.Unlock()
			break
		}
		it.inReport = false
		it.mu.Unlock()
	}
	for _, it := range triggered {
		if b.n() >= budget {
			break
		}
		it.mu.Lock()
		if it.mode == ua.MonitoringModeSampling && !it.deleted {
			b.drain(it, budget)
		}
		it.mu.Unlock()
	}
	s.putBackReport(list, leftover)
	s.slab, s.dvSlab = b.slab, b.dvSlab
	if b.n() == 0 {
		return nil, leftover > 0
	}
	return &ua.NotificationMessage{
		SequenceNumber:   s.nextSeq(),
		PublishTime:      now,
		NotificationData: b.data(),
	}, leftover > 0
}

// notifBuilder collects MonitoredItemNotifications and EventFieldLists,
// allocating the former (and the DataValue copies TimestampsToReturn
// needs) in slabs rather than one by one.
type notifBuilder struct {
	slab   []ua.MonitoredItemNotification
	dvSlab []ua.DataValue
	out    []*ua.MonitoredItemNotification
	events []*ua.EventFieldList
	now    time.Time
}

// n is the number of notifications collected: data changes and events
// count alike against MaxNotificationsPerPublish.
func (b *notifBuilder) n() int { return len(b.out) + len(b.events) }

func (b *notifBuilder) grow(n int) {
	b.out = make([]*ua.MonitoredItemNotification, 0, max(n, 1))
}

// drain moves queued notifications of it into the message until the
// budget is spent. it.mu must be held.
func (b *notifBuilder) drain(it *item, budget int) {
	if it.isEvent() {
		for it.ev.queue.len() > 0 && b.n() < budget {
			e := it.ev.queue.popEntry()
			b.events = append(b.events, &ua.EventFieldList{ClientHandle: it.handle, EventFields: e.fields})
		}
		return
	}
	for it.queue.len() > 0 && b.n() < budget {
		if len(b.slab) == 0 {
			// Notifications are referenced by sent messages, so a slab is
			// never reused: it is replaced once consumed.
			b.slab = make([]ua.MonitoredItemNotification, max(1024, min(cap(b.out)-len(b.out), 1<<16)))
		}
		n := &b.slab[0]
		b.slab = b.slab[1:]
		n.ClientHandle = it.handle
		n.Value = stamp(it.queue.pop(), it.ttr, b.now, &b.dvSlab)
		b.out = append(b.out, n)
	}
}

// data is the message's NotificationData: a DataChangeNotification and an
// EventNotificationList, each when it has something.
func (b *notifBuilder) data() []*ua.ExtensionObject {
	data := make([]*ua.ExtensionObject, 0, 2)
	if len(b.out) > 0 {
		data = append(data, ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: b.out}))
	}
	if len(b.events) > 0 {
		data = append(data, ua.NewExtensionObject(&ua.EventNotificationList{Events: b.events}))
	}
	return data
}

// sendMessage answers pr with msg and keeps msg for Republish. s.mu must be
// held.
func (e *Engine) sendMessage(s *subscription, pr *publishReq, msg *ua.NotificationMessage, more bool) {
	s.retain(msg, e.opts.MaxRetransmitMessages, e.opts.MaxRetransmitNotifications)
	s.keepAlives = 0
	s.sentOnce = true
	e.deliver(s.sess, pr.out, pr.reqID, &ua.PublishResponse{
		ResponseHeader:           e.header(pr.handle, ua.StatusGood),
		SubscriptionID:           s.id,
		AvailableSequenceNumbers: s.available(),
		MoreNotifications:        more,
		NotificationMessage:      msg,
		Results:                  pr.results,
	})
}

// sendKeepAlive answers pr with an empty message carrying the next sequence
// number, which it does not consume (Part 4 §5.13.1.1). s.mu must be held.
func (e *Engine) sendKeepAlive(s *subscription, pr *publishReq) {
	s.keepAlives = 0
	s.sentOnce = true
	e.deliver(s.sess, pr.out, pr.reqID, &ua.PublishResponse{
		ResponseHeader:           e.header(pr.handle, ua.StatusGood),
		SubscriptionID:           s.id,
		AvailableSequenceNumbers: s.available(),
		NotificationMessage: &ua.NotificationMessage{
			SequenceNumber:   s.seq,
			PublishTime:      e.clock.Now(),
			NotificationData: []*ua.ExtensionObject{},
		},
		Results: pr.results,
	})
}

// expire deletes s after its lifetime ran out and owes its session a
// StatusChangeNotification BadTimeout.
func (e *Engine) expire(s *subscription, now time.Time) {
	e.mu.Lock()
	s.mu.Lock()
	gone := s.deleted || !e.lifetimeOver(s, now)
	s.mu.Unlock()
	var r retired
	if !gone && e.onExpire != nil {
		defer e.onExpire(s.id)
	}
	if !gone {
		e.log.Info("subscription: lifetime expired", "subscription", s.id)
		ss := s.sess
		seq := s.seq
		e.deleteSubLocked(s, &r)
		if ss != nil {
			e.oweStatusLocked(ss, statusMsg{subID: s.id, seq: seq, status: ua.StatusBadTimeout})
		}
	}
	e.mu.Unlock()
	e.retire(r)
}

// deleteSubLocked removes s from the engine and detaches its items, which
// stop queuing at once (subscription.gone); marking them deleted and
// cancelling their Source registrations is left in r for retire, to be run
// once e.mu is released. O(1) in the number of items. e.mu must be held.
func (e *Engine) deleteSubLocked(s *subscription, r *retired) {
	s.gone.Store(true)
	s.mu.Lock()
	s.deleted = true
	e.items -= len(s.items)
	r.addMap(s.items)
	s.items, s.polled = nil, nil
	if s.sess != nil {
		delete(s.sess.subs, s.id)
	}
	s.sess = nil
	s.mu.Unlock()
	s.pendMu.Lock()
	s.report, s.sample = nil, nil
	s.pendMu.Unlock()
	s.clearRetrans()
	delete(e.subs, s.id)
	e.sched.remove(s)
}
