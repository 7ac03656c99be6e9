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

// TestBrowsePathTags: tags located by browsePath (namespace by index and
// by URI, a nested folder) carry the upstream's values and writes; a path
// the upstream does not resolve is BadNoMatch and a path whose node has
// another DataType is BadTypeMismatch, each with an Error line naming the
// tag and its path.
func TestBrowsePathTags(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 1, "periodMs": 100, "tree": true})
	node, cfg := startSingle(t)
	const nsu = "nsu=urn:otopcua:test:upstream;"
	procs.Deploy(t, cfg, doc(fmt.Sprintf(`{"name": "up", "driver": "opcua", %s "publishingInterval": "100ms", "tags": [
{"name": "Speed", "browsePath": "/2:Line1/2:Speed", "type": "float64", "samplingInterval": "0s"},
{"name": "Count", "browsePath": "/%sLine1/%sCount", "type": "uint32"},
{"name": "Temp", "browsePath": "/2:Line1/2:Motor/2:Temp", "type": "float32"},
{"name": "Mode", "browsePath": "/2:Line1/2:Mode", "type": "int32", "writable": true},
{"name": "Nope", "browsePath": "/2:Line1/2:Nope", "type": "float64"},
{"name": "CountAsInt", "browsePath": "/2:Line1/2:Count", "type": "int32"}
]}`, endpoint(up.URL), nsu, nsu)))
	node.WaitDeployed(1)
	c := connect(t, node.Endpoint())
	ns := c.namespace()
	tag := func(name string) *ua.NodeID { return ua.NewStringNodeID(ns, "up/"+name) }

	var first float64
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		got := c.read(tag("Speed"), tag("Count"), tag("Temp"), tag("Mode"))
		for i, dv := range got {
			if dv.Status != ua.StatusOK {
				return fmt.Errorf("tag %d: %v", i, dv.Status)
			}
		}
		if got[1].Value.Value() != uint32(42) || got[2].Value.Value() != float32(21.5) {
			return fmt.Errorf("Count %v, Temp %v; want 42, 21.5", got[1].Value.Value(), got[2].Value.Value())
		}
		first = got[0].Value.Value().(float64)
		return nil
	})
	procs.CheckFor(t, 5*time.Second, 100*time.Millisecond, func() error {
		if v := c.read(tag("Speed"))[0].Value.Value().(float64); v <= first {
			return fmt.Errorf("Speed %v, not past %v", v, first)
		}
		return nil
	})
	if st := c.write(tag("Mode"), int32(5)); st != ua.StatusOK {
		t.Fatalf("write Mode: %v", st)
	}
	up.WaitCount("mode 5", 1)

	got := c.read(tag("Nope"), tag("CountAsInt"))
	if got[0].Status != ua.StatusBadNoMatch || got[1].Status != ua.StatusBadTypeMismatch {
		t.Fatalf("Nope %v, CountAsInt %v; want BadNoMatch, BadTypeMismatch", got[0].Status, got[1].Status)
	}
	log := node.Log()
	for _, want := range []string{`"tag":"Nope"`, `"browsePath":"/2:Line1/2:Nope"`, `"tag":"CountAsInt"`, "the upstream's DataType is uint32, the document says int32"} {
		if !strings.Contains(log, want) {
			t.Fatalf("no log line with %s", want)
		}
	}
}
