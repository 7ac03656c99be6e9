package fielddevice

import (
	"fmt"
	"io"
	"log"
	"sync"
	"sync/atomic"
	"time"

	mb "github.com/simonvetter/modbus"
)

// Device is a running Modbus TCP server. Its methods are safe for
// concurrent use.
type Device struct {
	addr   string
	srv    *mb.ModbusServer
	writes atomic.Uint64
	// failing makes every read answer Server Device Failure (SetFailing).
	failing atomic.Bool
	// onWrite is Options.OnWrite; called with mu held.
	onWrite func(Write)

	mu       sync.Mutex
	holding  [65536]uint16 // mu must be held.
	input    [65536]uint16 // mu must be held.
	coils    [65536]bool   // mu must be held.
	discrete [65536]bool   // mu must be held.
}

// Options tune a device started by StartWith.
type Options struct {
	// Logger receives the Modbus server's warnings and errors (a failed
	// accept, a client over MaxClients, a response that could not be
	// written), one line each. Default: discarded.
	Logger *log.Logger

	// MaxClients is the number of concurrent client connections served;
	// more are refused. Default 16.
	MaxClients uint

	// OnWrite, when set, receives every write request a client makes
	// (holding registers: Words from Address on; coils: Bit at each
	// Address, one call per coil; Client: the connection's address), in
	// the order the device applies them.
	// It is called with the device's lock held, before the request is
	// answered: it must be quick and must not call the Device's methods.
	// Tests use it to log which client wrote what (Write.Client), and when.
	OnWrite func(Write)
}

// Start serves a device on addr ("127.0.0.1:1502") with the default Options.
func Start(addr string) (*Device, error) { return StartWith(addr, Options{}) }

// StartWith serves a device on addr. The listening socket is bound before
// it returns: a used address is an error here, not later.
func StartWith(addr string, o Options) (*Device, error) {
	if o.Logger == nil {
		o.Logger = log.New(io.Discard, "", 0)
	}
	if o.MaxClients == 0 {
		o.MaxClients = 16
	}
	d := &Device{addr: addr, onWrite: o.OnWrite}
	srv, err := mb.NewServer(&mb.ServerConfiguration{
		URL: "tcp://" + addr, Timeout: 5 * time.Minute, MaxClients: o.MaxClients,
		Logger: o.Logger,
	}, (*handler)(d))
	if err != nil {
		return nil, fmt.Errorf("fielddevice: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("fielddevice: listen on %s: %w", addr, err)
	}
	d.srv = srv
	return d, nil
}

// Addr is the address the device listens on.
func (d *Device) Addr() string { return d.addr }

// Close stops the server (its connections with it).
func (d *Device) Close() { _ = d.srv.Stop() }

// Writes counts the write requests received.
func (d *Device) Writes() uint64 { return d.writes.Load() }

// SetHolding, SetInput, SetCoil and SetDiscrete store values from addr on.
func (d *Device) SetHolding(addr uint16, v ...uint16) { d.edit(func() { copy(d.holding[addr:], v) }) }
func (d *Device) SetInput(addr uint16, v ...uint16)   { d.edit(func() { copy(d.input[addr:], v) }) }
func (d *Device) SetCoil(addr uint16, v ...bool)      { d.edit(func() { copy(d.coils[addr:], v) }) }
func (d *Device) SetDiscrete(addr uint16, v ...bool)  { d.edit(func() { copy(d.discrete[addr:], v) }) }

// SetFailing makes every read request answer the Modbus exception 04
// Server Device Failure while on, as a device whose sensor or backplane
// has failed: the connection stays up, the values stay as they are, and
// writes are still applied. Tests use it to make a poll fail for a while.
func (d *Device) SetFailing(on bool) { d.failing.Store(on) }

// Holding and Coil read back what the device holds.
func (d *Device) Holding(addr uint16) uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holding[addr]
}

func (d *Device) Coil(addr uint16) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.coils[addr]
}

// Apply stores every write under one lock: a client's read sees all of
// them or none (a float32 is never read half old, half new).
func (d *Device) Apply(ws []Write) {
	d.edit(func() {
		for _, w := range ws {
			switch w.Table {
			case Holding:
				copy(d.holding[w.Address:], w.Words)
			case Input:
				copy(d.input[w.Address:], w.Words)
			case Coil:
				d.coils[w.Address] = w.Bit
			case Discrete:
				d.discrete[w.Address] = w.Bit
			default:
				panic(fmt.Sprintf("fielddevice: write to table %d, which is none of holding, input, coil, discrete", w.Table))
			}
		}
	})
}

func (d *Device) edit(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

// handler is the server's request handler.
type handler Device

func (h *handler) HandleCoils(req *mb.CoilsRequest) ([]bool, error) {
	d := (*Device)(h)
	if d.failing.Load() && !req.IsWrite {
		return nil, mb.ErrServerDeviceFailure
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.IsWrite {
		d.writes.Add(1)
		copy(d.coils[req.Addr:], req.Args)
		if d.onWrite != nil {
			for i, b := range req.Args {
				d.onWrite(Write{Table: Coil, Address: req.Addr + uint16(i), Bit: b, Client: req.ClientAddr})
			}
		}
		return nil, nil
	}
	return append([]bool(nil), d.coils[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (h *handler) HandleDiscreteInputs(req *mb.DiscreteInputsRequest) ([]bool, error) {
	d := (*Device)(h)
	if d.failing.Load() {
		return nil, mb.ErrServerDeviceFailure
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bool(nil), d.discrete[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (h *handler) HandleHoldingRegisters(req *mb.HoldingRegistersRequest) ([]uint16, error) {
	d := (*Device)(h)
	if d.failing.Load() && !req.IsWrite {
		return nil, mb.ErrServerDeviceFailure
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.IsWrite {
		d.writes.Add(1)
		copy(d.holding[req.Addr:], req.Args)
		if d.onWrite != nil {
			d.onWrite(Write{Table: Holding, Address: req.Addr, Words: append([]uint16(nil), req.Args...), Client: req.ClientAddr})
		}
		return nil, nil
	}
	return append([]uint16(nil), d.holding[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (h *handler) HandleInputRegisters(req *mb.InputRegistersRequest) ([]uint16, error) {
	d := (*Device)(h)
	if d.failing.Load() {
		return nil, mb.ErrServerDeviceFailure
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]uint16(nil), d.input[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}
