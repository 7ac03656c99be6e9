package forward

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
)

// ErrNotDelivered wraps a Transport error that proves the request did not
// reach the peer (the connection was refused, the peer is known down):
// nothing can have executed there.
var ErrNotDelivered = errors.New("forward: request not delivered")

// Transport sends one request to a node and waits for its Response until
// ctx ends. A node is named by its unique address (host, port and
// incarnation), so that a request never reaches a restarted process at the
// same address in place of the one it was meant for. Requests to one node
// arrive in the order they were sent. Send is called concurrently and
// blocks until an answer or ctx's end; an error that does not wrap
// ErrNotDelivered leaves the outcome unknown.
type Transport interface {
	Send(ctx context.Context, to string, req Request) (Response, error)
}

// PrimaryOf names the Primary of this node's ClusterId as this node's last
// redundancy snapshot sees it, and that snapshot's epoch; ok is false while
// none is known. Called from any goroutine; must not block.
type PrimaryOf func() (node string, epoch uint64, ok bool)

// SenderOptions configure a Sender. Node, Primary and Transport are
// required.
type SenderOptions struct {
	// Node is this node's unique address, never sent to.
	Node      string
	Primary   PrimaryOf
	Transport Transport
	// Timeout is the whole budget of one request (OpcUa:WriteTimeout).
	// Default 2 s.
	Timeout time.Duration
	// MaxInFlight bounds the requests this node forwards at once; beyond
	// it a request is refused (BadTooManyOperations), never queued.
	// Default 32.
	MaxInFlight int
	// Backoff is the wait before asking again (no Primary known, a
	// Primary refused, an answer pending or lost). Default 20 ms.
	Backoff time.Duration
	Clock   clockwork.Clock // default: the real clock
	Logger  *slog.Logger
}

// Sender forwards requests from a non-Primary to the Primary. Forward is
// safe for concurrent use.
type Sender struct {
	o   SenderOptions
	lim Limit
}

// NewSender returns a Sender.
func NewSender(o SenderOptions) *Sender {
	if o.Node == "" || o.Primary == nil || o.Transport == nil {
		panic("forward: a Sender needs Node, Primary and Transport")
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	o.MaxInFlight = orInt(o.MaxInFlight, 32)
	if o.Backoff <= 0 {
		o.Backoff = 20 * time.Millisecond
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sender{o: o, lim: NewLimit(o.MaxInFlight)}
}

// InFlight is the number of requests being forwarded now.
func (s *Sender) InFlight() int { return s.lim.InFlight() }

// Forward sends req (Key, Site, Right, User, Role, Op, Body set by the
// caller) to the Primary and returns its answer. The rule a client can
// rely on, for one Key:
//
//   - Good, or any status the Primary's execution returned: executed once,
//     on the Primary named in the Response.
//   - StatusNotPrimary (no Primary took it within Timeout),
//     BadTooManyOperations, BadResourceUnavailable, BadUserAccessDenied:
//     nothing executed anywhere.
//   - BadTimeout: the outcome is unknown — a Primary received the request
//     and did not answer (it died or was cut off mid-request). It
//     executed at most once. The Sender never re-sends such a request to
//     another node: a new Primary cannot know whether the old one
//     executed, so it asks only the node it sent to (which answers from
//     its cache even after losing its role) until Timeout.
func (s *Sender) Forward(ctx context.Context, req Request) Response {
	if !s.lim.TryAcquire() {
		s.o.Logger.Warn("forward: too many forwarded requests in flight; refused", "key", req.Key.String())
		return Response{Outcome: Done, Status: ua.StatusBadTooManyOperations}
	}
	defer s.lim.Release()
	ctx, cancel := clockwork.WithTimeout(ctx, s.o.Clock, s.o.Timeout)
	defer cancel()
	req.From = s.o.Node
	a := attempt{s: s, req: req}
	for {
		if r, done := a.once(ctx); done {
			return r
		}
		if !a.wait(ctx) {
			return a.timedOut()
		}
	}
}

// attempt is one Forward's state across its tries.
type attempt struct {
	s   *Sender
	req Request
	// pinned is the node that may have the request (sent, no answer); ""
	// while no send left the outcome unknown.
	pinned string
}

// once makes one try; done reports a final Response.
func (a *attempt) once(ctx context.Context) (Response, bool) {
	to, epoch := a.pinned, a.req.Epoch
	if to == "" {
		var ok bool
		if to, epoch, ok = a.s.o.Primary(); !ok || to == a.s.o.Node {
			return Response{}, false
		}
	}
	a.req.Epoch = epoch
	if dl, ok := ctx.Deadline(); ok {
		a.req.Budget = dl.Sub(a.s.o.Clock.Now())
	}
	r, err := a.s.o.Transport.Send(ctx, to, a.req)
	switch {
	case err != nil && errors.Is(err, ErrNotDelivered) && a.pinned == "":
		return Response{}, false
	case err != nil:
		a.pinned = to
		a.s.o.Logger.Debug("forward: no answer; asking the same node again", "to", to, "key", a.req.Key.String(), "err", err)
		return Response{}, false
	}
	switch r.Outcome {
	case Done:
		return r, true
	case Pending:
		a.pinned = to
	case Retry:
		a.pinned = ""
	}
	return Response{}, false
}

// wait sleeps Backoff; false when ctx ended first.
func (a *attempt) wait(ctx context.Context) bool {
	t := a.s.o.Clock.NewTimer(a.s.o.Backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.Chan():
	}
	select { // ctx's end at the same instant wins (Err would block on some clocks' contexts)
	case <-ctx.Done():
		return false
	default:
		return true
	}
}

func (a *attempt) timedOut() Response {
	if a.pinned != "" {
		a.s.o.Logger.Warn("forward: the Primary took the request and did not answer in time; outcome unknown", "to", a.pinned, "key", a.req.Key.String())
		return Response{Outcome: Done, Status: ua.StatusBadTimeout, Primary: a.pinned}
	}
	return Response{Outcome: Done, Status: StatusNotPrimary}
}
