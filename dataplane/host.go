package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/drivers/modbus"
	"github.com/otopcua/otopcua/drivers/opcua"
	"github.com/otopcua/otopcua/drivers/simulated"
)

// HostName is the driver host actor's name; its children are
// "driver-host/device-<name>-<n>" (n counts spawns).
const HostName = "driver-host"

// DriverFactory makes the driver of one device.
type DriverFactory func(dev deployment.Device, opts drivers.Options) (drivers.Driver, error)

// NewDriver is the DriverFactory of the drivers otopcua ships.
func NewDriver(dev deployment.Device, opts drivers.Options) (drivers.Driver, error) {
	switch dev.Driver {
	case deployment.DriverModbusTCP:
		return modbus.New(dev, opts)
	case deployment.DriverSimulated:
		return simulated.New(dev, opts)
	case deployment.DriverOPCUA:
		return opcua.New(dev, opts)
	}
	return nil, fmt.Errorf("dataplane: device %s: unknown driver %q", dev.Name, dev.Driver)
}

// HostOptions configure a driver host. Root, Space and Writes are required.
type HostOptions struct {
	Root *actor.RootContext
	// Parent spawns the host actor and its device children: the node's
	// supervision tree. Default: actors.Plain(Root, Clock).
	Parent actors.Parent
	Space  *Space
	Writes *Writes
	// NewDriver makes drivers. Default: NewDriver.
	NewDriver DriverFactory
	// OnPoll, if set, sees every poll of every device (metrics). It runs
	// on the device's actor and must not block.
	OnPoll func(device string, p drivers.Poll)
	// OnReadings, if set, sees every poll's readings with the definition
	// they were read by (the process history's recorder): readings[i] is
	// the value of device.Tags[i]. It runs on the device's actor and must
	// not block.
	OnReadings func(device deployment.Device, readings []drivers.Reading)
	// Degraded is when Devices shows a device whose reads fail as
	// degraded (drivers.Condition). Default drivers.DefaultDegraded; a
	// zero field takes its default.
	Degraded drivers.DegradedRule
	// Identity is handed to every driver (drivers.Options.Identity): the
	// node's certificate and PKI for secured upstream channels. nil:
	// devices with security cannot connect.
	Identity *drivers.Identity
	// OnConditions receives the upstream conditions of every device that
	// mirrors them (drivers.Options.OnConditions). nil: none.
	OnConditions drivers.ConditionSink
	Clock        clockwork.Clock
	Logger       *slog.Logger
}

// Host is the driver host: an actor with one child per device of the
// applied deployment. Each child polls its device every poll interval (on
// the injected clock, as messages) and stores the readings in the Space;
// writes reach the drivers through the Space's write hooks (Writes). A
// child that panics is restarted (the Parent's supervision), keeping its
// driver. Apply and Stop may be called from any goroutine.
type Host struct {
	o   HostOptions
	pid *actor.PID

	mu      sync.Mutex
	devices map[string]*device // the applied devices; mu must be held.
	gen     int                // children spawned, for unique names; the host actor only
}

// device is one applied device, shared by the host actor (which owns the
// map entry) and the device's child (which polls).
type device struct {
	def    deployment.Device
	spec   string // def as JSON: a changed device is a new one
	driver drivers.Driver
	pid    *actor.PID
}

// StartHost spawns the driver host actor.
func StartHost(o HostOptions) (*Host, error) {
	if o.NewDriver == nil {
		o.NewDriver = NewDriver
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Parent == nil {
		o.Parent = actors.Plain(o.Root, o.Clock)
	}
	h := &Host{o: o, devices: map[string]*device{}}
	props := o.Parent.Props("DriverHostActor", func() actor.Actor { return &hostActor{h: h} })
	pid, err := o.Parent.SpawnNamed(props, HostName)
	if err != nil {
		return nil, fmt.Errorf("dataplane: spawn %s: %w", HostName, err)
	}
	h.pid = pid
	return h, nil
}

// applyMsg asks the host actor to apply a document; the answer is an
// applyResult.
type applyMsg struct{ doc *deployment.Document }

type applyResult struct {
	report ApplyReport
	err    error
}

// ErrApplyPartial is wrapped when some nodes or devices of a deployment
// could not be applied; the rest serves.
var ErrApplyPartial = errors.New("deployment applied in part")

// Apply makes the host serve doc: the Space's nodes, one driver per
// device, write hooks on the writable tags. Devices whose definition is
// unchanged keep their driver and connection. It waits at most 30 s.
func (h *Host) Apply(doc *deployment.Document) (ApplyReport, error) {
	res, err := actors.Ask[applyResult](h.o.Root, h.pid, applyMsg{doc: doc}, 30*time.Second)
	if err != nil {
		return ApplyReport{}, err
	}
	return res.report, res.err
}

// Stop stops every device (closing its driver first, so that a poll in
// progress ends at once) and the host actor.
func (h *Host) Stop() {
	h.mu.Lock()
	for _, d := range h.devices {
		_ = d.driver.Close()
	}
	h.mu.Unlock()
	if err := h.o.Root.StopFuture(h.pid).Wait(); err != nil {
		h.o.Logger.Warn("dataplane: driver host did not stop in time", "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, d := range h.devices {
		_ = d.driver.Close()
		delete(h.devices, name)
	}
}

// Devices returns each applied device's state (drivers.Condition under
// HostOptions.Degraded: degraded for a device whose reads all fail while
// it takes connections) and read counts, by name.
func (h *Host) Devices() []DeviceStatus {
	now := h.o.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]DeviceStatus, 0, len(h.devices))
	for _, d := range h.devices {
		out = append(out, statusOf(d.def, d.driver.Health(), d.driver.Stats(), now, h.o.Degraded))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// statusOf is a device's line of /api/deployment at now.
func statusOf(def deployment.Device, hl drivers.Health, st drivers.Stats, now time.Time, rule drivers.DegradedRule) DeviceStatus {
	ds := DeviceStatus{
		Name: def.Name, Driver: def.Driver, State: drivers.Condition(hl, now, rule).String(), Since: hl.Since,
		Tags: len(def.Tags), ReadErrors: st.ReadsFailed, FailedPolls: hl.Reads.Failed,
		FailingSince: hl.Reads.Since, LastGoodRead: hl.Reads.LastGood,
	}
	if hl.LastError != nil {
		ds.LastError = hl.LastError.Error()
	}
	return ds
}

// AckCondition sends Acknowledge (Confirm when confirm) of condition id
// to device's driver (drivers.ConditionMethods) and returns its status:
// BadNodeIdUnknown when no applied device of that name mirrors
// conditions. It blocks up to the device's timeout; any goroutine.
func (h *Host) AckCondition(device, id string, confirm bool, comment string) ua.StatusCode {
	h.mu.Lock()
	d := h.devices[device]
	h.mu.Unlock()
	if d == nil {
		return ua.StatusBadNodeIDUnknown
	}
	cm, ok := d.driver.(drivers.ConditionMethods)
	if !ok {
		return ua.StatusBadNodeIDUnknown
	}
	return cm.AckCondition(context.Background(), id, confirm, comment)
}

// Stats returns each applied device's counters, by name.
func (h *Host) Stats() map[string]drivers.Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]drivers.Stats, len(h.devices))
	for name, d := range h.devices {
		out[name] = d.driver.Stats()
	}
	return out
}

// hostActor is the driver host's actor.
type hostActor struct{ h *Host }

func (a *hostActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case applyMsg:
		rep, err := a.apply(ctx, m.doc)
		ctx.Respond(applyResult{report: rep, err: err})
	}
}

// apply is Host.Apply on the actor.
func (a *hostActor) apply(ctx actor.Context, doc *deployment.Document) (ApplyReport, error) {
	h := a.h
	rep := h.o.Space.Apply(doc)
	want := map[string]deployment.Device{}
	for _, d := range doc.Devices {
		want[d.Name] = d
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, d := range h.devices {
		if nd, ok := want[name]; ok && specOf(nd) == d.spec {
			continue
		}
		_ = d.driver.Close()
		ctx.Stop(d.pid)
		delete(h.devices, name)
	}
	var failed []error
	for _, def := range doc.Devices {
		d := h.devices[def.Name]
		if d == nil {
			d = &device{def: def, spec: specOf(def)}
			opts := drivers.Options{Clock: h.o.Clock, Logger: h.o.Logger, Identity: h.o.Identity, OnConditions: h.o.OnConditions}
			if def.Mirror != nil {
				opts.OnMirror = func(nodes []drivers.MirrorNode) { h.mirrored(d, nodes) }
			}
			drv, err := h.o.NewDriver(def, opts)
			if err != nil {
				failed = append(failed, err)
				continue
			}
			d.driver = drv
			child := h.o.Parent.Props("DeviceActor", func() actor.Actor { return &deviceActor{h: h, d: d} })
			// A stopped child's name is free only once it has stopped:
			// every spawn gets a name of its own.
			h.gen++
			pid, err := ctx.SpawnNamed(child, fmt.Sprintf("device-%s-%d", def.Name, h.gen))
			if err != nil {
				_ = drv.Close()
				failed = append(failed, fmt.Errorf("device %s: %w", def.Name, err))
				continue
			}
			d.pid = pid
			h.devices[def.Name] = d
		}
		a.hookWrites(d)
	}
	failed = append(failed, rep.Failed...)
	if len(failed) > 0 {
		return rep, fmt.Errorf("%w: %w", ErrApplyPartial, errors.Join(failed...))
	}
	return rep, nil
}

// hookWrites routes the writes of d's writable tags to its driver (again
// after every apply: a replaced Variable has no hook yet).
func (a *hostActor) hookWrites(d *device) {
	h := a.h
	slots := h.o.Writes.NewDeviceSlots()
	for _, t := range d.def.Tags {
		v := h.o.Space.Variable(d.def.Name, t.Name)
		if v == nil || !t.Writable {
			continue
		}
		h.o.Writes.Install(Target{Device: d.def.Name, Tag: t.Name, V: v, W: d.driver, Slots: slots})
	}
}

// mirrored puts a device's mirrored subtree in the Space and routes the
// writes of its writable Variables to the device's driver (through the
// gate, as a tag's). It runs on the driver's goroutine.
func (h *Host) mirrored(d *device, nodes []drivers.MirrorNode) {
	rep := h.o.Space.ApplyMirror(d.def.Name, nodes)
	h.o.Logger.Info("dataplane: mirrored subtree applied", "device", d.def.Name, "added", rep.Added, "removed", rep.Removed, "kept", rep.Kept)
	for _, err := range rep.Failed {
		h.o.Logger.Error("dataplane: mirrored node not served", "device", d.def.Name, "err", err)
	}
	slots := h.o.Writes.NewDeviceSlots()
	for _, n := range nodes {
		if v := h.o.Space.MirrorVariable(d.def.Name, n.Key); v != nil && n.Writable {
			h.o.Writes.Install(Target{Device: d.def.Name, Tag: n.Key, V: v, W: d.driver, Slots: slots})
		}
	}
}

func specOf(d deployment.Device) string {
	b, _ := json.Marshal(d)
	return string(b)
}

// deviceActor polls one device: a pollTick message starts a poll; the
// next tick is scheduled on the injected clock from the poll's start. A
// device whose driver pushes its changes (drivers.Pusher) is not polled:
// the actor runs the driver's Run on a goroutine of its own, whose sink
// stores each change in the Space as it arrives, and stops it with the
// actor.
type deviceActor struct {
	h      *Host
	d      *device
	timer  clockwork.Timer
	cancel context.CancelFunc // a Pusher's Run; nil when polled
}

type pollTick struct{}

func (a *deviceActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if p, ok := a.d.driver.(drivers.Pusher); ok {
			a.runPusher(p)
			return
		}
		ctx.Send(ctx.Self(), pollTick{})
	case pollTick:
		a.poll(ctx)
	case *actor.Stopping:
		if a.timer != nil {
			a.timer.Stop()
		}
		if a.cancel != nil {
			a.cancel()
		}
		_ = a.d.driver.Close()
	}
}

// runPusher starts p's Run; its sink writes each change into the Space
// (short locks, never waiting for a client) and hands the changed tags to
// OnReadings.
func (a *deviceActor) runPusher(p drivers.Pusher) {
	h, def := a.h, a.d.def
	runCtx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	sink := func(changes []drivers.Change) {
		var part deployment.Device
		var rs []drivers.Reading
		if h.o.OnReadings != nil {
			part = def
			part.Tags = make([]deployment.Tag, 0, len(changes))
			rs = make([]drivers.Reading, 0, len(changes))
		}
		for _, c := range changes {
			if c.Mirror != "" {
				r := c.Reading
				if err := h.o.Space.SetMirrorReading(def.Name, c.Mirror, r.Value, r.Status, r.SourceTime); err != nil {
					h.o.Logger.Debug("dataplane: reading of a mirrored node not in the space", "device", def.Name, "err", err)
				}
				continue
			}
			if c.Index < 0 || c.Index >= len(def.Tags) {
				continue
			}
			r := c.Reading
			if err := h.o.Space.SetReading(def.Name, def.Tags[c.Index].Name, r.Value, r.Status, r.SourceTime); err != nil {
				h.o.Logger.Debug("dataplane: reading of a tag not in the space", "device", def.Name, "err", err)
			}
			if h.o.OnReadings != nil {
				part.Tags = append(part.Tags, def.Tags[c.Index])
				rs = append(rs, r)
			}
		}
		if h.o.OnReadings != nil && len(rs) > 0 {
			h.o.OnReadings(part, rs)
		}
	}
	go func() {
		err := p.Run(runCtx, sink)
		if err != nil && !errors.Is(err, drivers.ErrClosed) && !errors.Is(err, context.Canceled) {
			h.o.Logger.Warn("dataplane: device subscription ended", "device", def.Name, "err", err)
		}
	}()
}

func (a *deviceActor) poll(ctx actor.Context) {
	h, def := a.h, a.d.def
	clock := h.o.Clock
	start := clock.Now()
	readings, err := a.d.driver.Read(context.Background())
	if errors.Is(err, drivers.ErrClosed) {
		return
	}
	now := clock.Now()
	for i, r := range readings {
		if i >= len(def.Tags) {
			break
		}
		if serr := h.o.Space.SetReading(def.Name, def.Tags[i].Name, r.Value, r.Status, r.SourceTime); serr != nil {
			h.o.Logger.Debug("dataplane: reading of a tag not in the space", "device", def.Name, "err", serr)
		}
	}
	if h.o.OnReadings != nil {
		h.o.OnReadings(def, readings)
	}
	if h.o.OnPoll != nil {
		h.o.OnPoll(def.Name, drivers.Poll{Start: start, Duration: now.Sub(start), Readings: readings, Err: err})
	}
	next := drivers.NextPoll(start, now, drivers.PollInterval(def))
	self, root := ctx.Self(), h.o.Root
	a.timer = clock.AfterFunc(next.Sub(now), func() { root.Send(self, pollTick{}) })
}
