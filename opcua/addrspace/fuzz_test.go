package addrspace

import (
	"slices"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// FuzzReadIndexRange feeds client-chosen IndexRange strings to Read over
// array, string and scalar values: a Read must answer, never panic, and a
// Good answer must hold a slice of the stored value.
func FuzzReadIndexRange(f *testing.F) {
	for _, s := range []string{"0", "1:2", "2:1", "0:99999999999", "-1", ":", "1:", "0,0", "4294967296:4294967297", " 1"} {
		f.Add(s)
	}
	as := New(Options{})
	as.AddNamespace("urn:fuzz")
	arr, err := as.AddVariable(ua.NewStringNodeID(1, "A"), "A", "", ua.NewNumericNodeID(0, id.ObjectsFolder), ua.NewNumericNodeID(0, id.Int32), []int32{1, 2, 3}, 1)
	if err != nil {
		f.Fatal(err)
	}
	str, err := as.AddVariable(ua.NewStringNodeID(1, "S"), "S", "", ua.NewNumericNodeID(0, id.ObjectsFolder), ua.NewNumericNodeID(0, id.String), "abc", 1)
	if err != nil {
		f.Fatal(err)
	}
	nodes := []*ua.NodeID{arr.NodeID(), str.NodeID(), ua.NewNumericNodeID(0, id.Server_ServiceLevel)}
	f.Fuzz(func(t *testing.T, r string) {
		if r == "" {
			return // no range: the whole value
		}
		for _, n := range nodes {
			dv := as.Read(&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, IndexRange: r}, ua.TimestampsToReturnBoth)
			if dv.Status != ua.StatusOK {
				continue
			}
			switch v := dv.Value.Value().(type) {
			case []int32:
				if len(v) == 0 || len(v) > 3 {
					t.Errorf("range %q of [1 2 3] = %v", r, v)
				}
			case string:
				if len(v) == 0 || len(v) > 3 {
					t.Errorf("range %q of abc = %q", r, v)
				}
			default:
				t.Errorf("range %q gave %T", r, v)
			}
		}
	})
}

// FuzzDecodeTable checks that a damaged table is an error, not a panic,
// and that what decodes encodes back to the same bytes.
func FuzzDecodeTable(f *testing.F) {
	// Seed: the first nodes of namespace 0 with the references among them.
	full := standardNodes()
	small := &template{}
	const n = 40
	for _, tn := range full.nodes[:n] {
		tn.refs = slices.DeleteFunc(slices.Clone(tn.refs), func(r tmplRef) bool { return r.typ >= n || r.target >= n })
		if tn.super >= n {
			tn.super = -1
		}
		small.refs += len(tn.refs)
		small.nodes = append(small.nodes, tn)
	}
	seed, err := encodeTable(small)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, err := decodeTable(b)
		if err != nil {
			return
		}
		if _, err := encodeTable(tm); err != nil {
			t.Errorf("a decoded table does not encode: %v", err)
		}
	})
}
