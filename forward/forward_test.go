package forward

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/gate"
)

type pair struct {
	clk  *clockwork.FakeClock
	tr   *MemTransport
	a, b *node
	view *primaryView
	s    *Sender // on c, the client's node
}

// newPair: a is Primary at epoch 2, b Secondary, and the Sender on node c
// (a Secondary whose client writes) sees a as Primary.
func newPair() *pair {
	clk := clockwork.NewFakeClockAt(time.Unix(1_000_000, 0))
	p := &pair{clk: clk, tr: NewMemTransport(), a: newNode("a", true, 2, clk), b: newNode("b", false, 2, clk),
		view: &primaryView{node: "a", epoch: 2}}
	p.tr.Add("a", p.a.h)
	p.tr.Add("b", p.b.h)
	p.s = NewSender(SenderOptions{Node: "c", Primary: p.view.get, Transport: p.tr, Timeout: 2 * time.Second,
		Backoff: 20 * time.Millisecond, MaxInFlight: 2, Clock: clk})
	return p
}

func write(h uint32, role string) Request {
	return Request{Key: Key{Node: "c", Session: "s1", Handle: h, Nonce: 42}, Site: gate.SiteWrite, Right: RightWrite,
		User: "u", Role: role, Op: "ns=2;s=Pump.Speed"}
}

func TestForwardExecutesOnThePrimaryOnce(t *testing.T) {
	p := newPair()
	req := write(1, "Operator")
	r := drive(t, p.clk, p.s, req, nil)
	if r.Status != ua.StatusOK || r.Primary != "a" || r.Epoch != 2 {
		t.Fatalf("forwarded write: %v from %q epoch %d, want Good from a at epoch 2", r.Status, r.Primary, r.Epoch)
	}
	if n := p.a.dev.count(req.Key); n != 1 {
		t.Fatalf("executed %d times on the Primary, want 1", n)
	}
	// The same key again (a client's retry of the request): the first
	// result, not a second execution.
	if r := drive(t, p.clk, p.s, req, nil); r.Status != ua.StatusOK || p.a.dev.count(req.Key) != 1 {
		t.Fatalf("retry: %v, executions %d, want Good and still 1", r.Status, p.a.dev.count(req.Key))
	}
}

func TestForwardNoPrimaryWithinTheTimeout(t *testing.T) {
	p := newPair()
	p.view.set("", 0)
	r := drive(t, p.clk, p.s, write(1, "Operator"), nil)
	if r.Status != StatusNotPrimary {
		t.Fatalf("no Primary: %v, want %v (the confirmed mode's)", r.Status, StatusNotPrimary)
	}
	// A Primary that refuses (its gate denies) for the whole timeout: the
	// same status, nothing executed.
	p.a.gate.set(false, 0)
	p.view.set("a", 2)
	if r := drive(t, p.clk, p.s, write(2, "Operator"), nil); r.Status != StatusNotPrimary || p.a.dev.count(write(2, "").Key) != 0 {
		t.Fatalf("refusing Primary: %v, executions %d, want %v and 0", r.Status, p.a.dev.count(write(2, "").Key), StatusNotPrimary)
	}
}

func TestForwardFollowsAFailoverWhenNothingExecuted(t *testing.T) {
	p := newPair()
	// a lost the role, b is Primary at epoch 3, but c still sees a.
	p.a.gate.set(false, 0)
	p.b.gate.set(true, 3)
	req := write(1, "Operator")
	r := drive(t, p.clk, p.s, req, func(waits int) {
		if waits == 2 {
			p.view.set("b", 3)
		}
	})
	if r.Status != ua.StatusOK || r.Primary != "b" {
		t.Fatalf("after the failover: %v from %q, want Good from b", r.Status, r.Primary)
	}
	if a, b := p.a.dev.count(req.Key), p.b.dev.count(req.Key); a != 0 || b != 1 {
		t.Fatalf("executions a=%d b=%d, want 0 and 1", a, b)
	}
}

func TestForwardLostAnswerAsksTheSameNodeAgain(t *testing.T) {
	p := newPair()
	p.tr.DropAnswers("a", 1)
	req := write(1, "Operator")
	// a executes, its answer is lost; meanwhile a hands over to b and c
	// learns it. c must ask a again (which answers from its cache even
	// as a Secondary), never b.
	r := drive(t, p.clk, p.s, req, func(waits int) {
		if waits == 1 {
			p.a.gate.set(false, 0)
			p.b.gate.set(true, 3)
			p.view.set("b", 3)
		}
	})
	if r.Status != ua.StatusOK || r.Primary != "a" || r.Epoch != 2 {
		t.Fatalf("after a lost answer: %v from %q epoch %d, want a's first result (Good, epoch 2)", r.Status, r.Primary, r.Epoch)
	}
	if a, b := p.a.dev.count(req.Key), p.b.dev.count(req.Key); a != 1 || b != 0 {
		t.Fatalf("executions a=%d b=%d, want 1 and 0", a, b)
	}
}

func TestForwardPrimaryDiesMidRequest(t *testing.T) {
	p := newPair()
	p.tr.DropAnswers("a", 1)
	req := write(1, "Operator")
	// a executes and dies before answering; b becomes Primary. Nobody can
	// tell c whether a executed: BadTimeout, and b never executes it.
	r := drive(t, p.clk, p.s, req, func(waits int) {
		if waits == 1 {
			p.tr.SetDown("a", true)
			p.b.gate.set(true, 3)
			p.view.set("b", 3)
		}
	})
	if r.Status != ua.StatusBadTimeout {
		t.Fatalf("Primary died mid-request: %v, want BadTimeout (outcome unknown)", r.Status)
	}
	if b := p.b.dev.count(req.Key); b != 0 {
		t.Fatalf("the new Primary executed %d times, want 0 (never re-sent)", b)
	}
}

func TestForwardNotDeliveredIsRetriedElsewhere(t *testing.T) {
	p := newPair()
	p.tr.SetDown("a", true) // a died before c sent: nothing reached it.
	p.b.gate.set(true, 3)
	req := write(1, "Operator")
	r := drive(t, p.clk, p.s, req, func(waits int) {
		if waits == 3 {
			p.view.set("b", 3)
		}
	})
	if r.Status != ua.StatusOK || r.Primary != "b" || p.b.dev.count(req.Key) != 1 {
		t.Fatalf("a down, b Primary: %v from %q, b executed %d, want Good from b once", r.Status, r.Primary, p.b.dev.count(req.Key))
	}
}

func TestForwardRightsCheckedAgainOnThePrimary(t *testing.T) {
	p := newPair()
	req := write(1, "Viewer")
	r := drive(t, p.clk, p.s, req, nil)
	if r.Status != ua.StatusBadUserAccessDenied || p.a.dev.count(req.Key) != 0 {
		t.Fatalf("a Viewer's request on the Primary: %v, executions %d, want BadUserAccessDenied and 0", r.Status, p.a.dev.count(req.Key))
	}
}

func TestForwardStaleEpochRefusedByThePrimary(t *testing.T) {
	p := newPair()
	// c saw epoch 5 naming a Primary; a still believes it is Primary at 2.
	p.view.set("a", 5)
	req := write(1, "Operator")
	r := drive(t, p.clk, p.s, req, nil)
	if r.Status != StatusNotPrimary || p.a.dev.count(req.Key) != 0 {
		t.Fatalf("sender epoch 5 at a Primary of epoch 2: %v, executions %d, want %v and 0", r.Status, p.a.dev.count(req.Key), StatusNotPrimary)
	}
	if !strings.Contains(p.a.logs.String(), "newer redundancy epoch") || !strings.Contains(p.a.logs.String(), "senderEpoch=5") {
		t.Fatalf("no log line for the stale epoch; logs:\n%s", p.a.logs.String())
	}
}

func TestForwardBounded(t *testing.T) {
	p := newPair()
	p.a.dev.block = make(chan struct{})
	defer close(p.a.dev.block)
	// Two requests (the Sender's MaxInFlight) held by the device.
	for h := uint32(1); h <= 2; h++ {
		go p.s.Forward(context.Background(), write(h, "Operator"))
	}
	waitFor(t, func() bool { return p.s.InFlight() == 2 && p.a.dev.count(write(2, "").Key) == 1 })
	r := p.s.Forward(context.Background(), write(3, "Operator"))
	if r.Status != ua.StatusBadTooManyOperations || p.a.dev.count(write(3, "").Key) != 0 {
		t.Fatalf("beyond the Sender's limit: %v, want BadTooManyOperations and nothing sent", r.Status)
	}
	// The Primary's own bound per sender (2): a third request from c,
	// straight to the Handler, is refused without executing.
	res := p.a.h.Serve(context.Background(), Request{Key: Key{Node: "c", Handle: 9}, From: "c", Site: gate.SiteWrite, Role: "Operator", Epoch: 2, Budget: time.Second})
	if res.Outcome != Retry || res.Status != ua.StatusBadTooManyOperations {
		t.Fatalf("beyond the Primary's per-sender limit: %v %v, want Retry BadTooManyOperations", res.Outcome, res.Status)
	}
	// Another sender is not held by c's requests.
	other := p.a.h.Serve(context.Background(), Request{Key: Key{Node: "d", Handle: 1}, From: "d", Site: gate.SiteWrite, Role: "Operator", Epoch: 2, Budget: time.Second})
	if other.Outcome != Pending && other.Outcome != Done {
		t.Fatalf("another sender's request: %v %v, want it admitted", other.Outcome, other.Status)
	}
}

func TestHandlerPendingWhileExecuting(t *testing.T) {
	clk := clockwork.NewFakeClock()
	a := newNode("a", true, 1, clk)
	a.dev.block = make(chan struct{})
	req := write(1, "Operator")
	req.From, req.Epoch, req.Budget = "c", 1, time.Minute
	first := make(chan Response, 1)
	go func() { first <- a.h.Serve(context.Background(), req) }()
	waitFor(t, func() bool { return a.dev.count(req.Key) == 1 })
	if r := a.h.Serve(context.Background(), req); r.Outcome != Pending {
		t.Fatalf("the same key while it executes: %v, want Pending", r.Outcome)
	}
	close(a.dev.block)
	if r := <-first; r.Outcome != Done || r.Status != ua.StatusOK {
		t.Fatalf("first: %v %v", r.Outcome, r.Status)
	}
	if a.dev.count(req.Key) != 1 {
		t.Fatalf("executions %d, want 1", a.dev.count(req.Key))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}
