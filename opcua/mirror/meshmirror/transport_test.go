package meshmirror

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/forward/meshtransport"
)

// inbox collects what a member arrival, as Member.Receive would.
type inbox struct {
	mu  sync.Mutex
	got []arrival
}

type arrival struct {
	from  string
	batch []byte
}

func (b *inbox) receive(from string, batch []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, arrival{from, bytes.Clone(batch)})
}

func (b *inbox) all() []arrival {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]arrival(nil), b.got...)
}

// pair forms a two-node cluster with a bound Transport on each.
func pair(t *testing.T) (c *pubsubtest.Cluster, a, b *pubsubtest.Node, ta, tb *Transport, ina, inb *inbox) {
	t.Helper()
	c = pubsubtest.New(t)
	nodes := c.Form("a", "b")
	a, b = nodes[0], nodes[1]
	ta, tb, ina, inb = New(), New(), &inbox{}, &inbox{}
	ta.Bind(a.Mediator, ina.receive)
	tb.Bind(b.Mediator, inb.receive)
	t.Cleanup(ta.Stop)
	t.Cleanup(tb.Stop)
	return c, a, b, ta, tb, ina, inb
}

func name(n *pubsubtest.Node) string { return meshtransport.Name(n.Mediator.Self()) }

// TestBatchesArriveWholeAndInOrder: what one member sends another arrives
// byte for byte, in send order, named by the sender's incarnation; the
// receiver's own batches to the sender travel the other way alike.
func TestBatchesArriveWholeAndInOrder(t *testing.T) {
	c, a, b, ta, tb, ina, inb := pair(t)
	const n = 200
	for i := range n {
		batch := bytes.Repeat([]byte{byte(i)}, 1+i*37%1000)
		batch = append(batch, fmt.Sprintf("#%d", i)...)
		if err := ta.Send(name(b), batch); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if err := tb.Send(name(a), []byte("ack")); err != nil {
		t.Fatal(err)
	}
	c.Until(5*time.Second, "every batch at b", func() bool { return len(inb.all()) == n && len(ina.all()) == 1 })
	for i, r := range inb.all() {
		want := append(bytes.Repeat([]byte{byte(i)}, 1+i*37%1000), fmt.Sprintf("#%d", i)...)
		if r.from != name(a) || !bytes.Equal(r.batch, want) {
			t.Fatalf("batch %d from %s = %d bytes %q…, want %d bytes from %s", i, r.from, len(r.batch), r.batch[max(0, len(r.batch)-6):], len(want), name(a))
		}
	}
	if r := ina.all()[0]; r.from != name(b) || string(r.batch) != "ack" {
		t.Fatalf("a arrival %q from %s, want \"ack\" from %s", r.batch, r.from, name(b))
	}
}

// TestBatchToAnUnknownIncarnationIsDropped: a batch to a name that is no
// member (an earlier incarnation at b's address, or a node never seen) is
// dropped, never delivered to the process now at that address.
func TestBatchToAnUnknownIncarnationIsDropped(t *testing.T) {
	c, _, b, ta, _, _, inb := pair(t)
	self := b.Mediator.Self()
	stale := meshtransport.Name(membership.UniqueAddress{Host: self.Host, Port: self.Port, UID: self.UID + 1000})
	for _, to := range []string{stale, "c:2552#7"} {
		if err := ta.Send(to, []byte("lost")); err != nil {
			t.Fatalf("Send to %s: %v (the mediator drops it quietly)", to, err)
		}
	}
	if err := ta.Send(name(b), []byte("marker")); err != nil {
		t.Fatal(err)
	}
	c.Until(5*time.Second, "the marker at b", func() bool { return len(inb.all()) > 0 })
	if got := inb.all(); len(got) != 1 || string(got[0].batch) != "marker" {
		t.Fatalf("b arrival %v, want only the marker (the batches to other incarnations dropped)", got)
	}
}

func TestSendRefusals(t *testing.T) {
	tr := New()
	if err := tr.Send("b:2552#1", []byte("x")); !errors.Is(err, ErrNotBound) {
		t.Fatalf("Send before Bind = %v, want ErrNotBound", err)
	}
	_, _, b, ta, _, _, _ := pair(t)
	if err := ta.Send("b:2552", []byte("x")); err == nil {
		t.Fatal("Send to a name without #uid succeeded, want an error")
	}
	ta.Stop()
	if err := ta.Send(name(b), []byte("x")); !errors.Is(err, ErrNotBound) {
		t.Fatalf("Send after Stop = %v, want ErrNotBound", err)
	}
}

// TestOtherMessagesOnTheTopicAreIgnored: a message on the topic that is
// not a BytesValue is counted and not handed to the member.
func TestOtherMessagesOnTheTopicAreIgnored(t *testing.T) {
	c, a, b, ta, tb, _, inb := pair(t)
	if err := a.Mediator.SendTo(b.Mediator.Self(), Topic, wrapperspb.String("not a batch")); err != nil {
		t.Fatal(err)
	}
	if err := ta.Send(name(b), []byte("marker")); err != nil {
		t.Fatal(err)
	}
	c.Until(5*time.Second, "the marker at b", func() bool { return len(inb.all()) > 0 })
	if got := inb.all(); len(got) != 1 || tb.Ignored() != 1 {
		t.Fatalf("b arrival %v and ignored %d, want the marker only and 1 ignored", got, tb.Ignored())
	}
}

// TestHeldBatchesWaitForOpen: after Hold, batches wait until Open, which
// hands them over in order before any later one; beyond the bound they
// are dropped and counted.
func TestHeldBatchesWaitForOpen(t *testing.T) {
	c := pubsubtest.New(t)
	nodes := c.Form("a", "b")
	a, b := nodes[0], nodes[1]
	ta, tb, inb := New(), New(), &inbox{}
	ta.Bind(a.Mediator, (&inbox{}).receive)
	tb.Hold(11)
	tb.Bind(b.Mediator, inb.receive)
	t.Cleanup(ta.Stop)
	t.Cleanup(tb.Stop)
	for _, batch := range []string{"one", "two", "three", "four!"} { // 3+3+5 bytes fit 11; "four!" does not
		if err := ta.Send(name(b), []byte(batch)); err != nil {
			t.Fatal(err)
		}
	}
	c.Until(5*time.Second, "three batches queued at b, one dropped", func() bool { return tb.Queued() == 3 && tb.Dropped() == 1 })
	if got := inb.all(); len(got) != 0 {
		t.Fatalf("b received %v while held, want nothing before Open", got)
	}
	tb.Open()
	if err := ta.Send(name(b), []byte("five")); err != nil {
		t.Fatal(err)
	}
	c.Until(5*time.Second, "every batch at b", func() bool { return len(inb.all()) == 4 })
	var order []string
	for _, r := range inb.all() {
		order = append(order, string(r.batch))
	}
	if fmt.Sprint(order) != "[one two three five]" {
		t.Fatalf("b received %v, want [one two three five]", order)
	}
	tb.Open() // again: nothing changes
	if tb.Queued() != 0 {
		t.Fatalf("queued %d after Open", tb.Queued())
	}
}
