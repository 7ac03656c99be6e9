package subscription

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
)

// subscription is one OPC UA subscription (Part 4 §5.13.1).
type subscription struct {
	id uint32

	// Lock-free fields, read by Publish without taking mu.
	late         atomic.Bool   // wants to send and waits for a Publish request
	gone         atomic.Bool   // deleted: its items stop queuing before they are retired
	priority     atomic.Uint32 // Priority of the latest Create/ModifySubscription
	lastActivity atomic.Int64  // unix nanoseconds of the latest client activity

	// due and heapIdx belong to the scheduler; scheduler.mu must be held.
	due     time.Time
	heapIdx int

	mu sync.Mutex
	// Everything below is guarded by mu. sess is written with Engine.mu
	// held as well, so holding either lock is enough to read it.
	sess        *session // nil while orphaned (session closed, not deleted)
	deleted     bool
	interval    time.Duration // publishing interval
	lifetime    uint32        // revised LifetimeCount
	keepAlive   uint32        // revised MaxKeepAliveCount
	maxNotif    uint32        // notifications per Publish; 0 = unlimited
	enabled     bool          // PublishingEnabled
	items       map[uint32]*item
	reserved    int                            // room set aside by CreateMonitoredItems calls in flight
	polled      map[uint32]*item               // items sampled by Source.Read
	intervals   map[time.Duration]int          // item count per sampling interval > 0
	sampleEvery time.Duration                  // smallest key of intervals; 0 = no sampling tick
	nextPublish time.Time                      // next publishing tick
	nextSample  time.Time                      // next sampling tick when sampleEvery > 0
	seq         uint32                         // sequence number of the next NotificationMessage
	keepAlives  uint32                         // publishing cycles since the last message
	sentOnce    bool                           // a message (data or keep-alive) was sent
	slab        []ua.MonitoredItemNotification // reused notification storage
	dvSlab      []ua.DataValue                 // storage for stamped DataValue copies
	reportBatch []*item                        // sampleTick's scratch list of items to report

	// replica: the subscription mirrors one served by another member of
	// the redundant set (replica.go): its items sample and queue, it
	// publishes nothing and its lifetime does not run. byHandle indexes
	// its data items by client handle while it is a replica.
	replica  bool
	byHandle map[uint32]*item
	window   time.Duration // MatchWindow of the replica
	// owner is the user whose sessions may take the subscription over
	// (SetOwner; "" until set: any).
	owner string
	// catchUp: a subscription just taken over sends nothing before this
	// instant unless its client's Republish found nothing more to catch
	// up on (zero: no hold).
	catchUp time.Time

	// pendMu guards the lists of items with work to do. Producers append
	// (with the item's mu held); the engine goroutine swaps them out.
	pendMu      sync.Mutex
	report      []*item // items with queued values to report
	reportSpare []*item
	sample      []*item // items with an unsampled change
	sampleSpare []*item

	// retransMu guards the retransmission queue (leaf lock).
	retransMu     sync.Mutex
	retrans       []*ua.NotificationMessage // oldest first
	retransNotifs int                       // notifications held in retrans
}

func (s *subscription) touch(now time.Time) { s.lastActivity.Store(now.UnixNano()) }

// pushReport appends it to the report list; it.mu must be held.
func (s *subscription) pushReport(it *item) {
	s.pendMu.Lock()
	s.report = append(s.report, it)
	s.pendMu.Unlock()
}

// pushReports appends items, already marked inReport, to the report list.
func (s *subscription) pushReports(items []*item) {
	if len(items) == 0 {
		return
	}
	s.pendMu.Lock()
	s.report = append(s.report, items...)
	s.pendMu.Unlock()
}

// pushSample appends it to the sample list; it.mu must be held.
func (s *subscription) pushSample(it *item) {
	s.pendMu.Lock()
	s.sample = append(s.sample, it)
	s.pendMu.Unlock()
}

func (s *subscription) hasReport() bool {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	return len(s.report) > 0
}

// takeReport swaps the report list out.
func (s *subscription) takeReport() []*item {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	l := s.report
	s.report = s.reportSpare[:0]
	s.reportSpare = nil
	return l
}

// putBackReport re-queues the items a publish did not finish ahead of the
// ones that arrived meanwhile, and recycles list's storage.
func (s *subscription) putBackReport(list []*item, leftover int) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	if leftover > 0 {
		rest := list[len(list)-leftover:]
		merged := make([]*item, 0, leftover+len(s.report))
		merged = append(append(merged, rest...), s.report...)
		s.report = merged
	}
	clear(list)
	s.reportSpare = list[:0]
}

// takeSample and putBackSample are the same for the sample list.
func (s *subscription) takeSample() []*item {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	l := s.sample
	s.sample = s.sampleSpare[:0]
	s.sampleSpare = nil
	return l
}

func (s *subscription) putBackSample(list, keep []*item) {
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	if len(keep) > 0 {
		s.sample = append(s.sample, keep...)
	}
	clear(list)
	s.sampleSpare = list[:0]
}

// nextDeadline is the earliest tick of s; mu must be held.
func (s *subscription) nextDeadline() time.Time {
	if s.sampleEvery > 0 && s.nextSample.Before(s.nextPublish) {
		return s.nextSample
	}
	return s.nextPublish
}

// addInterval and dropInterval keep the sampling tick at the smallest item
// sampling interval; mu must be held, the items' mu must not be.
func (s *subscription) addInterval(d time.Duration, now time.Time) {
	if d <= 0 {
		return
	}
	s.intervals[d]++
	if s.sampleEvery == 0 || d < s.sampleEvery {
		s.sampleEvery = d
		if t := s.alignedSample(now); s.nextSample.IsZero() || t.Before(s.nextSample) {
			s.nextSample = t
		}
	}
}

// alignedSample returns the first sampling tick after now on the grid of
// the publishing ticks, so that an item sampled at the publishing interval
// is sampled just before each publish. mu must be held.
func (s *subscription) alignedSample(now time.Time) time.Time {
	// The grid is nextPublish + k × sampleEvery for any integer k; the
	// publishing tick may already be behind now (the engine goroutine has
	// not run it yet).
	behind := now.Sub(s.nextPublish)
	k := behind / s.sampleEvery
	if behind < 0 && behind%s.sampleEvery != 0 {
		k-- // floor division
	}
	return s.nextPublish.Add((k + 1) * s.sampleEvery)
}

func (s *subscription) dropInterval(d time.Duration) {
	if d <= 0 {
		return
	}
	if s.intervals[d]--; s.intervals[d] > 0 {
		return
	}
	delete(s.intervals, d)
	if d != s.sampleEvery {
		return
	}
	s.sampleEvery = 0
	for k := range s.intervals {
		if s.sampleEvery == 0 || k < s.sampleEvery {
			s.sampleEvery = k
		}
	}
	if s.sampleEvery == 0 {
		// No sampling tick will drain the sample list any more.
		s.nextSample = time.Time{}
		list := s.takeSample()
		for _, it := range list {
			it.mu.Lock()
			it.inSample, it.latest = false, nil
			it.mu.Unlock()
		}
		s.putBackSample(list, nil)
	}
}

// ack removes seq from the retransmission queue.
func (s *subscription) ack(seq uint32) ua.StatusCode {
	s.retransMu.Lock()
	defer s.retransMu.Unlock()
	for i, m := range s.retrans {
		if m.SequenceNumber == seq {
			s.retransNotifs -= notifCount(m)
			s.retrans = append(s.retrans[:i], s.retrans[i+1:]...)
			return ua.StatusGood
		}
	}
	return ua.StatusBadSequenceNumberUnknown
}

// retained returns the stored message seq, or nil.
func (s *subscription) retained(seq uint32) *ua.NotificationMessage {
	s.retransMu.Lock()
	defer s.retransMu.Unlock()
	for _, m := range s.retrans {
		if m.SequenceNumber == seq {
			return m
		}
	}
	return nil
}

// retain stores a sent message for Republish, dropping the oldest ones
// beyond maxMsgs messages or maxNotifs notifications (the newest message is
// always kept).
func (s *subscription) retain(m *ua.NotificationMessage, maxMsgs, maxNotifs int) {
	s.retransMu.Lock()
	defer s.retransMu.Unlock()
	s.retrans = append(s.retrans, m)
	s.retransNotifs += notifCount(m)
	for len(s.retrans) > 1 && (len(s.retrans) > maxMsgs || s.retransNotifs > maxNotifs) {
		s.retransNotifs -= notifCount(s.retrans[0])
		s.retrans[0] = nil
		s.retrans = s.retrans[1:]
	}
}

// available lists the sequence numbers held for Republish.
func (s *subscription) available() []uint32 {
	s.retransMu.Lock()
	defer s.retransMu.Unlock()
	seqs := make([]uint32, len(s.retrans))
	for i, m := range s.retrans {
		seqs[i] = m.SequenceNumber
	}
	return seqs
}

func (s *subscription) clearRetrans() {
	s.retransMu.Lock()
	s.retrans, s.retransNotifs = nil, 0
	s.retransMu.Unlock()
}

// notifCount is the number of monitored-item notifications (data changes
// and events) in m.
func notifCount(m *ua.NotificationMessage) int {
	n := 0
	for _, eo := range m.NotificationData {
		switch v := eo.Value.(type) {
		case *ua.DataChangeNotification:
			n += len(v.MonitoredItems)
		case *ua.EventNotificationList:
			n += len(v.Events)
		}
	}
	return n
}

// nextSeq returns the sequence number to use and advances it, skipping 0
// on wrap-around (Part 4 §7.25: 0 is never used).
func (s *subscription) nextSeq() uint32 {
	n := s.seq
	s.seq++
	if s.seq == 0 {
		s.seq = 1
	}
	return n
}
