package forward

import (
	"context"
	"fmt"
	"sync"
)

// MemTransport is an in-memory Transport between Handlers in one process,
// for tests and the demo's single-process pair. A node can be taken down
// (its requests are not delivered) or made to drop answers (the request
// executes, the sender hears nothing: a Primary killed mid-request).
type MemTransport struct {
	mu    sync.Mutex
	nodes map[string]*memNode // mu must be held.
}

type memNode struct {
	h        *Handler
	down     bool
	dropNext int // answers to drop
}

var _ Transport = (*MemTransport)(nil)

// NewMemTransport returns a transport with no nodes.
func NewMemTransport() *MemTransport { return &MemTransport{nodes: make(map[string]*memNode)} }

// Add serves node's requests with h.
func (m *MemTransport) Add(node string, h *Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[node] = &memNode{h: h}
}

// SetDown takes node down (true) or up again.
func (m *MemTransport) SetDown(node string, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[node].down = down
}

// DropAnswers makes node execute its next n requests and lose the answers.
func (m *MemTransport) DropAnswers(node string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[node].dropNext = n
}

// Send implements Transport.
func (m *MemTransport) Send(ctx context.Context, to string, req Request) (Response, error) {
	m.mu.Lock()
	n, ok := m.nodes[to]
	if !ok || n.down {
		m.mu.Unlock()
		return Response{}, fmt.Errorf("to %s: %w", to, ErrNotDelivered)
	}
	drop := n.dropNext > 0
	if drop {
		n.dropNext--
	}
	m.mu.Unlock()
	r := n.h.Serve(ctx, req)
	if drop {
		return Response{}, fmt.Errorf("to %s: answer lost", to)
	}
	return r, nil
}
