package opcua

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
)

func testTree() *tree {
	t := &tree{
		nodes: []drivers.MirrorNode{
			{Path: []string{"Line1"}, Key: "Line1", Folder: true},
			{Path: []string{"Line1", "Speed"}, Key: "Line1/Speed", DataType: id.Double, ValueRank: -1, EURange: &ua.Range{High: 100}},
		},
		ids: []*ua.NodeID{ua.NewStringNodeID(2, "Line1"), ua.NewStringNodeID(2, "Line1.Speed")},
	}
	t.sum = sumOf(t)
	return t
}

// The fingerprint is the same for the same subtree and differs for any
// change a client could see.
func TestSumOf(t *testing.T) {
	a, b := testTree(), testTree()
	if a.sum != b.sum {
		t.Fatal("two browses of the same subtree differ")
	}
	for name, change := range map[string]func(*tree){
		"description": func(t *tree) { t.nodes[1].Description = "x" },
		"range":       func(t *tree) { t.nodes[1].EURange.High = 200 },
		"units":       func(t *tree) { t.nodes[1].EngineeringUnits = &ua.EUInformation{UnitID: 1} },
		"writable":    func(t *tree) { t.nodes[1].Writable = true },
		"upstream id": func(t *tree) { t.ids[1] = ua.NewStringNodeID(2, "Other") },
		"a node more": func(t *tree) {
			t.nodes = append(t.nodes, drivers.MirrorNode{Path: []string{"Line1", "X"}, Key: "Line1/X", DataType: id.Double, ValueRank: -1})
			t.ids = append(t.ids, ua.NewStringNodeID(2, "X"))
		},
	} {
		c := testTree()
		change(c)
		if sumOf(c) == a.sum {
			t.Errorf("%s: the fingerprint did not change", name)
		}
	}
}

// A mirrored Variable's notification passes the upstream's value and
// status; a lost upstream marks every mirrored Variable Bad once.
func TestMirrorChanges(t *testing.T) {
	d := &Driver{tree: testTree()}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c, ok := d.mirrorChangeLocked(1, client.Notification{Value: &ua.DataValue{Value: ua.MustVariant(12.5), SourceTimestamp: at}})
	if !ok || c.Mirror != "Line1/Speed" || c.Reading.Value != 12.5 || c.Reading.Status != ua.StatusOK || !c.Reading.SourceTime.Equal(at) {
		t.Fatalf("%+v %v", c, ok)
	}
	c, _ = d.mirrorChangeLocked(1, client.Notification{Value: &ua.DataValue{Status: ua.StatusBadSensorFailure}})
	if c.Reading.Status != ua.StatusBadSensorFailure {
		t.Fatalf("the upstream's status: %+v", c)
	}
	if _, ok := d.mirrorChangeLocked(5, client.Notification{Value: &ua.DataValue{}}); ok {
		t.Fatal("a handle past the tree accepted")
	}
	bad := d.mirrorBadLocked(ua.StatusBadCommunicationError, at)
	if len(bad) != 1 || bad[0].Mirror != "Line1/Speed" || bad[0].Reading.Status != ua.StatusBadCommunicationError {
		t.Fatalf("lost: %+v", bad)
	}
	if again := d.mirrorBadLocked(ua.StatusBadCommunicationError, at); len(again) != 0 {
		t.Fatalf("reported twice: %+v", again)
	}
	d.mirrorChangeLocked(1, client.Notification{Value: &ua.DataValue{Value: ua.MustVariant(1.0)}})
	if again := d.mirrorBadLocked(ua.StatusBadCommunicationError, at); len(again) != 1 {
		t.Fatalf("after a value, lost again: %+v", again)
	}
}
