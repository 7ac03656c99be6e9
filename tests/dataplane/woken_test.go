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

// TestWokenPrimaryWritesNothingUnderAutoDown: under auto-down (the
// default) the Primary a is frozen by SIGSTOP past the detection window
// while a client keeps writing through it (its requests wait in a's
// socket); b takes over and its writes land. On SIGCONT a's loop sees the
// gap: the woken-process fence denies every write a reads from its socket
// until it has heard b again — which b, having removed it, never lets
// happen — so none of a's writes after the freeze reaches the device (the
// device log tells the writers apart by value), and a leaves.
func TestWokenPrimaryWritesNothingUnderAutoDown(t *testing.T) {
	t.Parallel()
	writes := &setpointLog{}
	p := startPairWith(t, rigOptions{device: fielddevice.Options{OnWrite: writes.record}})
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb)
	setpoint := ua.NewStringNodeID(ca.namespace(), "press1/Setpoint")
	writeThroughA(t, p, ca, setpoint, aBase+1, writes)

	p.a.Signal(syscall.SIGSTOP)
	p.a.WaitStopped(10 * time.Second) // a write a reads before it stops is served before the freeze
	frozen := time.Now()
	go func() { // waits in a's socket through the freeze; a timeout is expected
		for k := int16(2); k < 6; k++ {
			_, _ = ca.call(&ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: setpoint, AttributeID: ua.AttributeIDValue,
				Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(aBase + k)}}}})
		}
	}()
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if lv := cb.read(level)[0].Value.Value(); lv != byte(250) {
			return fmt.Errorf("b reads %v", lv)
		}
		return nil
	})
	t.Logf("b at 250 %v after the SIGSTOP of a", time.Since(frozen).Round(time.Millisecond))
	if st := cb.write(setpoint, int16(bBase+1)); st != ua.StatusOK {
		t.Fatalf("write through the new Primary b: %v", st)
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := writes.by(bBase); len(got) != 1 {
			return fmt.Errorf("b's writes at the device %v", got)
		}
		return nil
	})

	p.a.Signal(syscall.SIGCONT)
	code := p.a.WaitExit(40 * time.Second)
	if got := writes.by(aBase); len(got) != 1 || got[0] != aBase+1 {
		t.Fatalf("a wrote after its freeze: its values at the device %v, want only %d", got, aBase+1)
	}
	log := p.a.Log()
	if !strings.Contains(log, "woken-process fence up") {
		t.Fatalf("a never raised the woken-process fence (exit %d)\n%s", code, log)
	}
	if strings.Contains(log, `"msg":"dataplane: write serviced"`) && strings.Count(log, `"msg":"dataplane: write serviced"`) != 1 {
		t.Fatalf("a serviced a write after its freeze\n%s", log)
	}
	t.Logf("a woke, wrote nothing and exited with code %d; the device holds %d", code, int16(p.dev.Holding(0)))
}
