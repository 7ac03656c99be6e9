package dialgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/internal/poll"
)

var peerA = membership.Address{Host: "127.0.0.1", Port: 1}

func newSender(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Sender {
	t.Helper()
	sys := actors.NewLocal(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := New(sys, "target", dial)
	s.Start(nil)
	t.Cleanup(s.Close)
	return s
}

func waitCounts(t *testing.T, s *Sender, sent, dropped uint64) {
	t.Helper()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if gs, gd := s.Counts(); gs != sent || gd != dropped {
			return fmt.Errorf("counts sent %d dropped %d, want %d %d", gs, gd, sent, dropped)
		}
		return nil
	})
}

func TestRefusedPeerDropsBacklogAndIsDead(t *testing.T) {
	s := newSender(t, func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("connection refused")
	})
	for range 3 {
		s.Send(peerA, &emptypb.Empty{})
	}
	waitCounts(t, s, 0, 3)
	if got := s.DeadPeers(); !slices.Equal(got, []membership.Address{peerA}) {
		t.Fatalf("DeadPeers = %v, want [%v]", got, peerA)
	}
}

func TestReachablePeerGetsBacklogThenDirectSends(t *testing.T) {
	release := make(chan struct{})
	dials := 0
	s := newSender(t, func(context.Context, string, string) (net.Conn, error) {
		dials++
		<-release
		c1, c2 := net.Pipe()
		c2.Close()
		return c1, nil
	})
	// While the probe is held, at most Pending messages wait; the oldest go.
	for range Pending + 5 {
		s.Send(peerA, &emptypb.Empty{})
	}
	waitCounts(t, s, 0, 5)
	close(release)
	waitCounts(t, s, Pending, 5)
	s.Send(peerA, &emptypb.Empty{}) // gate open: straight through, no new probe
	waitCounts(t, s, Pending+1, 5)
	if dials != 1 || len(s.DeadPeers()) != 0 {
		t.Fatalf("dials %d, dead peers %v; want one dial and none dead", dials, s.DeadPeers())
	}
}

func TestClosedSenderDrops(t *testing.T) {
	s := newSender(t, nil)
	s.Close()
	s.Send(peerA, &emptypb.Empty{})
	waitCounts(t, s, 0, 1)
}
