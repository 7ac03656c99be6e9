package mirror

import (
	"errors"
	"log/slog"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// reader applies the received batches in order. Engine calls run with no
// member lock held, so the hooks of the sessions served here never wait
// for a peer's records to be applied.
func (m *Member) reader() {
	defer m.wg.Done()
	for {
		select {
		case <-m.done:
			return
		case in := <-m.inbox:
			if in.barrier != nil {
				close(in.barrier)
				continue
			}
			for _, work := range m.receive(in) {
				work()
			}
		}
	}
}

// receive takes one batch: the acknowledgement it carries, a resync
// request, and its records, which it turns into engine work.
func (m *Member) receive(in inbound) []func() {
	h, recs, err := decodeBatch(in.batch)
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.peers[in.from]
	if p == nil || m.closed {
		m.stats.Dropped["not-a-peer"]++
		if !m.closed && len(m.strangers) < maxStrangers {
			m.strangers[in.from] = true
		}
		return nil
	}
	m.stats.BytesIn += uint64(len(in.batch))
	if err != nil {
		m.stats.Dropped["invalid-batch"]++
		m.log.Warn("mirror: invalid batch refused whole; asking for a new stream", "peer", in.from, "err", err)
		if o := m.origins[in.from]; o != nil {
			// Its records are lost: what is held of the peer is not
			// complete until the new stream's snapshot arrives.
			o.broken = true
		}
		p.resync = true
		m.signal()
		return nil
	}
	m.ackedLocked(p, h.ackEpoch, h.ackSeq, now)
	if h.flags&flagResync != 0 {
		m.log.Info("mirror: peer lost this member's stream; starting again with a snapshot", "peer", p.name)
		m.restartLocked(p, now)
	}
	if h.seq == 0 {
		return nil
	}
	o := m.origins[in.from]
	if o == nil {
		o = &origin{name: in.from, sessions: make(map[string]*replicaSess), orphans: make(map[uint32]time.Duration)}
		m.origins[in.from] = o
	}
	var work []func()
	switch {
	case h.epoch != o.epoch && h.seq == 1:
		work = m.resetOriginLocked(o, h.epoch)
	case h.epoch != o.epoch || o.broken || h.seq != o.seq+1:
		if !o.broken {
			m.log.Warn("mirror: a batch of the peer is missing; asking for a new stream", "peer", in.from,
				"epoch", h.epoch, "seq", h.seq, "want", o.seq+1)
		}
		o.broken = true
		p.resync = true
		m.signal()
		return nil
	}
	o.seq = h.seq
	m.stats.RecordsIn += uint64(len(recs))
	for _, r := range recs {
		if w := m.applyLocked(o, r); w != nil {
			work = append(work, w)
		}
	}
	return work // acknowledged by Receive when it was queued
}

// resetOriginLocked starts epoch of o: what was held of it is dropped.
// m.mu must be held.
func (m *Member) resetOriginLocked(o *origin, epoch uint64) []func() {
	var work []func()
	for id, rs := range o.sessions {
		work = append(work, m.forgetLocked(rs, true))
		delete(o.sessions, id)
	}
	o.epoch, o.seq, o.ready, o.broken = epoch, 0, false, false
	return work
}

// orphanLocked forgets a replica session that ended without deleting its
// subscriptions: they stay, orphaned, for a TransferSubscriptions of the
// origin's client. The origin expires them after their lifetime and says
// so (kSubGone); should it leave first, housekeep drops them once their
// lifetime has passed since. m.mu must be held.
func (m *Member) orphanLocked(o *origin, rs *replicaSess) func() {
	closeSess := m.forgetLocked(rs, false)
	e, sid := m.engine, subscription.SessionID(rs.id)
	return func() {
		subs := e.Export(sid)
		closeSess()
		m.mu.Lock()
		defer m.mu.Unlock()
		cur := m.origins[o.name]
		if cur == nil { // housekeep forgot o meanwhile
			cur = o
			m.origins[o.name] = o
		}
		for _, st := range subs {
			p := st.Params
			cur.orphans[st.ID] = time.Duration(float64(p.RequestedLifetimeCount) * p.RequestedPublishingInterval * float64(time.Millisecond))
		}
	}
}

// forgetLocked removes a replica session from the indexes and returns the
// engine work that drops its subscriptions. m.mu must be held.
func (m *Member) forgetLocked(rs *replicaSess, deleteSubs bool) func() {
	if m.byHash[rs.ms.TokenHash] == rs {
		delete(m.byHash, rs.ms.TokenHash)
	}
	e, sid := m.engine, subscription.SessionID(rs.id)
	return func() { e.SessionClosed(sid, deleteSubs) }
}

// applyLocked applies one record of o and returns the engine work it
// needs (nil: none). m.mu must be held.
func (m *Member) applyLocked(o *origin, r record) func() {
	e, sid := m.engine, subscription.SessionID(r.sess)
	if r.kind == kSnapshotEnd {
		o.ready = true
		m.log.Info("mirror: this member holds every session of the peer", "origin", o.name, "sessions", len(o.sessions))
		return nil
	}
	if r.kind == kSubGone {
		id := r.sub.id
		delete(o.orphans, id)
		return func() { e.DropReplica(id) }
	}
	if r.kind == kTaken {
		return m.takenLocked(o, r.sess)
	}
	rs := o.sessions[r.sess]
	if r.kind == kSession {
		return m.sessionLocked(o, rs, r)
	}
	if rs == nil {
		return nil // a record of a session not known yet: its snapshot follows
	}
	window, queue := m.opts.MatchWindow, m.opts.QueueSize
	switch r.kind {
	case kSessionGone:
		delete(o.sessions, r.sess)
		if r.gone {
			return m.forgetLocked(rs, true)
		}
		return m.orphanLocked(o, rs)
	case kSub:
		s, user := r.sub, rs.ms.User
		return func() {
			if err := e.ReplicaSubscription(sid, s.id, s.params, s.nextSeq, window); err != nil {
				m.refused(o.name, r.sess, "subscription", err)
				return
			}
			e.SetOwner(s.id, user) // a session of this user only may transfer it here
		}
	case kItems:
		it := r.item
		return func() {
			if _, err := e.ReplicaItems(sid, it.req, it.ids, queue); err != nil {
				m.refused(o.name, r.sess, "items", err)
			}
		}
	case kRequest:
		req := r.req
		if tr, ok := req.(*ua.TransferSubscriptionsRequest); ok {
			// A session holds them again: o's, whichever origin they
			// were orphaned by (o may have taken them from a member that
			// died).
			for _, other := range m.origins {
				for _, id := range tr.SubscriptionIDs {
					delete(other.orphans, id)
				}
			}
		}
		user := rs.ms.User
		return func() {
			applyRequest(e, sid, req)
			if tr, ok := req.(*ua.TransferSubscriptionsRequest); ok {
				for _, id := range tr.SubscriptionIDs {
					e.SetOwner(id, user)
				}
			}
		}
	case kSent:
		pub := r.pub
		return func() { e.Reported(sid, pub.SubscriptionID, pub.NotificationMessage) }
	case kAck:
		acks := r.acks
		return func() { e.Acked(sid, acks) }
	}
	return nil
}

// sessionLocked creates or updates a replica session. m.mu must be held.
func (m *Member) sessionLocked(o *origin, rs *replicaSess, r record) func() {
	if s := m.served[r.sess]; s != nil {
		return nil // served here: a late record from before a takeover
	}
	if rs == nil {
		node, err := ua.ParseNodeID(r.sess)
		if err != nil {
			m.stats.Dropped["invalid-session-id"]++
			return nil
		}
		rs = &replicaSess{id: r.sess, node: node, origin: o}
		o.sessions[r.sess] = rs
	}
	if m.byHash[rs.ms.TokenHash] == rs {
		delete(m.byHash, rs.ms.TokenHash)
	}
	s := r.ms
	rs.ms = uaserver.MirroredSession{
		ID: rs.node, TokenHash: s.tokenHash, Name: s.name, Timeout: s.timeout, User: s.user, Role: s.role,
		Policy: s.policy, Mode: s.mode, ClientThumbprint: s.thumb, ServerCert: s.cert, Nonce: s.nonce,
		Activated: s.activated,
	}
	m.byHash[s.tokenHash] = rs
	return nil
}

// takenLocked: the session key moved to o's member (a client activated it
// there). m.mu must be held.
func (m *Member) takenLocked(o *origin, key string) func() {
	if s := m.served[key]; s != nil {
		// Its client moved: the copy here must not be activated again,
		// and the peer's snapshot of it, which follows, makes it a
		// replica here.
		delete(m.served, key)
		m.log.Info("mirror: a session served here was taken over by a peer", "session", key, "peer", o.name)
		end, node := m.endSession, s.ms.ID
		if end == nil || node == nil {
			return nil
		}
		return func() { end(node) }
	}
	for _, other := range m.origins {
		if other == o {
			continue
		}
		if rs := other.sessions[key]; rs != nil {
			delete(other.sessions, key)
			return m.forgetLocked(rs, true)
		}
	}
	return nil
}

// refused logs a record the engine refused (the session's subscription
// stays Warm here).
func (m *Member) refused(origin, sess, what string, err error) {
	m.mu.Lock()
	reason := "refused"
	if errors.Is(err, subscription.ErrReplicaConflict) {
		reason = "id-conflict"
	}
	m.stats.Dropped[reason]++
	m.mu.Unlock()
	m.log.Warn("mirror: a peer's "+what+" not mirrored here", "origin", origin, "session", sess, "err", err)
}

// applyRequest runs a mirrored subscription service request on the
// replica of session sid.
func applyRequest(e *subscription.Engine, sid subscription.SessionID, req ua.Request) {
	switch r := req.(type) {
	case *ua.ModifySubscriptionRequest:
		_, _ = e.ModifySubscription(sid, r)
	case *ua.SetPublishingModeRequest:
		_, _ = e.SetPublishingMode(sid, r)
	case *ua.DeleteSubscriptionsRequest:
		_, _ = e.DeleteSubscriptions(sid, r)
	case *ua.ModifyMonitoredItemsRequest:
		_, _ = e.ModifyMonitoredItems(sid, r)
	case *ua.SetMonitoringModeRequest:
		_, _ = e.SetMonitoringMode(sid, r)
	case *ua.SetTriggeringRequest:
		_, _ = e.SetTriggering(sid, r)
	case *ua.DeleteMonitoredItemsRequest:
		_, _ = e.DeleteMonitoredItems(sid, r)
	case *ua.TransferSubscriptionsRequest:
		_, _ = e.TransferSubscriptions(sid, r)
	}
}

// Lookup implements uaserver.Mirror: the session of a token hash held for
// a peer whose snapshot arrived whole. A session of a peer whose mirror
// is incomplete is not offered: its client falls back to Warm.
func (m *Member) Lookup(tokenHash [32]byte) (uaserver.MirroredSession, bool) {
	m.settle()
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.byHash[tokenHash]
	if rs == nil {
		for name, o := range m.origins {
			if !o.ready || o.broken {
				m.stats.Takeovers["not-ready"]++
				m.lines.Log(m.log, slog.LevelWarn, "not-ready:"+name, m.clock.Now(),
					"mirror: a client asks for a session this member does not hold while the mirror of a peer is not complete; it falls back to Warm",
					"origin", name)
				return uaserver.MirroredSession{}, false
			}
		}
		m.stats.Takeovers["unknown"]++
		m.lines.Log(m.log, slog.LevelWarn, "unknown", m.clock.Now(),
			"mirror: a client asks for a session no member mirrored here (it ended, or its server died before this member held its mirror); it falls back to Warm")
		return uaserver.MirroredSession{}, false
	}
	if o := rs.origin; !o.ready || o.broken {
		m.stats.Takeovers["not-ready"]++
		m.lines.Log(m.log, slog.LevelWarn, "not-ready:"+o.name, m.clock.Now(),
			"mirror: a client asks for a session whose mirror is not complete here; it falls back to Warm",
			"session", rs.id, "origin", o.name)
		return uaserver.MirroredSession{}, false
	}
	return rs.ms, true
}

// TakenOver implements uaserver.Mirror: the session is served here from
// now on; its subscriptions are promoted and the peers told, each getting
// a snapshot of it.
func (m *Member) TakenOver(id *ua.NodeID) {
	key := sessionKey(id)
	m.mu.Lock()
	var ms uaserver.MirroredSession
	for _, o := range m.origins {
		if rs := o.sessions[key]; rs != nil {
			ms = rs.ms
			delete(o.sessions, key)
			if m.byHash[rs.ms.TokenHash] == rs {
				delete(m.byHash, rs.ms.TokenHash)
			}
			// Its client left the member that served it, most likely
			// dead: the session's messages do not wait for that member's
			// acknowledgement (AckTimeout) until it shows it is alive by
			// catching up.
			if p := m.peers[o.name]; p != nil && p.ready && !p.stalled {
				p.stalled = true
			}
		}
	}
	m.served[key] = &served{ms: ms}
	m.stats.Takeovers["ok"]++
	for _, p := range m.peers {
		m.queueLocked(p, encSimple(kTaken, key))
		p.snapshot = append(p.snapshot, key)
	}
	e := m.engine
	m.mu.Unlock()
	n := e.Promote(subscription.SessionID(key))
	m.log.Info("mirror: session taken over; its subscriptions are served here", "session", key, "subscriptions", n)
	m.signal()
}
