package opcuadriver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestFloodingUpstreamStallsNoOtherDevice: one upstream changes each of
// its 200 variables 1,000 times a second (as fast as node-opcua can) and
// floods the driver with full queues on every Publish; a calm upstream on
// the same node still reaches our subscriber with every change, on time,
// and our node answers reads at once.
func TestFloodingUpstreamStallsNoOtherDevice(t *testing.T) {
	flood := nodescript.StartUpstream(t, map[string]any{"vars": 200, "floodEvery": 20, "floodBurst": 20})
	calm := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100})
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, doc(device("flood", endpoint(flood.URL), 200), device("calm", endpoint(calm.URL), 5)))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		got := c.read(ua.NewStringNodeID(ns, "flood/V199"), ua.NewStringNodeID(ns, "calm/V4"))
		if got[0].Status != ua.StatusOK || got[1].Status != ua.StatusOK {
			return fmt.Errorf("flood/V199 %v, calm/V4 %v", got[0].Status, got[1].Status)
		}
		return nil
	})
	nodes := make([]*ua.NodeID, 5)
	for i := range nodes {
		nodes[i] = ua.NewStringNodeID(ns, fmt.Sprintf("calm/V%d", i))
	}
	mon := c.monitor(nodes)
	floodBefore := c.read(ua.NewStringNodeID(ns, "flood/V0"))[0].Value.Value().(float64)
	var slowest time.Duration
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		start := time.Now()
		c.read(ua.NewStringNodeID(ns, "calm/V0"))
		slowest = max(slowest, time.Since(start))
	}
	floodAfter := c.read(ua.NewStringNodeID(ns, "flood/V0"))[0].Value.Value().(float64)
	checkEveryTick(t, mon.take(), 5, 30, onTime)
	t.Logf("flooding upstream advanced %v ticks in 4 s; slowest Read on our node %v", floodAfter-floodBefore, slowest.Round(time.Millisecond))
	if floodAfter <= floodBefore {
		t.Fatalf("the flooding device stopped: V0 %v then %v", floodBefore, floodAfter)
	}
	if slowest > 500*time.Millisecond {
		t.Fatalf("a Read on our node took %v during the flood", slowest)
	}
}

// TestSlowUpstreamWriteIsBounded: an upstream that answers writes 5 s
// late. Our client's write returns within the device's timeout (1 s) with
// BadTimeout, is never sent twice, the upstream session stays (the slow
// answer is not a dead connection) and the device's values keep arriving
// meanwhile, every one.
func TestSlowUpstreamWriteIsBounded(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 5, "periodMs": 100, "slowMs": 5000})
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, deviceDoc(endpoint(up.URL), 5))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if st := c.read(ua.NewStringNodeID(ns, "up/V4"))[0].Status; st != ua.StatusOK {
			return fmt.Errorf("V4 %v", st)
		}
		return nil
	})
	nodes := make([]*ua.NodeID, 5)
	for i := range nodes {
		nodes[i] = ua.NewStringNodeID(ns, fmt.Sprintf("up/V%d", i))
	}
	mon := c.monitor(nodes)
	// The write comes from another client: our server answers one
	// session's requests in order, so a confirmed write holds back that
	// session's own Publish responses while it waits.
	w := connect(t, node.Endpoint())
	start := time.Now()
	st := w.write(ua.NewStringNodeID(ns, "up/Setpoint"), int32(5))
	took := time.Since(start)
	t.Logf("write to a slow upstream answered %v after %v", st, took.Round(time.Millisecond))
	if st != ua.StatusBadTimeout || took > 2500*time.Millisecond {
		t.Fatalf("write answered %v after %v; want BadTimeout within the 1 s device timeout (+ margin)", st, took)
	}
	time.Sleep(4 * time.Second)
	checkEveryTick(t, mon.take(), 5, 40, onTime)
	if strings.Contains(node.Log(), "opcua: upstream lost") {
		t.Fatalf("the slow write dropped the upstream connection")
	}
	up.WaitCount("write 5", 1) // late, once
}
