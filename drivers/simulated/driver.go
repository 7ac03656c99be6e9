package simulated

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// Driver is a simulated device (drivers.Driver): every tag follows its
// signal on the injected clock; a writable tag, once written, holds the
// written value instead. It is always connected until Close; every Read is
// Good.
type Driver struct {
	tags   []deployment.Tag
	byName map[string]int
	sigs   []Signal // periodic signals, by tag (unused for walks)
	clock  clockwork.Clock
	ctr    drivers.Counters

	// mu guards the fields below.
	mu      sync.Mutex
	walks   []*Walk // by tag, nil unless random-walk
	written []any   // by tag, nil until written
	closed  bool
	since   time.Time
}

// New returns the driver of dev, a simulated device. A tag's Signal
// defaults to constant, Period to DefaultPeriod, Min and Max to DefaultMin
// and DefaultMax (swapped when Max < Min); Table, Address, WordOrder, Scale
// and Offset are not used (a scaled tag still reads float64, its
// drivers.ValueType). A random walk's seed is Options.Seed (or one derived
// from the device's name) mixed with the tag's name; its origin is the
// clock's time at New. New fails on an unknown signal or type and on a
// duplicate tag name.
func New(dev deployment.Device, opts drivers.Options) (*Driver, error) {
	if dev.Driver != "" && dev.Driver != deployment.DriverSimulated {
		return nil, fmt.Errorf("simulated: device %q has driver %q", dev.Name, dev.Driver)
	}
	opts = opts.WithDefaults(dev)
	seed := opts.Seed
	if seed == 0 {
		seed = hash(dev.Name)
	}
	d := &Driver{
		tags:    dev.Tags,
		byName:  make(map[string]int, len(dev.Tags)),
		sigs:    make([]Signal, len(dev.Tags)),
		clock:   opts.Clock,
		walks:   make([]*Walk, len(dev.Tags)),
		written: make([]any, len(dev.Tags)),
		since:   opts.Clock.Now(),
	}
	for i, t := range dev.Tags {
		if _, dup := d.byName[t.Name]; dup {
			return nil, fmt.Errorf("simulated: device %q: duplicate tag %q", dev.Name, t.Name)
		}
		d.byName[t.Name] = i
		switch t.Type {
		case deployment.TypeBool, deployment.TypeInt16, deployment.TypeUint16, deployment.TypeInt32,
			deployment.TypeUint32, deployment.TypeFloat32, deployment.TypeFloat64:
		default:
			return nil, fmt.Errorf("simulated: device %q: tag %q: unknown type %q", dev.Name, t.Name, t.Type)
		}
		sig, err := signalOf(t)
		if err != nil {
			return nil, fmt.Errorf("simulated: device %q: tag %q: %w", dev.Name, t.Name, err)
		}
		d.sigs[i] = sig
		if t.Signal == deployment.SignalRandomWalk {
			d.walks[i] = NewWalk(sig.Min, sig.Max, sig.Period, mix(seed^hash(t.Name)), d.since)
		}
	}
	return d, nil
}

func signalOf(t deployment.Tag) (Signal, error) {
	s := Signal{Kind: t.Signal, Period: t.Period.Std(), Min: DefaultMin, Max: DefaultMax}
	switch t.Signal {
	case "":
		s.Kind = deployment.SignalConstant
	case deployment.SignalRamp, deployment.SignalSine, deployment.SignalSquare,
		deployment.SignalConstant, deployment.SignalRandomWalk:
	default:
		return s, fmt.Errorf("signal %q: ramp, sine, square, random-walk or constant", t.Signal)
	}
	if s.Period <= 0 {
		s.Period = DefaultPeriod
	}
	if t.Min != nil {
		s.Min = *t.Min
	}
	if t.Max != nil {
		s.Max = *t.Max
	}
	if s.Max < s.Min {
		s.Min, s.Max = s.Max, s.Min
	}
	return s, nil
}

// Connect does nothing (a simulated device is always there).
func (d *Driver) Connect(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return drivers.ErrClosed
	}
	return nil
}

// Read is every tag's value at the clock's now, all Good.
func (d *Driver) Read(ctx context.Context) ([]drivers.Reading, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, drivers.ErrClosed
	}
	start := d.clock.Now()
	now := drivers.PolledTime(start) // the values are the signals' at their SourceTime
	out := make([]drivers.Reading, len(d.tags))
	for i, t := range d.tags {
		v := d.written[i]
		if v == nil {
			v = d.valueLocked(i, t, now)
		}
		out[i] = drivers.Reading{Value: v, Status: ua.StatusGood, SourceTime: now}
	}
	d.ctr.Reads(1, 0)
	d.ctr.Poll(d.clock.Since(start))
	return out, nil
}

// valueLocked is tag i's signal at now as its ValueType. mu must be held.
func (d *Driver) valueLocked(i int, t deployment.Tag, now time.Time) any {
	sig := d.sigs[i]
	var f float64
	if w := d.walks[i]; w != nil {
		f = w.At(now)
	} else {
		f = sig.At(now)
	}
	return As(f, drivers.ValueType(t), sig)
}

// As is the signal value f (of sig) as a value of type typ: rounded to the
// nearest integer and clamped into an integer type's range; for bool, true
// in the upper half of [Min, Max] (f ≥ (Min+Max)/2), or, for a constant
// signal or when Min = Max, f ≠ 0.
func As(f float64, typ string, sig Signal) any {
	switch typ {
	case deployment.TypeBool:
		if sig.Max == sig.Min || sig.Kind == deployment.SignalConstant {
			return f != 0
		}
		return f >= (sig.Min+sig.Max)/2
	case deployment.TypeFloat32:
		return float32(f)
	case deployment.TypeInt16:
		return int16(clamp(f, math.MinInt16, math.MaxInt16))
	case deployment.TypeUint16:
		return uint16(clamp(f, 0, math.MaxUint16))
	case deployment.TypeInt32:
		return int32(clamp(f, math.MinInt32, math.MaxInt32))
	case deployment.TypeUint32:
		return uint32(clamp(f, 0, math.MaxUint32))
	}
	return f
}

func clamp(f, lo, hi float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return math.Min(math.Max(math.Round(f), lo), hi)
}

// Write holds value (converted to the tag's ValueType) as the tag's value
// from now on.
func (d *Driver) Write(ctx context.Context, name string, value any) (err error) {
	defer func() { d.ctr.Write(err) }()
	i, ok := d.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", drivers.ErrUnknownTag, name)
	}
	t := d.tags[i]
	if !t.Writable {
		return fmt.Errorf("%w: %q", drivers.ErrNotWritable, name)
	}
	v, err := drivers.Convert(value, drivers.ValueType(t))
	if err != nil {
		return fmt.Errorf("tag %q: %w", name, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return drivers.ErrClosed
	}
	d.written[i] = v
	return nil
}

// Health is StateConnected until Close, then StateClosed.
func (d *Driver) Health() drivers.Health {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return drivers.Health{State: drivers.StateClosed, Since: d.since}
	}
	return drivers.Health{State: drivers.StateConnected, Since: d.since}
}

// Stats are the counters; Connected until Close.
func (d *Driver) Stats() drivers.Stats {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	return d.ctr.Stats(!closed)
}

// Close stops the device.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed, d.since = true, d.clock.Now()
	}
	return nil
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
