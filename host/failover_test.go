package host

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/wire"
	"github.com/otopcua/otopcua/telemetry"
)

var selfAddr = membership.UniqueAddress{Host: "10.0.0.1", Port: 4053, UID: 42}

func TestDecideFailover(t *testing.T) {
	req := func(node string, uid uint64, cid string) *wire.ManualFailover {
		return &wire.ManualFailover{TargetNodeId: node, TargetUid: uid, ClusterId: cid, Actor: "alice"}
	}
	tests := []struct {
		name string
		m    *wire.ManualFailover
		busy bool
		want failoverVerdict
	}{
		{"for this incarnation", req("10.0.0.1:4053", 42, "pair"), false, failoverAct},
		{"another node", req("10.0.0.2:4053", 42, "pair"), false, failoverNotMe},
		{"same host, another port", req("10.0.0.1:4054", 42, "pair"), false, failoverNotMe},
		{"another ClusterId", req("10.0.0.1:4053", 42, "other"), false, failoverNotMe},
		{"an earlier incarnation", req("10.0.0.1:4053", 41, "pair"), false, failoverStale},
		{"no uid", req("10.0.0.1:4053", 0, "pair"), false, failoverStale},
		{"already under way", req("10.0.0.1:4053", 42, "pair"), true, failoverBusy},
		{"stale while busy is still stale", req("10.0.0.1:4053", 7, "pair"), true, failoverStale},
		{"empty message", &wire.ManualFailover{}, false, failoverNotMe},
		{"nil message", nil, false, failoverNotMe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideFailover(tt.m, selfAddr, "pair", tt.busy); got != tt.want {
				t.Fatalf("decideFailover = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFailoverReceiverAcceptsOnce: of many requests for this node, only the
// first reaches Requested; others and ones for other nodes are dropped,
// and Handle never blocks.
func TestFailoverReceiverAcceptsOnce(t *testing.T) {
	r := newFailoverReceiver(selfAddr, "pair", slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.Handle(selfAddr, &wire.ManualFailover{TargetNodeId: "10.0.0.2:4053", TargetUid: 42, ClusterId: "pair"})
	r.Handle(selfAddr, &wire.NodeStatus{NodeId: "10.0.0.1:4053"}) // another type on the topic
	select {
	case m := <-r.Requested():
		t.Fatalf("a request for another node was accepted: %v", m)
	default:
	}
	for i := range 1000 {
		r.Handle(selfAddr, &wire.ManualFailover{TargetNodeId: "10.0.0.1:4053", TargetUid: 42, ClusterId: "pair", Epoch: uint64(i + 1)})
	}
	m := <-r.Requested()
	if m.GetEpoch() != 1 {
		t.Fatalf("accepted request of epoch %d, want the first (1)", m.GetEpoch())
	}
	select {
	case m := <-r.Requested():
		t.Fatalf("a second request was accepted: %v", m)
	default:
	}
}

type recordPublisher struct{ got []byte }

func (p *recordPublisher) Publish(l byte) { p.got = append(p.got, l) }

type ertRecorder struct{ at time.Time }

func (e *ertRecorder) SetEstimatedReturnTime(t time.Time) { e.at = t }

// TestDrainPinsLevelAndWaits: the drain publishes ServiceLevel 0 at once,
// the runtime and the test hook cannot raise it again, EstimatedReturnTime
// is the request's, and the drain ends only when the clock has moved the
// drain time on.
func TestDrainPinsLevelAndWaits(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	pub := &recordPublisher{}
	pins := newLevelPins(false)
	rt := newFakeRuntime(healthyPrimary(), pins, newLevelPublisher(pub, telemetry.NopMetrics(), slog.New(slog.DiscardHandler)))
	ert := &ertRecorder{}
	back := clock.Now().Add(20 * time.Second)
	m := &wire.ManualFailover{EstimatedReturnUnixMs: wire.UnixMs(back)}
	done := make(chan bool, 1)
	go func() { done <- drainForFailover(context.Background(), m, pins, ert, clock, 2*time.Second, nil) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if len(pub.got) != 2 || pub.got[1] != 0 || !ert.at.Equal(back) {
		t.Fatalf("after the drain began: levels %v, EstimatedReturnTime %v; want [250 0], %v", pub.got, ert.at, back)
	}
	rt.set(healthyPrimary())
	pins.hook(255)
	pins.release()
	if len(pub.got) != 2 {
		t.Fatalf("the pinned level moved: %v", pub.got)
	}
	clock.Advance(time.Second)
	select {
	case <-done:
		t.Fatal("the drain ended before its time")
	default:
	}
	clock.Advance(time.Second)
	if ok := <-done; !ok {
		t.Fatal("the drain reported being cut short")
	}
}

// TestDrainWithoutEstimateAndCutShort: a request without an estimate gets
// now + drain + ReturnAllowance; a stop during the drain ends it early.
func TestDrainWithoutEstimateAndCutShort(t *testing.T) {
	clock := clockwork.NewFakeClock()
	ert := &ertRecorder{}
	stop := make(chan struct{})
	close(stop)
	if drainForFailover(context.Background(), &wire.ManualFailover{}, newLevelPins(false), ert, clock, 5*time.Second, stop) {
		t.Fatal("a stopped drain reported completion")
	}
	if want := clock.Now().Add(5*time.Second + ReturnAllowance); !ert.at.Equal(want) {
		t.Fatalf("EstimatedReturnTime = %v, want %v", ert.at, want)
	}
}
