package dataplane_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/procs"
)

// fBase is the first value the forwarding drills write.
const fBase = 3000

func startForwardPair(t testing.TB, writes *setpointLog) *pair {
	t.Helper()
	p := startPairWith(t, rigOptions{device: fielddevice.Options{OnWrite: writes.record}, edit: func(_ string, cfg map[string]any) {
		cfg["OpcUa"].(map[string]any)["WriteMode"] = "forward"
	}})
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	// An observer (not the writing client) waits for a's and b's roles.
	waitLevels(t, connect(t, p.a), connect(t, p.b))
	return p
}

// TestForwardedWritesFromTheSecondaryLandOnce: a client connected only to
// the Secondary b, which never reads ServiceLevel, writes in forward mode:
// every write answers Good and lands on the device exactly once, written
// by the Primary a (a's log names b as the sender; b services nothing).
func TestForwardedWritesFromTheSecondaryLandOnce(t *testing.T) {
	t.Parallel()
	writes := &setpointLog{}
	p := startForwardPair(t, writes)
	cb := connect(t, p.b)
	setpoint := ua.NewStringNodeID(cb.namespace(), "press1/Setpoint")
	const n = 5
	for k := int16(1); k <= n; k++ {
		if st := cb.write(setpoint, int16(fBase)+k); st != ua.StatusOK {
			t.Fatalf("write %d through the Secondary: %v, want Good", k, st)
		}
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := writes.by(fBase); len(got) != n {
			return fmt.Errorf("device got %v", got)
		}
		return nil
	})
	got := writes.by(fBase)
	for k := int16(1); k <= n; k++ {
		if got[k-1] != int16(fBase)+k {
			t.Fatalf("device writes %v, want %d..%d once each, in order", got, fBase+1, fBase+n)
		}
	}
	if c := strings.Count(p.a.Log(), "dataplane: write forwarded from a peer"); c < n {
		t.Fatalf("a's log names %d forwarded writes, want %d\n%s", c, n, p.a.Log())
	}
	if strings.Contains(p.b.Log(), `"msg":"dataplane: write serviced"`) {
		t.Fatalf("the Secondary wrote to the device itself\n%s", p.b.Log())
	}
}

// TestForwardedWriteStreamAcrossAPrimarySIGKILL: a client on b writes a
// new value every 20 ms while the Primary a is killed (SIGKILL) and b
// takes over. The device log against the client's: every value the
// client saw Good landed exactly once; every value it saw with a Bad that
// promises nothing executed (BadInvalidState, BadTooManyOperations,
// BadResourceUnavailable) never landed; a BadTimeout (the documented
// unknown outcome) landed at most once; none landed twice.
func TestForwardedWriteStreamAcrossAPrimarySIGKILL(t *testing.T) {
	t.Parallel()
	writes := &setpointLog{}
	p := startForwardPair(t, writes)
	cb := connect(t, p.b)
	setpoint := ua.NewStringNodeID(cb.namespace(), "press1/Setpoint")
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	observer := connect(t, p.b) // reads b's level; the writing client cb never does
	seen := map[int16]ua.StatusCode{}
	killedAt, tookOver := -1, -1
	next := time.Now()
	for k := int16(1); k < 2000; k++ {
		v := int16(fBase) + k
		seen[v] = cb.write(setpoint, v)
		if k == 25 {
			p.a.Signal(syscall.SIGKILL)
			killedAt = int(k)
		}
		if killedAt > 0 && tookOver < 0 && k%10 == 0 {
			if lv := observer.read(level)[0].Value.Value(); lv == byte(250) {
				tookOver = int(k)
			}
		}
		if tookOver > 0 && int(k) > tookOver+25 {
			break
		}
		next = next.Add(20 * time.Millisecond)
		time.Sleep(time.Until(next))
	}
	if tookOver < 0 {
		t.Fatal("b never became Primary after the SIGKILL of a")
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		for v, st := range seen {
			if st == ua.StatusOK && count(writes.by(fBase), v) != 1 {
				return fmt.Errorf("value %d answered Good landed %d times", v, count(writes.by(fBase), v))
			}
		}
		return nil
	})
	landed := writes.by(fBase)
	var good, notExecuted, unknown int
	for v, st := range seen {
		c := count(landed, v)
		switch st {
		case ua.StatusOK:
			good++
		case ua.StatusBadInvalidState, ua.StatusBadTooManyOperations, ua.StatusBadResourceUnavailable:
			notExecuted++
			if c != 0 {
				t.Errorf("value %d answered %v landed %d times, want never", v, st, c)
			}
		case ua.StatusBadTimeout:
			unknown++
			if c > 1 {
				t.Errorf("value %d answered BadTimeout landed %d times, want at most once", v, c)
			}
		default:
			t.Errorf("value %d answered %v", v, st)
		}
	}
	for _, v := range landed {
		if _, ok := seen[v]; !ok {
			t.Errorf("value %d landed but was never written", v)
		}
	}
	t.Logf("%d writes (a killed after write %d, b Primary by write %d): %d Good, %d refused before executing, %d unknown (BadTimeout); %d landed",
		len(seen), killedAt, tookOver, good, notExecuted, unknown, len(landed))
}

func count(vs []int16, v int16) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}

// TestViewerForwardedWriteRefusedOnTheSecondary: on b anonymous sessions
// may only read (a Viewer's rights); in forward mode their write is
// refused on b with BadUserAccessDenied and never sent: a executes no
// forwarded write and the device gets nothing.
func TestViewerForwardedWriteRefusedOnTheSecondary(t *testing.T) {
	t.Parallel()
	writes := &setpointLog{}
	p := startPairWith(t, rigOptions{device: fielddevice.Options{OnWrite: writes.record}, edit: func(name string, cfg map[string]any) {
		cfg["OpcUa"].(map[string]any)["WriteMode"] = "forward"
		if name == "b" {
			cfg["OpcUa"].(map[string]any)["Authorization"] = map[string]any{"Anonymous": []string{"read"}}
		}
	}})
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	waitLevels(t, connect(t, p.a), connect(t, p.b))
	cb := connect(t, p.b)
	setpoint := ua.NewStringNodeID(cb.namespace(), "press1/Setpoint")
	if st := cb.write(setpoint, int16(fBase+1)); st != ua.StatusBadUserAccessDenied {
		t.Fatalf("a read-only session's write on the Secondary: %v, want BadUserAccessDenied", st)
	}
	// A round trip through a proves a had its chance: a write of its own
	// lands, and still nothing forwarded arrived before it.
	ca := connect(t, p.a)
	if st := ca.write(setpoint, int16(fBase+2)); st != ua.StatusOK {
		t.Fatalf("write through the Primary: %v", st)
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := writes.by(fBase); len(got) != 1 || got[0] != fBase+2 {
			return fmt.Errorf("device got %v, want only the Primary's own %d", got, fBase+2)
		}
		return nil
	})
	if strings.Contains(p.a.Log(), "dataplane: write forwarded from a peer") {
		t.Fatalf("the Primary executed a forwarded write from a read-only session\n%s", p.a.Log())
	}
}
