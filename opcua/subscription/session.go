package subscription

import (
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
)

// publishReq is a queued Publish request.
type publishReq struct {
	out     Sender
	reqID   uint32
	handle  uint32
	results []ua.StatusCode // per acknowledgement, computed on arrival
}

// outMsg is a response waiting for the session's sending goroutine.
type outMsg struct {
	out   Sender
	reqID uint32
	resp  ua.Response
}

// statusMsg is a StatusChangeNotification owed to the session: its
// subscription expired or was transferred away.
type statusMsg struct {
	subID  uint32
	seq    uint32
	status ua.StatusCode
}

// session is the engine's view of one OPC UA session: the subscriptions it
// owns, its queued Publish requests and its outgoing responses.
//
// Responses are sent by a goroutine started when the outbox becomes
// non-empty and ending when it drains, so a client that stops reading blocks
// only its own session's sending goroutine.
type session struct {
	id   SessionID
	subs map[uint32]*subscription // Engine.mu must be held.

	mu sync.Mutex // leaf lock
	// Everything below is guarded by mu.
	closed      bool
	requests    []*publishReq // oldest first
	outbox      []outMsg
	sending     bool
	status      []statusMsg
	lastPublish time.Time
}

// popRequest takes the oldest queued Publish request, or nil.
func (s *session) popRequest() *publishReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	r := s.requests[0]
	s.requests[0] = nil
	s.requests = s.requests[1:]
	return r
}

// pushFront returns an unused request to the head of the queue.
func (s *session) pushFront(r *publishReq) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.requests = append([]*publishReq{r}, s.requests...)
	}
}

// hasRequest reports whether a Publish request is queued.
func (s *session) hasRequest() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests) > 0
}

// lastPublishTime returns when the session last sent a Publish request.
func (s *session) lastPublishTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastPublish
}
