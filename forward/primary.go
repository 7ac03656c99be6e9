package forward

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/gate"
)

// Gate is the node's Primary gate (*gate.Guard). Check is called from any
// goroutine, concurrently; it must not block.
type Gate interface {
	Check(site gate.Site) gate.Decision
}

// Executor runs one forwarded operation on the Primary as it runs a local
// one (the device write, the condition method) and raises its audit,
// naming the forwarding (req.From, this node). It is called concurrently
// and may block until ctx's deadline; epoch is the gate's fencing token.
type Executor interface {
	Execute(ctx context.Context, req Request, epoch uint64) (ua.StatusCode, []byte)
}

// HandlerOptions configure a Handler. Node, Gate, Authorize and Exec are
// required.
type HandlerOptions struct {
	// Node names this node in Responses (its ApplicationUri).
	Node string
	Gate Gate
	// Authorize reports whether role holds right under this node's
	// OpcUa:Authorization. Called concurrently; must not block.
	Authorize func(role string, right Right) bool
	Exec      Executor
	// PerSender bounds the forwarded requests of one sending node
	// executing here at once; beyond it a request is refused
	// (BadTooManyOperations, Retry) without queueing. Default 16.
	PerSender int
	// TTL and CacheSize bound the idempotency cache. Defaults 1 min, 4096.
	TTL       time.Duration
	CacheSize int
	// MaxBudget caps a request's Budget. Default 5 s.
	MaxBudget time.Duration
	Clock     clockwork.Clock // default: the real clock
	Logger    *slog.Logger
}

// Handler serves forwarded requests on a node: exactly once per Key while
// the key is remembered, behind this node's rights, gate and epoch.
// Serve is safe for concurrent use.
type Handler struct {
	o HandlerOptions

	mu      sync.Mutex
	cache   *Cache           // mu must be held.
	senders map[string]Limit // by Request.From; mu must be held.
}

// NewHandler returns a Handler.
func NewHandler(o HandlerOptions) *Handler {
	if o.Node == "" || o.Gate == nil || o.Authorize == nil || o.Exec == nil {
		panic("forward: a Handler needs Node, Gate, Authorize and Exec")
	}
	o.PerSender = orInt(o.PerSender, 16)
	o.CacheSize = orInt(o.CacheSize, 4096)
	if o.TTL <= 0 {
		o.TTL = time.Minute
	}
	if o.MaxBudget <= 0 {
		o.MaxBudget = 5 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{o: o, cache: NewCache(o.TTL, o.CacheSize), senders: make(map[string]Limit)}
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Serve answers one forwarded request. The order is the guarantee: a key
// already known answers from the cache before anything else (so a node
// that executed it and then lost its role still returns the first
// result); then the sender's limit, the rights, the gate and the epoch
// refuse without executing; then the key is begun, executed and its
// result remembered.
func (h *Handler) Serve(ctx context.Context, req Request) Response {
	if r, ok := h.known(req.Key); ok {
		return r
	}
	lim := h.limitOf(req.From)
	if !lim.TryAcquire() {
		h.o.Logger.Warn("forward: too many forwarded requests in flight from one node; refused", "from", req.From, "key", req.Key.String())
		return h.refuse(Retry, ua.StatusBadTooManyOperations)
	}
	defer lim.Release()
	if !h.o.Authorize(req.Role, req.Right) {
		return h.refuse(Done, ua.StatusBadUserAccessDenied)
	}
	d := h.o.Gate.Check(req.Site)
	if !d.Allow {
		return h.refuse(Retry, StatusNotPrimary)
	}
	if !EpochOK(req.Epoch, d.Epoch) {
		h.o.Logger.Warn("forward: a forwarded request saw a newer redundancy epoch than this Primary's; this node is stale, refused",
			"from", req.From, "key", req.Key.String(), "senderEpoch", req.Epoch, "epoch", d.Epoch)
		return h.refuse(Retry, StatusStaleEpoch)
	}
	return h.execute(ctx, req, d.Epoch)
}

// known answers a key the cache knows: its first result, or Pending.
func (h *Handler) known(k Key) (Response, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch l, r := h.cache.Peek(k, h.o.Clock.Now()); l {
	case Finished:
		return r, true
	case Running:
		return Response{Outcome: Pending, Primary: h.o.Node}, true
	}
	return Response{}, false
}

func (h *Handler) limitOf(from string) Limit {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.senders[from]
	if !ok {
		l = NewLimit(h.o.PerSender)
		h.senders[from] = l
	}
	return l
}

func (h *Handler) refuse(o Outcome, st ua.StatusCode) Response {
	return Response{Outcome: o, Status: st, Primary: h.o.Node}
}

func (h *Handler) execute(ctx context.Context, req Request, epoch uint64) Response {
	h.mu.Lock()
	l, r := h.cache.Begin(req.Key, h.o.Clock.Now())
	h.mu.Unlock()
	switch l {
	case Finished:
		return r
	case Running:
		return Response{Outcome: Pending, Primary: h.o.Node}
	case Full:
		return h.refuse(Retry, ua.StatusBadResourceUnavailable)
	}
	budget := min(max(req.Budget, 0), h.o.MaxBudget)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	st, body := h.o.Exec.Execute(ctx, req, epoch)
	res := Response{Outcome: Done, Status: st, Body: body, Primary: h.o.Node, Epoch: epoch}
	h.mu.Lock()
	h.cache.Finish(req.Key, res, h.o.Clock.Now())
	h.mu.Unlock()
	return res
}

// ExecutorFunc is an Executor made of a function.
type ExecutorFunc func(ctx context.Context, req Request, epoch uint64) (ua.StatusCode, []byte)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, req Request, epoch uint64) (ua.StatusCode, []byte) {
	return f(ctx, req, epoch)
}
