package mirror

import (
	"time"
)

// outBatch is one batch ready to send.
type outBatch struct {
	to string
	b  []byte
}

// writer sends the queued records and acknowledgements, and runs the
// housekeeping: it is the only goroutine that calls Transport.Send, so one
// peer's batches leave in order.
func (m *Member) writer() {
	defer m.wg.Done()
	tick := m.clock.NewTicker(housekeeping)
	defer tick.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-m.wake:
		case <-tick.Chan():
			m.housekeep()
		}
		for {
			out, more := m.collect()
			for _, o := range out {
				if err := m.opts.Transport.Send(o.to, o.b); err != nil {
					m.log.Debug("mirror: batch not sent", "peer", o.to, "err", err)
				}
			}
			if !more {
				break
			}
		}
	}
}

// collect builds at most one batch per peer from its queued records (a
// snapshot's next session first) and its owed acknowledgement. more: some
// peer has records left.
func (m *Member) collect() (out []outBatch, more bool) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.peers {
		// A snapshot is queued one session at a time, so that the hooks of
		// the sessions served here never wait behind a whole one. Live
		// records put the next session off by one batch at most: records
		// that keep coming would otherwise starve the snapshot, and the
		// peer would never be ready.
		switch {
		case len(p.snapshot) == 0:
		case len(p.pending) == 0 || p.snapWaited:
			p.snapWaited = false
			key := p.snapshot[0]
			p.snapshot = p.snapshot[1:]
			m.snapshotLocked(p, key)
			if len(p.snapshot) == 0 {
				m.snapEndLocked(p)
			}
		default:
			p.snapWaited = true
		}
		if len(p.pending) == 0 && !p.needAck && !p.resync {
			continue
		}
		h := header{epoch: p.epoch, ackEpoch: p.ackTo.epoch, ackSeq: p.ackTo.seq}
		if p.resync {
			h.flags |= flagResync
		}
		size, n := 0, 0
		for n < len(p.pending) && (n == 0 || size+len(p.pending[n]) <= maxBatchBytes-64) {
			size += len(p.pending[n])
			n++
		}
		if n > 0 {
			p.seq++
			h.seq = p.seq
			p.unacked = append(p.unacked, sentBatch{seq: p.seq, lastRec: p.pendIdx[n-1], bytes: size, at: now})
		}
		b := appendHeader(make([]byte, 0, size+64), h, n)
		for _, r := range p.pending[:n] {
			b = append(b, r...)
		}
		clear(p.pending[:n])
		p.pending, p.pendIdx = p.pending[n:], p.pendIdx[n:]
		if len(p.pending) == 0 {
			p.pending, p.pendIdx = nil, nil
		}
		p.needAck, p.resync = false, false
		m.stats.BytesOut += uint64(len(b))
		out = append(out, outBatch{to: p.name, b: b})
		if len(p.pending) > 0 || len(p.snapshot) > 0 {
			more = true
		}
	}
	return out, more
}

// housekeep restarts the stream of a peer that acknowledged nothing for
// resyncAfter, and ends the replica sessions whose origin left and whose
// timeout passed since, and the orphaned replica subscriptions whose
// lifetime did.
func (m *Member) housekeep() {
	now := m.clock.Now()
	var work []func()
	defer func() {
		for _, w := range work {
			w()
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.peers {
		if len(p.unacked) > 0 && now.Sub(p.unacked[0].at) > resyncAfter {
			m.log.Info("mirror: peer acknowledges nothing; its stream starts again with a snapshot", "peer", p.name)
			m.restartLocked(p, now)
		}
	}
	for name, o := range m.origins {
		if o.lost.IsZero() {
			continue
		}
		for id, rs := range o.sessions {
			if now.Sub(o.lost) >= rs.ms.Timeout {
				work = append(work, m.forgetLocked(rs, true))
				delete(o.sessions, id)
			}
		}
		for id, lifetime := range o.orphans {
			if now.Sub(o.lost) >= lifetime {
				e := m.engine
				work = append(work, func() { e.DropReplica(id) })
				delete(o.orphans, id)
			}
		}
		if len(o.sessions) == 0 && len(o.orphans) == 0 {
			delete(m.origins, name)
		}
	}
}

// ackedLocked applies the acknowledgement of p's stream up to batch seq
// of epoch. m.mu must be held.
func (m *Member) ackedLocked(p *peer, epoch, seq uint64, now time.Time) {
	if epoch != p.epoch || seq == 0 {
		return
	}
	n := 0
	for n < len(p.unacked) && p.unacked[n].seq <= seq {
		b := p.unacked[n]
		p.acked = b.lastRec
		p.lag -= b.bytes
		if m.opts.ObserveLag != nil {
			m.opts.ObserveLag(p.name, now.Sub(b.at))
		}
		n++
	}
	if n == 0 {
		return
	}
	clear(p.unacked[:n])
	p.unacked = p.unacked[n:]
	if p.snapEnd > 0 && p.acked >= p.snapEnd {
		p.snapEnd = 0
		p.ready = true
		m.log.Info("mirror: peer holds every session served here", "peer", p.name,
			"after", now.Sub(p.started).Round(time.Millisecond))
	}
	if p.stalled && len(p.unacked) == 0 && len(p.pending) == 0 {
		p.stalled = false
	}
	close(m.acked)
	m.acked = make(chan struct{})
}

// snapEndLocked queues the end of p's snapshot. m.mu must be held.
func (m *Member) snapEndLocked(p *peer) {
	p.snapEnd = p.recNext
	m.queueLocked(p, encSimple(kSnapshotEnd, ""))
}
