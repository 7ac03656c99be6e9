package floating

import "time"

// Heartbeat is one row of the shared heartbeat stream: a member says it is
// alive, and whether it holds the floating address. The node's wiring
// writes its own row every HeartbeatInterval and reads every member's rows
// back from the Config DB.
type Heartbeat struct {
	ClusterID string
	// Node is the sender's node id (host:port).
	Node string
	// Seq orders one sender's heartbeats. It must grow across the sender's
	// restarts (the Config DB row's serial number, not a process counter):
	// a heartbeat with a lower Seq than the one kept is ignored.
	Seq uint64
	// EmittedAt is the sender's wall clock when it wrote the row. Shown
	// (Skews), never used in a decision.
	EmittedAt time.Time
	// ObservedAt is the stream's clock: the Config DB server stamps the
	// row when it stores it. Every decision reads this time only.
	ObservedAt time.Time
	// Claims: the sender holds the address (its last observation said so).
	Claims bool
	// Epoch is the ownership epoch the sender last acted under.
	Epoch uint64
	// Draining, Healthy and Licensed are the sender's own eligibility
	// inputs (a planned failover, drain or leave under way; ServiceLevel in
	// the Healthy band; its licence under lease-majority).
	Draining, Healthy, Licensed bool
	// MAC is the hardware address (or the cloud NIC id) the sender answers
	// with, so an observer can name a holder it sees on the wire.
	MAC string
}

// Stream is the pure projection of the shared heartbeat stream of one
// ClusterId: the latest heartbeat of each member and the latest stream
// time seen. It never reads a clock: its "now" is Max, the largest
// ObservedAt observed, which only heartbeats move. Not safe for
// concurrent use (the node's floating-address loop owns it).
type Stream struct {
	clusterID string
	max       time.Time
	last      map[string]Heartbeat
}

// NewStream is the empty projection of clusterID's stream.
func NewStream(clusterID string) *Stream {
	return &Stream{clusterID: clusterID, last: map[string]Heartbeat{}}
}

// Observe takes one heartbeat. Max moves to its ObservedAt if later; the
// heartbeat replaces its node's last one if it is newer (higher Seq, or the
// same Seq observed later) and is ignored otherwise. A heartbeat of another
// ClusterId is ignored entirely. Observe reports whether h became its
// node's last heartbeat.
func (s *Stream) Observe(h Heartbeat) bool {
	if h.ClusterID != s.clusterID {
		return false
	}
	if h.ObservedAt.After(s.max) {
		s.max = h.ObservedAt
	}
	old, ok := s.last[h.Node]
	if ok && !newer(h, old) {
		return false
	}
	s.last[h.Node] = h
	return true
}

// newer reports whether h supersedes old: by Seq, then by ObservedAt.
func newer(h, old Heartbeat) bool {
	if h.Seq != old.Seq {
		return h.Seq > old.Seq
	}
	return h.ObservedAt.After(old.ObservedAt)
}

// Max is streamMaxObservedAt: the largest ObservedAt seen (zero before any
// heartbeat). It is never clamped to a local clock: a stream that stalls
// keeps its Max, and nobody becomes stale on it.
func (s *Stream) Max() time.Time { return s.max }

// Last is node's last heartbeat (ok false when none was seen).
func (s *Stream) Last(node string) (Heartbeat, bool) {
	h, ok := s.last[node]
	return h, ok
}

// Skews is, per member, EmittedAt − ObservedAt of its last heartbeat: how
// far the member's wall clock runs ahead of the stream's (negative:
// behind), plus the row's transit time. For display (otopcua doctor); no
// decision reads it.
func (s *Stream) Skews() map[string]time.Duration {
	out := make(map[string]time.Duration, len(s.last))
	for n, h := range s.last {
		out[n] = h.EmittedAt.Sub(h.ObservedAt)
	}
	return out
}

// Fill sets each member's Heartbeat (the ObservedAt of its last heartbeat;
// zero when none) and Claims from the stream, so that a View built from
// the redundancy snapshot reads liveness from the stream only.
func (s *Stream) Fill(members []Member) {
	for i := range members {
		h, ok := s.last[members[i].Node]
		if !ok {
			members[i].Heartbeat, members[i].Claims = time.Time{}, false
			continue
		}
		members[i].Heartbeat, members[i].Claims = h.ObservedAt, h.Claims
	}
}
