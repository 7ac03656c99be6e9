package opcuadriver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestNetworkBreakKeepsTheUpstreamSession: the connection to a live
// upstream breaks (a proxy resets it and refuses new ones for 2 s): the
// tags turn BadCommunicationError, and when the network is back the driver
// takes its subscription back on the upstream instead of re-creating it —
// the session reactivated on a new channel, or the subscription
// transferred — so the upstream ends with one session of ours, and what
// the upstream sent during the break is republished: a subscriber of ours
// sees every tick.
func TestNetworkBreakKeepsTheUpstreamSession(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100})
	proxy := netem.NewProxy(t, "127.0.0.1:0", strings.TrimPrefix(up.URL, "opc.tcp://"))
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, deviceDoc(endpoint("opc.tcp://"+proxy.Addr()), 5))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	v0 := ua.NewStringNodeID(ns, "up/V0")
	waitStatus := func(want ua.StatusCode) {
		t.Helper()
		procs.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
			if st := c.read(v0)[0].Status; st != want {
				return fmt.Errorf("V0 %v, want %v", st, want)
			}
			return nil
		})
	}
	waitStatus(ua.StatusOK)
	nodes := make([]*ua.NodeID, 5)
	for i := range nodes {
		nodes[i] = ua.NewStringNodeID(ns, fmt.Sprintf("up/V%d", i))
	}
	mon := c.monitor(nodes)
	time.Sleep(time.Second)

	proxy.SetMode(netem.Reset)
	waitStatus(ua.StatusBadCommunicationError)
	time.Sleep(2 * time.Second)
	proxy.SetMode(netem.Pass)
	back := time.Now()
	waitStatus(ua.StatusOK)
	t.Logf("network back: tags Good after %v", time.Since(back).Round(time.Millisecond))
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(node.Log(), "opcua: upstream reconnected") {
			return fmt.Errorf("no reconnect logged yet")
		}
		return nil
	})
	log := node.Log()
	i := strings.LastIndex(log, "opcua: upstream reconnected")
	line, _, _ := strings.Cut(log[i:], "\n")
	t.Logf("%s", line)
	if !strings.Contains(line, `"session":"reactivated"`) {
		t.Fatalf("the upstream session was not reactivated: %s", line)
	}
	// What the upstream sent during the break was republished: the Good
	// values of every variable are every tick, none lost.
	time.Sleep(time.Second)
	var good []sample
	bad := 0
	for _, smp := range mon.take() {
		if smp.value.Status == ua.StatusOK {
			good = append(good, smp)
		} else {
			bad++
		}
	}
	if bad == 0 {
		t.Fatalf("no Bad notification during the break")
	}
	checkEveryTick(t, good, 5, 40, 0) // republished values are as old as the break
	cu := connect(t, up.URL)
	procs.CheckFor(t, 10*time.Second, 200*time.Millisecond, func() error {
		n := cu.read(ua.NewNumericNodeID(0, id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount))[0].Value.Value()
		if n != uint32(2) {
			return fmt.Errorf("upstream CurrentSessionCount %v, want 2: the driver's and the test's", n)
		}
		return nil
	})
}
