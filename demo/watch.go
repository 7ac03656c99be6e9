package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
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
// restarted: what a SCADA client does.
type Watcher struct {
	endpoint string
	opts     WatchOptions
	fn       func(Reading)
	done     chan struct{}
	cancel   context.CancelFunc

	mu      sync.Mutex
	current Reading       // mu must be held.
	seen    bool          // a reading was reported; mu must be held.
	client  *opcua.Client // the connected client, nil between sessions; mu must be held.
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

// Read reads Server.ServiceLevel once through the watcher's session: the
// value at the moment the server handles the request. It returns
// ErrNotConnected while the watcher has no session.
func (w *Watcher) Read(ctx context.Context) (byte, error) {
	w.mu.Lock()
	c := w.client
	w.mu.Unlock()
	if c == nil {
		return 0, ErrNotConnected
	}
	return readLevel(ctx, c)
}

func readLevel(ctx context.Context, c *opcua.Client) (byte, error) {
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{
		NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue,
	}}, TimestampsToReturn: ua.TimestampsToReturnBoth})
	if err != nil {
		return 0, err
	}
	if len(resp.Results) != 1 {
		return 0, fmt.Errorf("read ServiceLevel: %d results", len(resp.Results))
	}
	dv := resp.Results[0]
	if dv.Status != ua.StatusOK {
		return 0, fmt.Errorf("read ServiceLevel: %v", dv.Status)
	}
	return levelOf(dv)
}

func levelOf(dv *ua.DataValue) (byte, error) {
	if dv == nil || dv.Value == nil {
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

// session connects, subscribes and delivers readings until the connection
// is lost or ctx is done; it returns why it ended.
func (w *Watcher) session(ctx context.Context) error {
	lost := make(chan struct{})
	var once sync.Once
	c, err := opcua.NewClient(w.endpoint,
		opcua.SecurityMode(ua.MessageSecurityModeNone),
		opcua.AutoReconnect(false),
		opcua.DialTimeout(w.opts.Timeout),
		opcua.RequestTimeout(w.opts.Timeout),
		opcua.StateChangedFunc(func(s opcua.ConnState) {
			if s == opcua.Closed || s == opcua.Disconnected {
				once.Do(func() { close(lost) })
			}
		}))
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	err = c.Connect(cctx)
	cancel()
	if err != nil {
		closeClient(c)
		return err
	}
	defer func() {
		w.mu.Lock()
		w.client = nil
		w.mu.Unlock()
		closeClient(c)
	}()

	notes := make(chan *opcua.PublishNotificationData, 64)
	sctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	sub, err := c.Subscribe(sctx, &opcua.SubscriptionParameters{Interval: w.opts.Interval}, notes)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	const handle = 2267
	mreq := opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewNumericNodeID(0, id.Server_ServiceLevel), ua.AttributeIDValue, handle)
	mres, err := sub.Monitor(sctx, ua.TimestampsToReturnBoth, mreq)
	if err != nil {
		return fmt.Errorf("monitor ServiceLevel: %w", err)
	}
	if len(mres.Results) != 1 || mres.Results[0].StatusCode != ua.StatusOK {
		return fmt.Errorf("monitor ServiceLevel: %v", mres.Results)
	}
	w.mu.Lock()
	w.client = c
	w.mu.Unlock()

	last := time.Now()
	check := time.NewTicker(w.opts.Silence / 2)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-lost:
			return errors.New("connection closed")
		case <-check.C:
			if time.Since(last) < w.opts.Silence {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
			_, err := readLevel(rctx, c)
			cancel()
			if err != nil {
				return fmt.Errorf("no answer: %w", err)
			}
			last = time.Now()
		case msg := <-notes:
			if msg.Error != nil {
				return msg.Error
			}
			last = time.Now()
			dc, ok := msg.Value.(*ua.DataChangeNotification)
			if !ok {
				continue
			}
			for _, item := range dc.MonitoredItems {
				if item.ClientHandle != handle || item.Value == nil {
					continue
				}
				level, err := levelOf(item.Value)
				if err != nil {
					return err
				}
				w.report(Reading{Known: true, Level: level, Source: item.Value.SourceTimestamp, At: time.Now()})
			}
		}
	}
}

// closeClient closes a session without waiting long for a node that is gone.
func closeClient(c *opcua.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_ = c.Close(ctx)
}
