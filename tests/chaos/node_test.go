package chaos

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// errNotRunning: the node's process has exited (and not been started
// again yet).
var errNotRunning = errors.New("not running")

// node is one `otopcua host` of a pair, on its own test host, with the
// supervisor the run plays for it: a process that exits by itself is
// started again after supervisorDelay, unless a fault holds the node (a
// kill or leave the run started, which starts it again itself).
type node struct {
	name     string
	pair     *pair
	host     *netem.Host
	r        *rig
	dir      string
	cfg      map[string]any
	endpoint string       // its OPC UA endpoint through the SCADA host
	src      net.IP       // the address its device path dials from
	dbPath   *netem.Proxy // its path to the Config DB
	devPath  *netem.Proxy // its path to its pair's device

	mu      sync.Mutex
	proc    *procs.Node // nil before the first start; mu must be held.
	gen     int         // process starts so far; mu must be held.
	held    bool        // a fault owns the next start; mu must be held.
	killed  bool        // the run SIGKILLed the current process; mu must be held.
	stopped bool        // the current process is SIGSTOPped; mu must be held.
	retired bool        // the run ended: no more starts; mu must be held.
}

// start starts the node's first process (from the test's goroutine).
func (n *node) start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.startLocked()
}

// startLocked starts the node's process, the first or the next one, and
// records it. mu must be held.
func (n *node) startLocked() {
	if n.proc == nil {
		n.proc = procs.StartWith(n.r.t, n.name, n.cfg, procs.Options{
			Wrap: n.host.Wrap(), Client: n.host.HTTPClient(), Binary: n.r.bin, Env: n.r.env, Dir: n.dir, Quiet: true,
		})
		n.proc.Token = n.r.token
	} else {
		n.proc.Restart()
	}
	n.r.rec.process(n.name, check.Started, 0)
	n.gen++
	n.killed, n.stopped = false, false
	gen, done := n.gen, n.proc.Done()
	go n.supervise(gen, done)
	if len(n.r.env) > 0 {
		go n.handOver(gen)
	}
}

// supervise waits for process gen to exit, records the exit, and starts
// the node again after supervisorDelay unless a fault holds it.
func (n *node) supervise(gen int, done <-chan struct{}) {
	<-done
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.retired || gen != n.gen {
		return
	}
	code, _ := n.proc.Exited()
	if !n.killed {
		n.r.rec.process(n.name, check.Exited, code)
	}
	n.r.logf("%s: process %d exited (code %d)%s", n.name, gen, code, map[bool]string{true: ", held by a fault", false: ""}[n.held])
	if n.held {
		return
	}
	time.AfterFunc(supervisorDelay, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.retired || n.held || gen != n.gen {
			return
		}
		n.startLocked()
	})
}

// handOver gives process gen's ServiceLevel to its runtime: with the test
// hooks on (a mutation run), a node holds 255 from start-up until told.
func (n *node) handOver(gen int) {
	err := poll.Wait(60*time.Second, 100*time.Millisecond, func() error {
		n.mu.Lock()
		p, cur, retired := n.proc, n.gen, n.retired
		n.mu.Unlock()
		if retired || cur != gen || !p.Alive() {
			return nil
		}
		_, err := p.Post("/debug/service-level?level=runtime")
		return err
	})
	if err != nil {
		n.r.t.Errorf("%s: handing ServiceLevel to the runtime: %v", n.name, err)
	}
}

// retire ends supervision at the end of the run.
func (n *node) retire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.retired = true
}

// signal sends sig to the current process and records it.
func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || !n.proc.Alive() {
		return errNotRunning
	}
	if err := syscall.Kill(n.proc.PID(), sig); err != nil {
		return fmt.Errorf("%s: kill %v: %w", n.name, sig, err)
	}
	switch sig {
	case syscall.SIGKILL:
		n.killed = true
		n.r.rec.process(n.name, check.Killed, 0)
	case syscall.SIGSTOP:
		n.stopped = true
		n.r.rec.process(n.name, check.Stopped, 0)
	case syscall.SIGCONT:
		n.stopped = false
		n.r.rec.process(n.name, check.Continued, 0)
	}
	return nil
}

// running reports whether the current process is alive and not stopped.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && n.proc.Alive() && !n.stopped
}

// generation is the number of process starts so far.
func (n *node) generation() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gen
}

// hold makes the run, not the supervisor, start the node after its
// process exits next.
func (n *node) hold() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held = true
}

// waitExit waits up to total for the current process to exit.
func (n *node) waitExit(total time.Duration) error {
	n.mu.Lock()
	done := n.proc.Done()
	n.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-time.After(total):
		return fmt.Errorf("%s did not exit within %v", n.name, total)
	}
}

// restartHeld starts a held node again once its process exited, and
// gives it back to the supervisor. It returns when the start was.
func (n *node) restartHeld() (time.Time, error) {
	if err := n.waitExit(30 * time.Second); err != nil {
		return time.Time{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held = false
	if n.retired {
		return time.Time{}, errors.New("the run ended")
	}
	n.startLocked()
	return time.Now(), nil
}

// waitStart waits up to total for a process start after generation gen,
// and returns when it was seen.
func (n *node) waitStart(gen int, total time.Duration) (time.Time, error) {
	err := poll.Wait(total, 20*time.Millisecond, poll.True(n.name+" started again", func() bool { return n.generation() > gen }))
	return time.Now(), err
}

// post sends a POST to path on the node's HTTP port with the
// Administrator's token.
func (n *node) post(path string) (string, error) {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	return p.Post(path)
}

// members is the node's view of its cluster.
func (n *node) members() (*procs.ClusterView, error) {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	return p.Members()
}
