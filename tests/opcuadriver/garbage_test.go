package opcuadriver_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// garbageUpstream is a TCP listener that speaks broken OPC UA TCP: it
// reads the client's Hello and answers as its mode says. It counts the
// connections it accepted.
type garbageUpstream struct {
	ln    net.Listener
	conns atomic.Int32
}

// Modes of a garbageUpstream.
const (
	garbageRandom = "random bytes for an ACK"
	garbageACK    = "a malformed ACK"
	garbageOPN    = "a valid ACK, then a garbage OpenSecureChannel response"
	garbageSilent = "nothing at all"
)

func startGarbage(t *testing.T, mode string) *garbageUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &garbageUpstream{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.conns.Add(1)
			go g.serve(c, mode)
		}
	}()
	return g
}

func (g *garbageUpstream) url() string { return "opc.tcp://" + g.ln.Addr().String() }

func (g *garbageUpstream) serve(c net.Conn, mode string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if !readMessage(c) { // the Hello
		return
	}
	rnd := rand.New(rand.NewPCG(uint64(g.conns.Load()), 7))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		return b
	}
	switch mode {
	case garbageRandom:
		_, _ = c.Write(garbage(64))
	case garbageACK:
		_, _ = c.Write([]byte("ACKF\x0c\x00\x00\x00\x00\x00")) // 12 bytes announced, 10 sent, no fields
	case garbageOPN:
		ack := make([]byte, 28)
		copy(ack, "ACKF")
		binary.LittleEndian.PutUint32(ack[4:], 28)
		binary.LittleEndian.PutUint32(ack[12:], 65535) // ReceiveBufferSize
		binary.LittleEndian.PutUint32(ack[16:], 65535) // SendBufferSize
		_, _ = c.Write(ack)
		if !readMessage(c) { // the OpenSecureChannel request
			return
		}
		opn := append([]byte("OPNF\x00\x00\x00\x00"), garbage(92)...)
		binary.LittleEndian.PutUint32(opn[4:], uint32(len(opn)))
		_, _ = c.Write(opn)
	case garbageSilent:
	}
	_, _ = io.Copy(io.Discard, c) // hold the connection until the client leaves
}

// readMessage reads one OPC UA TCP message (8-byte header with its size).
func readMessage(c net.Conn) bool {
	var h [8]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return false
	}
	n := binary.LittleEndian.Uint32(h[4:])
	if n < 8 || n > 1<<20 {
		return false
	}
	_, err := io.CopyN(io.Discard, c, int64(n-8))
	return err == nil
}

// TestGarbageUpstreamIsBounded: upstreams that answer the Hello with
// random bytes, a malformed ACK, a garbage OpenSecureChannel response or
// nothing at all. Each such device is Bad (BadNoCommunication: it never
// connected, so there is no last value) with a Warn
// line naming it, the node does not crash, reconnects back off
// (drivers.Backoff: a handful of connects in 10 s, not a spin), and a
// healthy device on the same node keeps delivering, its reads answered
// at once.
func TestGarbageUpstreamIsBounded(t *testing.T) {
	good := nodescript.StartUpstream(t, map[string]any{"vars": 2, "periodMs": 100})
	modes := []string{garbageRandom, garbageACK, garbageOPN, garbageSilent}
	bad := make([]*garbageUpstream, len(modes))
	devs := []string{device("good", endpoint(good.URL), 2)}
	for i, m := range modes {
		bad[i] = startGarbage(t, m)
		devs = append(devs, device(fmt.Sprintf("bad%d", i), endpoint(bad[i].url()), 1))
	}
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, doc(devs...))
	node.WaitDeployed(1)
	deployed := time.Now()
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		nodes := []*ua.NodeID{ua.NewStringNodeID(ns, "good/V1")}
		for i := range modes {
			nodes = append(nodes, ua.NewStringNodeID(ns, fmt.Sprintf("bad%d/V0", i)))
		}
		got := c.read(nodes...)
		if got[0].Status != ua.StatusOK {
			return fmt.Errorf("good/V1 %v", got[0].Status)
		}
		for i, dv := range got[1:] {
			// Never connected: BadNoCommunication (no last value; after a
			// lost connection it would be BadCommunicationError).
			if dv.Status != ua.StatusBadNoCommunication {
				return fmt.Errorf("bad%d (%s): %v, want BadNoCommunication", i, modes[i], dv.Status)
			}
		}
		return nil
	})
	// The healthy device keeps changing and our reads stay prompt.
	before := c.read(ua.NewStringNodeID(ns, "good/V0"))[0].Value.Value().(float64)
	var slowest time.Duration
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		start := time.Now()
		c.read(ua.NewStringNodeID(ns, "good/V0"))
		slowest = max(slowest, time.Since(start))
	}
	after := c.read(ua.NewStringNodeID(ns, "good/V0"))[0].Value.Value().(float64)
	if after <= before || slowest > 500*time.Millisecond {
		t.Fatalf("the healthy device: V0 %v then %v, slowest read %v", before, after, slowest)
	}
	for time.Since(deployed) < 10*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if !node.Alive() {
		t.Fatal("the node died")
	}
	log := node.Log()
	for i, m := range modes {
		n := bad[i].conns.Load()
		t.Logf("%s: %d connections in %v", m, n, time.Since(deployed).Round(time.Second))
		// Backoff 0.1, 0.2, 0.4 … 5 s: about 8 connects in 10 s.
		if n < 2 || n > 15 {
			t.Errorf("%s: %d connections in about 10 s; want a few retries, backing off", m, n)
		}
		if !strings.Contains(log, fmt.Sprintf(`"device":"bad%d"`, i)) || !strings.Contains(log, "opcua: upstream unreachable; its tags are Bad until it answers") {
			t.Errorf("%s: no Warn line naming device bad%d", m, i)
		}
	}
}
