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

// onTime bounds the p99 upstream → client latency of a calm device while
// another upstream misbehaves (hostile_test.go): a stalled device is late
// by seconds, a loaded 2-core machine by a few hundred milliseconds. The
// latency itself is a benchmark figure (bench/opcuamirror), not a test's.
const onTime = time.Second

// mirroredVars is how many upstream variables change every 100 ms in the
// mirror test.
const mirroredVars = 300

// TestMirrorsAnUpstreamServer is the driver's main job on real processes:
// a node-opcua upstream whose 300 variables change every 100 ms, one
// otopcua node mirroring it, an OPC UA subscription on our node.
//   - every upstream change reaches our subscriber, matched by value (the
//     ticks of each variable arrive without a gap), with the latency
//     measured from the upstream's SourceTimestamp;
//   - a tag whose type or node does not match the upstream is Bad with
//     BadTypeMismatch / BadNodeIdUnknown and a log line naming it;
//     nsu= resolves; the upstream's Bad status passes through;
//   - a write through our node lands upstream once; the upstream's
//     refusal is the client's result (confirmed mode);
//   - the upstream SIGKILLed and restarted: tags Bad
//     (BadCommunicationError), then Good again without restarting
//     otopcua (the restarted upstream's nodes checked again), and our
//     subscription keeps its id.
func TestMirrorsAnUpstreamServer(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": mirroredVars, "periodMs": 100})
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, deviceDoc(endpoint(up.URL), mirroredVars))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	tag := func(name string) *ua.NodeID { return ua.NewStringNodeID(ns, "up/"+name) }

	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		got := c.read(tag("V0"), tag("Flag"), tag("Flaky"))
		for i, dv := range got {
			if dv.Status != ua.StatusOK {
				return fmt.Errorf("tag %d: %v", i, dv.Status)
			}
		}
		return nil
	})

	// Every change, matched by value.
	nodes := make([]*ua.NodeID, mirroredVars)
	for i := range nodes {
		nodes[i] = tag(fmt.Sprintf("V%d", i))
	}
	mon := c.monitor(nodes)
	time.Sleep(4 * time.Second) // 40 upstream ticks of every variable
	samples := mon.take()
	// Upstream publishing 100 ms + ours 100 ms + 50 ms (issue 30), with
	// room for a loaded 2-core CI machine.
	checkEveryTick(t, samples, mirroredVars, 30, 0)

	// Mismatches are Bad with their own code and named in the log.
	got := c.read(tag("WrongType"), tag("Missing"), tag("Flag"))
	if got[0].Status != ua.StatusBadTypeMismatch || got[1].Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("WrongType %v, Missing %v; want BadTypeMismatch, BadNodeIdUnknown", got[0].Status, got[1].Status)
	}
	if got[2].Value.Value() != false {
		t.Fatalf("Flag = %v, want false", got[2].Value.Value())
	}
	log := node.Log()
	if !strings.Contains(log, `"tag":"WrongType"`) || !strings.Contains(log, "the upstream's DataType is float64, the document says int32") {
		t.Fatalf("no log line names WrongType and its types")
	}

	// The upstream's Bad status passes through, and back.
	up.Send("bad")
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if st := c.read(tag("Flaky"))[0].Status; st != ua.StatusBadSensorFailure {
			return fmt.Errorf("Flaky %v, want BadSensorFailure", st)
		}
		return nil
	})
	up.Send("good")
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if dv := c.read(tag("Flaky"))[0]; dv.Status != ua.StatusOK || dv.Value.Value() != 2.5 {
			return fmt.Errorf("Flaky %v %v, want Good 2.5", dv.Status, dv.Value.Value())
		}
		return nil
	})

	// Writes: once upstream; a refusal is returned (confirmed mode).
	if st := c.write(tag("Setpoint"), int32(42)); st != ua.StatusOK {
		t.Fatalf("write Setpoint: %v", st)
	}
	up.WaitCount("write 42", 1)
	if st := c.write(tag("Limited"), int32(500)); st != ua.StatusBadOutOfRange {
		t.Fatalf("write Limited 500: %v, want the upstream's BadOutOfRange", st)
	}
	up.WaitCount("refused 500", 1)
	procs.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if v := c.read(tag("Setpoint"))[0].Value.Value(); v != int32(42) {
			return fmt.Errorf("Setpoint reads %v, want 42", v)
		}
		return nil
	})

	// The upstream crashes and comes back: Bad, then Good, same subscription.
	ids := mon.subscriptionIDs()
	up.Kill()
	killed := time.Now()
	procs.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if st := c.read(tag("V1"))[0].Status; st != ua.StatusBadCommunicationError {
			return fmt.Errorf("V1 %v, want BadCommunicationError", st)
		}
		return nil
	})
	t.Logf("upstream killed: tags Bad after %v", time.Since(killed).Round(time.Millisecond))
	up.Restart()
	restarted := time.Now()
	mon.take()
	procs.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if dv := c.read(tag("V1"))[0]; dv.Status != ua.StatusOK {
			return fmt.Errorf("V1 %v, want Good", dv.Status)
		}
		return nil
	})
	t.Logf("upstream restarted: tags Good after %v", time.Since(restarted).Round(time.Millisecond))
	time.Sleep(time.Second)
	after := mon.take()
	var bad, good int
	for _, s := range after {
		if s.value.Status == ua.StatusOK {
			good++
		} else {
			bad++
		}
	}
	if good < mirroredVars {
		t.Fatalf("after the restart our subscription delivered %d good values, want ≥ %d", good, mirroredVars)
	}
	if !strings.Contains(node.Log(), "checking the tags again with a new session") {
		t.Fatalf("the restarted upstream's tags were not checked again")
	}
	if got := mon.subscriptionIDs(); len(got) != 1 || len(ids) != 1 || got[0] != ids[0] {
		t.Fatalf("subscription ids %v before, %v after the upstream restart; want one id throughout", ids, got)
	}
}

// checkEveryTick checks that each of n variables (client handle = index)
// delivered at least min ticks, consecutive (every upstream value, none
// lost or repeated), and logs the latency from the upstream's
// SourceTimestamp to the Publish response; with maxP99 > 0 its p99 must
// not exceed it.
func checkEveryTick(t *testing.T, samples []sample, n, min int, maxP99 time.Duration) {
	t.Helper()
	last := make([]float64, n)
	count := make([]int, n)
	var lat []time.Duration
	for _, s := range samples {
		if s.value.Status != ua.StatusOK || s.value.Value == nil {
			t.Fatalf("V%d: %v", s.handle, s.value.Status)
		}
		v, _ := s.value.Value.Value().(float64)
		h := s.handle
		if count[h] > 0 && v != last[h]+1 {
			t.Fatalf("V%d: %v after %v: a change was lost or repeated", h, v, last[h])
		}
		if count[h] > 0 && !s.value.SourceTimestamp.IsZero() {
			lat = append(lat, s.at.Sub(s.value.SourceTimestamp))
		}
		last[h] = v
		count[h]++
	}
	for i, c := range count {
		if c < min {
			t.Fatalf("V%d: %d changes, want ≥ %d", i, c, min)
		}
	}
	p50, p99, pmax := percentile(lat, 50), percentile(lat, 99), percentile(lat, 100)
	t.Logf("%d changes of %d variables, every tick matched; upstream → client latency p50 %v p99 %v max %v",
		len(samples), n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), pmax.Round(time.Millisecond))
	if maxP99 > 0 && p99 > maxP99 {
		t.Fatalf("p99 latency %v above %v", p99, maxP99)
	}
}
