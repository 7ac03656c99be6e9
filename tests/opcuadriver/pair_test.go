package opcuadriver_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestPairWritesUpstreamOnlyFromThePrimary: both nodes of a pair mirror
// the upstream (one session each); a write through the Primary lands
// upstream once; through the Secondary it follows OpcUa:WriteMode
// (confirmed: denied, never upstream; forward: executed once by the
// Primary); after a SIGKILL of the Primary the survivor's writes land
// upstream.
func TestPairWritesUpstreamOnlyFromThePrimary(t *testing.T) {
	for _, mode := range []string{"confirmed", "forward"} {
		t.Run(mode, func(t *testing.T) { pairWrites(t, mode) })
	}
}

func pairWrites(t *testing.T, mode string) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100})
	a, b, cfgA := startPair(t, mode)
	procs.Deploy(t, cfgA, deviceDoc(endpoint(up.URL), 5))
	a.WaitDeployed(1)
	b.WaitDeployed(1)
	ca, cb := connect(t, a.Endpoint()), connect(t, b.Endpoint())
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if la, lb := ca.level(), cb.level(); la != 250 || lb != 240 {
			return fmt.Errorf("ServiceLevel a=%d b=%d, want 250 and 240", la, lb)
		}
		return nil
	})
	ns := ca.namespace()
	setpoint := ua.NewStringNodeID(ns, "up/Setpoint")
	for name, c := range map[string]*session{"a": ca, "b": cb} {
		procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
			if st := c.read(ua.NewStringNodeID(ns, "up/V0"))[0].Status; st != ua.StatusOK {
				return fmt.Errorf("node %s: V0 %v", name, st)
			}
			return nil
		})
	}

	// One upstream session per node (and this test's reader).
	cu := connect(t, up.URL)
	sessions := cu.read(ua.NewNumericNodeID(0, id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount))[0].Value.Value()
	if sessions != uint32(3) {
		t.Fatalf("upstream CurrentSessionCount = %v, want 3: one per node and the test's", sessions)
	}

	if st := ca.write(setpoint, int32(1)); st != ua.StatusOK {
		t.Fatalf("write through the Primary: %v", st)
	}
	up.WaitCount("write 1", 1)

	st := cb.write(setpoint, int32(2))
	switch mode {
	case "confirmed":
		if st != ua.StatusBadInvalidState {
			t.Fatalf("confirmed write through the Secondary: %v, want BadInvalidState (not primary)", st)
		}
		up.WaitCount("write 2", 0)
	case "forward":
		if st != ua.StatusOK {
			t.Fatalf("forwarded write through the Secondary: %v, want Good", st)
		}
		up.WaitCount("write 2", 1)
	}

	a.Signal(syscall.SIGKILL)
	killed := time.Now()
	procs.CheckFor(t, 40*time.Second, 100*time.Millisecond, func() error {
		if lb := cb.level(); lb != 250 {
			return fmt.Errorf("survivor's ServiceLevel %d, want 250", lb)
		}
		return nil
	})
	t.Logf("Primary SIGKILLed: the survivor is Primary after %v", time.Since(killed).Round(time.Millisecond))
	if st := cb.write(setpoint, int32(3)); st != ua.StatusOK {
		t.Fatalf("write through the survivor: %v", st)
	}
	up.WaitCount("write 3", 1)
	if dv := cb.read(ua.NewStringNodeID(ns, "up/V0"))[0]; dv.Status != ua.StatusOK {
		t.Fatalf("survivor's V0 %v, want Good", dv.Status)
	}
}
