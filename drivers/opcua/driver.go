package opcua

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Driver mirrors the tags of one upstream OPC UA server (or redundant set)
// by subscription (drivers.Pusher). See the package comment.
type Driver struct {
	dev   deployment.Device
	opts  drivers.Options
	log   *slog.Logger
	clock clockwork.Clock
	ctr   drivers.Counters

	byName map[string]int

	// sinkMu serialises the calls of the sink (the pump and the client's
	// event callback both report changes). It is taken before mu.
	sinkMu sync.Mutex

	// mu guards the fields below; never held across a network call.
	mu        sync.Mutex
	readings  *drivers.Readings
	nodes     []*ua.NodeID // by tag: the resolved upstream node (nil: not mirrored)
	cl        *client.Client
	health    drivers.Health
	failures  int  // consecutive failed connects
	closed    bool // Close was called
	running   bool // Run is running
	closing   chan struct{}
	recheck   chan struct{}  // a failover re-created the subscription: check the tags again (capacity 1)
	problemed map[int]string // tags refused at the last connect, and why

	conds     condMirror     // the upstream's conditions (alarms.go); its own lock
	tree      *tree          // the mirrored subtree last browsed (nil: none)
	mirrorIdx map[string]int // tree's nodes by key
	mirrorBad ua.StatusCode  // the status allBad last gave the mirrored Variables (0: none since a value)
}

var _ drivers.Pusher = (*Driver)(nil)

// publishRequests is how many Publish requests the driver keeps queued at
// the upstream.
const publishRequests = 6

// New returns the driver of dev, an opcua device.
func New(dev deployment.Device, opts drivers.Options) (*Driver, error) {
	if dev.Driver != deployment.DriverOPCUA {
		return nil, fmt.Errorf("opcua: device %q has driver %q", dev.Name, dev.Driver)
	}
	if len(dev.EndpointURLs()) == 0 {
		return nil, fmt.Errorf("opcua: device %q has no endpoint", dev.Name)
	}
	opts = opts.WithDefaults(dev)
	d := &Driver{
		dev: dev, opts: opts, log: opts.Logger, clock: opts.Clock,
		byName:   make(map[string]int, len(dev.Tags)),
		readings: drivers.NewReadings(len(dev.Tags)),
		nodes:    make([]*ua.NodeID, len(dev.Tags)),
		closing:  make(chan struct{}),
		recheck:  make(chan struct{}, 1),
	}
	for i, t := range dev.Tags {
		if _, dup := d.byName[t.Name]; dup {
			return nil, fmt.Errorf("opcua: device %q: tag %q twice", dev.Name, t.Name)
		}
		d.byName[t.Name] = i
		if t.BrowsePath != "" {
			if _, err := deployment.ParseBrowsePath(t.BrowsePath); err != nil {
				return nil, fmt.Errorf("opcua: device %q tag %q: browsePath %q: %w", dev.Name, t.Name, t.BrowsePath, err)
			}
		} else if _, err := deployment.ParseNodeRef(t.NodeId); err != nil {
			return nil, fmt.Errorf("opcua: device %q tag %q: nodeId %q: %w", dev.Name, t.Name, t.NodeId, err)
		}
	}
	d.health = drivers.Health{State: drivers.StateDisconnected, Since: d.clock.Now()}
	return d, nil
}

// Connect is a no-op: Run connects and keeps the connection.
func (d *Driver) Connect(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return drivers.ErrClosed
	}
	return nil
}

// Read returns the current readings (what the subscription delivered).
func (d *Driver) Read(ctx context.Context) ([]drivers.Reading, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, drivers.ErrClosed
	}
	return d.readings.Snapshot(), d.health.LastError
}

// Health is the connection state.
func (d *Driver) Health() drivers.Health {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.health
}

// Stats are the counters: ReadsOK and ReadsFailed count the data changes
// received (good and bad), Polls the notification batches.
func (d *Driver) Stats() drivers.Stats {
	d.mu.Lock()
	connected := d.health.State == drivers.StateConnected
	d.mu.Unlock()
	return d.ctr.Stats(connected)
}

// Close ends the upstream session in the background and stops Run.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	close(d.closing)
	cl := d.cl
	d.cl = nil
	d.setStateLocked(drivers.StateClosed, nil)
	d.mu.Unlock()
	if cl != nil {
		go cl.Close()
	}
	return nil
}

// setStateLocked moves to state with err as the last error. mu must be held.
func (d *Driver) setStateLocked(state drivers.State, err error) {
	if d.health.State != state {
		d.health.State, d.health.Since = state, d.clock.Now()
	}
	d.health.RetryAt = time.Time{}
	if err != nil || state == drivers.StateConnected {
		d.health.LastError = err
	}
	d.health.ConnectOK = state == drivers.StateConnected || (d.health.ConnectOK && state != drivers.StateConnecting)
}

// Run keeps the upstream session and subscription until ctx is done or
// Close: it connects (backing off after failures), checks every tag
// against the upstream, subscribes, and hands every data change to sink.
// The client library reconnects by itself (TransferSubscriptions, else
// re-creation); while no upstream server is reachable every tag is Bad.
func (d *Driver) Run(ctx context.Context, sink drivers.ChangeSink) error {
	d.mu.Lock()
	again := d.running
	d.running = true
	d.mu.Unlock()
	if again {
		// A restarted device actor: the first Run goes on; this one waits.
		select {
		case <-d.closing:
			return drivers.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-d.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		err := d.session(ctx, sink)
		if d.isClosed() {
			return drivers.ErrClosed
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errRecheck) {
			continue // connect again at once: the values stay meanwhile
		}
		d.mu.Lock()
		d.failures++
		wait := drivers.Backoff(d.failures)
		d.setStateLocked(drivers.StateDisconnected, err)
		d.health.RetryAt = d.clock.Now().Add(wait)
		d.mu.Unlock()
		d.allBad(sink, ua.StatusBadCommunicationError)
		t := d.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if d.isClosed() {
				return drivers.ErrClosed
			}
			return ctx.Err()
		case <-t.Chan():
		}
	}
}

func (d *Driver) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// errRecheck ends a session whose subscription a failover re-created.
var errRecheck = errors.New("the upstream subscription was re-created: checking the tags again")

// session is one client's life: dial, check, subscribe, pump. It returns
// when the subscription ends (ctx, Close), setting up failed, or
// (errRecheck) the client re-created the subscription on a server that
// had lost it — a restarted upstream or another server of its set, whose
// namespace indexes and DataTypes are checked again with a new session.
func (d *Driver) session(ctx context.Context, sink drivers.ChangeSink) error {
	select {
	case <-d.recheck: // left from the session before
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rechecked := make(chan struct{})
	go func() {
		select {
		case <-d.recheck:
			close(rechecked)
			cancel()
		case <-ctx.Done():
		}
	}()
	err := d.serve(ctx, sink)
	select {
	case <-rechecked:
		d.log.Info("opcua: the upstream lost our subscription (a restarted server, or another of its set): checking the tags again with a new session")
		return errRecheck
	default:
		return err
	}
}

// serve is session's work.
func (d *Driver) serve(ctx context.Context, sink drivers.ChangeSink) error {
	d.mu.Lock()
	d.setStateLocked(drivers.StateConnecting, nil)
	d.mu.Unlock()
	d.ctr.Connect()
	opts, err := d.clientOptions(sink)
	if err != nil {
		d.log.Error("opcua: the upstream cannot be reached as configured", "err", err)
		return err
	}
	cl, err := client.Dial(ctx, opts)
	if err != nil {
		d.logConnectFailure(err)
		return fmt.Errorf("%w: %w", drivers.ErrCommunication, err)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		go cl.Close()
		return drivers.ErrClosed
	}
	d.cl = cl
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		if d.cl == cl {
			d.cl = nil
		}
		d.mu.Unlock()
		go cl.Close()
	}()
	items, handles, err := d.check(ctx, cl, sink)
	if err != nil {
		return fmt.Errorf("%w: %w", drivers.ErrCommunication, err)
	}
	d.mu.Lock()
	d.failures = 0
	d.setStateLocked(drivers.StateConnected, nil)
	d.mu.Unlock()
	d.log.Info("opcua: upstream connected", "server", cl.Active().String(), "tags", len(items), "refused", len(d.dev.Tags)-len(items))
	ctx, mirrorChanged, err := d.startMirror(ctx, cl, &items, &handles)
	if err != nil {
		return fmt.Errorf("%w: %w", drivers.ErrCommunication, err)
	}
	if d.alarmsOn() {
		ev, err := d.eventItem(ctx, cl)
		if err != nil {
			d.log.Error("opcua: the upstream's conditions are not mirrored", "err", err)
		} else {
			items, handles = append(items, ev), append(handles, eventHandle)
		}
	}
	if len(items) > 0 {
		sub, err := cl.SubscribeItems(ctx, items, d.dev.EffectivePublishingInterval())
		if err != nil {
			return fmt.Errorf("%w: subscribe: %w", drivers.ErrCommunication, err)
		}
		if d.alarmsOn() {
			d.startConditions(ctx, cl, sub)
		}
		d.pump(ctx, sub.Notifications(), handles, sink, items)
	} else {
		<-ctx.Done()
	}
	if mirrorChanged() {
		return errMirrorChanged
	}
	return ctx.Err()
}

// startMirror, for a device with a mirror, browses the subtree, adds its
// Variables to items and handles and starts its refresh; the returned
// context ends when the subtree changed upstream, which mirrorChanged
// then reports.
func (d *Driver) startMirror(ctx context.Context, cl *client.Client, items *[]client.Item, handles *[]int) (context.Context, func() bool, error) {
	var changed atomic.Bool
	if d.dev.Mirror == nil {
		return ctx, changed.Load, nil
	}
	nsArray, err := d.namespaces(ctx, cl)
	if err != nil {
		return ctx, changed.Load, err
	}
	mi, mh := d.mirror(ctx, cl, nsArray)
	*items, *handles = append(*items, mi...), append(*handles, mh...)
	ctx, stop := context.WithCancel(ctx)
	go d.refreshMirror(ctx, cl, nsArray, func() { changed.Store(true); stop() })
	return ctx, changed.Load, nil
}

// clientOptions are the client's options for this device.
func (d *Driver) clientOptions(sink drivers.ChangeSink) (client.Options, error) {
	o := client.Options{
		URLs: d.dev.EndpointURLs(),
		// A request that outlives the client's Timeout marks the
		// connection lost (and every tag Bad): that bound is for a dead
		// connection, 5× the device's timeout (at least 5 s). One slow
		// answer is bounded by the device's timeout on its own request
		// (Write), which leaves the connection alone.
		Timeout: max(5*time.Second, 5*drivers.Timeout(d.dev)),
		// Mirrored: after a break the session is activated again on a
		// new channel and what the upstream sent meanwhile is
		// republished (no change lost, no orphan session upstream); a
		// server that refuses (it restarted, or it is the other server
		// of an upstream set) gets TransferSubscriptions, else a new
		// subscription (the Warm path).
		Mode:        client.ModeMirrored,
		NoDiscovery: true,
		// node-opcua answers at most 1,000 notifications per Publish
		// response; 10,000 items changing every 100 ms need more than
		// two requests queued (bench/opcuamirror: 2 lose changes at the
		// upstream's queues, 6 keep up).
		PublishRequests: publishRequests,
		Logger:          d.log,
		ApplicationName: "otopcua opcua driver " + d.dev.Name,
		OnEvent:         func(ev client.Event) { d.onEvent(ev, sink) },
	}
	// A lost upstream is noticed after LostAfter without a Publish
	// response (a closed connection at once): a few publishing intervals,
	// at least 3 s — with 1 s a busy upstream (node-opcua at full load on
	// 2 cores) skipped its keep-alive and was dropped and reconnected
	// while healthy, its tags Bad and a write lost meanwhile.
	o.LostAfter = max(3*time.Second, 4*d.dev.EffectivePublishingInterval())
	if d.dev.EffectiveSecurityPolicy() != deployment.PolicyNone {
		id := d.opts.Identity
		if id == nil || len(id.Certificate) == 0 || id.PrivateKey == nil || id.TrustServer == nil {
			return o, fmt.Errorf("%w: securityPolicy %s needs the node's certificate and PKI (OpcUa:Security)", drivers.ErrCommunication, d.dev.SecurityPolicy)
		}
		o.Security = &client.Security{
			PolicyURI: policyURI(d.dev.SecurityPolicy), Mode: securityMode(d.dev.SecurityMode),
			Certificate: id.Certificate, PrivateKey: id.PrivateKey, TrustServer: id.TrustServer,
		}
	}
	if d.dev.Username != "" {
		pw := d.opts.Getenv(d.dev.PasswordEnv)
		if pw == "" {
			return o, fmt.Errorf("%w: the environment variable %s (passwordEnv) is empty on this node", drivers.ErrCommunication, d.dev.PasswordEnv)
		}
		o.User = &uaclient.UserName{Name: d.dev.Username, Password: pw}
	}
	return o, nil
}

// logConnectFailure logs a failed connect: once per streak at Warn (an
// untrusted certificate or a refused user named as such), then at Debug.
func (d *Driver) logConnectFailure(err error) {
	d.mu.Lock()
	first := d.failures == 0
	d.mu.Unlock()
	lvl := slog.LevelDebug
	if first {
		lvl = slog.LevelWarn
	}
	msg := "opcua: upstream unreachable; its tags are Bad until it answers"
	var ae *uaclient.ActivationError
	switch {
	case errors.As(err, &ae):
		msg = "opcua: the upstream refused the session's user; its tags stay Bad"
	case strings.Contains(err.Error(), "not trusted"):
		msg = "opcua: the upstream's certificate is not trusted by this node's PKI (trust it with `otopcua pki trust`); its tags stay Bad"
	}
	if first && msg != "opcua: upstream unreachable; its tags are Bad until it answers" {
		lvl = slog.LevelError
	}
	d.log.Log(context.Background(), lvl, msg, "endpoints", strings.Join(d.dev.EndpointURLs(), ","), "err", err)
}

// onEvent follows the client's view of the upstream set: every tag is Bad
// while no server is reachable; a failover is logged (the re-created or
// transferred subscription sends the current values).
func (d *Driver) onEvent(ev client.Event, sink drivers.ChangeSink) {
	switch ev.Kind {
	case client.EventLost:
		d.mu.Lock()
		d.setStateLocked(drivers.StateDisconnected, fmt.Errorf("%w: upstream lost: %s", drivers.ErrCommunication, ev.Reason))
		d.mu.Unlock()
		d.log.Warn("opcua: upstream lost; its tags are Bad until it is back", "from", ev.From.String(), "reason", ev.Reason)
		d.allBad(sink, ua.StatusBadCommunicationError)
	case client.EventFailover:
		d.mu.Lock()
		d.setStateLocked(drivers.StateConnected, nil)
		d.mu.Unlock()
		how := howResumed(ev)
		d.log.Info("opcua: upstream reconnected", "from", ev.From.String(), "to", ev.To.String(), "session", how, "fallback", ev.Fallback, "reason", ev.Reason)
		if how == "re-created" {
			select {
			case d.recheck <- struct{}{}:
			default:
			}
		} else if d.alarmsOn() {
			d.mu.Lock()
			cl := d.cl
			d.mu.Unlock()
			go d.refreshConditions(context.Background(), cl) // the upstream's retained conditions, again
		}
	}
}

// howResumed says how a failover took the subscription along:
// "reactivated" (the same session on a new channel), "transferred"
// (TransferSubscriptions to a new session) or "re-created".
func howResumed(ev client.Event) string {
	switch {
	case ev.Mode == client.ModeMirrored && ev.Fallback == "":
		return "reactivated"
	case ev.Transferred:
		return "transferred"
	}
	return "re-created"
}

// allBad marks every mirrored tag Bad with code (the refused ones keep
// their own status) and reports the changes.
func (d *Driver) allBad(sink drivers.ChangeSink, code ua.StatusCode) {
	d.sinkMu.Lock()
	defer d.sinkMu.Unlock()
	now := d.clock.Now()
	d.mu.Lock()
	changes := make([]drivers.Change, 0, d.readings.Len())
	before := d.readings.Snapshot()
	for i := range d.dev.Tags {
		if _, refused := d.problemed[i]; refused {
			continue
		}
		if code == ua.StatusBadCommunicationError {
			d.readings.CommFailed(i, now)
		} else {
			d.readings.Failed(i, code, now)
		}
	}
	after := d.readings.Snapshot()
	mirrored := d.mirrorBadLocked(code, now)
	d.mu.Unlock()
	for i := range after {
		if after[i].Status != before[i].Status {
			changes = append(changes, drivers.Change{Index: i, Reading: after[i]})
		}
	}
	changes = append(changes, mirrored...)
	d.ctr.Reads(0, len(changes))
	if len(changes) > 0 {
		sink(changes)
	}
}

// policyURI is the URI of a policy name of the document.
func policyURI(name string) string {
	switch name {
	case deployment.PolicyBasic256Sha256:
		return ua.SecurityPolicyURIBasic256Sha256
	case deployment.PolicyAes128Sha256RsaOaep:
		return ua.SecurityPolicyURIAes128Sha256RsaOaep
	case deployment.PolicyAes256Sha256RsaPss:
		return ua.SecurityPolicyURIAes256Sha256RsaPss
	}
	return ua.SecurityPolicyURINone
}

// securityMode is the mode of a mode name of the document.
func securityMode(name string) ua.MessageSecurityMode {
	switch name {
	case deployment.ModeSign:
		return ua.MessageSecurityModeSign
	case deployment.ModeSignAndEncrypt:
		return ua.MessageSecurityModeSignAndEncrypt
	}
	return ua.MessageSecurityModeNone
}

// typeName is the document's type name of a built-in DataType, or its
// NodeId.
func typeName(n *ua.NodeID) string {
	if n != nil && n.Namespace() == 0 {
		for _, t := range deployment.Types {
			if drivers.DataTypeOf(t) == n.IntID() {
				return t
			}
		}
	}
	if n == nil {
		return "none"
	}
	return n.String()
}
