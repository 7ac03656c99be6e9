package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua"
)

// counterNode is the counter the Hot mode tests subscribe to.
var counterNode = ua.NewStringNodeID(2, "counter")

// counter writes 1, 2, 3, … into counterNode of every server every tick,
// as two nodes polling one device would: the same value on each server,
// each with its own SourceTimestamp (skew apart).
type counter struct {
	mu   sync.Mutex
	sets []*opcua.Server
	n    uint16
	stop chan struct{}
	done chan struct{}
}

func startCounter(t *testing.T, tick, skew time.Duration, servers ...*opcua.Server) *counter {
	t.Helper()
	for _, s := range servers {
		addCounterNode(t, s)
	}
	c := &counter{sets: servers, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			select {
			case <-c.stop:
				return
			case now := <-tk.C:
				c.mu.Lock()
				c.n++
				for i, s := range c.sets {
					_ = s.AddressSpace().SetValue(counterNode, c.n, ua.StatusOK, now.Add(time.Duration(i)*skew))
				}
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { close(c.stop); <-c.done })
	return c
}

// addCounterNode adds counterNode to s's address space.
func addCounterNode(t *testing.T, s *opcua.Server) {
	t.Helper()
	as := s.AddressSpace()
	if ns := as.AddNamespace("urn:test:counter"); ns != counterNode.Namespace() {
		t.Fatalf("test namespace is %d, want %d", ns, counterNode.Namespace())
	}
	if _, err := as.AddVariable(counterNode, "counter", "counter", ua.NewNumericNodeID(0, id.ObjectsFolder),
		ua.NewNumericNodeID(0, id.UInt16), uint16(0), byte(ua.AccessLevelTypeCurrentRead)); err != nil {
		t.Fatal(err)
	}
}

// add makes the counter write into s too, from its next tick on.
func (c *counter) add(t *testing.T, s *opcua.Server) {
	t.Helper()
	addCounterNode(t, s)
	c.mu.Lock()
	c.sets = append(c.sets, s)
	c.mu.Unlock()
}

// values collects the counter values a subscription delivers, with the
// server each came from.
type values struct {
	mu  sync.Mutex
	got []uint16
	by  []string
}

func collect(t *testing.T, sub *Subscription) *values {
	v := &values{}
	go func() {
		for n := range sub.Notifications() {
			x, ok := n.Value.Value.Value().(uint16)
			if !ok || x == 0 {
				continue
			}
			v.mu.Lock()
			v.got = append(v.got, x)
			v.by = append(v.by, n.Server.URI)
			v.mu.Unlock()
		}
	}()
	return v
}

// subscribeCounter subscribes c to counterNode at the publishing interval
// and collects what it delivers.
func subscribeCounter(t *testing.T, c *Client, interval time.Duration) (*Subscription, *values) {
	t.Helper()
	sub, err := c.SubscribeSampled(context.Background(), []*ua.NodeID{counterNode}, interval, 0)
	if err != nil {
		t.Fatal(err)
	}
	return sub, collect(t, sub)
}

// untilFrom waits until count values arrived from server uri.
func (v *values) untilFrom(t *testing.T, uri string, count int) {
	t.Helper()
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := v.from(uri); n < count {
			return fmt.Errorf("%d values from %s, want %d", n, uri, count)
		}
		return nil
	})
}

// untilCount waits until count values arrived from any server.
func (v *values) untilCount(t *testing.T, count int) {
	t.Helper()
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		v.mu.Lock()
		defer v.mu.Unlock()
		if n := len(v.got); n < count {
			return fmt.Errorf("%d values, want %d", n, count)
		}
		return nil
	})
}

// from is how many values arrived from server uri so far.
func (v *values) from(uri string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, b := range v.by {
		if b == uri {
			n++
		}
	}
	return n
}

// contiguous checks that every value from the first on arrived exactly
// once, in order.
func (v *values) contiguous() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := 1; i < len(v.got); i++ {
		if v.got[i] != v.got[i-1]+1 {
			return fmt.Errorf("value %d after %d (from %s then %s; %d values): missed or twice", v.got[i], v.got[i-1], v.by[i-1], v.by[i], len(v.got))
		}
	}
	return nil
}

// hotFailover runs one Hot mode failover: the counter on both servers,
// the client subscribed, the Primary closed; every value must arrive once.
func hotFailover(t *testing.T, support ua.RedundancySupport, mode Mode, want Mode) {
	set := startSetWith(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, func(_ string, c *opcua.Config) {
		c.RedundancySupport = support
	}, "urn:a", "urn:b")
	startCounter(t, 20*time.Millisecond, 7*time.Millisecond, set["urn:a"], set["urn:b"])
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, Mode: mode})
	if c.Mode() != want {
		t.Fatalf("mode %s, want %s", c.Mode(), want)
	}
	_, v := subscribeCounter(t, c, 50*time.Millisecond)
	v.untilFrom(t, "urn:a", 30)
	if want == ModeHotA {
		// The backup samples and does not report until the failover.
		v.mu.Lock()
		for i, b := range v.by {
			if b != "urn:a" {
				t.Fatalf("hot-a: value %d came from the backup %s before any failover", v.got[i], b)
			}
		}
		v.mu.Unlock()
	}
	set["urn:a"].Close()
	set["urn:b"].SetServiceLevel(250)
	v.untilFrom(t, "urn:b", 30)
	if err := v.contiguous(); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	e := rec.events(EventFailover)[0]
	if e.Mode != want || e.To.URI != "urn:b" || e.FailoverTime < 0 || e.FailoverTime > 3*time.Second {
		t.Fatalf("failover event %+v", e)
	}
	if cn := rec.events(EventConnected); len(cn) != 1 || cn[0].Mode != want {
		t.Fatalf("connected events %+v, want one in mode %s", cn, want)
	}
	t.Logf("%s failover time %v", want, e.FailoverTime)
}

// TestHotAFailoverDeliversEveryValueOnce: servers that say Hot make auto
// choose hot-a; the backup's Sampling queue fills the gap of the failover
// and the values both servers hold arrive once.
func TestHotAFailoverDeliversEveryValueOnce(t *testing.T) {
	hotFailover(t, ua.RedundancySupportHot, ModeAuto, ModeHotA)
}

// TestHotBFailoverDeliversEveryValueOnce: forced hot-b on Warm servers;
// both report all along and the client drops the second copies.
func TestHotBFailoverDeliversEveryValueOnce(t *testing.T) {
	hotFailover(t, ua.RedundancySupportWarm, ModeHotB, ModeHotB)
}

// TestWarmFailoverLosesValues shows what the Hot modes add: the same
// failover in warm mode misses the values that changed while the
// subscription was re-created (so the contiguity check can fail).
func TestWarmFailoverMissesValues(t *testing.T) {
	set := startSet(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, "urn:a", "urn:b")
	cnt := startCounter(t, 5*time.Millisecond, 0, set["urn:a"], set["urn:b"])
	c := dial(t, nil, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}})
	if c.Mode() != ModeWarm {
		t.Fatalf("mode %s on Warm servers, want warm", c.Mode())
	}
	_, v := subscribeCounter(t, c, 50*time.Millisecond)
	v.untilFrom(t, "urn:a", 30)
	// a closes with values it has not published yet: three ticks past
	// the last it delivered (a failover quicker than a tick would
	// otherwise lose nothing when a closed right after a publish).
	poll.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		v.mu.Lock()
		last := v.got[len(v.got)-1]
		v.mu.Unlock()
		cnt.mu.Lock()
		defer cnt.mu.Unlock()
		if cnt.n < last+3 {
			return fmt.Errorf("counter %d, last delivered %d", cnt.n, last)
		}
		return nil
	})
	set["urn:a"].Close()
	set["urn:b"].SetServiceLevel(250)
	v.untilFrom(t, "urn:b", 30)
	if err := v.contiguous(); err == nil {
		t.Fatal("a warm failover delivered every value of a 5 ms counter; the Hot tests prove nothing if it can")
	}
}

// TestHotServerThatRefusesIsNotHot: a backup that refuses the items
// (BadTooManyMonitoredItems) is left out of the Hot placement; the active
// server's values flow and the application sees no refusal from the
// backup.
func TestHotServerThatRefusesIsNotHot(t *testing.T) {
	set := startSetWith(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, func(uri string, c *opcua.Config) {
		if uri == "urn:b" {
			c.MaxMonitoredItems = 1 // the client's ServiceLevel watch takes it
		}
	}, "urn:a", "urn:b")
	startCounter(t, 20*time.Millisecond, 0, set["urn:a"], set["urn:b"])
	c := dial(t, nil, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, Mode: ModeHotB})
	sub, err := c.SubscribeSampled(context.Background(), []*ua.NodeID{counterNode}, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := make(chan Notification, 10)
	v := &values{}
	go func() {
		for n := range sub.Notifications() {
			if n.Value.Status != ua.StatusOK {
				bad <- n
				continue
			}
			x, _ := n.Value.Value.Value().(uint16)
			v.mu.Lock()
			v.got, v.by = append(v.got, x), append(v.by, n.Server.URI)
			v.mu.Unlock()
		}
	}()
	v.untilFrom(t, "urn:a", 30)
	select {
	case n := <-bad:
		t.Fatalf("the application got a refusal: %+v from %s", n.Value, n.Server.URI)
	default:
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, b := range v.by {
		if b != "urn:a" {
			t.Fatalf("value %d from %s, which refused the items", v.got[i], b)
		}
	}
}

// TestHotAPlannedMoveSwapsTheModes: a planned move (the backup outranks
// the active server for the hold) in hot-a promotes the backup's items to
// Reporting and puts the old server's back to Sampling: every value once,
// and after the move no value from the old server.
func TestHotAPlannedMoveSwapsTheModes(t *testing.T) {
	set := startSetWith(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, func(_ string, c *opcua.Config) {
		c.RedundancySupport = ua.RedundancySupportHot
	}, "urn:a", "urn:b")
	startCounter(t, 20*time.Millisecond, 7*time.Millisecond, set["urn:a"], set["urn:b"])
	rec := &recorder{}
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, PreferHold: 300 * time.Millisecond})
	if c.Mode() != ModeHotA {
		t.Fatalf("mode %s, want hot-a", c.Mode())
	}
	_, v := subscribeCounter(t, c, 50*time.Millisecond)
	v.untilFrom(t, "urn:a", 20)
	set["urn:b"].SetServiceLevel(255)
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	v.untilFrom(t, "urn:b", 30)
	if err := v.contiguous(); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	last := len(v.by) - 1
	for i := last; i > last-20; i-- {
		if v.by[i] != "urn:b" {
			t.Fatalf("value %d from %s after the move to urn:b: the old server still reports", v.got[i], v.by[i])
		}
	}
	if e := rec.events(EventFailover)[0]; e.Mode != ModeHotA || e.To.URI != "urn:b" {
		t.Fatalf("failover event %+v", e)
	}
}

// TestHotFailoverDoesNotWaitForTheBackupsTick: at a 2 s publishing
// interval the Primary is closed just after a publishing tick, so the
// backup's next tick is about 2 s away; the client makes the backup
// publish what it holds at once (flush), and the failover time is a small
// part of the interval in both Hot modes. Every value still arrives once.
func TestHotFailoverDoesNotWaitForTheBackupsTick(t *testing.T) {
	for _, c := range []struct {
		support ua.RedundancySupport
		mode    Mode
	}{{ua.RedundancySupportHot, ModeHotA}, {ua.RedundancySupportWarm, ModeHotB}} {
		t.Run(string(c.mode), func(t *testing.T) {
			const interval = 2 * time.Second
			set := startSetWith(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, func(_ string, cfg *opcua.Config) {
				cfg.RedundancySupport = c.support
			}, "urn:a", "urn:b")
			startCounter(t, 20*time.Millisecond, 7*time.Millisecond, set["urn:a"], set["urn:b"])
			rec := &recorder{}
			cl := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, Mode: c.mode})
			_, v := subscribeCounter(t, cl, interval)
			// A publishing tick just passed. In hot-b the first copy of a
			// value wins, so when the backup's tick falls just before the
			// active server's every value comes from the backup: any
			// server's tick will do there.
			if c.mode == ModeHotB {
				v.untilCount(t, 1)
			} else {
				v.untilFrom(t, "urn:a", 1)
			}
			set["urn:a"].Close()
			set["urn:b"].SetServiceLevel(250)
			poll.CheckFor(t, 3*interval, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
			e := rec.events(EventFailover)[0]
			if e.To.URI != "urn:b" || e.FailoverTime < 0 || e.FailoverTime >= interval/2 {
				t.Fatalf("failover event %+v: want a failover time well under the %v interval", e, interval)
			}
			v.untilFrom(t, "urn:b", 60)
			if err := v.contiguous(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s at a %v interval: failover time %v", c.mode, interval, e.FailoverTime)
		})
	}
}

// TestHotPlacementIsRetriedAfterARefusal: the backup does not serve the
// counter yet (a node restarted before its deployment loaded answers
// BadNodeIdUnknown), so its Hot placement is refused; once it serves the
// counter the client places the subscription there again, and a hot-a
// failover then finds every value in the backup's Sampling queue. With
// the backup left out, the client would never place it there (the poll
// below fails), and the failover would re-create the subscription and
// miss the values of a 5 ms counter (TestWarmFailoverMissesValues).
func TestHotPlacementIsRetriedAfterARefusal(t *testing.T) {
	set := startSetWith(t, false, map[string]byte{"urn:a": 250, "urn:b": 240}, func(_ string, c *opcua.Config) {
		c.RedundancySupport = ua.RedundancySupportHot
	}, "urn:a", "urn:b")
	cnt := startCounter(t, 5*time.Millisecond, 0, set["urn:a"])
	rec := &recorder{}
	// 2,000 values hold 10 s of this counter: a failover slowed down by a
	// loaded machine still finds its values in the backup's queue.
	c := dial(t, rec, Options{URLs: []string{set["urn:a"].EndpointURL(), set["urn:b"].EndpointURL()}, HotQueueSize: 2000})
	if c.Mode() != ModeHotA {
		t.Fatalf("mode %s, want hot-a", c.Mode())
	}
	sub, v := subscribeCounter(t, c, 50*time.Millisecond)
	v.untilFrom(t, "urn:a", 20) // b has refused its placement meanwhile
	cnt.add(t, set["urn:b"])
	// The retry comes within a few back-off steps (0.1 s doubling).
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, poll.True("the Hot placement on urn:b", func() bool {
		sub.s.mu.Lock()
		defer sub.s.mu.Unlock()
		for cn, p := range sub.s.others {
			if cn.uri == "urn:b" && len(p.items) == 1 && p.items[0] != 0 { // its item made, not only the subscription
				return true
			}
		}
		return false
	}))
	// The backup's queue holds what changed since its items were made; the
	// active server has to publish past that moment before it goes, or
	// the values it had not published yet are nobody's.
	v.untilFrom(t, "urn:a", v.from("urn:a")+20)
	set["urn:a"].Close()
	set["urn:b"].SetServiceLevel(250)
	v.untilFrom(t, "urn:b", 100)
	if err := v.contiguous(); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, poll.True("failover event", func() bool { return len(rec.events(EventFailover)) == 1 }))
	if e := rec.events(EventFailover)[0]; e.To.URI != "urn:b" || e.Transferred {
		t.Fatalf("failover event %+v, want a promotion on urn:b", e)
	}
}

// TestBackupAnswerBeforeTheLossIsNoticedIsAZeroFailover: in a Hot mode
// the backup's Publish response can arrive between the old server's loss
// and the client noticing it; the move's event must not report a
// negative failover time (it did in CI: −7 ms).
func TestBackupAnswerBeforeTheLossIsNoticedIsAZeroFailover(t *testing.T) {
	var got []Event
	c := &Client{log: slog.New(slog.DiscardHandler), opts: Options{OnEvent: func(e Event) { got = append(got, e) }}}
	cn := &conn{}
	c.active = &server{conn: cn}
	lost := time.Now()
	c.pending = &Event{Kind: EventFailover, Interrupted: lost}
	c.publishSeen(cn, lost.Add(-time.Millisecond))
	if len(got) != 1 || got[0].FailoverTime != 0 || !got[0].Resumed.Equal(lost) {
		t.Fatalf("events %+v: want one failover with a failover time of zero, resumed at the loss", got)
	}
	c.pending = &Event{Kind: EventFailover, Interrupted: lost}
	c.publishSeen(cn, lost.Add(5*time.Millisecond))
	if len(got) != 2 || got[1].FailoverTime != 5*time.Millisecond {
		t.Fatalf("events %+v: want the second failover at 5ms", got)
	}
}
