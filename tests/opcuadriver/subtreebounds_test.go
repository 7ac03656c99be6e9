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

// TestMirrorBounds: an upstream folder of 3,000 variables mirrored with
// maxNodes 500, and a chain of 40 nested folders mirrored with maxDepth
// 3. Each mirrors what fits (breadth first: the root and 499 of the
// folder's variables; the first 4 folder levels) with a Warn line that
// says why, while a plain device of the same upstream keeps its values
// flowing and our node answers reads at once.
func TestMirrorBounds(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 2, "periodMs": 100, "huge": 3000, "deep": 40})
	node, cfg := startSingle(t)
	procs.Deploy(t, cfg, doc(
		fmt.Sprintf(`{"name": "huge", "driver": "opcua", %s "mirror": {"browsePath": "/2:Huge", "maxNodes": 500}, "tags": []}`, endpoint(up.URL)),
		fmt.Sprintf(`{"name": "deep", "driver": "opcua", %s "mirror": {"nodeId": "nsu=urn:otopcua:test:upstream;s=Deep", "maxDepth": 3}, "tags": []}`, endpoint(up.URL)),
		device("calm", endpoint(up.URL), 2)))
	node.WaitDeployed(1)
	deployed := time.Now()
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	n := func(s string) *ua.NodeID { return ua.NewStringNodeID(ns, s) }
	var slowest time.Duration
	var hugeNodes, deepNodes []string
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		start := time.Now()
		c.read(n("calm/V0"))
		slowest = max(slowest, time.Since(start))
		hugeNodes, deepNodes = c.browseTree(n("huge/Huge"), 10000), c.browseTree(n("deep/Deep"), 10000)
		if len(hugeNodes) != 499 || len(deepNodes) != 7 {
			return fmt.Errorf("huge/Huge has %d nodes below it, want 499; deep/Deep %d, want 7: %q", len(hugeNodes), len(deepNodes), deepNodes)
		}
		return nil
	})
	t.Logf("both subtrees cut to their bounds %v after the deployment; slowest read meanwhile %v", time.Since(deployed).Round(time.Millisecond), slowest.Round(time.Millisecond))
	want := fmt.Sprintf("ns=%d;s=deep/Deep/D1/D2/D3/D4 D4", ns)
	if !strings.Contains(strings.Join(deepNodes, "\n"), want) || strings.Contains(strings.Join(deepNodes, "\n"), "D5") {
		t.Fatalf("deep/Deep: %q; want down to %s (D4 not browsed)", deepNodes, want)
	}
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if v := c.read(n("huge/Huge/H0"), n("huge/Huge/H498")); v[0].Status != ua.StatusOK || v[0].Value.Value() != 0.0 || v[1].Status != ua.StatusOK {
			return fmt.Errorf("huge/Huge/H0: %v %v; H498 %v", v[0].Status, v[0].Value, v[1].Status)
		}
		return nil
	})
	t.Logf("huge/Huge/H0 and H498 Good %v after the deployment", time.Since(deployed).Round(time.Millisecond))
	before := c.read(n("calm/V0"))[0].Value.Value().(float64)
	procs.CheckFor(t, 5*time.Second, 100*time.Millisecond, func() error {
		if v := c.read(n("calm/V0"))[0].Value.Value().(float64); v <= before {
			return fmt.Errorf("calm/V0 stays %v", v)
		}
		return nil
	})
	if slowest > 500*time.Millisecond {
		t.Fatalf("a read on our node took %v while the subtrees were browsed", slowest)
	}
	log := node.Log()
	for _, w := range []string{`"device":"huge","why":"maxNodes 500 reached"`, `"device":"deep","why":"folders deeper than maxDepth 3 not browsed"`} {
		if !strings.Contains(log, w) {
			t.Errorf("no Warn line with %s", w)
		}
	}
}
