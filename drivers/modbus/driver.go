package modbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	mb "github.com/simonvetter/modbus"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// Driver is a Modbus TCP device (drivers.Driver). See the package comment.
type Driver struct {
	dev     deployment.Device
	tags    []deployment.Tag
	byName  map[string]int
	unit    uint8
	timeout time.Duration
	clock   clockwork.Clock
	log     *slog.Logger
	ctr     drivers.Counters

	// readMu serializes Read and guards plan and readings.
	readMu   sync.Mutex
	plan     []Request
	readings *drivers.Readings

	// mu guards the connection state below; it is never held during I/O.
	mu        sync.Mutex
	closed    bool
	sess      *session // the open connection, nil when none
	dialing   *dial    // the connect in progress, nil when none
	failures  int      // consecutive failures since the last answer
	retryAt   time.Time
	state     drivers.State
	since     time.Time
	lastErr   error
	connectOK bool            // the last connect that ended opened a connection
	run       drivers.ReadRun // the current run of failed polls
}

// session is one open connection and the requests using it.
type session struct {
	c *mb.ModbusClient
	// users, dead and closed are guarded by Driver.mu. users counts the
	// requests using c; a dead session takes no new users and is closed by
	// whoever brings users to 0 (Close never waits for them).
	users  int
	dead   bool
	closed bool
}

// dial is one connect in progress; err is set before done is closed.
type dial struct {
	done chan struct{}
	err  error
}

// New returns the driver of dev, a modbus-tcp device, without connecting.
// It fails, never panics, on a device it cannot serve: no address, a unit id
// outside 0–255, a duplicate tag name, or a tag Plan refuses.
func New(dev deployment.Device, opts drivers.Options) (*Driver, error) {
	if dev.Driver != "" && dev.Driver != deployment.DriverModbusTCP {
		return nil, fmt.Errorf("modbus: device %q has driver %q", dev.Name, dev.Driver)
	}
	if _, _, err := net.SplitHostPort(dev.Address); err != nil {
		return nil, fmt.Errorf("modbus: device %q: address %q: %w", dev.Name, dev.Address, err)
	}
	unit := drivers.DefaultUnitId
	if dev.UnitId != nil {
		unit = *dev.UnitId
	}
	if unit < 0 || unit > 255 {
		return nil, fmt.Errorf("modbus: device %q: unit id %d outside 0–255", dev.Name, unit)
	}
	plan, err := Plan(dev.Tags, DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("modbus: device %q: %w", dev.Name, err)
	}
	byName := make(map[string]int, len(dev.Tags))
	for i, t := range dev.Tags {
		if _, dup := byName[t.Name]; dup {
			return nil, fmt.Errorf("modbus: device %q: duplicate tag %q", dev.Name, t.Name)
		}
		byName[t.Name] = i
	}
	opts = opts.WithDefaults(dev)
	return &Driver{
		dev:      dev,
		tags:     dev.Tags,
		byName:   byName,
		unit:     uint8(unit),
		timeout:  drivers.Timeout(dev),
		clock:    opts.Clock,
		log:      opts.Logger,
		plan:     plan,
		readings: drivers.NewReadings(len(dev.Tags)),
		state:    drivers.StateDisconnected,
		since:    opts.Clock.Now(),
	}, nil
}

// Plan is the driver's current read plan (a copy): Plan(dev.Tags,
// DefaultLimits), with the requests split that the device refused.
func (d *Driver) Plan() []Request {
	d.readMu.Lock()
	defer d.readMu.Unlock()
	return append([]Request(nil), d.plan...)
}

// Connect opens the connection now (ignoring the back-off) unless one is
// open, and waits for it at most the request timeout.
func (d *Driver) Connect(ctx context.Context) error {
	s, err := d.acquire(ctx, true)
	if err != nil {
		return err
	}
	d.release(s, false, nil)
	return nil
}

// Read polls every planned request in order and returns every tag's reading.
// A request the device refuses marks its tags with the exception's code and
// the poll goes on; a broken connection marks the tags of that request and
// of the rest of the poll with the communication codes. When the device
// answers Illegal Data Address to a request that spans unused addresses, the
// request is split at its gaps (SplitAtGaps) for the life of the driver and
// its parts are sent at once; the refused request is not counted.
func (d *Driver) Read(ctx context.Context) ([]drivers.Reading, error) {
	d.readMu.Lock()
	defer d.readMu.Unlock()
	start := d.clock.Now()
	if len(d.plan) == 0 {
		if d.isClosed() {
			return nil, drivers.ErrClosed
		}
		d.ctr.Poll(0)
		return d.readings.Snapshot(), nil
	}
	s, err := d.acquire(ctx, false)
	if err != nil {
		if errors.Is(err, drivers.ErrClosed) || ctx.Err() != nil {
			return nil, err
		}
		d.commFailed(0, drivers.PolledTime(d.clock.Now()))
		d.ctr.Reads(0, len(d.plan))
		d.polled(start, false)
		d.ctr.Poll(d.clock.Since(start))
		return d.readings.Snapshot(), err
	}
	p := d.pollOn(ctx, s)
	d.release(s, p.heard, p.broke)
	if p.cancelled != nil {
		return nil, p.cancelled
	}
	d.ctr.Reads(p.ok, p.failed)
	err = errors.Join(p.errs...)
	d.mu.Lock()
	d.lastErr = err
	d.run = d.run.Next(start, p.ok > 0)
	d.mu.Unlock()
	d.ctr.Poll(d.clock.Since(start))
	return d.readings.Snapshot(), err
}

// polled advances the run of failed polls by the poll that began at start.
func (d *Driver) polled(start time.Time, good bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.run = d.run.Next(start, good)
}

// poll is what one poll on a session found.
type poll struct {
	ok, failed int
	heard      bool    // the device answered something
	broke      error   // the connection broke
	errs       []error // why tags are not Good
	cancelled  error   // ctx ended the poll
}

// pollOn sends the plan's requests on s and records their outcomes in the
// readings, until the plan is done, the connection breaks, ctx ends or the
// driver is closed.
// readMu must be held.
func (d *Driver) pollOn(ctx context.Context, s *session) (p poll) {
	for k := 0; k < len(d.plan) && p.broke == nil; k++ {
		if err := ctx.Err(); err != nil {
			p.cancelled = err
			return p
		}
		if d.isClosed() {
			p.cancelled = drivers.ErrClosed
			return p
		}
		req := d.plan[k]
		vals, err := d.exec(s.c, req)
		if d.splitRefused(k, err) {
			p.heard = true
			k-- // send the parts now
			continue
		}
		d.record(k, vals, err, &p)
	}
	return p
}

// splitRefused replaces request k by its parts when the device refused it
// with Illegal Data Address and it spans unused addresses; it reports
// whether it did. readMu must be held.
func (d *Driver) splitRefused(k int, err error) bool {
	req := d.plan[k]
	if out, _ := classify(err); out != refused || !errors.Is(err, mb.ErrIllegalDataAddress) {
		return false
	}
	parts := SplitAtGaps(req, d.tags)
	if len(parts) < 2 {
		return false
	}
	d.log.Warn("modbus device refused a merged read; reading its tags without the gaps from now on",
		"table", req.Table, "start", req.Start, "count", req.Count, "parts", len(parts))
	d.plan = append(d.plan[:k], append(parts, d.plan[k+1:]...)...)
	return true
}

// record applies the outcome of request k (its values or err) to its tags,
// and for a broken connection to the tags of the rest of the plan. readMu
// must be held.
func (d *Driver) record(k int, vals []any, err error, p *poll) {
	req := d.plan[k]
	now := drivers.PolledTime(d.clock.Now())
	out, code := classify(err)
	if err != nil {
		err = fmt.Errorf("read %s %d+%d: %w", req.Table, req.Start, req.Count, err)
	}
	switch out {
	case answered:
		p.heard = true
		p.ok++
		for j, i := range req.Tags {
			d.readings.Good(i, vals[j], now)
		}
	case refused, internal:
		p.heard = p.heard || out == refused
		p.failed++
		p.errs = append(p.errs, &drivers.StatusError{Code: code, Err: err})
		for _, i := range req.Tags {
			d.readings.Failed(i, code, now)
		}
	case unreachable:
		p.heard = true
		p.failed++
		p.errs = append(p.errs, fmt.Errorf("%w: %w", drivers.ErrCommunication, err))
		for _, i := range req.Tags {
			d.readings.CommFailed(i, now)
		}
	case broken:
		p.broke = fmt.Errorf("%w: %w", drivers.ErrCommunication, err)
		p.errs = append(p.errs, p.broke)
		p.failed += len(d.plan) - k
		d.commFailed(k, now)
	}
}

// exec sends req and decodes the answer. readMu must be held.
func (d *Driver) exec(c *mb.ModbusClient, req Request) (vals []any, err error) {
	defer guard(&err)
	var (
		words []uint16
		bits  []bool
	)
	switch req.Table {
	case deployment.TableHolding:
		words, err = c.ReadRegisters(req.Start, req.Count, mb.HOLDING_REGISTER)
	case deployment.TableInput:
		words, err = c.ReadRegisters(req.Start, req.Count, mb.INPUT_REGISTER)
	case deployment.TableCoil:
		bits, err = c.ReadCoils(req.Start, req.Count)
	case deployment.TableDiscrete:
		bits, err = c.ReadDiscreteInputs(req.Start, req.Count)
	}
	if err != nil {
		return nil, err
	}
	vals, err = Decode(req, d.tags, words, bits)
	if err != nil {
		// The client checks the answer's length, so this is a frame it
		// should not have accepted: treat it as a broken connection.
		return nil, fmt.Errorf("%w: %w", mb.ErrProtocolError, err)
	}
	return vals, nil
}

// guard turns a panic of the Modbus client (on an answer it failed to
// check) into a protocol error, so that no device can crash the node.
func guard(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: the modbus client panicked: %v", mb.ErrProtocolError, r)
	}
}

// commFailed marks the tags of requests k… of the plan as not read for lack
// of communication. readMu must be held.
func (d *Driver) commFailed(k int, now time.Time) {
	for _, req := range d.plan[k:] {
		for _, i := range req.Tags {
			d.readings.CommFailed(i, now)
		}
	}
}

// Write writes value to the tag named name: FC 05 for a coil, FC 06 for a
// one-register tag, FC 16 for a two- or four-register tag.
func (d *Driver) Write(ctx context.Context, name string, value any) (err error) {
	defer func() { d.ctr.Write(err) }()
	i, ok := d.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", drivers.ErrUnknownTag, name)
	}
	t := d.tags[i]
	if !t.Writable || (t.Table != deployment.TableHolding && t.Table != deployment.TableCoil) {
		return fmt.Errorf("%w: %q", drivers.ErrNotWritable, name)
	}
	words, bit, err := encodeWrite(t, value)
	if err != nil {
		return fmt.Errorf("tag %q: %w", name, err)
	}
	s, err := d.acquire(ctx, false)
	if err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	err = send(s.c, t, words, bit)
	out, code := classify(err)
	var broke error
	if err != nil {
		err = fmt.Errorf("write %q (%s %d): %w", name, t.Table, *t.Address, err)
	}
	switch out {
	case refused, internal:
		err = &drivers.StatusError{Code: code, Err: err}
	case unreachable:
		err = fmt.Errorf("%w: %w", drivers.ErrCommunication, err)
	case broken:
		broke = fmt.Errorf("%w: %w", drivers.ErrCommunication, err)
		err = broke
	}
	d.release(s, out == answered || out == refused || out == unreachable, broke)
	return err
}

// encodeWrite is what to send for value of the writable tag t: the bit of a
// coil, the registers of a holding register tag.
func encodeWrite(t deployment.Tag, value any) (words []uint16, bit bool, err error) {
	if t.Table != deployment.TableCoil {
		words, err = Encode(t, value)
		return words, false, err
	}
	v, err := drivers.Convert(value, deployment.TypeBool)
	if err != nil {
		return nil, false, err
	}
	return nil, v.(bool), nil
}

// send writes a coil or registers of t.
func send(c *mb.ModbusClient, t deployment.Tag, words []uint16, bit bool) (err error) {
	defer guard(&err)
	addr := uint16(*t.Address)
	switch {
	case t.Table == deployment.TableCoil:
		return c.WriteCoil(addr, bit)
	case len(words) == 1:
		return c.WriteRegister(addr, words[0])
	default:
		return c.WriteRegisters(addr, words)
	}
}

// Health is the connection state.
func (d *Driver) Health() drivers.Health {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := drivers.Health{State: d.state, Since: d.since, LastError: d.lastErr, ConnectOK: d.connectOK, Reads: d.run}
	if d.state == drivers.StateDisconnected && d.failures > 0 {
		h.RetryAt = d.retryAt
	}
	return h
}

// Stats are the counters.
func (d *Driver) Stats() drivers.Stats {
	d.mu.Lock()
	connected := d.sess != nil
	d.mu.Unlock()
	return d.ctr.Stats(connected)
}

// Close closes the connection if no request is using it, else leaves that
// to the last request; a connect in progress closes what it opens. Close
// never waits for either.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.setStateLocked(drivers.StateClosed)
	s := d.sess
	d.sess = nil
	closeIt := false
	if s != nil {
		s.dead = true
		closeIt = s.users == 0 && !s.closed
		s.closed = s.closed || closeIt
	}
	d.mu.Unlock()
	if closeIt {
		s.c.Close()
	}
	return nil
}

// acquire returns the open session with one more user, connecting first
// when there is none: at once when force, else only once the back-off has
// passed. It waits for a connect at most the request timeout (the connect
// goes on without it) or until ctx is done.
func (d *Driver) acquire(ctx context.Context, force bool) (*session, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, drivers.ErrClosed
	}
	if s := d.sess; s != nil {
		s.users++
		d.mu.Unlock()
		return s, nil
	}
	dl := d.dialing
	if dl == nil {
		if !force && d.clock.Now().Before(d.retryAt) {
			err := fmt.Errorf("%w (retry at %s): %w", drivers.ErrNotConnected,
				d.retryAt.Format(time.RFC3339Nano), d.lastConnErrLocked())
			d.mu.Unlock()
			return nil, err
		}
		dl = d.startDialLocked()
	}
	d.mu.Unlock()

	if err := d.waitDial(ctx, dl); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, drivers.ErrClosed
	}
	if s := d.sess; s != nil {
		s.users++
		return s, nil
	}
	return nil, fmt.Errorf("%w: the connection was lost as it opened", drivers.ErrNotConnected)
}

func (d *Driver) waitDial(ctx context.Context, dl *dial) error {
	t := d.clock.NewTimer(d.timeout)
	defer t.Stop()
	select {
	case <-dl.done:
		return dl.err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return fmt.Errorf("%w: connect to %s: no answer within %v", drivers.ErrCommunication, d.dev.Address, d.timeout)
	}
}

// startDialLocked starts a connect in its own goroutine. mu must be held.
func (d *Driver) startDialLocked() *dial {
	dl := &dial{done: make(chan struct{})}
	d.dialing = dl
	d.setStateLocked(drivers.StateConnecting)
	d.ctr.Connect()
	go d.runDial(dl)
	return dl
}

// runDial connects and installs the session, or records the failure. It
// ends within the client's dial bound (5 s) even after Close.
func (d *Driver) runDial(dl *dial) {
	c, err := d.open()
	var discard *mb.ModbusClient
	d.mu.Lock()
	d.dialing = nil
	switch {
	case d.closed:
		if err == nil {
			discard = c
		}
		err = drivers.ErrClosed
	case err != nil:
		err = fmt.Errorf("%w: connect to %s: %w", drivers.ErrCommunication, d.dev.Address, err)
		d.connectOK = false
		d.failedLocked(err)
	default:
		d.sess = &session{c: c}
		d.connectOK = true
		d.setStateLocked(drivers.StateConnected)
		d.log.Info("modbus device connected", "address", d.dev.Address)
	}
	dl.err = err
	d.mu.Unlock()
	close(dl.done)
	if discard != nil {
		discard.Close()
	}
}

func (d *Driver) open() (*mb.ModbusClient, error) {
	c, err := mb.NewClient(&mb.ClientConfiguration{
		URL:     "tcp://" + d.dev.Address,
		Timeout: d.timeout,
		Logger:  slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
	})
	if err != nil {
		return nil, err
	}
	if err := c.SetUnitId(d.unit); err != nil {
		return nil, err
	}
	if err := c.Open(); err != nil {
		return nil, err
	}
	return c, nil
}

// release gives s back after a request. heard: the device answered, which
// ends a run of failures. broke: the connection is unusable; s is dropped
// and the driver backs off.
func (d *Driver) release(s *session, heard bool, broke error) {
	d.mu.Lock()
	s.users--
	if heard {
		d.failures = 0
	}
	if broke != nil && !s.dead {
		s.dead = true
		if d.sess == s {
			d.sess = nil
			d.failedLocked(broke)
		}
	}
	closeIt := s.dead && s.users == 0 && !s.closed
	s.closed = s.closed || closeIt
	d.mu.Unlock()
	if closeIt {
		s.c.Close()
	}
}

// failedLocked records a failed connect or a broken connection and starts
// the back-off. mu must be held.
func (d *Driver) failedLocked(err error) {
	d.failures++
	wait := drivers.Backoff(d.failures)
	d.retryAt = d.clock.Now().Add(wait)
	d.lastErr = err
	d.setStateLocked(drivers.StateDisconnected)
	level := slog.LevelDebug
	if d.failures == 1 {
		level = slog.LevelWarn
	}
	d.log.Log(context.Background(), level, "modbus device unreachable",
		"address", d.dev.Address, "err", err, "failures", d.failures, "retry_in", wait)
}

func (d *Driver) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *Driver) lastConnErrLocked() error {
	if d.lastErr == nil {
		return errors.New("no connection yet")
	}
	return d.lastErr
}

// setStateLocked moves to state s. mu must be held.
func (d *Driver) setStateLocked(s drivers.State) {
	if d.state != s {
		d.state, d.since = s, d.clock.Now()
	}
}
