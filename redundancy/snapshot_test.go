package redundancy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/wire"
)

func member(host string, port int, uid uint64, st m.Status, up int, cid string, roles ...string) m.Member {
	mb := m.NewMember(m.UniqueAddress{Host: host, Port: port, UID: uid}, roles, cid)
	mb.Status = st
	if st != m.Joining && st != m.WeaklyUp {
		mb.UpNumber = up
	}
	return mb
}

// TestSnapshotKeysByHostAndPort pins the fix of the reference product's
// bug: it keyed entries by host alone, so two nodes on one host collapsed
// into one entry and no node ever matched its own. Here both nodes of a
// pair on one host have their own entry, found by their own NodeID.
func TestSnapshotKeysByHostAndPort(t *testing.T) {
	a := member("127.0.0.1", 4001, 1, m.Up, 1, "pair", "admin", "driver")
	b := member("127.0.0.1", 4002, 2, m.Up, 2, "pair", "admin", "driver")
	v6 := member("::1", 4003, 3, m.Up, 3, "pair", "driver")
	s, _ := BuildSnapshot([]m.Member{a, b, v6}, nil, EpochBook{}, tEpoch)
	if len(s.Entries) != 3 {
		t.Fatalf("entries %v: want one per node", keys(s.Entries))
	}
	for _, mb := range []m.Member{a, b, v6} {
		self := mb.Address.NodeID()
		e, ok := s.Entries[self]
		if !ok {
			t.Fatalf("node %s does not find its own entry among %v", self, keys(s.Entries))
		}
		if e.NodeID != self || e.UID != mb.Address.UID {
			t.Fatalf("entry for %s = %+v", self, e)
		}
	}
	if _, ok := s.Entries["127.0.0.1"]; ok {
		t.Fatal("an entry is keyed by host alone")
	}
	if _, ok := s.Entries["[::1]:4003"]; !ok {
		t.Fatalf("IPv6 NodeId is not bracketed: %v", keys(s.Entries))
	}
	if s.Entries["127.0.0.1:4001"].Role != RolePrimary || s.Entries["127.0.0.1:4002"].Role != RoleSecondary {
		t.Fatalf("roles: %+v", s.Entries)
	}
	// What goes on the wire keeps the keys, and a host-only key is refused
	// by the receiver.
	back, err := SnapshotFromWire(s.ToWire())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Entries) != 3 {
		t.Fatalf("round trip lost entries: %v", keys(back.Entries))
	}
	w := s.ToWire()
	e := w.Entries["127.0.0.1:4002"]
	delete(w.Entries, "127.0.0.1:4002")
	e.NodeId = "127.0.0.1"
	w.Entries["127.0.0.1"] = e
	if _, err := SnapshotFromWire(w); !errors.Is(err, ErrInvalidSnapshot) {
		t.Fatalf("a host-only key was accepted: %v", err)
	}
}

func keys[V any](mp map[string]V) []string {
	var out []string
	for k := range mp {
		out = append(out, k)
	}
	return out
}

func TestBuildSnapshot(t *testing.T) {
	members := []m.Member{
		member("a", 1, 1, m.Up, 1, "x", "admin", "driver"),
		member("b", 1, 2, m.Up, 2, "x", "driver"),
		member("c", 1, 3, m.Joining, 0, "x", "driver"),
		member("d", 1, 4, m.Down, 3, "x", "driver"),
		member("e", 1, 5, m.Up, 4, "x", "admin"),
		member("f", 1, 6, m.Up, 5, "y", "driver"),
		member("g", 1, 7, m.Leaving, 6, "y", "driver"),
	}
	infos := map[string]NodeInfo{
		"a:1": {NodeID: "a:1", UID: 1, ApplicationURI: "urn:a", OpcUaEndpoint: "opc.tcp://a:4840"},
		"b:1": {NodeID: "b:1", UID: 99, ApplicationURI: "urn:b-old", OpcUaEndpoint: "opc.tcp://b:4840"},
	}
	s, book := BuildSnapshot(members, infos, EpochBook{}, tEpoch)
	want := map[string]Role{"a:1": RolePrimary, "b:1": RoleSecondary, "c:1": RoleSecondary, "e:1": RoleDetached,
		"f:1": RolePrimary, "g:1": RoleSecondary}
	if len(s.Entries) != len(want) {
		t.Fatalf("entries %v, want %v (Down members have none)", keys(s.Entries), keys(want))
	}
	for id, r := range want {
		if got := s.Entries[id]; got.Role != r || got.IsDriverPrimary != (r == RolePrimary) || !got.AsOf.Equal(tEpoch) {
			t.Fatalf("entry %s = %+v, want role %v", id, got, r)
		}
	}
	if s.Entries["a:1"].OpcUaEndpoint != "opc.tcp://a:4840" || s.Entries["a:1"].ApplicationURI != "urn:a" {
		t.Fatalf("advertised endpoint not carried: %+v", s.Entries["a:1"])
	}
	if s.Entries["b:1"].OpcUaEndpoint != "" {
		t.Fatalf("another incarnation's endpoint was carried: %+v", s.Entries["b:1"])
	}
	if s.Entries["g:1"].Status != m.Leaving || s.Entries["c:1"].Status != m.Joining {
		t.Fatalf("statuses: %+v %+v", s.Entries["g:1"], s.Entries["c:1"])
	}
	if s.Epochs["x"].Primary != "a:1" || s.Epochs["y"].Primary != "f:1" || s.Epochs["x"].Epoch == 0 {
		t.Fatalf("epochs %v", s.Epochs)
	}
	// The oldest leaves: b takes over and x's epoch grows; y's stays.
	members[0].Status = m.Leaving
	s2, book2 := BuildSnapshot(members, infos, book, tEpoch.Add(time.Second))
	if s2.Epochs["x"].Primary != "b:1" || s2.Epochs["x"].Epoch <= s.Epochs["x"].Epoch {
		t.Fatalf("after the Primary left: %v (before %v)", s2.Epochs, s.Epochs)
	}
	if s2.Epochs["y"] != s.Epochs["y"] || book2["y"] != book["y"] {
		t.Fatalf("y's epoch moved: %v → %v", s.Epochs["y"], s2.Epochs["y"])
	}
}

func TestSnapshotWireRoundTrip(t *testing.T) {
	members := []m.Member{
		member("10.0.0.1", 4053, 1, m.Up, 1, "x", "admin", "driver"),
		member("10.0.0.2", 4053, 2, m.WeaklyUp, 0, "x", "driver"),
		member("10.0.0.3", 4053, 3, m.Exiting, 2, "x", "admin"),
	}
	infos := map[string]NodeInfo{"10.0.0.1:4053": {NodeID: "10.0.0.1:4053", UID: 1, ApplicationURI: "urn:1", OpcUaEndpoint: "opc.tcp://10.0.0.1:4840"}}
	s, _ := BuildSnapshot(members, infos, EpochBook{}, tEpoch)
	s.Publisher, s.Sequence = "10.0.0.1:4053", 7
	b, err := proto.Marshal(s.ToWire())
	if err != nil {
		t.Fatal(err)
	}
	var w wire.RedundancyStateChanged
	if err := proto.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	back, err := SnapshotFromWire(&w)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(s) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, s)
	}
}

func TestSnapshotFromWireRefuses(t *testing.T) {
	good := func() *wire.RedundancyStateChanged {
		s, _ := BuildSnapshot([]m.Member{member("h", 1, 1, m.Up, 1, "x", "driver"), member("h", 2, 2, m.Up, 2, "x", "driver")}, nil, EpochBook{}, tEpoch)
		return s.ToWire()
	}
	if _, err := SnapshotFromWire(good()); err != nil {
		t.Fatalf("the good message is refused: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(w *wire.RedundancyStateChanged)
	}{
		{"nil entry", func(w *wire.RedundancyStateChanged) { w.Entries["h:1"] = nil }},
		{"key differs from node_id", func(w *wire.RedundancyStateChanged) { w.Entries["h:1"].NodeId = "h:2" }},
		{"Akka URI key", func(w *wire.RedundancyStateChanged) {
			e := w.Entries["h:2"]
			delete(w.Entries, "h:2")
			e.NodeId = "akka.tcp://otopcua@h:2"
			w.Entries[e.NodeId] = e
		}},
		{"bad port", func(w *wire.RedundancyStateChanged) {
			e := w.Entries["h:2"]
			delete(w.Entries, "h:2")
			e.NodeId = "h:0"
			w.Entries[e.NodeId] = e
		}},
		{"role unspecified", func(w *wire.RedundancyStateChanged) { w.Entries["h:2"].Role = wire.Role_ROLE_UNSPECIFIED }},
		{"role out of range", func(w *wire.RedundancyStateChanged) { w.Entries["h:2"].Role = 42 }},
		{"primary flag on a Secondary", func(w *wire.RedundancyStateChanged) { w.Entries["h:2"].IsDriverPrimary = true }},
		{"Primary without the flag", func(w *wire.RedundancyStateChanged) { w.Entries["h:1"].IsDriverPrimary = false }},
		{"Down member", func(w *wire.RedundancyStateChanged) { w.Entries["h:2"].Status = "Down" }},
		{"unknown status", func(w *wire.RedundancyStateChanged) { w.Entries["h:2"].Status = "Sleeping" }},
		{"epoch keyed by another ClusterId", func(w *wire.RedundancyStateChanged) { w.Epochs["x"].ClusterId = "y" }},
		{"epoch names a Secondary", func(w *wire.RedundancyStateChanged) { w.Epochs["x"].Primary = "h:2" }},
		{"epoch names an absent node", func(w *wire.RedundancyStateChanged) { w.Epochs["x"].Primary = "z:9" }},
		{"nil epoch", func(w *wire.RedundancyStateChanged) { w.Epochs["x"] = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := good()
			tt.mutate(w)
			if _, err := SnapshotFromWire(w); !errors.Is(err, ErrInvalidSnapshot) {
				t.Fatalf("accepted: %v", err)
			}
		})
	}
	if _, err := SnapshotFromWire(nil); !errors.Is(err, ErrInvalidSnapshot) {
		t.Fatal("nil accepted")
	}
}

// FuzzSnapshotFromWire: whatever bytes arrive, decoding and validation
// never panic, and an accepted snapshot only has canonical keys.
func FuzzSnapshotFromWire(f *testing.F) {
	s, _ := BuildSnapshot([]m.Member{member("h", 1, 1, m.Up, 1, "x", "driver"), member("::1", 2, 2, m.Up, 2, "x", "admin")}, nil, EpochBook{}, tEpoch)
	b, _ := proto.Marshal(s.ToWire())
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w wire.RedundancyStateChanged
		if proto.Unmarshal(b, &w) != nil {
			return
		}
		got, err := SnapshotFromWire(&w)
		if err != nil {
			return
		}
		for k := range got.Entries {
			if checkNodeID(k) != nil {
				t.Fatalf("accepted a non-canonical key %q", k)
			}
		}
		var ns wire.NodeStatus
		if proto.Unmarshal(b, &ns) == nil {
			_, _ = NodeInfoFromWire(&ns)
		}
	})
}

// TestNodeInfoConfigDb: the Config DB health survives the round trip; an
// unknown enum value (a newer node) or an older node's unspecified one is
// unknown; an error text is kept only with unreachable, cut to
// MaxConfigDbErrorLen bytes on a character boundary and made valid UTF-8.
func TestNodeInfoConfigDb(t *testing.T) {
	base := NodeInfo{NodeID: "10.0.0.1:4053", UID: 1, ServiceLevel: 250, At: tEpoch}
	for _, tt := range []struct {
		name    string
		in      func(*wire.NodeStatus)
		state   ConfigDbState
		errText string
	}{
		{"ok", func(m *wire.NodeStatus) { m.ConfigdbState = wire.ConfigDbState_CONFIG_DB_STATE_OK }, ConfigDbOk, ""},
		{"ok drops a stray error", func(m *wire.NodeStatus) {
			m.ConfigdbState, m.ConfigdbError = wire.ConfigDbState_CONFIG_DB_STATE_OK, "left over"
		}, ConfigDbOk, ""},
		{"unreachable keeps its error", func(m *wire.NodeStatus) {
			m.ConfigdbState, m.ConfigdbError = wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE, "i/o timeout"
		}, ConfigDbUnreachable, "i/o timeout"},
		{"older node", func(m *wire.NodeStatus) { m.ConfigdbState = wire.ConfigDbState_CONFIG_DB_STATE_UNSPECIFIED }, ConfigDbUnknown, ""},
		{"garbage enum", func(m *wire.NodeStatus) { m.ConfigdbState = wire.ConfigDbState(99) }, ConfigDbUnknown, ""},
		{"long invalid error", func(m *wire.NodeStatus) {
			m.ConfigdbState = wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE
			m.ConfigdbError = "\xff" + strings.Repeat("é", 600)
		}, ConfigDbUnreachable, ("\uFFFD" + strings.Repeat("é", 600))[:MaxConfigDbErrorLen-1]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := base.ToWire()
			tt.in(m)
			got, err := NodeInfoFromWire(m)
			if err != nil {
				t.Fatal(err)
			}
			if got.ConfigDb != tt.state || got.ConfigDbError != tt.errText {
				t.Fatalf("got %v %q, want %v %q", got.ConfigDb, got.ConfigDbError, tt.state, tt.errText)
			}
			if !utf8.ValidString(got.ConfigDbError) || len(got.ConfigDbError) > MaxConfigDbErrorLen {
				t.Fatalf("error text of %d bytes, valid %v", len(got.ConfigDbError), utf8.ValidString(got.ConfigDbError))
			}
			back, err := NodeInfoFromWire(got.ToWire())
			if err != nil || back != got {
				t.Fatalf("round trip: %+v, %v; want %+v", back, err, got)
			}
		})
	}
	if s, e := ConfigDbStateOf(DbStatus{Reachable: false, Err: "refused"}, false); s != ConfigDbUnknown || e != "" {
		t.Fatalf("before the first probe: %v %q", s, e)
	}
	if s, e := ConfigDbStateOf(DbStatus{Reachable: false, Err: "refused"}, true); s != ConfigDbUnreachable || e != "refused" || s.String() != "unreachable" {
		t.Fatalf("unreachable: %v %q", s, e)
	}
}
