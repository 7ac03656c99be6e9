package modbus

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	mb "github.com/simonvetter/modbus"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/tests/procs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ drivers.Driver = (*Driver)(nil)

// device is the storage and request log behind a real simonvetter/modbus
// TCP server (mb.RequestHandler).
type device struct {
	mu       sync.Mutex
	holding  [65536]uint16
	input    [65536]uint16
	coils    [65536]bool
	discrete [65536]bool
	// reads are the read requests by table, writes the write requests.
	reads  map[string][]span
	writes []write
	units  map[uint8]int
	// refuse, when set, answers a request with the error it returns
	// (nil: serve it).
	refuse func(table string, addr, qty uint16, write bool) error
	// block, when set, makes every request wait until it is closed.
	block chan struct{}
}

type write struct {
	table string
	addr  uint16
	regs  []uint16
	bits  []bool
}

func newDevice() *device { return &device{reads: map[string][]span{}, units: map[uint8]int{}} }

func (d *device) enter(table string, unit uint8, addr, qty uint16, isWrite bool) error {
	d.mu.Lock()
	block := d.block
	d.mu.Unlock()
	if block != nil {
		<-block
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.units[unit]++
	if !isWrite {
		d.reads[table] = append(d.reads[table], span{start: int(addr), end: int(addr) + int(qty) - 1})
	}
	if d.refuse != nil {
		return d.refuse(table, addr, qty, isWrite)
	}
	return nil
}

func (d *device) HandleCoils(req *mb.CoilsRequest) ([]bool, error) {
	if err := d.enter(C, req.UnitId, req.Addr, req.Quantity, req.IsWrite); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.IsWrite {
		d.writes = append(d.writes, write{table: C, addr: req.Addr, bits: append([]bool(nil), req.Args...)})
		copy(d.coils[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]bool(nil), d.coils[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (d *device) HandleDiscreteInputs(req *mb.DiscreteInputsRequest) ([]bool, error) {
	if err := d.enter(D, req.UnitId, req.Addr, req.Quantity, false); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bool(nil), d.discrete[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (d *device) HandleHoldingRegisters(req *mb.HoldingRegistersRequest) ([]uint16, error) {
	if err := d.enter(H, req.UnitId, req.Addr, req.Quantity, req.IsWrite); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.IsWrite {
		d.writes = append(d.writes, write{table: H, addr: req.Addr, regs: append([]uint16(nil), req.Args...)})
		copy(d.holding[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]uint16(nil), d.holding[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

func (d *device) HandleInputRegisters(req *mb.InputRegistersRequest) ([]uint16, error) {
	if err := d.enter(I, req.UnitId, req.Addr, req.Quantity, false); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]uint16(nil), d.input[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

// readCount is how many read requests table had, and their spans.
func (d *device) readLog(table string) []span {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]span(nil), d.reads[table]...)
}

func (d *device) writeLog() []write {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]write(nil), d.writes...)
}

func (d *device) set(f func(d *device)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

// freeAddr is a 127.0.0.1 address whose port the kernel handed out (":0")
// a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serve starts a simonvetter/modbus TCP server for dev on addr; it is
// stopped when the test ends (stopping it twice is harmless).
func serve(t *testing.T, dev *device, addr string) *mb.ModbusServer {
	t.Helper()
	srv, err := mb.NewServer(&mb.ServerConfiguration{
		URL: "tcp://" + addr, Timeout: 30 * time.Second, MaxClients: 10,
		Logger: log.New(io.Discard, "", 0),
	}, dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv
}

// newDriver is New with a quiet logger and clock, closed when the test ends.
func newDriver(t *testing.T, dev deployment.Device, clock clockwork.Clock) *Driver {
	t.Helper()
	if dev.Name == "" {
		dev.Name = "dev"
	}
	d, err := New(dev, drivers.Options{Clock: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var checkFor = procs.CheckFor

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
