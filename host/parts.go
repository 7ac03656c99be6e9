package host

import (
	"log/slog"
	"slices"
	"sync"
	"time"
)

// parts starts a node's parts in order and stops them in reverse: the one
// place where a part's undo is written. Each start records the part's stop;
// the first start that fails stops every part started before it, and stop
// (at the end of Run) does the same for all of them. No error path unwinds
// anything by hand.
//
// A part is started by one goroutine at a time (Run's, or the start
// function of an enclosing part); stop may be called from another goroutine
// and runs once.
type parts struct {
	log *slog.Logger

	mu sync.Mutex
	// started holds the parts in the order their stops run backwards.
	// mu must be held.
	started []startedPart
	// stopped is set by the first stop. mu must be held.
	stopped bool
}

// startedPart is one part that started: its name (in the logs) and its
// stop, nil for a part with nothing to stop.
type startedPart struct {
	name string
	stop func() error
}

// startFunc starts one part and returns its stop (nil when there is nothing
// to stop), or the error that ends start-up. On error it must leave nothing
// of its own running: what it started before the error is its own undo.
type startFunc func() (stop func() error, err error)

// part is one line of a start list: the part's name, its start and, when
// set, the part whose stop its own follows (see startUnder).
type part struct {
	name  string
	start startFunc
	under string
}

func newParts(log *slog.Logger) *parts { return &parts{log: log} }

// start starts the part name. Its stop runs before every stop recorded so
// far. When fn fails, every part started so far is stopped and fn's error
// is returned unchanged.
func (p *parts) start(name string, fn startFunc) error {
	return p.startUnder(name, "", fn)
}

// startUnder is start for a part that opens after under but must close
// after it: under's own parts use it until they stop (the Config DB, which
// opens after the cluster transport listens, outlives the actor system
// whose actors read it). Its stop runs right after under's. An empty under
// is start. An under that never started is a wiring error: it panics.
func (p *parts) startUnder(name, under string, fn startFunc) error {
	began := time.Now()
	stop, err := fn()
	p.log.Debug("part started", "part", name, "tookMs", time.Since(began).Milliseconds(), "failed", err != nil)
	if err != nil {
		p.log.Debug("start-up failed; stopping the parts already started", "part", name, "err", err)
		p.stop()
		return err
	}
	sp := startedPart{name: name, stop: stop}
	p.mu.Lock()
	if p.stopped { // started after the stop: it stops at once
		p.mu.Unlock()
		p.stopOne(sp)
		return nil
	}
	at := len(p.started)
	if under != "" {
		at = slices.IndexFunc(p.started, func(s startedPart) bool { return s.name == under })
		if at < 0 {
			p.mu.Unlock()
			panic("host: part " + name + " is started under " + under + ", which has not started")
		}
	}
	p.started = slices.Insert(p.started, at, sp)
	p.mu.Unlock()
	return nil
}

// startAll starts list in order and stops at the first failure (having
// stopped what started).
func (p *parts) startAll(list []part) error {
	for _, pt := range list {
		if err := p.startUnder(pt.name, pt.under, pt.start); err != nil {
			return err
		}
	}
	return nil
}

// stop stops every part that started, the last first. A stop that fails is
// logged with its part's name and the others still run. Only the first
// call stops anything.
func (p *parts) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	started := p.started
	p.mu.Unlock()
	for _, s := range slices.Backward(started) {
		p.stopOne(s)
	}
}

// stopOne runs one part's stop and logs its failure.
func (p *parts) stopOne(s startedPart) {
	if s.stop == nil {
		return
	}
	p.log.Debug("stopping", "part", s.name)
	if err := s.stop(); err != nil {
		p.log.Warn("part did not stop cleanly", "part", s.name, "err", err)
	}
}

// names lists the parts in the order they stop.
func (p *parts) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.started))
	for _, s := range slices.Backward(p.started) {
		out = append(out, s.name)
	}
	return out
}

// quiet makes a stop that cannot fail a part's stop.
func quiet(fn func()) func() error {
	return func() error { fn(); return nil }
}
