package alarms_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// downtime is how long the peer stays down in TestPeerCatchesUpWithOnlyTheMissingRows;
// the drill is 10 minutes: go test -timeout 20m ./tests/alarms/ -run CatchesUp -localdb.downtime 10m.
var downtime = flag.Duration("localdb.downtime", 20*time.Second, "how long the LocalDb peer stays down in the catch-up drill")

type served struct {
	Served []struct {
		Node     string
		RowsSent map[string]int64
	}
	Peers []struct {
		RowsReceived map[string]int64
	}
}

func localdbOf(t *testing.T, n *procs.Node) served {
	t.Helper()
	body, err := n.Get("/api/localdb")
	if err != nil {
		t.Fatal(err)
	}
	var s served
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func sentEvents(s served) int64 {
	var n int64
	for _, x := range s.Served {
		n += x.RowsSent["alarm_sf_events"]
	}
	return n
}

// queueDepths reads the history queue depth of a and of b.
func queueDepths(r *rig) (a, b int, err error) {
	if a, _, err = queueDepth(r.a); err != nil {
		return 0, 0, err
	}
	b, _, err = queueDepth(r.b)
	return a, b, err
}

func receivedEvents(s served) int64 {
	var n int64
	for _, p := range s.Peers {
		n += p.RowsReceived["alarm_sf_events"]
	}
	return n
}

// TestPeerCatchesUpWithOnlyTheMissingRows: with the Config DB down the
// Primary's history queue only grows; the Secondary is stopped for
// -localdb.downtime while the alarm toggles; restarted, it pulls exactly
// the rows it missed (counted on the Primary's side), not a full copy.
func TestPeerCatchesUpWithOnlyTheMissingRows(t *testing.T) {
	r := startRigWith(t, true)
	// The rows of the start (the alarms' initial states) are drained and
	// gone from both queues before the Config DB stops; what a sent for
	// them is the baseline the counts below start from.
	var base int64
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		depthA, depthB, err := queueDepths(r)
		if err != nil {
			return err
		}
		base = sentEvents(localdbOf(t, r.a))
		got := receivedEvents(localdbOf(t, r.b))
		if depthA != 0 || depthB != 0 || got != base {
			return fmt.Errorf("start rows: queues a %d, b %d; a sent %d, b received %d", depthA, depthB, base, got)
		}
		return nil
	})
	r.db.Stop() // nothing drains: every transition stays queued on a
	tg := &toggler{r: r, period: 500 * time.Millisecond}
	tg.run(3*time.Second, nil)
	// b holds everything so far, and has pulled a's copy of every row.
	// A row a adopted from b is offered once more a moment later, so the
	// counts must also have held still for a second: stopping b with such
	// an offer in flight would count it on either side of the stop.
	var sent0 int64
	var lastChange time.Time
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		depthA, depthB, err := queueDepths(r)
		if err != nil {
			return err
		}
		if depthA != len(tg.values) || depthB != depthA {
			return fmt.Errorf("queues a %d, b %d, want %d", depthA, depthB, len(tg.values))
		}
		// While both run, a can send a row twice: both nodes queue each
		// transition, and when b's copy carries the later stamp a adopts
		// it and offers it again (b takes it as already held). So "sent"
		// is at least one per transition here, and b has received all of
		// it; the exact count is the one after b's return below.
		sent := sentEvents(localdbOf(t, r.a))
		got := receivedEvents(localdbOf(t, r.b))
		if sent != sent0 || lastChange.IsZero() {
			sent0, lastChange = sent, time.Now()
		}
		if sent0-base < int64(len(tg.values)) || got != sent0 {
			return fmt.Errorf("a sent %d queue rows, b received %d, want at least %d, all received (after %d of the start)",
				sent0-base, got-base, len(tg.values), base)
		}
		if held := time.Since(lastChange); held < time.Second {
			return fmt.Errorf("a's sent count changed %v ago", held)
		}
		return nil
	})
	before := len(tg.values)
	r.b.Signal(syscall.SIGTERM)
	r.b.WaitExit(30 * time.Second)
	// What a sent up to b's exit; from here nobody pulls.
	sent0 = sentEvents(localdbOf(t, r.a))
	tg.run(*downtime, nil)
	// End active: the returning node boots from its cached deployment
	// before it has joined, and must not take the alarm it finds active
	// for news of its own (its first evaluation waits for membership).
	if tg.values[len(tg.values)-1] == low {
		r.dev.SetHolding(0, high)
		tg.values = append(tg.values, high)
	}
	missed := len(tg.values) - before
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		depth, _, err := queueDepth(r.a)
		if err != nil {
			return err
		}
		if depth != len(tg.values) {
			return fmt.Errorf("a queued %d, want %d", depth, len(tg.values))
		}
		return nil
	})
	// The queue rows are all a sent b while it was down: nothing, since
	// nobody pulled.
	if s := sentEvents(localdbOf(t, r.a)); s != sent0 {
		t.Fatalf("a sent %d queue rows while b was down", s-sent0)
	}
	r.b.Restart()
	r.b.WaitReady(60 * time.Second)
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		depth, _, err := queueDepth(r.b)
		if err != nil {
			return err
		}
		if depth != len(tg.values) {
			return fmt.Errorf("b queued %d, want %d", depth, len(tg.values))
		}
		return nil
	})
	sent := sentEvents(localdbOf(t, r.a)) - sent0
	if sent != int64(missed) {
		t.Fatalf("a sent %d queue rows to the restarted b, which missed %d (of %d queued)", sent, missed, len(tg.values))
	}
	t.Logf("b down %v: %d transitions missed, %d rows sent on its return (of %d queued; %d rows of the start drained before)",
		*downtime, missed, sent, len(tg.values), base)
}
