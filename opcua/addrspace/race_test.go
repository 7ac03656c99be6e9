package addrspace_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
)

// TestConcurrentHammer runs producers (Set), client Reads and Writes, the
// subscription view (Source.Read, Watch/cancel), Browse, TranslateBrowsePath
// and node management at the same time. Under -race it proves the address
// space free of the data race gopcua's server has between SetAttribute and
// the Read service; in any mode it checks that every watcher saw every Set of
// its variable in order and that the last Set is what reads return.
func TestConcurrentHammer(t *testing.T) {
	as := addrspace.New(addrspace.Options{})
	as.AddNamespace("urn:test:hammer")
	const (
		produced  = 16   // variables with one producer each
		written   = 4    // variables clients write
		setsPerVa = 2000 // Sets per produced variable
	)
	vars := make([]*addrspace.Variable, produced)
	seen := make([]atomic.Int64, produced)
	for k := range vars {
		v, err := as.AddVariable(ua.NewStringNodeID(1, fmt.Sprintf("P%d", k)), fmt.Sprintf("P%d", k), "", i(id.ObjectsFolder), i(id.Int64), int64(0), rw)
		if err != nil {
			t.Fatal(err)
		}
		vars[k] = v
		k := k
		// A permanent watcher: values must arrive complete and in order.
		as.Watch(v.NodeID(), func(dv *ua.DataValue) {
			got := dv.Value.Value().(int64)
			if prev := seen[k].Swap(got); got != prev+1 {
				t.Errorf("P%d: watcher saw %d after %d", k, got, prev)
			}
		})
	}
	targets := make([]*ua.NodeID, written)
	for k := range targets {
		v, err := as.AddVariable(ua.NewStringNodeID(1, fmt.Sprintf("W%d", k)), fmt.Sprintf("W%d", k), "", i(id.ObjectsFolder), i(id.Double), 0.0, rw)
		if err != nil {
			t.Fatal(err)
		}
		targets[k] = v.NodeID()
	}
	as.SetWriteHook(func(*ua.NodeID, *ua.DataValue) ua.StatusCode { return ua.StatusOK })

	var wg sync.WaitGroup
	var stop atomic.Bool
	run := func(f func(n int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				f(n)
			}
		}()
	}
	// Producers: two goroutines, each owning half the variables.
	var producers sync.WaitGroup
	for p := 0; p < 2; p++ {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for n := int64(1); n <= setsPerVa; n++ {
				for k := p; k < produced; k += 2 {
					if err := vars[k].Set(n, ua.StatusOK, time.Time{}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	src := as.Source()
	run(func(n int) { // service reads
		dv := as.Read(&ua.ReadValueID{NodeID: vars[n%produced].NodeID(), AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnBoth)
		if _, ok := dv.Value.Value().(int64); !ok || dv.Status != ua.StatusOK {
			t.Errorf("read: %v %v", dv.Status, dv.Value)
		}
	})
	run(func(n int) { // subscription reads
		if dv := src.Read(vars[n%produced].NodeID(), ua.AttributeIDValue); dv.Status != ua.StatusOK {
			t.Errorf("source read: %v", dv.Status)
		}
	})
	run(func(n int) { // client writes
		if st := as.Write(writeValue(targets[n%written], float64(n))); st != ua.StatusOK {
			t.Errorf("write: %v", st)
		}
	})
	run(func(n int) { // browse and translate
		if _, st := as.Browse(&ua.BrowseDescription{NodeID: i(id.ObjectsFolder), ReferenceTypeID: i(id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: 63}); st != ua.StatusOK {
			t.Errorf("browse: %v", st)
		}
		as.TranslateBrowsePath(&ua.BrowsePath{StartingNode: i(id.ObjectsFolder), RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{elem(id.HierarchicalReferences, qn(1, "P0"))}}})
	})
	run(func(n int) { // watch churn
		cancel, st := src.Watch(vars[n%produced].NodeID(), func(*ua.DataValue) {})
		if st != ua.StatusOK {
			t.Errorf("watch: %v", st)
		}
		cancel()
	})
	run(func(n int) { // node management
		nid := ua.NewStringNodeID(1, fmt.Sprintf("Tmp%d", n))
		if _, err := as.AddVariable(nid, "Tmp", "", i(id.ObjectsFolder), i(id.Int32), int32(n), rw); err != nil {
			t.Errorf("add: %v", err)
		}
		if n%16 == 0 {
			as.AddNamespace(fmt.Sprintf("urn:test:ns%d", n))
		}
		if err := as.DeleteNode(nid); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
	producers.Wait()
	stop.Store(true)
	wg.Wait()

	for k, v := range vars {
		if got := seen[k].Load(); got != setsPerVa {
			t.Errorf("P%d: watcher's last value %d, want %d", k, got, setsPerVa)
		}
		if got := v.Value().Value.Value(); got != int64(setsPerVa) {
			t.Errorf("P%d = %v, want %d", k, got, setsPerVa)
		}
	}
}

// BenchmarkSet measures the producer hot path: one variable, no watchers.
func BenchmarkSet(b *testing.B) {
	as := addrspace.New(addrspace.Options{})
	as.AddNamespace("urn:bench")
	v, err := as.AddVariable(ua.NewStringNodeID(1, "B"), "B", "", i(id.ObjectsFolder), i(id.Double), 0.0, rw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var x float64
	for b.Loop() {
		x++
		if err := v.Set(x, ua.StatusOK, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sets/s")
}

// BenchmarkSetWatched is BenchmarkSet with one watcher that does nothing.
func BenchmarkSetWatched(b *testing.B) {
	as := addrspace.New(addrspace.Options{})
	as.AddNamespace("urn:bench")
	v, err := as.AddVariable(ua.NewStringNodeID(1, "B"), "B", "", i(id.ObjectsFolder), i(id.Double), 0.0, rw)
	if err != nil {
		b.Fatal(err)
	}
	var n int
	as.Watch(v.NodeID(), func(*ua.DataValue) { n++ })
	b.ReportAllocs()
	var x float64
	for b.Loop() {
		x++
		if err := v.Set(x, ua.StatusOK, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sets/s")
}

// BenchmarkRead measures a client Read of a variable's Value.
func BenchmarkRead(b *testing.B) {
	as := addrspace.New(addrspace.Options{})
	as.AddNamespace("urn:bench")
	v, err := as.AddVariable(ua.NewStringNodeID(1, "B"), "B", "", i(id.ObjectsFolder), i(id.Double), 1.0, rw)
	if err != nil {
		b.Fatal(err)
	}
	rv := &ua.ReadValueID{NodeID: v.NodeID(), AttributeID: ua.AttributeIDValue}
	b.ReportAllocs()
	for b.Loop() {
		if dv := as.Read(rv, ua.TimestampsToReturnBoth); dv.Status != ua.StatusOK {
			b.Fatal(dv.Status)
		}
	}
}
