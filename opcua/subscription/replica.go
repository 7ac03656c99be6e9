package subscription

import (
	"context"
	"errors"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Mirroring (OpcUa:RedundancySupport HotAndMirrored): another member of
// the redundant set serves a session and this engine holds a replica of
// its subscriptions. A replica subscription has the serving member's ids
// and parameters; its items watch this member's own copy of the tags and
// queue what they sample (bounded by the larger of the client's queue size
// and the replica's minQueue); it publishes nothing and its lifetime does
// not run. Each message the serving member sends is handed to Reported:
// it joins the replica's retransmission queue, fixes the next sequence
// number, and removes from every item's queue the values it carried — a
// value sampled here and one reported there are the same device value
// when they are equal (Variant and StatusCode) and their SourceTimestamps
// differ by at most the replica's window; a reported value not sampled
// here yet is remembered (a cursor) and matched when it comes. Promote
// turns the replica into an ordinary subscription when its session is
// taken over here: Republish answers from the copied retransmission queue,
// and the next message carries every value sampled here after the last
// one reported, with the next sequence number.

// ErrReplicaConflict: a subscription id the serving member chose is in use
// here, by a subscription served here or by another session's replica.
// The session stays Warm.
var ErrReplicaConflict = errors.New("subscription: replica id in use")

// catchUpHold is the longest a subscription taken over waits for its
// client's Republish before it sends anything (Promote).
const catchUpHold = time.Second

// maxCursors bounds the reported values an item remembers before it
// samples them: older ones are forgotten first.
const maxCursors = 16

// ReplicaSubscription creates the replica of subscription id of session
// sess with the serving member's revised parameters (the requested values
// of req) and next sequence number. window is the match window of its
// items' values. A replica of sess with that id exists already (a
// snapshot and the live record both describe it): nothing changes.
func (e *Engine) ReplicaSubscription(sess SessionID, id uint32, req *ua.CreateSubscriptionRequest, nextSeq uint32, window time.Duration) error {
	if req == nil || id == 0 {
		return ua.StatusBadInvalidArgument
	}
	now := e.clock.Now()
	interval := e.lim.revisePublishingInterval(req.RequestedPublishingInterval)
	lifetime, keepAlive := e.lim.reviseCounts(req.RequestedLifetimeCount, req.RequestedMaxKeepAliveCount, interval)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ua.StatusBadShutdown
	case e.subs[id] != nil:
		// Promote writes replica with e.mu held: reading it here is safe.
		if old := e.subs[id]; old.replica && old.sess != nil && old.sess == e.sessions[sess] {
			return nil // held already: a snapshot and the live record both made it
		}
		return ErrReplicaConflict
	case len(e.subs) >= e.opts.MaxSubscriptions:
		e.counts.subscriptions.Add(1)
		return ua.StatusBadTooManySubscriptions
	}
	ss := e.sessionLocked(sess)
	if nextSeq == 0 {
		nextSeq = 1
	}
	e.addSubLocked(ss, id, req, interval, lifetime, keepAlive, now, func(s *subscription) {
		s.seq, s.replica, s.window = nextSeq, true, window
	})
	return nil
}

// ReplicaItems creates items of a replica subscription with the serving
// member's ids (parallel to req.ItemsToCreate) and revised parameters (the
// requested values of req). Each item queues at least minQueue values. It
// returns the results as CreateMonitoredItems does; an item that fails
// here (a tag this member lacks) is simply not mirrored.
func (e *Engine) ReplicaItems(sess SessionID, req *ua.CreateMonitoredItemsRequest, ids []uint32, minQueue int) (*ua.CreateMonitoredItemsResponse, error) {
	if req == nil || len(ids) != len(req.ItemsToCreate) {
		return nil, ua.StatusBadInvalidArgument
	}
	return e.createItems(context.Background(), sess, req, ids, minQueue)
}

// Reported tells the replica of subscription subID of sess that the
// serving member sent msg. It reports false when sess holds no such
// replica. A message already held for Republish is not applied again.
func (e *Engine) Reported(sess SessionID, subID uint32, msg *ua.NotificationMessage) bool {
	if msg == nil || msg.SequenceNumber == 0 {
		return false
	}
	e.mu.Lock()
	s := e.ownedLocked(e.sessions[sess], subID)
	e.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.replica || s.deleted {
		return false
	}
	if s.retained(msg.SequenceNumber) != nil {
		// A snapshot taken while the message was on its way to the client
		// carried it, and so does the live record: its values were
		// matched already, and a second match would turn them into
		// cursors that swallow a later equal value.
		return true
	}
	s.retain(msg, e.opts.MaxRetransmitMessages, e.opts.MaxRetransmitNotifications)
	s.seq = msg.SequenceNumber + 1
	if s.seq == 0 {
		s.seq = 1
	}
	s.sentOnce = true
	if s.byHandle == nil {
		s.byHandle = make(map[uint32]*item, len(s.items))
		for _, it := range s.items {
			if !it.isEvent() {
				s.byHandle[it.handle] = it
			}
		}
	}
	for _, eo := range msg.NotificationData {
		dc, ok := eo.Value.(*ua.DataChangeNotification)
		if !ok {
			continue
		}
		for _, n := range dc.MonitoredItems {
			if n == nil || n.Value == nil {
				continue
			}
			if it := s.byHandle[n.ClientHandle]; it != nil {
				it.mu.Lock()
				it.trimLocked(n.Value, s.window)
				it.mu.Unlock()
			}
		}
	}
	return true
}

// Acked applies the acknowledgements a client sent to the serving member
// to the replicas of sess.
func (e *Engine) Acked(sess SessionID, acks []*ua.SubscriptionAcknowledgement) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ss := e.sessions[sess]
	for _, a := range acks {
		if a == nil {
			continue
		}
		if s := e.ownedLocked(ss, a.SubscriptionID); s != nil {
			s.ack(a.SequenceNumber)
		}
	}
}

// Promote makes the replicas of sess ordinary subscriptions served here:
// their lifetime starts now and the values owed to the client go out with
// the next Publish response. Its other subscriptions are left alone. It
// returns the number of subscriptions promoted.
func (e *Engine) Promote(sess SessionID) int {
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	ss := e.sessions[sess]
	if ss == nil {
		return 0
	}
	n := 0
	for _, s := range ss.subs {
		s.mu.Lock()
		promoted := s.promoteLocked(now)
		next := s.nextDeadline()
		s.mu.Unlock()
		if promoted {
			n++
			e.sched.at(s, next)
		}
	}
	return n
}

// promoteLocked turns a replica into a subscription served here; false
// when it was not a replica. s.mu must be held.
func (s *subscription) promoteLocked(now time.Time) bool {
	if !s.replica {
		return false
	}
	s.replica = false
	s.byHandle = nil
	s.touch(now)
	s.tellServerState()
	// The first Publish request is answered at once, with the values
	// owed or a keep-alive: the client learns without waiting a
	// publishing interval that its subscription lives here.
	s.sentOnce = false
	s.late.Store(true)
	// Nothing is sent before the client caught up (Republish of the
	// messages it missed until one is not available), or for catchUpHold
	// at most: a client that sends Publish and Republish together
	// (node-opcua) would otherwise get the first new message twice, once
	// as the answer to a Publish and once to its Republish. A client that
	// does not Republish gets it after the hold.
	s.catchUp = now.Add(max(s.interval, catchUpHold))
	return true
}

// SetOwner records the user whose sessions may take subscription id over
// (TransferSubscriptionsAs).
func (e *Engine) SetOwner(id uint32, owner string) {
	e.mu.Lock()
	s := e.subs[id]
	e.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	s.owner = owner
	s.mu.Unlock()
}

// TransferSubscriptionsAs is TransferSubscriptions for a session of user
// owner (Part 4 §5.13.7: only the same user may take a subscription
// over): a subscription whose owner is another user answers
// BadUserAccessDenied and stays where it is. A replica taken over this
// way (a client that could not activate its session here makes a new one
// and transfers its subscriptions) is promoted, as a takeover of its
// session would.
func (e *Engine) TransferSubscriptionsAs(sess SessionID, owner string, req *ua.TransferSubscriptionsRequest) (*ua.TransferSubscriptionsResponse, error) {
	return e.transfer(sess, req, func(s *subscription, now time.Time) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.owner != "" && s.owner != owner {
			return false
		}
		s.owner = owner
		if s.promoteLocked(now) {
			e.sched.at(s, s.nextDeadline())
		}
		return true
	})
}

// SubState is one subscription as a replica needs it (Export).
type SubState struct {
	ID uint32
	// Params holds the revised parameters as requested values.
	Params  *ua.CreateSubscriptionRequest
	NextSeq uint32
	// Retrans are the messages kept for Republish, oldest first.
	Retrans []*ua.NotificationMessage
	// Items hold the revised parameters as requested values and the
	// current monitoring mode, grouped by TimestampsToReturn.
	Items []ItemGroup
	// Links are the triggering links: triggering item id → linked ids.
	Links map[uint32][]uint32
}

// ItemGroup is items that share a TimestampsToReturn.
type ItemGroup struct {
	TTR   ua.TimestampsToReturn
	IDs   []uint32
	Items []*ua.MonitoredItemCreateRequest
}

// Export returns the subscriptions of sess for a replica's snapshot.
func (e *Engine) Export(sess SessionID) []SubState {
	e.mu.Lock()
	defer e.mu.Unlock()
	ss := e.sessions[sess]
	if ss == nil {
		return nil
	}
	out := make([]SubState, 0, len(ss.subs))
	for _, s := range ss.subs {
		s.mu.Lock()
		st := SubState{
			ID: s.id,
			Params: &ua.CreateSubscriptionRequest{
				RequestedPublishingInterval: durationToMS(s.interval),
				RequestedLifetimeCount:      s.lifetime,
				RequestedMaxKeepAliveCount:  s.keepAlive,
				MaxNotificationsPerPublish:  s.maxNotif,
				PublishingEnabled:           s.enabled,
				Priority:                    uint8(s.priority.Load()),
			},
			NextSeq: s.seq,
			Links:   make(map[uint32][]uint32),
		}
		groups := map[ua.TimestampsToReturn]int{}
		for id, it := range s.items {
			it.mu.Lock()
			r := it.exportLocked()
			ttr := it.ttr
			it.mu.Unlock()
			g, ok := groups[ttr]
			if !ok {
				g = len(st.Items)
				groups[ttr] = g
				st.Items = append(st.Items, ItemGroup{TTR: ttr})
			}
			st.Items[g].IDs = append(st.Items[g].IDs, id)
			st.Items[g].Items = append(st.Items[g].Items, r)
			for l := range it.links {
				st.Links[id] = append(st.Links[id], l)
			}
		}
		s.mu.Unlock()
		s.retransMu.Lock()
		st.Retrans = append([]*ua.NotificationMessage(nil), s.retrans...)
		s.retransMu.Unlock()
		out = append(out, st)
	}
	return out
}

// exportLocked describes the item as a creation request with its revised
// parameters. it.mu must be held.
func (it *item) exportLocked() *ua.MonitoredItemCreateRequest {
	p := &ua.MonitoringParameters{
		ClientHandle:     it.handle,
		SamplingInterval: durationToMS(it.interval),
		QueueSize:        uint32(it.queueSize),
		DiscardOldest:    it.discardOldest,
		Filter:           ua.NewExtensionObject(nil),
	}
	if it.isEvent() {
		if f := it.ev.filter.Load(); f != nil && f.src != nil {
			p.Filter = ua.NewExtensionObject(f.src)
		}
	} else if f := it.filter.request(); f != nil {
		p.Filter = ua.NewExtensionObject(f)
	}
	return &ua.MonitoredItemCreateRequest{
		ItemToMonitor:       &ua.ReadValueID{NodeID: it.node, AttributeID: it.attr, DataEncoding: &ua.QualifiedName{}},
		MonitoringMode:      it.mode,
		RequestedParameters: p,
	}
}

// sameValue reports whether a and b are the same device value seen by two
// members: equal value and status, SourceTimestamps at most window apart.
// It returns the distance.
func sameValue(a, b *ua.DataValue, window time.Duration) (time.Duration, bool) {
	if a.Status&^overflowBits != b.Status&^overflowBits {
		return 0, false
	}
	var av, bv any
	if a.Value != nil {
		av = a.Value.Value()
	}
	if b.Value != nil {
		bv = b.Value.Value()
	}
	if !equalValue(av, bv) {
		return 0, false
	}
	d := a.SourceTimestamp.Sub(b.SourceTimestamp)
	if d < 0 {
		d = -d
	}
	return d, d <= window
}

// trimLocked removes from the queue the value v the serving member
// reported, with everything queued before it; a value not sampled here
// yet becomes a cursor. it.mu must be held.
func (it *item) trimLocked(v *ua.DataValue, window time.Duration) {
	if it.serverLocal() {
		// Another member's own state (its ServiceLevel, its clock): no
		// value here is the same as one reported there.
		it.queue.clear()
		return
	}
	best, at := time.Duration(-1), -1
	for i := 0; i < it.queue.len(); i++ {
		if d, ok := sameValue(it.queue.at(i), v, window); ok && (best < 0 || d < best) {
			best, at = d, i
		}
	}
	if at >= 0 {
		for range at + 1 {
			it.queue.pop()
		}
		return
	}
	if len(it.cursors) >= maxCursors {
		it.cursors = append(it.cursors[:0], it.cursors[1:]...)
	}
	it.cursors = append(it.cursors, v)
}

// reportedLocked reports whether dv, about to be queued, is a value the
// serving member reported already (a cursor): then the queue, older than
// dv, is dropped with it. Cursors a newer value can no longer match are
// forgotten. it.mu must be held.
func (it *item) reportedLocked(dv *ua.DataValue) bool {
	w := it.sub.window
	if w <= 0 {
		w = time.Second
	}
	for i, c := range it.cursors {
		if _, ok := sameValue(c, dv, w); ok {
			it.cursors = append(it.cursors[:0], it.cursors[i+1:]...)
			it.queue.clear()
			return true
		}
	}
	keep := it.cursors[:0]
	for _, c := range it.cursors {
		if dv.SourceTimestamp.Sub(c.SourceTimestamp) <= w {
			keep = append(keep, c)
		}
	}
	clear(it.cursors[len(keep):])
	it.cursors = keep
	return false
}

// OnExpire registers fn to be called, with no engine lock held, after the
// lifetime of a subscription ran out. Call it before any subscription
// exists.
func (e *Engine) OnExpire(fn func(subID uint32)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onExpire = fn
}

// DropReplica deletes replica subscription id, whatever its session (the
// serving member's copy expired, maybe orphaned). Subscriptions served here
// are left alone.
func (e *Engine) DropReplica(id uint32) {
	e.mu.Lock()
	s := e.subs[id]
	var r retired
	if s != nil {
		s.mu.Lock()
		replica := s.replica
		s.mu.Unlock()
		if replica {
			e.deleteSubLocked(s, &r)
		}
	}
	e.mu.Unlock()
	e.retire(r)
}

// serverLocal reports whether the item watches a variable of namespace 0:
// the Server object's (ServiceLevel, ServerStatus, the redundancy and
// diagnostics variables), whose values are each member's own, unlike the
// tags of the application's namespaces, which every member reads from the
// same devices.
func (it *item) serverLocal() bool { return it.node != nil && it.node.Namespace() == 0 }

// tellServerState queues the current value of every server-local data
// item of a promoted subscription: its client learns this member's state
// (its ServiceLevel …) with the first message, whatever changed here
// before. s.mu must be held.
func (s *subscription) tellServerState() {
	var push []*item
	for _, it := range s.items {
		if it.isEvent() || !it.serverLocal() {
			continue
		}
		it.mu.Lock()
		if it.mode != ua.MonitoringModeDisabled && it.last != nil {
			it.queue.clear()
			it.queue.push(it.last, it.qsize(), it.discardOldest)
			it.fresh = true
			if it.needsReportLocked() {
				push = append(push, it)
			}
		}
		it.mu.Unlock()
	}
	if len(push) > 0 {
		s.pushReports(push)
	}
}
