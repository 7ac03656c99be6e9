package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
)

// userSub is one Subscribe call: the nodes, and where they are monitored
// now. The controller moves it; the Publish loops deliver to it.
//
// Locks: opMu serialises the placement operations (network calls while
// held: create, transfer, SetMonitoringMode); mu guards the fields below
// and is never held across a network call except the hand-over to out.
// opMu before mu and before Client.mu; Client.mu is never taken while mu
// is held.
type userSub struct {
	c        *Client
	nodes    []*ua.NodeID
	interval time.Duration // publishing interval
	sampling time.Duration // sampling interval; 0: every change
	itemSpec []Item        // per-node sampling and deadband (SubscribeItems); nil: sampling for all
	out      chan Notification

	opMu sync.Mutex

	mu     sync.Mutex
	host   *conn                // the conn of the active server's subscription; mu must be held.
	id     uint32               // its id at that server; mu must be held.
	uri    string               // that server's ApplicationUri, for TransferSubscriptions; mu must be held.
	items  []uint32             // its monitored item ids by client handle (0: refused); mu must be held.
	others map[*conn]*placement // Hot modes: the subscription on the other servers; mu must be held.
	dedup  Dedup                // Hot modes: the de-duplication memory; mu must be held.
	seqs   seqSet               // Mirrored: the sequence numbers delivered from (host, id); mu must be held.
	ended  bool                 // out is closed; mu must be held.
	hotLog map[string]struct{}  // servers already logged as not hot; mu must be held.
	// hotTries counts, per conn, the Hot placements refused since the last
	// one that held (the back-off of retryHot). mu must be held.
	hotTries map[*conn]int
	// initial marks, per conn and client handle, the items whose first
	// value (their current value when created, not a change) has not
	// arrived yet. mu must be held.
	initial map[*conn][]bool
}

// placement is the subscription on one server.
type placement struct {
	id        uint32
	items     []uint32 // by client handle; 0 where refused
	reporting bool
}

// Subscription is a set of monitored nodes that follows the active server.
type Subscription struct{ s *userSub }

// Notifications delivers every data change, in order per server. It is
// closed by Client.Close.
func (s *Subscription) Notifications() <-chan Notification { return s.s.out }

// ID is the subscription's id at the active server (0 before it is
// created there): what ConditionRefresh names.
func (s *Subscription) ID() uint32 {
	s.s.mu.Lock()
	defer s.s.mu.Unlock()
	return s.s.id
}

// accepts reports whether a notification from cn is the application's:
// from the active server's subscription, or in a Hot mode from any
// server's. mu must be held.
func (s *userSub) accepts(cn *conn) bool {
	if s.ended {
		return false
	}
	if s.host == cn {
		return true
	}
	return s.c.mode().hot() && s.others[cn] != nil
}

// deliverMessage hands the data changes of one NotificationMessage of
// subscription id on cn to the subscriber. In Mirrored mode a message
// whose sequence number was delivered already (a republished one) is
// dropped; in the Hot modes each value passes Dedup.
func (s *userSub) deliverMessage(cn *conn, id uint32, at time.Time, msg *ua.NotificationMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accepts(cn) {
		return
	}
	if s.c.mode() == ModeMirrored && s.host == cn && s.id == id && len(msg.NotificationData) > 0 {
		if !s.seqs.add(msg.SequenceNumber) {
			return // delivered already (republished after a mirrored failover)
		}
	}
	for _, eo := range msg.NotificationData {
		switch n := eo.Value.(type) {
		case *ua.DataChangeNotification:
			for _, it := range n.MonitoredItems {
				s.deliverLocked(cn, at, it.ClientHandle, it.Value)
			}
		case *ua.EventNotificationList:
			if s.host != cn {
				continue // an event is delivered from the active server only (a Hot placement's would repeat it)
			}
			for _, ev := range n.Events {
				s.deliverEventLocked(cn, at, ev)
			}
		}
	}
}

// deliverEventLocked sends one event of an event item (never
// de-duplicated: an event is not a sample). mu must be held.
func (s *userSub) deliverEventLocked(cn *conn, at time.Time, ev *ua.EventFieldList) {
	if ev == nil || int(ev.ClientHandle) >= len(s.nodes) {
		return
	}
	fields := ev.EventFields
	if fields == nil {
		fields = []*ua.Variant{}
	}
	select {
	case s.out <- Notification{At: at, Node: s.nodes[ev.ClientHandle], Event: fields, Server: ServerRef{URI: cn.uri, URL: cn.url}}:
	case <-s.c.ctx.Done():
	}
}

// deliver hands one value to the subscriber (a refusal's status).
func (s *userSub) deliver(cn *conn, at time.Time, handle uint32, v *ua.DataValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accepts(cn) {
		s.deliverLocked(cn, at, handle, v)
	}
}

// deliverLocked sends one value unless Dedup drops it. mu must be held:
// sending under mu keeps end() from closing out meanwhile; a slow reader
// holds back only this server's Publish loop (and, in a Hot mode, the
// others').
func (s *userSub) deliverLocked(cn *conn, at time.Time, handle uint32, v *ua.DataValue) {
	if int(handle) >= len(s.nodes) {
		return
	}
	first := false
	if f := s.initial[cn]; int(handle) < len(f) && f[handle] {
		first, f[handle] = true, false
	}
	if s.c.mode().hot() && v != nil {
		smp := sampleOf(handle, v)
		smp.Initial = first
		if s.dedup.Offer(smp) != Deliver {
			return
		}
	}
	select {
	case s.out <- Notification{At: at, Node: s.nodes[handle], Value: v, Server: ServerRef{URI: cn.uri, URL: cn.url}}:
	case <-s.c.ctx.Done():
	}
}

// sampleOf is v as Dedup sees it.
func sampleOf(handle uint32, v *ua.DataValue) Sample {
	smp := Sample{Node: strconv.FormatUint(uint64(handle), 10), Status: uint32(v.Status)}
	if v.Value != nil {
		if b, err := v.Value.Encode(); err == nil {
			smp.Value = string(b)
		}
	}
	if !v.SourceTimestamp.IsZero() {
		smp.Source, smp.HasSource = v.SourceTimestamp.UnixNano(), true
	}
	return smp
}

func (s *userSub) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.out)
	}
}

// placeOn makes the subscription live and reporting on cn: a Hot mode's
// placement there is promoted; otherwise by TransferSubscriptions when
// cn's server already holds it (a reconnect to the same server), else by
// creating it. It reports whether it was transferred. opMu must be held.
func (s *userSub) placeOn(ctx context.Context, cn *conn) (bool, error) {
	s.mu.Lock()
	oldHost, oldID, oldURI := s.host, s.id, s.uri
	p := s.others[cn]
	s.mu.Unlock()
	if oldHost == cn {
		return false, nil
	}
	if p != nil && p.id != 0 {
		return false, s.promote(ctx, cn, p)
	}
	if oldID != 0 && oldURI != "" && oldURI == cn.uri && oldHost != nil && oldHost.isLost() {
		ok, err := s.transfer(ctx, cn, oldID)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	_, _, err := s.create(ctx, cn, ua.MonitoringModeReporting, 10, true, func(id uint32, items []uint32) {
		s.setHost(cn, id, items)
	})
	return false, err
}

// promote makes the Hot placement p on cn the active one: Hot (a)
// switches its items to Reporting so their queued values arrive; in both
// Hot modes the server then publishes what it holds at once (flush).
func (s *userSub) promote(ctx context.Context, cn *conn, p *placement) error {
	if !p.reporting {
		if err := s.setMode(ctx, cn, p, ua.MonitoringModeReporting); err != nil {
			return err
		}
	}
	// One step: between the placement's removal and the new host a
	// message from cn would be accepted by neither and lost.
	s.mu.Lock()
	delete(s.others, cn)
	s.setHostLocked(cn, p.id, p.items)
	s.mu.Unlock()
	s.flush(ctx, cn, p.id)
	return nil
}

// flush makes subscription id on cn publish what it has queued now rather
// than at its next publishing tick, up to one publishing interval away:
// the values the lost server sampled last but never sent wait there. A
// ModifySubscription asking for the fastest publishing interval restarts
// the subscription's publishing timer at the server's minimum (Part 4
// §5.13.3: the server revises it; otopcua's is 10 ms); one interval later
// a second one puts the interval back. It is best effort: a server that
// refuses leaves the subscription as it was, and the values come at its
// next tick.
func (s *userSub) flush(ctx context.Context, cn *conn, id uint32) {
	ms := max(s.interval, time.Millisecond)
	ka := s.c.keepAliveCount(ms)
	perMs := uint32(min(ms/time.Millisecond, 1<<16))
	_, err := cn.call(ctx, &ua.ModifySubscriptionRequest{
		SubscriptionID: id, RequestedPublishingInterval: 0,
		// The same lifetime and keep-alive in time at a 1 ms interval; the
		// server caps the counts.
		RequestedLifetimeCount: sat32(uint64(ka) * 10 * uint64(perMs)), RequestedMaxKeepAliveCount: sat32(uint64(ka) * uint64(perMs)),
	})
	if err != nil {
		s.c.log.Debug("flush: ModifySubscription to the fastest interval refused; the values come at the next tick", "server", cn.uri, "err", err)
		return
	}
	interval, lifetime, keepAlive := s.params()
	restore := &ua.ModifySubscriptionRequest{
		SubscriptionID: id, RequestedPublishingInterval: interval,
		RequestedLifetimeCount: lifetime, RequestedMaxKeepAliveCount: keepAlive,
	}
	s.c.goAfter(ms, cn, func() {
		rctx, cancel := context.WithTimeout(s.c.ctx, s.c.opts.Timeout)
		defer cancel()
		if _, err := cn.call(rctx, restore); err != nil && !cn.isLost() {
			s.c.log.Warn("flush: the publishing interval could not be put back", "server", cn.uri, "subscription", id, "err", err)
		}
	})
}

// params are the publishing interval (milliseconds), lifetime count and
// keep-alive count the client asks for s's subscriptions.
func (s *userSub) params() (intervalMs float64, lifetime, keepAlive uint32) {
	ms := max(s.interval, time.Millisecond)
	ka := s.c.keepAliveCount(ms)
	return float64(ms) / float64(time.Millisecond), ka * 10, ka
}

// sat32 is n, or the largest uint32 when n is larger.
func sat32(n uint64) uint32 { return uint32(min(n, 1<<32-1)) }

// setMode switches p's items on cn to mode.
func (s *userSub) setMode(ctx context.Context, cn *conn, p *placement, mode ua.MonitoringMode) error {
	var ids []uint32
	for _, id := range p.items {
		if id != 0 {
			ids = append(ids, id)
		}
	}
	p.reporting = mode == ua.MonitoringModeReporting
	if len(ids) == 0 {
		return nil
	}
	_, err := cn.call(ctx, &ua.SetMonitoringModeRequest{SubscriptionID: p.id, MonitoringMode: mode, MonitoredItemIDs: ids})
	if err != nil {
		return fmt.Errorf("SetMonitoringMode %v: %w", mode, err)
	}
	return nil
}

// transfer moves subscription id to cn's session; false when the server
// refused (the subscription is gone there), so it must be re-created.
func (s *userSub) transfer(ctx context.Context, cn *conn, id uint32) (bool, error) {
	cn.mu.Lock()
	cn.subs[id] = s
	cn.mu.Unlock()
	s.mu.Lock()
	items := s.items
	s.mu.Unlock()
	s.setHost(cn, id, items)
	s.c.markTransferred(true)
	resp, err := cn.call(ctx, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{id}, SendInitialValues: true})
	if err != nil && transportError(err) {
		return false, err
	}
	if err == nil {
		tr := resp.(*ua.TransferSubscriptionsResponse)
		if len(tr.Results) == 1 && tr.Results[0].StatusCode == ua.StatusOK {
			return true, nil
		}
	}
	s.c.markTransferred(false)
	cn.mu.Lock()
	delete(cn.subs, id)
	cn.mu.Unlock()
	return false, nil
}

// setHost records where the active subscription lives. Another (conn,
// id) starts a new sequence of sequence numbers: only the same
// subscription activated on another channel (Mirrored) keeps its own, see
// adopt.
func (s *userSub) setHost(cn *conn, id uint32, items []uint32) {
	s.mu.Lock()
	s.setHostLocked(cn, id, items)
	s.mu.Unlock()
}

// setHostLocked is setHost with mu held.
func (s *userSub) setHostLocked(cn *conn, id uint32, items []uint32) {
	if s.host != cn || s.id != id {
		s.seqs = seqSet{}
	}
	s.host, s.id, s.uri, s.items = cn, id, cn.uri, items
}

// create creates the subscription and its monitored items on cn in mode,
// with the given queue size. For the active server (active) items the
// server refuses are reported once as a notification with the refusal's
// status; for another (a Hot placement) a refusal is an error.
// record is called with the subscription's id as soon as it exists (items
// nil) and again with the items' ids, so that no notification arrives
// before its placement is known.
func (s *userSub) create(ctx context.Context, cn *conn, mode ua.MonitoringMode, queue uint32, active bool, record func(id uint32, items []uint32)) (uint32, []uint32, error) {
	interval, lifetime, keepAlive := s.params()
	resp, err := cn.call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: interval,
		RequestedLifetimeCount:      lifetime,
		RequestedMaxKeepAliveCount:  keepAlive,
		PublishingEnabled:           true,
	})
	if err != nil {
		return 0, nil, fmt.Errorf("CreateSubscription: %w", err)
	}
	id := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	record(id, nil)
	cn.mu.Lock()
	cn.subs[id] = s
	cn.mu.Unlock()
	if m := s.c.mode(); m.hot() || m == ModeMirrored {
		// The values of an interruption wait at the server: on a backup
		// (Hot) or in the mirrored session until it is activated again.
		queue = s.c.opts.HotQueueSize
	}
	s.mu.Lock()
	if s.initial == nil {
		s.initial = make(map[*conn][]bool)
	}
	s.initial[cn] = slices.Repeat([]bool{true}, len(s.nodes))
	s.mu.Unlock()
	items := make([]*ua.MonitoredItemCreateRequest, len(s.nodes))
	for i, n := range s.nodes {
		sampling, filter := s.itemParams(i)
		attr, q := ua.AttributeIDValue, queue
		if i < len(s.itemSpec) && s.itemSpec[i].Events != nil {
			attr, q = ua.AttributeIDEventNotifier, EventQueueSize
		}
		items[i] = &ua.MonitoredItemCreateRequest{
			ItemToMonitor:  &ua.ReadValueID{NodeID: n, AttributeID: attr, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: mode,
			RequestedParameters: &ua.MonitoringParameters{
				ClientHandle: uint32(i), SamplingInterval: sampling,
				QueueSize: q, DiscardOldest: true, Filter: filter,
			},
		}
	}
	mresp, err := cn.call(ctx, &ua.CreateMonitoredItemsRequest{
		SubscriptionID: id, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items,
	})
	if err != nil {
		return id, nil, fmt.Errorf("CreateMonitoredItems: %w", err)
	}
	ids := make([]uint32, len(s.nodes))
	now := time.Now()
	var refused []ua.StatusCode
	for i, r := range mresp.(*ua.CreateMonitoredItemsResponse).Results {
		if r == nil || i >= len(s.nodes) {
			continue
		}
		if r.StatusCode != ua.StatusOK {
			refused = append(refused, r.StatusCode)
			if active {
				s.deliverRefusal(cn, now, uint32(i), r.StatusCode)
			}
			continue
		}
		ids[i] = r.MonitoredItemID
	}
	if len(refused) > 0 && !active {
		return id, ids, fmt.Errorf("%d of %d monitored items refused, first %w", len(refused), len(s.nodes), refused[0])
	}
	record(id, ids)
	return id, ids, nil
}

// itemParams are the sampling interval (ms) and filter of node i: its
// Item's (SubscribeItems), else the subscription's sampling interval and
// no filter.
func (s *userSub) itemParams(i int) (float64, *ua.ExtensionObject) {
	if i >= len(s.itemSpec) {
		return float64(s.sampling) / float64(time.Millisecond), ua.NewExtensionObject(nil)
	}
	it := s.itemSpec[i]
	if it.Events != nil {
		return 0, ua.NewExtensionObject(it.Events)
	}
	ms := float64(it.Sampling) / float64(time.Millisecond)
	if it.Sampling < 0 {
		ms = -1
	}
	if it.Deadband <= 0 {
		return ms, ua.NewExtensionObject(nil)
	}
	return ms, ua.NewExtensionObject(&ua.DataChangeFilter{
		Trigger: ua.DataChangeTriggerStatusValue, DeadbandType: uint32(ua.DeadbandTypeAbsolute), DeadbandValue: it.Deadband,
	})
}

// deliverRefusal reports a refused item to the subscriber once.
func (s *userSub) deliverRefusal(cn *conn, at time.Time, handle uint32, code ua.StatusCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || int(handle) >= len(s.nodes) {
		return
	}
	select {
	case s.out <- Notification{At: at, Node: s.nodes[handle], Value: &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: code}, Server: ServerRef{URI: cn.uri, URL: cn.url}}:
	case <-s.c.ctx.Done():
	}
}

// placeHot places the subscription on cn, a server that is not the active
// one, in a Hot mode: Sampling for Hot (a), Reporting for Hot (b). A
// server that refuses it is "not hot" for this subscription: logged once,
// the subscription is removed there and the others go on. opMu must be
// held.
func (s *userSub) placeHot(ctx context.Context, cn *conn) {
	s.mu.Lock()
	skip := s.ended || s.host == cn || s.others[cn] != nil || cn.isLost()
	s.mu.Unlock()
	if skip {
		return
	}
	mode := ua.MonitoringModeSampling
	if s.c.mode() == ModeHotB {
		mode = ua.MonitoringModeReporting
	}
	id, _, err := s.create(ctx, cn, mode, s.c.opts.HotQueueSize, false, func(id uint32, items []uint32) {
		s.mu.Lock()
		if s.others == nil {
			s.others = make(map[*conn]*placement)
		}
		s.others[cn] = &placement{id: id, items: items, reporting: mode == ua.MonitoringModeReporting}
		s.mu.Unlock()
	})
	if err != nil {
		s.forget(cn)
		s.notHot(cn, id, err)
		return
	}
	s.mu.Lock()
	delete(s.hotTries, cn)
	s.mu.Unlock()
}

// notHot records that cn's server refused the Hot placement.
func (s *userSub) notHot(cn *conn, id uint32, err error) {
	if id != 0 {
		s.leave(cn, id)
	}
	s.mu.Lock()
	if s.hotLog == nil {
		s.hotLog = make(map[string]struct{})
	}
	_, logged := s.hotLog[cn.uri]
	s.hotLog[cn.uri] = struct{}{}
	s.mu.Unlock()
	if !logged && !cn.isLost() {
		s.c.log.Warn("server is not hot for a subscription: it refused it; the other servers go on, and the client asks it again later", "server", cn.uri, "url", cn.url, "err", err)
	}
	s.retryHot(cn)
}

// hotRetryMax bounds the back-off between two Hot placements on a server
// that refused one.
const hotRetryMax = 30 * time.Second

// retryHot places s on cn again after a back-off (MinBackoff doubling up
// to hotRetryMax) while cn serves: a refusal can heal — a node that has
// just restarted answers BadNodeIdUnknown until its deployment has
// loaded, a full server frees items. Without it such a server would stay
// out of the Hot placement until its connection broke.
func (s *userSub) retryHot(cn *conn) {
	s.mu.Lock()
	if s.hotTries == nil {
		s.hotTries = make(map[*conn]int)
	}
	n := min(s.hotTries[cn], 16)
	s.hotTries[cn]++
	ended := s.ended
	s.mu.Unlock()
	if ended || cn.isLost() {
		return
	}
	c := s.c
	c.goAfter(min(c.opts.MinBackoff<<n, hotRetryMax), cn, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.mode().hot() && cn.srv.conn == cn {
			c.goPlaceHot(s, cn)
		}
	})
}

// demote turns the active placement on cn (being left while cn still
// serves) into a Hot one: Sampling for Hot (a), reporting on for Hot (b).
// opMu must be held.
func (s *userSub) demote(ctx context.Context, cn *conn, id uint32, items []uint32) {
	p := &placement{id: id, items: items, reporting: true}
	if s.c.mode() == ModeHotA {
		if err := s.setMode(ctx, cn, p, ua.MonitoringModeSampling); err != nil {
			s.c.log.Warn("could not switch the old server's items to Sampling; removing them", "server", cn.uri, "err", err)
			s.leave(cn, id)
			return
		}
	}
	s.mu.Lock()
	if s.others == nil {
		s.others = make(map[*conn]*placement)
	}
	s.others[cn] = p
	s.mu.Unlock()
}

// forget drops what the subscription had on cn (lost).
func (s *userSub) forget(cn *conn) {
	s.mu.Lock()
	delete(s.others, cn)
	delete(s.initial, cn)
	if cn.isLost() {
		delete(s.hotTries, cn)
	}
	s.mu.Unlock()
}

// leave deletes the subscription from cn (a planned move: cn still
// serves), without waiting for the answer.
func (s *userSub) leave(cn *conn, id uint32) {
	cn.mu.Lock()
	delete(cn.subs, id)
	cn.mu.Unlock()
	s.forget(cn)
	if cn.isLost() {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.c.opts.Timeout)
		defer cancel()
		_, _ = cn.call(ctx, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{id}})
	}()
}

// seqSet is the sequence numbers delivered from one server subscription,
// bounded: only those within seqKeep of the newest are remembered (two
// Publish loops may hand messages over out of order, so a high-water mark
// alone would drop one).
type seqSet struct {
	newest uint32
	seen   map[uint32]struct{}
}

// seqKeep bounds seqSet: far more than the messages a server retains for
// Republish.
const seqKeep = 1024

// add records n; false when it was recorded already or is older than
// what is remembered.
func (q *seqSet) add(n uint32) bool {
	if q.seen == nil {
		q.seen = make(map[uint32]struct{})
		q.newest = n
	}
	if int32(q.newest-n) > seqKeep {
		return false
	}
	if _, ok := q.seen[n]; ok {
		return false
	}
	q.seen[n] = struct{}{}
	if int32(n-q.newest) > 0 {
		q.newest = n
	}
	if len(q.seen) > 2*seqKeep {
		for x := range q.seen {
			if int32(q.newest-x) > seqKeep {
				delete(q.seen, x)
			}
		}
	}
	return true
}
