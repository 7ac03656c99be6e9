package netem

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Mode is what a Proxy does with connections.
type Mode int

// Proxy modes.
const (
	// Pass forwards both directions (after the configured delays).
	Pass Mode = iota
	// Blackhole accepts new connections and holds them, forwards nothing in
	// either direction on any connection and resets nothing: a silent
	// partition. Data read meanwhile is kept and delivered in order when the
	// mode goes back to Pass, the way TCP retransmits after a partition
	// heals; a connection accepted meanwhile is connected to the target then.
	Blackhole
	// Reset closes the listener, so connects are refused, and resets every
	// open connection on both sides: a dead process.
	Reset
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Direction of a delay.
type Direction int

// Directions.
const (
	// Upstream is client → target.
	Upstream Direction = iota
	// Downstream is target → client.
	Downstream
)

// Stats are a proxy's counters since it started.
type Stats struct {
	Accepted   int64 // connections accepted
	Dialed     int64 // connections made to the target
	DialFailed int64 // dials to the target that failed (the client is reset)
	Open       int64 // client connections currently open
	Upstream   int64 // bytes written to the target
	Downstream int64 // bytes written to clients
}

// Proxy is a TCP proxy with switchable impairments. Its methods may be
// called from any goroutine.
type Proxy struct {
	addr   string // listen address, host:port (fixed after the first listen)
	target string

	mu      sync.Mutex
	source  net.IP             // address the target is dialled from; nil: any. mu must be held.
	mode    Mode               // mu must be held.
	unhold  chan struct{}      // closed when the mode leaves Blackhole; mu must be held.
	delay   [2]time.Duration   // per Direction; mu must be held.
	ln      net.Listener       // nil in Reset mode and after Close; mu must be held.
	pipes   map[*pipe]struct{} // open connections; mu must be held.
	closed  bool               // mu must be held.
	wg      sync.WaitGroup     // accept loops and pipe goroutines
	counter [6]atomic.Int64    // Stats fields, in order
}

const (
	cAccepted = iota
	cDialed
	cDialFailed
	cOpen
	cUp
	cDown
)

// DialTimeout bounds a proxy's dial to its target.
const DialTimeout = 2 * time.Second

// Listen starts a proxy listening on addr ("127.0.0.1:0" picks a port) that
// forwards to target, in Pass mode.
func Listen(addr, target string) (*Proxy, error) {
	p := &Proxy{target: target, pipes: map[*pipe]struct{}{}, unhold: closedChan()}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netem: proxy listen %s: %w", addr, err)
	}
	p.addr = ln.Addr().String()
	p.mu.Lock()
	p.serve(ln)
	p.mu.Unlock()
	return p, nil
}

// NewProxy is Listen that fails t on error and closes the proxy when t ends.
func NewProxy(t testing.TB, addr, target string) *Proxy {
	t.Helper()
	p, err := Listen(addr, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Addr is the proxy's listen address (the same across Reset and back).
func (p *Proxy) Addr() string { return p.addr }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		Accepted: p.counter[cAccepted].Load(), Dialed: p.counter[cDialed].Load(),
		DialFailed: p.counter[cDialFailed].Load(), Open: p.counter[cOpen].Load(),
		Upstream: p.counter[cUp].Load(), Downstream: p.counter[cDown].Load(),
	}
}

// SetDelay delays every chunk travelling in direction d by delay (0 for
// none). Order is kept; chunks already in flight keep their old delay.
func (p *Proxy) SetDelay(d Direction, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay[d] = delay
}

func (p *Proxy) delayOf(d Direction) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay[d]
}

// SetSource makes the proxy dial its target from ip (an address of this
// machine, such as 127.0.0.12 on loopback), so that the target can tell
// the proxy's connections from every other client's by their source
// address; nil dials from any address. It applies to connections dialled
// from then on.
func (p *Proxy) SetSource(ip net.IP) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.source = ip
}

func (p *Proxy) dialer() *net.Dialer {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := &net.Dialer{Timeout: DialTimeout}
	if p.source != nil {
		d.LocalAddr = &net.TCPAddr{IP: p.source}
	}
	return d
}

// SetMode switches the mode. Leaving Reset listens again on the same
// address; that fails if another process took the port meanwhile.
func (p *Proxy) SetMode(m Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("netem: proxy closed")
	}
	if m == p.mode {
		return nil
	}
	old := p.mode
	switch m {
	case Reset:
		p.stopListening()
		for pp := range p.pipes {
			pp.abort()
		}
	case Pass, Blackhole:
		if old == Reset {
			ln, err := net.Listen("tcp", p.addr)
			if err != nil {
				return fmt.Errorf("netem: proxy listen again on %s: %w", p.addr, err)
			}
			p.serve(ln)
		}
	default:
		return fmt.Errorf("netem: unknown mode %d", m)
	}
	if m == Blackhole {
		p.unhold = make(chan struct{})
	} else if old == Blackhole {
		close(p.unhold)
	}
	p.mode = m
	return nil
}

// Close stops the proxy, resets every open connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.stopListening()
	for pp := range p.pipes {
		pp.abort()
	}
	if p.mode == Blackhole {
		close(p.unhold)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// serve starts an accept loop on ln. mu must be held.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.counter[cAccepted].Add(1)
			p.accept(ln, c.(*net.TCPConn))
		}
	}()
}

// stopListening closes the listener; a connection its accept loop still
// hands over is reset (see accept). mu must be held.
func (p *Proxy) stopListening() {
	if p.ln == nil {
		return
	}
	_ = p.ln.Close()
	p.ln = nil
}

// accept takes c, accepted on ln, unless ln is no longer the proxy's
// listener (Reset or Close came first): then c is reset.
func (p *Proxy) accept(ln net.Listener, c *net.TCPConn) {
	p.mu.Lock()
	if p.closed || p.ln != ln {
		p.mu.Unlock()
		reset(c)
		return
	}
	pp := &pipe{p: p, client: c, done: make(chan struct{})}
	p.pipes[pp] = struct{}{}
	p.counter[cOpen].Add(1)
	p.wg.Add(1)
	p.mu.Unlock()
	go pp.run()
}

// hold blocks while the mode is Blackhole; false when the pipe was aborted.
func (p *Proxy) hold(done <-chan struct{}) bool {
	for {
		p.mu.Lock()
		m, ch := p.mode, p.unhold
		p.mu.Unlock()
		if m != Blackhole {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

func reset(c *net.TCPConn) {
	_ = c.SetLinger(0) // close sends RST
	_ = c.Close()
}

// pipe is one proxied connection.
type pipe struct {
	p      *Proxy
	client *net.TCPConn
	done   chan struct{} // closed by abort or when both directions ended

	mu     sync.Mutex
	server *net.TCPConn // nil until dialed; mu must be held.
	ended  bool         // mu must be held.
}

// abort resets both sides. Safe to call more than once.
func (pp *pipe) abort() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.ended {
		return
	}
	pp.ended = true
	close(pp.done)
	reset(pp.client)
	if pp.server != nil {
		reset(pp.server)
	}
}

// finish closes both sides normally after both directions reached EOF.
func (pp *pipe) finish() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.ended {
		return
	}
	pp.ended = true
	close(pp.done)
	_ = pp.client.Close()
	if pp.server != nil {
		_ = pp.server.Close()
	}
}

func (pp *pipe) run() {
	p := pp.p
	defer func() {
		p.mu.Lock()
		delete(p.pipes, pp)
		p.mu.Unlock()
		p.counter[cOpen].Add(-1)
		p.wg.Done()
	}()
	if !p.hold(pp.done) { // a connection accepted during a blackhole waits here
		return
	}
	s, err := p.dialer().Dial("tcp", p.target)
	if err != nil {
		p.counter[cDialFailed].Add(1)
		pp.abort()
		return
	}
	p.counter[cDialed].Add(1)
	pp.mu.Lock()
	if pp.ended {
		pp.mu.Unlock()
		reset(s.(*net.TCPConn))
		return
	}
	pp.server = s.(*net.TCPConn)
	pp.mu.Unlock()

	var wg sync.WaitGroup
	var eofs atomic.Int32
	wg.Add(2)
	go func() { defer wg.Done(); pp.copy(pp.server, pp.client, Upstream, &eofs) }()
	go func() { defer wg.Done(); pp.copy(pp.client, pp.server, Downstream, &eofs) }()
	wg.Wait()
	if eofs.Load() == 2 {
		pp.finish()
	} else {
		pp.abort()
	}
}

type chunk struct {
	b   []byte
	due time.Time
}

// copy moves src → dst: a reader stamps each chunk with its due time, a
// writer waits for it and for the end of any blackhole, then writes. An EOF
// is passed on as a half-close; any error resets the pipe.
func (pp *pipe) copy(dst, src *net.TCPConn, d Direction, eofs *atomic.Int32) {
	ch := make(chan chunk, 64)
	readerDone := make(chan struct{})
	defer func() { <-readerDone }()
	go func() {
		defer close(readerDone)
		defer close(ch)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case ch <- chunk{b: buf[:n], due: time.Now().Add(pp.p.delayOf(d))}:
				case <-pp.done:
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					select {
					case ch <- chunk{}: // EOF marker
					case <-pp.done:
					}
				} else {
					pp.abort()
				}
				return
			}
		}
	}()
	for c := range ch {
		if c.b == nil {
			if !pp.p.hold(pp.done) {
				return
			}
			_ = dst.CloseWrite()
			eofs.Add(1)
			return
		}
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-pp.done:
				t.Stop()
				return
			}
		}
		if !pp.p.hold(pp.done) {
			return
		}
		n, err := dst.Write(c.b)
		pp.p.counter[cUp+int(d)].Add(int64(n))
		if err != nil {
			pp.abort()
			return
		}
	}
}
