//go:build linux

package modbus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// blackhole is a 127.0.0.1 port whose connects hang: a listening socket
// with a backlog of 0 that never accepts, its one queue slot taken. The
// kernel drops further SYNs, so a connect waits until it times out or the
// socket is closed (then the next SYN retry is reset).
func blackhole(t *testing.T) (addr string, closeIt func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr = fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err == nil {
		probe.Close()
		t.Skip("this kernel accepts connects past a full backlog; no black hole")
	}
	done := false
	closeIt = func() {
		if !done {
			done = true
			filler.Close()
			syscall.Close(fd)
		}
	}
	t.Cleanup(closeIt)
	return addr, closeIt
}

// TestConnectInProgressNeverBlocksClose: a Read waits for a hanging
// connect at most the request timeout; Close returns at once while the
// connect still hangs; afterwards everything answers ErrClosed, and the
// connect's goroutine ends once the connect fails.
func TestConnectInProgressNeverBlocksClose(t *testing.T) {
	addr, closeHole := blackhole(t)
	const timeout = 300 * time.Millisecond
	tags := []deployment.Tag{tg(H, 0, "int16")}
	tags[0].Writable = true
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags, Timeout: deployment.Duration(timeout)}, clockwork.NewRealClock())

	start := time.Now()
	rs, err := d.Read(ctxT(t))
	took := time.Since(start)
	if !errors.Is(err, drivers.ErrCommunication) || rs[0].Status != ua.StatusBadNoCommunication {
		t.Fatalf("Read: %v, %+v", err, rs)
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Errorf("Read took %v, want about %v", took, timeout)
	}
	if h := d.Health(); h.State != drivers.StateConnecting {
		t.Fatalf("health %+v, want connecting", h)
	}

	// A second Read joins the connect in progress rather than starting
	// another.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = d.Read(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read with a short ctx: %v", err)
	}
	if st := d.Stats(); st.Connects != 1 {
		t.Fatalf("connects %d, want 1", st.Connects)
	}

	start = time.Now()
	d.Close()
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Close took %v during a connect", took)
	}
	if h := d.Health(); h.State != drivers.StateClosed {
		t.Fatalf("health %+v", h)
	}
	if _, err := d.Read(context.Background()); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := d.Write(context.Background(), tags[0].Name, 1); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := d.Connect(context.Background()); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Connect after Close: %v", err)
	}

	closeHole()
	checkFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.dialing != nil {
			return errors.New("the connect is still in progress")
		}
		if d.sess != nil {
			return errors.New("a session after Close")
		}
		return nil
	})
}
