package redundancy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
)

// fakeMembers is a membership daemon whose view the test sets.
type fakeMembers struct {
	mu   sync.Mutex
	st   m.State
	subs map[int]func(m.Event)
	next int
}

func newFakeMembers(self m.UniqueAddress) *fakeMembers {
	return &fakeMembers{st: m.State{Self: self}, subs: map[int]func(m.Event){}}
}

func (f *fakeMembers) Self() m.UniqueAddress { return f.st.Self }

func (f *fakeMembers) Snapshot() m.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeMembers) Subscribe(fn func(m.Event)) (m.State, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.subs[id] = fn
	return f.st, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

// set installs members and emits one event to every subscriber.
func (f *fakeMembers) set(members ...m.Member) {
	f.mu.Lock()
	f.st.Gossip = m.NewGossip(members...)
	var fns []func(m.Event)
	for _, fn := range f.subs {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(m.Event{Kind: m.MemberUp})
	}
}

func (f *fakeMembers) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// fakeBus is an in-process pub/sub that delivers synchronously and records
// every published message.
type fakeBus struct {
	mu        sync.Mutex
	from      m.UniqueAddress
	subs      map[string]map[int]func(m.UniqueAddress, proto.Message)
	next      int
	published []proto.Message
}

func newFakeBus() *fakeBus {
	return &fakeBus{subs: map[string]map[int]func(m.UniqueAddress, proto.Message){}}
}

func (b *fakeBus) Publish(topic string, msg proto.Message) error {
	b.mu.Lock()
	b.published = append(b.published, msg)
	var fns []func(m.UniqueAddress, proto.Message)
	for _, fn := range b.subs[topic] {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(b.from, msg)
	}
	return nil
}

func (b *fakeBus) Subscribe(topic string, fn pubsub.Handler) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[topic] == nil {
		b.subs[topic] = map[int]func(m.UniqueAddress, proto.Message){}
	}
	id := b.next
	b.next++
	b.subs[topic][id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs[topic], id)
	}
}

// all returns the published messages of type T.
func all[T proto.Message](b *fakeBus) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []T
	for _, msg := range b.published {
		if t, ok := msg.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// roundTrip sends the actor at pid a Touch and waits for its answer. One
// mailbox, handled in order: when the answer comes, the actor has handled
// every message sent to it before the Touch, so what the test reads next is
// the state after those messages (the barrier for "it did not happen").
func roundTrip(t *testing.T, root *actor.RootContext, pid *actor.PID) {
	t.Helper()
	if _, err := root.RequestFuture(pid, &actor.Touch{}, 5*time.Second).Result(); err != nil {
		t.Fatalf("no round trip through %v: %v", pid, err)
	}
}

// holdsTimers reports whether clock holds at least n timers and tickers
// that have not fired, without waiting.
func holdsTimers(clock *clockwork.FakeClock, n int) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return clock.BlockUntilContext(ctx, n) == nil
}
