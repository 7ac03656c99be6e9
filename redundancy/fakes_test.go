package redundancy

import (
	"sync"
	"testing"
	"time"

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

// eventually polls cond every millisecond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// never checks that cond stays false for a short while (the actor had the
// chance to act on what the test just did).
func never(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatalf("unexpected: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
