package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// RemoteMailbox is the mailbox of an actor that peers reach by its name
// over the remote (the cluster daemon, the pub/sub mediator): protoactor's
// unbounded mailbox, made safe to post to while the actor is being
// spawned.
//
// protoactor's SpawnNamed lists the new PID in the process registry before
// it gives the mailbox its dispatcher; a message the remote delivers in
// between makes the default mailbox call a nil dispatcher, and the process
// dies (seen when 23 nodes kept asking a first seed to join while it
// started). This mailbox holds what is posted before the spawn completes
// and hands it on in order: system messages once the handlers are
// registered, user messages once the mailbox starts (after the actor's
// Started message).
func RemoteMailbox() actor.MailboxProducer {
	inner := actor.Unbounded()
	return func() actor.Mailbox { return &spawnSafeMailbox{inner: inner()} }
}

// spawnSafeMailbox wraps a mailbox; mu guards the held messages and the
// two flags' transitions (read without it on the fast path).
type spawnSafeMailbox struct {
	inner actor.Mailbox

	mu         sync.Mutex
	registered atomic.Bool // RegisterHandlers ran: system messages pass
	started    atomic.Bool // Start ran: user messages pass
	heldSys    []any       // mu must be held.
	heldUser   []any       // mu must be held.
}

var _ actor.Mailbox = (*spawnSafeMailbox)(nil)

func (m *spawnSafeMailbox) PostUserMessage(msg any) {
	if m.started.Load() {
		m.inner.PostUserMessage(msg)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started.Load() {
		m.inner.PostUserMessage(msg)
		return
	}
	m.heldUser = append(m.heldUser, msg)
}

func (m *spawnSafeMailbox) PostSystemMessage(msg any) {
	if m.registered.Load() {
		m.inner.PostSystemMessage(msg)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.registered.Load() {
		m.inner.PostSystemMessage(msg)
		return
	}
	m.heldSys = append(m.heldSys, msg)
}

func (m *spawnSafeMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inner.RegisterHandlers(invoker, dispatcher)
	for _, msg := range m.heldSys {
		m.inner.PostSystemMessage(msg)
	}
	m.heldSys = nil
	m.registered.Store(true)
}

func (m *spawnSafeMailbox) Start() {
	m.mu.Lock()
	for _, msg := range m.heldUser {
		m.inner.PostUserMessage(msg)
	}
	m.heldUser = nil
	m.started.Store(true)
	m.mu.Unlock()
	m.inner.Start()
}

func (m *spawnSafeMailbox) UserMessageCount() int {
	m.mu.Lock()
	held := len(m.heldUser)
	m.mu.Unlock()
	return m.inner.UserMessageCount() + held
}
