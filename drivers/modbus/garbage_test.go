package modbus

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// rawDevice is a TCP listener on 127.0.0.1 that answers every Modbus
// request with what answer makes of it (nil: nothing). answer gets the
// request frame (MBAP header and PDU), or nil right after the accept.
type rawDevice struct {
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startRaw(t *testing.T, answer func(rng *rand.Rand, req []byte) (reply []byte, hangUp bool)) *rawDevice {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rawDevice{l: l}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for seed := uint64(1); ; seed++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer c.Close()
				rng := rand.New(rand.NewPCG(seed, 99))
				if reply, hangUp := answer(rng, nil); reply != nil || hangUp {
					c.Write(reply)
					if hangUp {
						return
					}
				}
				for {
					req, err := readFrame(c)
					if err != nil {
						return
					}
					reply, hangUp := answer(rng, req)
					if reply != nil {
						c.Write(reply)
					}
					if hangUp {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(r.Close)
	return r
}

func (r *rawDevice) Addr() string { return r.l.Addr().String() }

// Close stops the listener and every connection and waits for them.
func (r *rawDevice) Close() {
	r.l.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func readFrame(c net.Conn) ([]byte, error) {
	h := make([]byte, 7)
	if _, err := io.ReadFull(c, h); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(h[4:]))
	if n < 1 {
		return nil, errors.New("bad length")
	}
	rest := make([]byte, n-1)
	if _, err := io.ReadFull(c, rest); err != nil {
		return nil, err
	}
	return append(h, rest...), nil
}

// frame is an MBAP frame: transaction id, protocol id, unit id, PDU; length
// is the MBAP length field (-1: the right one).
func frame(txn, proto uint16, length int, unit byte, pdu ...byte) []byte {
	if length < 0 {
		length = len(pdu) + 1
	}
	b := binary.BigEndian.AppendUint16(nil, txn)
	b = binary.BigEndian.AppendUint16(b, proto)
	b = binary.BigEndian.AppendUint16(b, uint16(length))
	b = append(b, unit)
	return append(b, pdu...)
}

func reqParts(req []byte) (txn uint16, unit, fc byte, qty uint16) {
	return binary.BigEndian.Uint16(req), req[6], req[7], binary.BigEndian.Uint16(req[10:])
}

// goodPayload is a well-formed answer body for a read of qty.
func goodPayload(fc byte, qty uint16) []byte {
	n := int(qty) * 2
	if fc == 1 || fc == 2 {
		n = (int(qty) + 7) / 8
	}
	return append([]byte{fc, byte(n)}, make([]byte, n)...)
}

// TestGarbageDevice: devices that answer garbage, each in its own way, get
// errors reported per tag and in Health, never a panic, and leave no
// goroutine behind once the driver is closed.
func TestGarbageDevice(t *testing.T) {
	cases := []struct {
		name   string
		answer func(rng *rand.Rand, req []byte) ([]byte, bool)
	}{
		{"random bytes", func(rng *rand.Rand, req []byte) ([]byte, bool) {
			b := make([]byte, 1+rng.IntN(300))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b, false
		}},
		{"hangs up at once", func(*rand.Rand, []byte) ([]byte, bool) { return nil, true }},
		{"half a frame, then silence", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			return req[:3], false
		}},
		{"wrong unit id", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, qty := reqParts(req)
			return frame(txn, 0, -1, unit+1, goodPayload(fc, qty)...), false
		}},
		{"byte count too short", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, qty := reqParts(req)
			p := goodPayload(fc, qty)
			return frame(txn, 0, -1, unit, p[:len(p)-1]...), false
		}},
		{"byte count lies", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, qty := reqParts(req)
			p := goodPayload(fc, qty)
			p[1]++
			return frame(txn, 0, -1, unit, p...), false
		}},
		{"length 0", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, _, _ := reqParts(req)
			return frame(txn, 0, 0, unit), false
		}},
		{"length 65535", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, _ := reqParts(req)
			return frame(txn, 0, 0xffff, unit, fc, 0), false
		}},
		{"unknown exception code", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, _ := reqParts(req)
			return frame(txn, 0, -1, unit, fc|0x80, 0x55), false
		}},
		{"exception frame too long", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, _ := reqParts(req)
			return frame(txn, 0, -1, unit, fc|0x80, 2, 2), false
		}},
		{"another function", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, _, qty := reqParts(req)
			return frame(txn, 0, -1, unit, goodPayload(0x04, qty)...), false
		}},
		{"wrong protocol id", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, qty := reqParts(req)
			return frame(txn, 0x1234, -1, unit, goodPayload(fc, qty)...), false
		}},
		{"stale transaction", func(_ *rand.Rand, req []byte) ([]byte, bool) {
			if req == nil {
				return nil, false
			}
			txn, unit, fc, qty := reqParts(req)
			return frame(txn-1, 0, -1, unit, goodPayload(fc, qty)...), false
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			raw := startRaw(t, c.answer)
			clock := clockwork.NewFakeClock()
			tags := []deployment.Tag{tg(H, 0, "int32"), tg(C, 0, "bool")}
			tags[0].Writable = true
			d, err := New(deployment.Device{Name: "junk", Address: raw.Addr(), Tags: tags,
				Timeout: deployment.Duration(150 * time.Millisecond)}, drivers.Options{Clock: clock, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			const polls = 3
			for k := 0; k < polls; k++ {
				rs, err := d.Read(ctx)
				if !errors.Is(err, drivers.ErrCommunication) {
					t.Fatalf("poll %d: error %v, want ErrCommunication", k, err)
				}
				for i, r := range rs {
					if r.Status != ua.StatusBadNoCommunication || r.Value != nil {
						t.Fatalf("poll %d tag %d: %+v", k, i, r)
					}
				}
				if h := d.Health(); h.State != drivers.StateDisconnected || h.LastError == nil {
					t.Fatalf("poll %d: health %+v", k, h)
				}
				clock.Advance(drivers.BackoffMax)
			}
			err = d.Write(ctx, tags[0].Name, 5)
			if drivers.StatusOf(err) != ua.StatusBadCommunicationError {
				t.Fatalf("write: %v", err)
			}
			st := d.Stats()
			if st.ReadsOK != 0 || st.ReadsFailed != polls*2 || st.Connects != polls+1 || st.WritesFailed != 1 || st.Connected {
				t.Fatalf("stats %+v", st)
			}
			d.Close()
			raw.Close()
			goleak.VerifyNone(t, before)
		})
	}
}
