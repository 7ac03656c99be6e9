// Package fielddevice is a real Modbus TCP field device for otopcua's demo
// and tests: simonvetter/modbus's TCP server over a register bank of
// 65,536 holding registers, input registers, coils and discrete inputs,
// safe for concurrent use, counting the writes it receives.
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

	mu       sync.Mutex
	holding  [65536]uint16 // mu must be held.
	input    [65536]uint16 // mu must be held.
	coils    [65536]bool   // mu must be held.
	discrete [65536]bool   // mu must be held.
}

// Start serves a device on addr ("127.0.0.1:1502").
func Start(addr string) (*Device, error) {
	d := &Device{addr: addr}
	srv, err := mb.NewServer(&mb.ServerConfiguration{
		URL: "tcp://" + addr, Timeout: 5 * time.Minute, MaxClients: 16,
		Logger: log.New(io.Discard, "", 0),
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

func (d *Device) edit(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

// handler is the server's request handler.
type handler Device

func (h *handler) HandleCoils(req *mb.CoilsRequest) ([]bool, error) {
	d := (*Device)(h)
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.IsWrite {
		d.writes.Add(1)
		copy(d.coils[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]bool(nil), d.coils[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (h *handler) HandleDiscreteInputs(req *mb.DiscreteInputsRequest) ([]bool, error) {
	d := (*Device)(h)
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bool(nil), d.discrete[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (h *handler) HandleHoldingRegisters(req *mb.HoldingRegistersRequest) ([]uint16, error) {
	d := (*Device)(h)
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.IsWrite {
		d.writes.Add(1)
		copy(d.holding[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]uint16(nil), d.holding[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (h *handler) HandleInputRegisters(req *mb.InputRegistersRequest) ([]uint16, error) {
	d := (*Device)(h)
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]uint16(nil), d.input[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}
