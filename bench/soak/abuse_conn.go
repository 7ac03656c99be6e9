package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// cutShort is the outcome of an operation the end of the abuse interrupted.
const cutShort = "cut short at the end"

// note counts the outcome of err for abuser name; an error caused by the
// end of the abuse is counted as cutShort, not as an answer of the server.
func (a *Abuse) note(ctx context.Context, name, prefix string, err error) {
	if err != nil && ended(ctx) {
		a.Tally.Saw(name, cutShort)
		return
	}
	a.Tally.Saw(name, prefix+outcome(err))
}

// ended reports whether ctx is done or past its deadline: a socket
// deadline taken from ctx can expire a moment before ctx itself is
// marked done.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// openClose opens a secure channel properly and closes it at once.
func (a *Abuse) openClose(ctx context.Context, _ *rand.Rand) {
	ch, err := uaclient.Dial(ctx, a.Endpoint, uaclient.Options{DialTimeout: opTimeout, LocalIP: a.LocalIP})
	a.note(ctx, "conn/open-close", "", err)
	if err == nil {
		ch.Close()
	}
}

// silent opens a connection, sends a Hello (and OpenSecureChannel when
// opn) and then says nothing more; h holds it until the server closes it
// or the abuse ends. Nothing is opened (and false returned) while h holds
// maxHeld connections.
func (a *Abuse) silent(ctx context.Context, h *holder, opn bool) bool {
	if h.full() {
		return false
	}
	rc, err := dialRaw(ctx, a.Endpoint, opTimeout, a.LocalIP)
	if err == nil {
		err = rc.hello(opTimeout)
		if err == nil && opn {
			err = rc.open(opTimeout)
		}
	}
	a.note(ctx, h.name, "", err)
	if err != nil {
		if rc != nil {
			rc.close()
		}
		return true
	}
	h.hold(ctx, rc)
	return true
}

// holder keeps silent connections open, each watched by a goroutine of
// its own that notices when the server closes it (or answers anything).
type holder struct {
	name  string
	tally *Tally
	wg    sync.WaitGroup

	mu      sync.Mutex
	conns   map[*rawConn]bool // mu must be held.
	closing bool              // closeAll has begun; mu must be held.
}

func newHolder(name string, t *Tally) *holder {
	return &holder{name: name, tally: t, conns: map[*rawConn]bool{}}
}

func (h *holder) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns) >= maxHeld
}

// hold watches rc until the server closes it, ctx ends or closeAll.
func (h *holder) hold(ctx context.Context, rc *rawConn) {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		rc.close()
		return
	}
	h.conns[rc] = true
	h.mu.Unlock()
	since := time.Now()
	h.wg.Go(func() {
		_ = rc.c.SetReadDeadline(time.Time{})
		_, err := rc.r.Peek(1)
		held := time.Since(since)
		h.mu.Lock()
		closing := h.closing || ctx.Err() != nil
		delete(h.conns, rc)
		h.mu.Unlock()
		switch {
		case closing:
			h.tally.Saw(h.name, "held until the end")
		case err == nil:
			// The server said something: an ERR before closing, usually.
			_, _, ferr := rc.readFrame(time.Second)
			h.tally.Saw(h.name, "then "+outcome(ferr)+" after "+holdBucket(held))
		default:
			h.tally.Saw(h.name, "then closed by the server after "+holdBucket(held))
		}
		rc.close()
	})
}

// closeAll closes every held connection and waits for the watchers.
func (h *holder) closeAll() {
	h.mu.Lock()
	h.closing = true
	for rc := range h.conns {
		rc.close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// holdBucket names the range d falls in, coarse enough to keep the
// histogram short.
func holdBucket(d time.Duration) string {
	for _, b := range []struct {
		below time.Duration
		name  string
	}{{time.Second, "< 1 s"}, {5 * time.Second, "1–5 s"}, {10 * time.Second, "5–10 s"}, {30 * time.Second, "10–30 s"}, {time.Minute, "30–60 s"}} {
		if d < b.below {
			return b.name
		}
	}
	return "≥ 60 s"
}
