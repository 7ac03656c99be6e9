package addrspace_test

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/addrspace"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func i(n uint32) *ua.NodeID { return ua.NewNumericNodeID(0, n) }

// newSpace returns an address space on a fake clock with namespace 1
// registered.
func newSpace(t testing.TB) (*addrspace.AddressSpace, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	as := addrspace.New(addrspace.Options{Clock: clk})
	if ns := as.AddNamespace("urn:test:server"); ns != 1 {
		t.Fatalf("first AddNamespace = %d, want 1", ns)
	}
	return as, clk
}

func read(as *addrspace.AddressSpace, nid *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
	return as.Read(&ua.ReadValueID{NodeID: nid, AttributeID: attr}, ua.TimestampsToReturnBoth)
}

// mustRead reads an attribute that must read Good and returns its value.
func mustRead(t *testing.T, as *addrspace.AddressSpace, nid *ua.NodeID, attr ua.AttributeID) any {
	t.Helper()
	dv := read(as, nid, attr)
	if dv.Status != ua.StatusOK {
		t.Fatalf("read %s attribute %v: %v", nid, attr, dv.Status)
	}
	if dv.Value == nil {
		t.Fatalf("read %s attribute %v: no value", nid, attr)
	}
	return dv.Value.Value()
}

func browse(t *testing.T, as *addrspace.AddressSpace, d *ua.BrowseDescription) []*ua.ReferenceDescription {
	t.Helper()
	refs, st := as.Browse(d)
	if st != ua.StatusOK {
		t.Fatalf("browse %s: %v", d.NodeID, st)
	}
	return refs
}

// hierarchical browses the forward hierarchical references of n with every
// result field.
func hierarchical(t *testing.T, as *addrspace.AddressSpace, n *ua.NodeID) map[string]*ua.ReferenceDescription {
	t.Helper()
	refs := browse(t, as, &ua.BrowseDescription{
		NodeID:          n,
		BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeID: i(id.HierarchicalReferences),
		IncludeSubtypes: true,
		ResultMask:      uint32(ua.BrowseResultMaskAll),
	})
	out := map[string]*ua.ReferenceDescription{}
	for _, r := range refs {
		out[r.BrowseName.Name] = r
	}
	return out
}

func writeValue(nid *ua.NodeID, v any) *ua.WriteValue {
	return &ua.WriteValue{
		NodeID:      nid,
		AttributeID: ua.AttributeIDValue,
		Value:       &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)},
	}
}

const rw = byte(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite)
