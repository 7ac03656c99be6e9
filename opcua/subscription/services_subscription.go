package subscription

import (
	"time"

	"github.com/gopcua/opcua/ua"
)

// CreateSubscription creates a subscription owned by sess (Part 4 §5.13.2).
func (e *Engine) CreateSubscription(sess SessionID, req *ua.CreateSubscriptionRequest) (*ua.CreateSubscriptionResponse, error) {
	if req == nil {
		return nil, ua.StatusBadNothingToDo
	}
	now := e.clock.Now()
	interval := e.lim.revisePublishingInterval(req.RequestedPublishingInterval)
	lifetime, keepAlive := e.lim.reviseCounts(req.RequestedLifetimeCount, req.RequestedMaxKeepAliveCount, interval)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	ss := e.sessionLocked(sess)
	switch {
	case len(e.subs) >= e.opts.MaxSubscriptions:
		e.counts.subscriptions.Add(1)
		return nil, ua.StatusBadTooManySubscriptions
	case len(ss.subs) >= min(e.opts.MaxSubscriptionsPerSession, e.opts.MaxSubscriptions):
		e.counts.subscriptionsPerSess.Add(1)
		return nil, ua.StatusBadTooManySubscriptions
	}
	e.counts.cumulatedSubscriptions.Add(1)
	s := e.addSubLocked(ss, e.newSubIDLocked(), req, interval, lifetime, keepAlive, now, func(*subscription) {})
	return &ua.CreateSubscriptionResponse{
		ResponseHeader:            e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		SubscriptionID:            s.id,
		RevisedPublishingInterval: durationToMS(interval),
		RevisedLifetimeCount:      lifetime,
		RevisedMaxKeepAliveCount:  keepAlive,
	}, nil
}

// addSubLocked creates subscription id of ss with the revised interval
// and counts and req's other parameters, lets init set what differs (a
// replica's), registers and schedules it. e.mu must be held.
func (e *Engine) addSubLocked(ss *session, id uint32, req *ua.CreateSubscriptionRequest, interval time.Duration, lifetime, keepAlive uint32, now time.Time, init func(*subscription)) *subscription {
	s := &subscription{
		id:          id,
		heapIdx:     -1,
		sess:        ss,
		interval:    interval,
		lifetime:    lifetime,
		keepAlive:   keepAlive,
		maxNotif:    e.lim.reviseMaxNotifications(req.MaxNotificationsPerPublish),
		enabled:     req.PublishingEnabled,
		items:       make(map[uint32]*item),
		polled:      make(map[uint32]*item),
		intervals:   make(map[time.Duration]int),
		nextPublish: now.Add(interval),
		seq:         1,
	}
	init(s)
	s.priority.Store(uint32(req.Priority))
	s.touch(now)
	e.subs[id] = s
	ss.subs[id] = s
	e.sched.at(s, s.nextPublish)
	return s
}

// newSubIDLocked returns the next subscription id that is not in use. Ids
// grow monotonically, so a deleted subscription's id comes back only after
// the counter wraps around 2^32. e.mu must be held.
func (e *Engine) newSubIDLocked() uint32 {
	for {
		id := e.nextSubID
		e.nextSubID++
		if id != 0 && e.subs[id] == nil {
			return id
		}
	}
}

// ModifySubscription revises the parameters of a subscription of sess
// (Part 4 §5.13.3). A new publishing interval starts counting now.
func (e *Engine) ModifySubscription(sess SessionID, req *ua.ModifySubscriptionRequest) (*ua.ModifySubscriptionResponse, error) {
	if req == nil {
		return nil, ua.StatusBadNothingToDo
	}
	now := e.clock.Now()
	interval := e.lim.revisePublishingInterval(req.RequestedPublishingInterval)
	lifetime, keepAlive := e.lim.reviseCounts(req.RequestedLifetimeCount, req.RequestedMaxKeepAliveCount, interval)

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
	if interval != s.interval {
		s.interval = interval
		s.nextPublish = now.Add(interval)
	}
	s.lifetime, s.keepAlive = lifetime, keepAlive
	s.maxNotif = e.lim.reviseMaxNotifications(req.MaxNotificationsPerPublish)
	s.priority.Store(uint32(req.Priority))
	s.touch(now)
	next := s.nextDeadline()
	s.mu.Unlock()
	e.sched.at(s, next)
	return &ua.ModifySubscriptionResponse{
		ResponseHeader:            e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		RevisedPublishingInterval: durationToMS(interval),
		RevisedLifetimeCount:      lifetime,
		RevisedMaxKeepAliveCount:  keepAlive,
	}, nil
}

// SetPublishingMode enables or disables publishing of subscriptions of sess
// (Part 4 §5.13.4). Disabled subscriptions keep sampling and queuing and
// still send keep-alives.
func (e *Engine) SetPublishingMode(sess SessionID, req *ua.SetPublishingModeRequest) (*ua.SetPublishingModeResponse, error) {
	if req == nil || len(req.SubscriptionIDs) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	ss := e.sessions[sess]
	results := make([]ua.StatusCode, len(req.SubscriptionIDs))
	for i, id := range req.SubscriptionIDs {
		s := e.ownedLocked(ss, id)
		if s == nil {
			results[i] = ua.StatusBadSubscriptionIDInvalid
			continue
		}
		s.mu.Lock()
		s.enabled = req.PublishingEnabled
		s.touch(now)
		s.mu.Unlock()
	}
	return &ua.SetPublishingModeResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}

// DeleteSubscriptions deletes subscriptions of sess (Part 4 §5.13.8). When
// the session has none left, its queued Publish requests are answered
// BadNoSubscription.
func (e *Engine) DeleteSubscriptions(sess SessionID, req *ua.DeleteSubscriptionsRequest) (*ua.DeleteSubscriptionsResponse, error) {
	if req == nil || len(req.SubscriptionIDs) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ua.StatusBadShutdown
	}
	ss := e.sessions[sess]
	results := make([]ua.StatusCode, len(req.SubscriptionIDs))
	var r retired
	for i, id := range req.SubscriptionIDs {
		s := e.ownedLocked(ss, id)
		if s == nil {
			results[i] = ua.StatusBadSubscriptionIDInvalid
			continue
		}
		e.deleteSubLocked(s, &r)
	}
	if ss != nil && len(ss.subs) == 0 {
		ss.mu.Lock()
		e.failRequestsLocked(ss, ua.StatusBadNoSubscription)
		ss.mu.Unlock()
	}
	e.mu.Unlock()
	e.retire(r)
	return &ua.DeleteSubscriptionsResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}

// Republish returns a NotificationMessage still held for retransmission
// (Part 4 §5.13.6).
func (e *Engine) Republish(sess SessionID, req *ua.RepublishRequest) (*ua.RepublishResponse, error) {
	if req == nil {
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
	s.touch(now)
	msg := s.retained(req.RetransmitSequenceNumber)
	if msg == nil {
		// A client taken over here has caught up: what it is owed goes
		// out with its next Publish response, now.
		s.mu.Lock()
		held := !s.catchUp.IsZero()
		s.catchUp = time.Time{}
		s.mu.Unlock()
		if held {
			e.sched.at(s, now)
		}
		return nil, ua.StatusBadMessageNotAvailable
	}
	return &ua.RepublishResponse{
		ResponseHeader:      e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		NotificationMessage: msg,
	}, nil
}

// TransferSubscriptions moves subscriptions to sess (Part 4 §5.13.7). The
// previous owner, if its session is still open, receives a
// StatusChangeNotification GoodSubscriptionTransferred. Orphaned
// subscriptions (their session closed without deleting them) can be
// claimed. Checking that the user identity of sess may take the
// subscriptions over is the caller's duty.
func (e *Engine) TransferSubscriptions(sess SessionID, req *ua.TransferSubscriptionsRequest) (*ua.TransferSubscriptionsResponse, error) {
	return e.transfer(sess, req, nil)
}

// transfer moves the subscriptions of req to sess; take, when set, is
// asked first for each one (with e.mu held) and refuses it with
// BadUserAccessDenied by returning false.
func (e *Engine) transfer(sess SessionID, req *ua.TransferSubscriptionsRequest, take func(s *subscription, now time.Time) bool) (*ua.TransferSubscriptionsResponse, error) {
	if req == nil || len(req.SubscriptionIDs) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	ss := e.sessionLocked(sess)
	results := make([]*ua.TransferResult, len(req.SubscriptionIDs))
	for i, id := range req.SubscriptionIDs {
		s := e.subs[id]
		switch {
		case s == nil:
			results[i] = &ua.TransferResult{StatusCode: ua.StatusBadSubscriptionIDInvalid}
			continue
		case take != nil && !take(s, now):
			results[i] = &ua.TransferResult{StatusCode: ua.StatusBadUserAccessDenied}
			continue
		}
		e.transferLocked(s, ss, req.SendInitialValues, now)
		results[i] = &ua.TransferResult{StatusCode: ua.StatusGood, AvailableSequenceNumbers: s.available()}
	}
	return &ua.TransferSubscriptionsResponse{
		ResponseHeader: e.header(requestHandle(req.RequestHeader), ua.StatusGood),
		Results:        results,
	}, nil
}

// transferLocked moves s to ss. e.mu must be held.
func (e *Engine) transferLocked(s *subscription, ss *session, sendInitial bool, now time.Time) {
	s.mu.Lock()
	old := s.sess
	s.sess = ss
	ss.subs[s.id] = s
	s.touch(now)
	if sendInitial {
		for _, it := range s.items {
			it.mu.Lock()
			if it.mode == ua.MonitoringModeReporting && it.queue.len() == 0 && it.last != nil {
				it.forceLocked(it.last)
			}
			it.mu.Unlock()
		}
	}
	seq := s.seq
	s.mu.Unlock()
	if old != nil && old != ss {
		delete(old.subs, s.id)
		e.oweStatusLocked(old, statusMsg{subID: s.id, seq: seq, status: ua.StatusGoodSubscriptionTransferred})
	}
	if s.late.Load() && ss.hasRequest() {
		e.sched.at(s, now)
	}
}

// SessionClosed forgets sess: its queued Publish requests and unsent
// responses are dropped (its channel is gone). With deleteSubscriptions its
// subscriptions are deleted; otherwise they stay alive, orphaned, until
// their lifetime runs out or TransferSubscriptions claims them.
func (e *Engine) SessionClosed(sess SessionID, deleteSubscriptions bool) {
	e.mu.Lock()
	ss := e.sessions[sess]
	if ss == nil {
		e.mu.Unlock()
		return
	}
	delete(e.sessions, sess)
	ss.mu.Lock()
	ss.closed = true
	ss.requests, ss.status = nil, nil
	ss.mu.Unlock()
	var r retired
	for _, s := range ss.subs {
		if deleteSubscriptions {
			e.deleteSubLocked(s, &r)
			continue
		}
		s.mu.Lock()
		if lp := ss.lastPublishTime(); lp.UnixNano() > s.lastActivity.Load() {
			s.touch(lp)
		}
		s.sess = nil
		s.mu.Unlock()
	}
	ss.subs = nil
	e.mu.Unlock()
	e.retire(r)
}
