package addrspace_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
)

func TestWatchAndCancel(t *testing.T) {
	as, _ := newSpace(t)
	v, err := as.AddVariable(ua.NewStringNodeID(1, "W"), "W", "", i(id.ObjectsFolder), i(id.Int32), int32(0), rw)
	if err != nil {
		t.Fatal(err)
	}
	if _, st := as.Watch(ua.NewStringNodeID(1, "nope"), func(*ua.DataValue) {}); st != ua.StatusBadNodeIDUnknown {
		t.Errorf("unknown node: %v", st)
	}
	if _, st := as.Watch(i(id.Server), func(*ua.DataValue) {}); st != ua.StatusBadAttributeIDInvalid {
		t.Errorf("object: %v", st)
	}
	var a, b []int32
	cancelA, st := as.Watch(v.NodeID(), func(dv *ua.DataValue) { a = append(a, dv.Value.Value().(int32)) })
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	cancelB, st := as.Source().Watch(v.NodeID(), func(dv *ua.DataValue) { b = append(b, dv.Value.Value().(int32)) })
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	if v.Watchers() != 2 {
		t.Fatalf("watchers = %d", v.Watchers())
	}
	mustSet := func(x int32) {
		t.Helper()
		if err := v.Set(x, ua.StatusOK, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(1)
	mustSet(2)
	if st := as.Write(writeValue(v.NodeID(), int32(3))); st != ua.StatusOK { // a client write notifies too
		t.Fatal(st)
	}
	if err := as.SetValue(v.NodeID(), int32(4), ua.StatusOK, time.Time{}); err != nil {
		t.Fatal(err)
	}
	cancelA()
	cancelA() // twice is fine
	mustSet(5)
	cancelB()
	mustSet(6)
	if want := []int32{1, 2, 3, 4}; !slices.Equal(a, want) {
		t.Errorf("watcher A saw %v, want %v", a, want)
	}
	if want := []int32{1, 2, 3, 4, 5}; !slices.Equal(b, want) {
		t.Errorf("watcher B saw %v, want %v", b, want)
	}
	if v.Watchers() != 0 {
		t.Errorf("watchers after cancel = %d", v.Watchers())
	}
}

func TestSetStoresAndRejects(t *testing.T) {
	as, clk := newSpace(t)
	v, err := as.AddVariable(ua.NewStringNodeID(1, "S"), "S", "", i(id.ObjectsFolder), i(id.Double), 0.0, rw)
	if err != nil {
		t.Fatal(err)
	}
	var seen *ua.DataValue
	cancel, _ := as.Watch(v.NodeID(), func(dv *ua.DataValue) { seen = dv })
	defer cancel()
	clk.Advance(time.Second)
	if err := v.Set(1.25, ua.StatusBad, time.Time{}); err != nil {
		t.Fatal(err)
	}
	dv := v.Value()
	if dv != seen {
		t.Error("the watcher did not get the stored DataValue")
	}
	now := t0.Add(time.Second)
	if dv.Value.Value() != 1.25 || dv.Status != ua.StatusBad || !dv.Has(ua.DataValueStatusCode) ||
		!dv.SourceTimestamp.Equal(now) || !dv.ServerTimestamp.Equal(now) {
		t.Errorf("stored %+v; want 1.25, Bad, both timestamps %v (zero source time = server time)", dv, now)
	}
	type notBuiltin struct{ X int }
	if err := v.Set(notBuiltin{1}, ua.StatusOK, time.Time{}); err == nil {
		t.Error("Set of a non-builtin type succeeded")
	}
	if got := v.Value().Value.Value(); got != 1.25 {
		t.Errorf("a refused Set changed the value to %v", got)
	}
	v.SetDataValue(&ua.DataValue{Status: ua.StatusUncertain, EncodingMask: ua.DataValueStatusCode})
	if dv := v.Value(); dv.Value == nil || dv.Value.Type() != ua.TypeIDNull || dv.Status != ua.StatusUncertain {
		t.Errorf("SetDataValue without a value: %+v", dv)
	}
	if err := as.SetValue(i(id.Server), 1, ua.StatusOK, time.Time{}); !errors.Is(err, addrspace.ErrNotVariable) {
		t.Errorf("SetValue on an object: %v", err)
	}
	if err := as.SetValue(ua.NewStringNodeID(1, "x"), 1, ua.StatusOK, time.Time{}); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Errorf("SetValue on an unknown node: %v", err)
	}
}

func TestNamespaces(t *testing.T) {
	as, _ := newSpace(t)
	var published [][]string
	cancel, st := as.Watch(i(id.Server_NamespaceArray), func(dv *ua.DataValue) {
		published = append(published, dv.Value.Value().([]string))
	})
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	defer cancel()
	if got := as.AddNamespace("urn:test:devices"); got != 2 {
		t.Errorf("second namespace = %d, want 2", got)
	}
	if got := as.AddNamespace("urn:test:server"); got != 1 {
		t.Errorf("re-adding namespace 1 = %d", got)
	}
	want := []string{addrspace.StandardNamespaceURI, "urn:test:server", "urn:test:devices"}
	if got := mustRead(t, as, i(id.Server_NamespaceArray), ua.AttributeIDValue).([]string); !slices.Equal(got, want) {
		t.Errorf("NamespaceArray = %v, want %v", got, want)
	}
	if len(published) != 1 || !slices.Equal(published[0], want) {
		t.Errorf("NamespaceArray notifications %v, want one with %v", published, want)
	}
	if !slices.Equal(as.Namespaces(), want) {
		t.Errorf("Namespaces() = %v", as.Namespaces())
	}
}

// TestManyWatchersAddedAndCancelledInAnyOrder checks the O(1) watcher list
// against a brute-force set: after every batch of edits in random order, a
// Set calls exactly the live watchers, each once.
func TestManyWatchersAddedAndCancelledInAnyOrder(t *testing.T) {
	as, _ := newSpace(t)
	v, err := as.AddVariable(ua.NewStringNodeID(1, "Many"), "Many", "", i(id.ObjectsFolder), i(id.Int32), int32(0), rw)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	rnd := rand.New(rand.NewPCG(1, 2))
	calls := make([]int, n)
	cancels := make([]func(), n)
	live := map[int]bool{}
	check := func(round int32) {
		t.Helper()
		clear(calls)
		if err := v.Set(round, ua.StatusOK, time.Time{}); err != nil {
			t.Fatal(err)
		}
		for k := range n {
			if want := map[bool]int{true: 1}[live[k]]; calls[k] != want {
				t.Fatalf("round %d: watcher %d called %d times, want %d", round, k, calls[k], want)
			}
		}
		if v.Watchers() != len(live) {
			t.Fatalf("round %d: Watchers() = %d, want %d", round, v.Watchers(), len(live))
		}
	}
	for round := int32(1); round <= 20; round++ {
		for range n / 4 {
			k := rnd.IntN(n)
			if live[k] {
				cancels[k]()
				delete(live, k)
				continue
			}
			cancel, st := as.Watch(v.NodeID(), func(*ua.DataValue) { calls[k]++ })
			if st != ua.StatusOK {
				t.Fatal(st)
			}
			cancels[k], live[k] = cancel, true
		}
		check(round)
	}
	for k := range live {
		cancels[k]()
		cancels[k]() // twice is fine
	}
	clear(live)
	check(21)
}

// BenchmarkWatchCancel200k adds 200,000 watchers to one variable and
// cancels them: linear, where copying the list on every edit was
// quadratic (142 s for 200,000 monitored items on one variable).
func BenchmarkWatchCancel200k(b *testing.B) {
	as := addrspace.New(addrspace.Options{})
	as.AddNamespace("urn:otopcua:bench")
	v, err := as.AddVariable(ua.NewStringNodeID(1, "B"), "B", "", i(id.ObjectsFolder), i(id.Int32), int32(0), rw)
	if err != nil {
		b.Fatal(err)
	}
	cancels := make([]func(), 200000)
	for b.Loop() {
		for k := range cancels {
			cancels[k], _ = as.Watch(v.NodeID(), func(*ua.DataValue) {})
		}
		for _, c := range cancels {
			c()
		}
	}
}
