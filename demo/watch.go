package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/client"
)

// Reading is one observation of a node's Server.ServiceLevel (i=2267) by a
// subscribed OPC UA client.
type Reading struct {
	// Known is false while the client has no session with the node (before
	// the first connect, after the connection was lost, while it
	// reconnects); Level is then meaningless.
	Known bool
	Level byte
	// Source is the value's SourceTimestamp as the server sent it (zero
	// when absent).
	Source time.Time
	// At is when the client received the value or lost the connection.
	At time.Time
	// Err says why the level is not known.
	Err error
}

func (r Reading) String() string {
	if !r.Known {
		if r.Err != nil {
			return fmt.Sprintf("unknown (%v)", r.Err)
		}
		return "unknown"
	}
	return fmt.Sprint(r.Level)
}

// WatchOptions tune a Watcher. The zero value gives the defaults.
type WatchOptions struct {
	// Interval is the subscription's requested publishing interval.
	// Default 50 ms.
	Interval time.Duration
	// RetryEvery is the pause between connection attempts. Default 200 ms.
	RetryEvery time.Duration
	// Timeout bounds a connect and every request. Default 2 s.
	Timeout time.Duration
	// Silence: with no notification for this long the watcher reads the
	// value to check that the node still answers, and reconnects when it
	// does not (a frozen process keeps its TCP connection open). Default 2 s.
	Silence time.Duration
}

func (o WatchOptions) withDefaults() WatchOptions {
	if o.Interval <= 0 {
		o.Interval = 50 * time.Millisecond
	}
	if o.RetryEvery <= 0 {
		o.RetryEvery = 200 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Silence <= 0 {
		o.Silence = 2 * time.Second
	}
	return o
}

// Watcher keeps an OPC UA session with one node and a subscription to its
// Server.ServiceLevel, reconnecting (and subscribing again) whenever the
// connection is lost, e.g. when the node's process is killed and
// restarted: what a SCADA client does. It is otopcua's own client
// (opcua/client) pointed at one URL.
type Watcher struct {
	endpoint string
	opts     WatchOptions
	fn       func(Reading)
	done     chan struct{}
	cancel   context.CancelFunc

	mu      sync.Mutex
	current Reading        // mu must be held.
	seen    bool           // a reading was reported; mu must be held.
	client  *client.Client // the connected client, nil between sessions; mu must be held.
}

// Watch starts watching endpoint (opc.tcp://host:port) until ctx is
// cancelled or Close is called. fn receives every change of the reading:
// each value the subscription delivers and each loss of the connection
// (once, as Known false). fn is called from the watcher's own goroutine,
// one call at a time, never concurrently; it must not block for long. fn
// may be nil.
func Watch(ctx context.Context, endpoint string, opts WatchOptions, fn func(Reading)) *Watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{endpoint: endpoint, opts: opts.withDefaults(), fn: fn, done: make(chan struct{}), cancel: cancel}
	go w.run(ctx)
	return w
}

// Endpoint is the watched endpoint URL.
func (w *Watcher) Endpoint() string { return w.endpoint }

// Current returns the latest reading.
func (w *Watcher) Current() Reading {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// Close stops the watcher and waits until its session is closed.
func (w *Watcher) Close() {
	w.cancel()
	<-w.done
}

// ErrNotConnected is returned by Read while the watcher has no session.
var ErrNotConnected = errors.New("not connected")

var serviceLevelNode = ua.NewNumericNodeID(0, id.Server_ServiceLevel)

// Read reads Server.ServiceLevel once through the watcher's session: the
// value at the moment the server handles the request. It returns
// ErrNotConnected at once while the watcher has no session or has lost it
// (the client would otherwise wait for the node to come back).
func (w *Watcher) Read(ctx context.Context) (byte, error) {
	w.mu.Lock()
	c, known := w.client, w.current.Known
	w.mu.Unlock()
	if c == nil || !known {
		return 0, ErrNotConnected
	}
	dvs, err := c.Read(ctx, serviceLevelNode)
	if err != nil {
		return 0, err
	}
	if dvs[0].Status != ua.StatusOK {
		return 0, fmt.Errorf("read ServiceLevel: %v", dvs[0].Status)
	}
	return levelOf(dvs[0])
}

func levelOf(dv *ua.DataValue) (byte, error) {
	if dv == nil || dv.Value == nil {
		if dv != nil && dv.Status != ua.StatusOK {
			return 0, fmt.Errorf("ServiceLevel: %v", dv.Status)
		}
		return 0, errors.New("ServiceLevel without a value")
	}
	b, ok := dv.Value.Value().(byte)
	if !ok {
		return 0, fmt.Errorf("ServiceLevel is %T, want Byte", dv.Value.Value())
	}
	return b, nil
}

func (w *Watcher) report(r Reading) {
	w.mu.Lock()
	prev, first := w.current, !w.seen
	if !first && !r.Known && !prev.Known {
		w.mu.Unlock() // still unknown: the loss was reported once
		return
	}
	w.seen = true
	w.current = r
	w.mu.Unlock()
	if w.fn != nil && (first || r.Known != prev.Known || r.Level != prev.Level) {
		w.fn(r)
	}
}

func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	for {
		err := w.session(ctx)
		if ctx.Err() != nil {
			return
		}
		w.report(Reading{At: time.Now(), Err: err})
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.opts.RetryEvery):
		}
	}
}

// session connects, subscribes and delivers readings until ctx is done; it
// returns why it ended. Once connected, the client itself reconnects
// (every RetryEvery) and subscribes again after a loss; the loss is
// reported once as unknown.
func (w *Watcher) session(ctx context.Context) error {
	events := make(chan client.Event, 64)
	c, err := client.Dial(ctx, client.Options{
		URLs:            []string{w.endpoint},
		NoDiscovery:     true,
		Timeout:         w.opts.Timeout,
		LostAfter:       w.opts.Silence,
		MinBackoff:      w.opts.RetryEvery,
		MaxBackoff:      w.opts.RetryEvery,
		ApplicationName: "otopcua watcher",
		OnEvent: func(e client.Event) {
			select {
			case events <- e:
			default: // the watcher is far behind; a later event says the same
			}
		},
	})
	if err != nil {
		return err
	}
	defer func() {
		w.mu.Lock()
		w.client = nil
		w.mu.Unlock()
		c.Close()
	}()
	sub, err := c.Subscribe(ctx, []*ua.NodeID{serviceLevelNode}, w.opts.Interval)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	w.mu.Lock()
	w.client = c
	w.mu.Unlock()
	var lostAt time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e := <-events:
			if e.Kind == client.EventLost {
				lostAt = e.At
				w.report(Reading{At: e.At, Err: errors.New(e.Reason)})
			}
		case n, ok := <-sub.Notifications():
			if !ok {
				return errors.New("subscription ended")
			}
			if n.At.Before(lostAt) {
				continue // delivered before the loss, read after it
			}
			level, err := levelOf(n.Value)
			if err != nil {
				w.report(Reading{At: n.At, Err: err})
				continue
			}
			w.report(Reading{Known: true, Level: level, Source: n.Value.SourceTimestamp, At: n.At})
		}
	}
}
