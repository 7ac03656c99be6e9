package dataplane_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// runNode runs dataplane.mjs against endpoint and returns its lines.
func runNode(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, b := range nodescript.Run(t, "dataplane.mjs", args...) {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// keepChangingSpeed makes the device's Speed register change every
// 150 ms until the returned function is called.
func (p *pair) keepChangingSpeed() (stop func()) {
	done := make(chan struct{})
	go func() {
		for v := float32(1); ; v++ {
			select {
			case <-done:
				return
			case <-time.After(150 * time.Millisecond):
				bits := math.Float32bits(v)
				p.dev.SetHolding(10, uint16(bits>>16), uint16(bits))
			}
		}
	}()
	return func() { close(done) }
}

func first(lines []map[string]any, event string) map[string]any {
	for _, l := range lines {
		if l["event"] == event {
			return l
		}
	}
	return nil
}

// TestNodeOPCUAReadsSubscribesAndWritesATag: an independent client reads
// a tag, sees its changes and writes it through the Primary; the write
// lands on the device.
func TestNodeOPCUAReadsSubscribesAndWritesATag(t *testing.T) {
	p := startPair(t, nil)
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb)
	ns := ca.namespace()
	defer p.keepChangingSpeed()() // the device keeps changing the value node-opcua watches
	lines := runNode(t, p.a.Endpoint(), fmt.Sprintf("ns=%d;s=press1/Speed", ns), fmt.Sprintf("ns=%d;s=press1/Setpoint", ns), "500")
	if r := first(lines, "read"); r == nil || r["status"] != "Good" {
		t.Fatalf("read: %v\n%v", r, lines)
	}
	n := 0
	for _, l := range lines {
		if l["event"] == "changed" && l["status"] == "Good" {
			n++
		}
	}
	if n < 2 {
		t.Fatalf("%d Good notifications, want 2: %v", n, lines)
	}
	if w := first(lines, "write"); w == nil || w["status"] != "Good" {
		t.Fatalf("write: %v", w)
	}
	procs.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if got := p.dev.Holding(0); got != 500 {
			return fmt.Errorf("device register %d, want 500", got)
		}
		return nil
	})
}

// TestNodeOPCUASeesTheAuditEventOfADeniedWrite: a write through the
// Secondary is answered Good (optimistic) and an AuditWriteUpdateEvent on
// the Server object tells an independent client it was not serviced.
func TestNodeOPCUASeesTheAuditEventOfADeniedWrite(t *testing.T) {
	p := startPair(t, nil)
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.b, 1, "central")
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb)
	ns := cb.namespace()
	defer p.keepChangingSpeed()()
	lines := runNode(t, p.b.Endpoint(), fmt.Sprintf("ns=%d;s=press1/Speed", ns), fmt.Sprintf("ns=%d;s=press1/Setpoint", ns), "77", "events")
	if w := first(lines, "write"); w == nil || w["status"] != "Good" {
		t.Fatalf("optimistic write on the Secondary: %v", w)
	}
	a := first(lines, "audit")
	if a == nil {
		t.Fatalf("no audit event: %v", lines)
	}
	if a["Status"] != "false" || !strings.Contains(fmt.Sprint(a["Message"]), "not primary") ||
		!strings.Contains(fmt.Sprint(a["SourceNode"]), "press1/Setpoint") || a["NewValue"] != "77" {
		t.Fatalf("audit event %v", a)
	}
	if p.dev.Writes() != 0 {
		t.Fatal("the denied write reached the device")
	}
}

// TestNodeOPCUAForwardedWriteFromTheSecondary: in OpcUa:WriteMode forward
// an independent client connected only to the Secondary b, never reading
// ServiceLevel, writes the Setpoint: Good, the value lands on the device
// exactly once, written by the Primary a, and the AuditWriteUpdateEvent b
// raises names the forwarding and the Primary that serviced it.
func TestNodeOPCUAForwardedWriteFromTheSecondary(t *testing.T) {
	writes := &setpointLog{}
	p := startForwardPair(t, writes)
	ns := connect(t, p.b).namespace()
	defer p.keepChangingSpeed()()
	lines := runNode(t, p.b.Endpoint(), fmt.Sprintf("ns=%d;s=press1/Speed", ns), fmt.Sprintf("ns=%d;s=press1/Setpoint", ns), "4242", "events")
	if w := first(lines, "write"); w == nil || w["status"] != "Good" {
		t.Fatalf("forwarded write through the Secondary: %v\n%v", w, lines)
	}
	a := first(lines, "audit")
	if a == nil {
		t.Fatalf("no audit event: %v", lines)
	}
	if a["Status"] != "true" || !strings.Contains(fmt.Sprint(a["Message"]), "write forwarded to the Primary") ||
		!strings.Contains(fmt.Sprint(a["SourceNode"]), "press1/Setpoint") || a["NewValue"] != "4242" {
		t.Fatalf("b's audit event %v, want a successful write that names its forwarding", a)
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := writes.by(4000); len(got) != 1 || got[0] != 4242 {
			return fmt.Errorf("device writes of 4242: %v, want exactly one", got)
		}
		return nil
	})
	procs.Holds(t, time.Second, 100*time.Millisecond, func() error {
		if got := writes.by(4000); len(got) != 1 {
			return fmt.Errorf("device writes of 4242: %v, want exactly one", got)
		}
		return nil
	})
	if !strings.Contains(p.a.Log(), "dataplane: write forwarded from a peer") {
		t.Fatalf("the Primary a did not service a forwarded write\n%s", p.a.Log())
	}
	if strings.Contains(p.b.Log(), `"msg":"dataplane: write serviced"`) {
		t.Fatalf("the Secondary wrote to the device itself\n%s", p.b.Log())
	}
}
