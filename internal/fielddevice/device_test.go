package fielddevice

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"github.com/otopcua/otopcua/internal/ports"
)

// TestOnWriteNamesTheClient: a client's register and coil writes reach
// OnWrite with the address of that client's connection, which is not the
// device's own.
func TestOnWriteNamesTheClient(t *testing.T) {
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Write
	d, err := StartWith(fmt.Sprintf("127.0.0.1:%d", p[0]), Options{OnWrite: func(w Write) {
		mu.Lock()
		got = append(got, w)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := mb.NewClient(&mb.ClientConfiguration{URL: "tcp://" + d.Addr(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteRegister(3, 1234); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteCoil(5, true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Table != Holding || got[0].Words[0] != 1234 || got[1].Table != Coil || !got[1].Bit {
		t.Fatalf("OnWrite got %+v, want the register write then the coil write", got)
	}
	for _, w := range got {
		host, port, err := net.SplitHostPort(w.Client)
		if err != nil || host != "127.0.0.1" || port == fmt.Sprint(p[0]) {
			t.Fatalf("Write.Client %q, want the client connection's 127.0.0.1:port (%v)", w.Client, err)
		}
	}
	if got[0].Client != got[1].Client {
		t.Fatalf("one connection, two client addresses: %q, %q", got[0].Client, got[1].Client)
	}
}

// TestSetFailing: while failing, reads answer Server Device Failure on the
// same connection and writes still land; afterwards reads answer again.
func TestSetFailing(t *testing.T) {
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(fmt.Sprintf("127.0.0.1:%d", p[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetInput(2, 7)
	c, err := mb.NewClient(&mb.ClientConfiguration{URL: "tcp://" + d.Addr(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d.SetFailing(true)
	if _, err := c.ReadRegister(2, mb.INPUT_REGISTER); err != mb.ErrServerDeviceFailure {
		t.Fatalf("read while failing: %v, want %v", err, mb.ErrServerDeviceFailure)
	}
	if err := c.WriteRegister(3, 99); err != nil || d.Holding(3) != 99 {
		t.Fatalf("write while failing: %v, holding 3 = %d", err, d.Holding(3))
	}
	d.SetFailing(false)
	if v, err := c.ReadRegister(2, mb.INPUT_REGISTER); err != nil || v != 7 {
		t.Fatalf("read after the failure: %d, %v", v, err)
	}
}
