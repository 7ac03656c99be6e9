package daemon

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/otopcua/otopcua/cluster/fastpath"
	"github.com/otopcua/otopcua/cluster/membership"
)

// Prober makes the TCP connects the daemon needs: the crash fast path's
// probes of a peer's cluster port, the self-form fallback's probe of the
// other seeds, and the dial gate in front of protoactor's reconnects.
// Methods are called on goroutines of their own, concurrently, and may
// block for up to the timeouts they describe.
type Prober interface {
	// ProbePeer makes up to fastpath.MaxProbes connects to addr within
	// fastpath.ProbeWindow ms and reports each outcome, stopping at the
	// first that is not Refused.
	ProbePeer(ctx context.Context, addr membership.Address) []fastpath.ProbeResult
	// AnyAccepts reports whether one of addrs accepts a TCP connection
	// within timeout.
	AnyAccepts(ctx context.Context, addrs []membership.Address, timeout time.Duration) bool
}

// TCPProber is the Prober over real TCP connects.
type TCPProber struct {
	// Dial opens a connection; default net.Dialer.DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

var _ Prober = TCPProber{}

// Fast-path probe pacing: the first connect waits ProbeSettle after the
// trigger (a process killed by SIGKILL drops its connections a moment
// before its listening socket, whose backlog still accepts meanwhile);
// each connect may take ProbeTimeout; connects start ProbeSpacing apart,
// so three fit in fastpath.ProbeWindow.
const (
	ProbeSettle  = 50 * time.Millisecond
	ProbeTimeout = 100 * time.Millisecond
	ProbeSpacing = 50 * time.Millisecond
)

func (p TCPProber) dial(ctx context.Context, addr membership.Address, timeout time.Duration) fastpath.ProbeResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	c, err := dial(ctx, "tcp", addr.String())
	switch {
	case err == nil:
		_ = c.Close()
		return fastpath.Accepted
	case errors.Is(err, syscall.ECONNREFUSED):
		return fastpath.Refused
	default:
		return fastpath.Timeout
	}
}

// ProbePeer implements Prober. The pacing uses the wall clock: it is part
// of the network I/O, not of the membership timing.
func (p TCPProber) ProbePeer(ctx context.Context, addr membership.Address) []fastpath.ProbeResult {
	var out []fastpath.ProbeResult
	start := time.Now().Add(ProbeSettle)
	for i := range fastpath.MaxProbes {
		if wait := time.Until(start.Add(time.Duration(i) * ProbeSpacing)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return out
			}
		}
		r := p.dial(ctx, addr, ProbeTimeout)
		out = append(out, r)
		if r != fastpath.Refused {
			break
		}
	}
	return out
}

// AnyAccepts implements Prober; the addresses are probed in parallel.
func (p TCPProber) AnyAccepts(ctx context.Context, addrs []membership.Address, timeout time.Duration) bool {
	var wg sync.WaitGroup
	results := make(chan bool, len(addrs))
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- p.dial(ctx, a, timeout) == fastpath.Accepted
		}()
	}
	wg.Wait()
	close(results)
	for ok := range results {
		if ok {
			return true
		}
	}
	return false
}
