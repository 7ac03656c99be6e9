package fielddevice

import (
	"net"
	"strconv"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"github.com/otopcua/otopcua/internal/ports"
)

// TestOnWriteNamesTheClient: a holding register write and a coil write
// reach OnWrite with the client connection's address, so a test can tell
// which of several clients wrote.
func TestOnWriteNamesTheClient(t *testing.T) {
	ps, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Write, 4)
	d, err := StartWith(net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[0])), Options{OnWrite: func(w Write) { got <- w }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := mb.NewClient(&mb.ClientConfiguration{URL: "tcp://" + d.Addr(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Open(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteRegister(3, 77); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteCoil(5, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []Write{{Table: Holding, Address: 3, Words: []uint16{77}}, {Table: Coil, Address: 5, Bit: true}} {
		w := <-got
		host, _, err := net.SplitHostPort(w.Client)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("write %+v: Client %q, want 127.0.0.1:<port>", w, w.Client)
		}
		if w.Table != want.Table || w.Address != want.Address || w.Bit != want.Bit || len(w.Words) != len(want.Words) || (len(w.Words) > 0 && w.Words[0] != want.Words[0]) {
			t.Fatalf("write %+v, want %+v", w, want)
		}
	}
}
