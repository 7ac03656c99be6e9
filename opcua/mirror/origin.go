package mirror

import (
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

var _ uaserver.Mirror = (*Member)(nil)

// Reasons a session is put back to Warm (Stats.Dropped).
const (
	DropLag      = "lag"       // a peer held MaxLagBytes unacknowledged
	DropTooLarge = "too-large" // one record would not fit a batch
	DropEncode   = "encode"    // a request could not be encoded
)

// Session implements uaserver.Mirror: a session was created or activated
// here.
func (m *Member) Session(ms uaserver.MirroredSession) {
	id := sessionKey(ms.ID)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.served[id]
	if s == nil {
		s = &served{}
		m.served[id] = s
	}
	s.ms = ms
	if s.warm {
		return
	}
	m.emitLocked(id, encSession(id, sessionOf(ms)))
}

func sessionOf(ms uaserver.MirroredSession) sessionRec {
	return sessionRec{
		tokenHash: ms.TokenHash, name: ms.Name, timeout: ms.Timeout, user: ms.User, role: ms.Role,
		policy: ms.Policy, mode: ms.Mode, thumb: ms.ClientThumbprint, cert: ms.ServerCert, nonce: ms.Nonce,
		activated: ms.Activated,
	}
}

// SessionEnded implements uaserver.Mirror.
func (m *Member) SessionEnded(id *ua.NodeID, deleteSubscriptions bool) {
	key := sessionKey(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.served[key]
	if s == nil {
		return
	}
	delete(m.served, key)
	if !s.warm {
		m.emitLocked(key, encSessionGone(key, deleteSubscriptions))
	}
}

// Service implements uaserver.Mirror: the replicas apply what changed.
func (m *Member) Service(id *ua.NodeID, req ua.Request, resp ua.Response) {
	key := sessionKey(id)
	var recs [][]byte
	var err error
	switch r := req.(type) {
	case *ua.RepublishRequest:
		return
	case *ua.TransferSubscriptionsRequest:
		m.transferred(key, r.SubscriptionIDs)
		b, err := encRequest(key, req)
		recs = append(recs, b)
		if err != nil {
			recs = nil
		}
		m.emitAll(key, recs, err)
		return
	case *ua.CreateSubscriptionRequest:
		res, ok := resp.(*ua.CreateSubscriptionResponse)
		if !ok {
			return
		}
		recs = append(recs, encSub(key, subRec{id: res.SubscriptionID, nextSeq: 1, params: &ua.CreateSubscriptionRequest{
			RequestedPublishingInterval: res.RevisedPublishingInterval,
			RequestedLifetimeCount:      res.RevisedLifetimeCount,
			RequestedMaxKeepAliveCount:  res.RevisedMaxKeepAliveCount,
			MaxNotificationsPerPublish:  r.MaxNotificationsPerPublish,
			PublishingEnabled:           r.PublishingEnabled,
			Priority:                    r.Priority,
		}}))
	case *ua.CreateMonitoredItemsRequest:
		res, ok := resp.(*ua.CreateMonitoredItemsResponse)
		if !ok || len(res.Results) != len(r.ItemsToCreate) {
			return
		}
		recs, err = itemRecords(key, r, res)
	default:
		var b []byte
		b, err = encRequest(key, req)
		recs = append(recs, b)
	}
	m.emitAll(key, recs, err)
}

// emitAll queues the records of a service of session key, or, when they
// could not be encoded (err), puts the session back to Warm.
func (m *Member) emitAll(key string, recs [][]byte, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.served[key]
	if s == nil || s.warm {
		return
	}
	if err != nil {
		m.dropLocked(key, s, DropEncode)
		return
	}
	for _, b := range recs {
		if !m.emitLocked(key, b) {
			return
		}
	}
}

// transferred: a client moved subscriptions ids to session key, served
// here. Those that were orphaned replicas (their session ended on a member
// that died) are served here from now on.
func (m *Member) transferred(key string, ids []uint32) {
	m.mu.Lock()
	for _, o := range m.origins {
		for _, id := range ids {
			delete(o.orphans, id)
		}
	}
	e := m.engine
	m.mu.Unlock()
	if e == nil {
		return
	}
	if n := e.Promote(subscription.SessionID(key)); n > 0 {
		m.log.Info("mirror: orphaned subscriptions transferred to a session served here", "session", key, "subscriptions", n)
	}
}

// itemRecords describes created items with their revised parameters, in
// records of at most itemsPerRecord items.
func itemRecords(key string, r *ua.CreateMonitoredItemsRequest, res *ua.CreateMonitoredItemsResponse) ([][]byte, error) {
	var out [][]byte
	cur := itemsRec{sub: r.SubscriptionID, req: newItemsRequest(r.SubscriptionID, r.TimestampsToReturn)}
	flush := func() error {
		if len(cur.ids) == 0 {
			return nil
		}
		b, err := encItems(key, cur)
		if err != nil {
			return err
		}
		out = append(out, b)
		cur = itemsRec{sub: r.SubscriptionID, req: newItemsRequest(r.SubscriptionID, r.TimestampsToReturn)}
		return nil
	}
	for i, res := range res.Results {
		c := r.ItemsToCreate[i]
		if res == nil || res.StatusCode != ua.StatusOK || c == nil || c.RequestedParameters == nil {
			continue
		}
		p := *c.RequestedParameters
		p.SamplingInterval, p.QueueSize = res.RevisedSamplingInterval, res.RevisedQueueSize
		if p.Filter == nil {
			p.Filter = ua.NewExtensionObject(nil)
		}
		item := &ua.MonitoredItemCreateRequest{ItemToMonitor: c.ItemToMonitor, MonitoringMode: c.MonitoringMode, RequestedParameters: &p}
		cur.ids = append(cur.ids, res.MonitoredItemID)
		cur.req.ItemsToCreate = append(cur.req.ItemsToCreate, item)
		if len(cur.ids) == itemsPerRecord {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func newItemsRequest(sub uint32, ttr ua.TimestampsToReturn) *ua.CreateMonitoredItemsRequest {
	return &ua.CreateMonitoredItemsRequest{RequestHeader: emptyRequestHeader(), SubscriptionID: sub, TimestampsToReturn: ttr}
}

// Acked implements uaserver.Mirror.
func (m *Member) Acked(id *ua.NodeID, acks []*ua.SubscriptionAcknowledgement) {
	key := sessionKey(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.served[key]; s != nil && !s.warm {
		m.emitLocked(key, encAck(key, acks))
	}
}

// Sent implements uaserver.Mirror: with Sync it returns once every ready
// peer acknowledged the message, or after AckTimeout; a peer that missed
// it is not waited for again until it has caught up.
func (m *Member) Sent(id *ua.NodeID, resp *ua.PublishResponse) {
	key := sessionKey(id)
	b, err := encSent(key, resp)
	m.mu.Lock()
	s := m.served[key]
	if s == nil || s.warm {
		m.mu.Unlock()
		return
	}
	if err != nil {
		m.dropLocked(key, s, DropEncode)
		m.mu.Unlock()
		return
	}
	if !m.emitLocked(key, b) || !m.opts.Sync {
		m.mu.Unlock()
		return
	}
	targets := make(map[*peer]uint64, len(m.peers))
	for _, p := range m.peers {
		if p.ready && !p.stalled {
			targets[p] = p.recNext - 1
		}
	}
	m.mu.Unlock()
	if len(targets) > 0 {
		m.await(targets)
	}
}

// await waits until every peer of targets acknowledged its record index,
// or AckTimeout; the late ones are marked stalled.
func (m *Member) await(targets map[*peer]uint64) {
	deadline := m.clock.NewTimer(m.opts.AckTimeout)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		waiting := false
		for p, rec := range targets {
			if m.peers[p.name] == p && !p.stalled && p.acked < rec {
				waiting = true
			}
		}
		ch := m.acked
		m.mu.Unlock()
		if !waiting {
			return
		}
		select {
		case <-ch:
		case <-m.done:
			return
		case <-deadline.Chan():
			m.mu.Lock()
			for p, rec := range targets {
				if m.peers[p.name] == p && !p.stalled && p.acked < rec {
					p.stalled = true
					m.stats.Dropped["ack-timeout"]++
					m.log.Warn("mirror: a peer did not acknowledge in time; not waited for until it catches up",
						"peer", p.name, "timeout", m.opts.AckTimeout)
				}
			}
			m.mu.Unlock()
			return
		}
	}
}

// emitLocked queues record b of session key for every peer. A peer that
// would hold more than MaxLagBytes puts the session back to Warm. It
// reports whether the session is still mirrored. m.mu must be held.
func (m *Member) emitLocked(key string, b []byte) bool {
	if len(b) > maxRecordBytes {
		m.dropLocked(key, m.served[key], DropTooLarge)
		return false
	}
	for _, p := range m.peers {
		if p.lag+len(b) > m.opts.MaxLagBytes {
			m.dropLocked(key, m.served[key], DropLag)
			return false
		}
	}
	for _, p := range m.peers {
		m.queueLocked(p, b)
	}
	m.stats.RecordsOut += uint64(len(m.peers))
	m.signal()
	return true
}

// queueLocked appends record b to p's stream. m.mu must be held.
func (m *Member) queueLocked(p *peer, b []byte) {
	p.pending = append(p.pending, b)
	p.pendIdx = append(p.pendIdx, p.recNext)
	p.recNext++
	p.lag += len(b)
}

// dropLocked puts session key back to Warm: the peers forget it, and
// nothing of it is mirrored any more. m.mu must be held.
func (m *Member) dropLocked(key string, s *served, why string) {
	if s == nil || s.warm {
		return
	}
	s.warm, s.why = true, why
	m.stats.Dropped[why]++
	m.log.Warn("mirror: session back to Warm: its clients will rebuild after a failover", "session", key, "why", why)
	b := encSessionGone(key, true)
	for _, p := range m.peers {
		m.queueLocked(p, b)
	}
	m.signal()
}

// snapshotLocked queues the records of one served session for p: the
// session, its subscriptions, items, triggering links and the messages
// kept for Republish. m.mu must be held.
func (m *Member) snapshotLocked(p *peer, key string) {
	s := m.served[key]
	if s == nil || s.warm || m.engine == nil {
		return
	}
	recs := [][]byte{encSession(key, sessionOf(s.ms))}
	for _, st := range m.engine.Export(subscription.SessionID(key)) {
		recs = append(recs, encSub(key, subRec{id: st.ID, nextSeq: st.NextSeq, params: st.Params}))
		for _, g := range st.Items {
			for i := 0; i < len(g.IDs); i += itemsPerRecord {
				j := min(i+itemsPerRecord, len(g.IDs))
				req := newItemsRequest(st.ID, g.TTR)
				req.ItemsToCreate = g.Items[i:j]
				b, err := encItems(key, itemsRec{sub: st.ID, ids: g.IDs[i:j], req: req})
				if err != nil {
					m.dropLocked(key, s, DropEncode)
					return
				}
				recs = append(recs, b)
			}
		}
		for trig, links := range st.Links {
			b, err := encRequest(key, &ua.SetTriggeringRequest{RequestHeader: emptyRequestHeader(),
				SubscriptionID: st.ID, TriggeringItemID: trig, LinksToAdd: links, LinksToRemove: []uint32{}})
			if err == nil {
				recs = append(recs, b)
			}
		}
		for _, msg := range st.Retrans {
			b, err := encSent(key, &ua.PublishResponse{SubscriptionID: st.ID, NotificationMessage: msg})
			if err == nil {
				recs = append(recs, b)
			}
		}
	}
	for _, b := range recs {
		if len(b) > maxRecordBytes {
			m.dropLocked(key, s, DropTooLarge)
			return
		}
	}
	for _, b := range recs {
		m.queueLocked(p, b)
	}
	m.stats.RecordsOut += uint64(len(recs))
}

// expired is the engine's OnExpire hook: a subscription served here ran
// out of lifetime; the replicas drop theirs.
func (m *Member) expired(subID uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.peers) == 0 {
		return
	}
	b := encSubGone("", subID)
	for _, p := range m.peers {
		m.queueLocked(p, b)
	}
	m.signal()
}
