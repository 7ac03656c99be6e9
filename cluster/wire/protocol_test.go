package wire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/cluster/membership"
)

func TestGenerationsAccepts(t *testing.T) {
	v010 := Generations{Speaks: 1, Oldest: 1}
	for _, c := range []struct {
		name      string
		own, peer Generations
		want      bool
	}{
		{"this build and v0.1.0", Current, v010, true},
		{"a later generation that still works with 1", v010, Generations{2, 1}, true},
		{"a later generation that no longer does", v010, Generations{2, 2}, false},
		{"the same, seen from the later one", Generations{2, 2}, v010, false},
		{"two later generations with an overlap", Generations{3, 2}, Generations{2, 1}, true},
		{"two later generations without one", Generations{4, 4}, Generations{3, 2}, false},
	} {
		if got := c.own.Accepts(c.peer); got != c.want {
			t.Errorf("%s: %v accepts %v = %v, want %v", c.name, c.own, c.peer, got, c.want)
		}
	}
	if Current.Speaks != GenerationV010 || Current.Oldest != GenerationV010 {
		t.Fatalf("Current is %v: this release must keep working with v0.1.0 (docs/releases.md says so; tests/upgrade proves it)", Current)
	}
}

// Two nodes always agree on whether they work together: neither joins a
// cluster whose other members refuse it.
func TestGenerationsAcceptsIsSymmetric(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := func(label string) Generations {
			s := rapid.Uint32Range(1, 8).Draw(t, label+" speaks")
			return Generations{Speaks: s, Oldest: rapid.Uint32Range(1, s).Draw(t, label+" oldest")}
		}
		a, b := gen("a"), gen("b")
		if a.Accepts(b) != b.Accepts(a) {
			t.Fatalf("%v accepts %v: %v, but the other way round: %v", a, b, a.Accepts(b), b.Accepts(a))
		}
		if !a.Accepts(a) {
			t.Fatalf("%v refuses itself", a)
		}
	})
}

func handshakes() []proto.Message {
	a, b := wua("10.0.0.1", 4053, 11), wua("10.0.0.2", 4053, 22)
	return []proto.Message{
		&InitJoin{From: a, To: wua("10.0.0.2", 4053, 0)},
		&InitJoinAck{From: b, To: a},
		&InitJoinNack{From: b, To: a},
		&Join{From: a, To: b, Roles: []string{"admin", "driver"}, ClusterId: "line1"},
		&Welcome{From: b, To: a, Gossip: &Gossip{}},
	}
}

// A handshake message of v0.1.0 has no Protocol: generation 1. One that
// was stamped carries what was stamped across an encoding.
func TestHandshakeGenerations(t *testing.T) {
	later := Generations{Speaks: 3, Oldest: 2}
	for _, msg := range handshakes() {
		name := string(msg.ProtoReflect().Descriptor().Name())
		if g, ok := HandshakeGenerations(msg); !ok || g != (Generations{1, 1}) {
			t.Errorf("%s without Protocol: %v %v, want generation 1", name, g, ok)
		}
		Stamp(msg, later)
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		got := msg.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatal(err)
		}
		if g, ok := HandshakeGenerations(got); !ok || g != later {
			t.Errorf("%s stamped %v reads %v %v", name, later, g, ok)
		}
	}
	if _, ok := HandshakeGenerations(&Heartbeat{}); ok {
		t.Error("a heartbeat is no handshake message")
	}
	if g := RefuserGenerations(&JoinRefused{}); g != (Generations{1, 1}) {
		t.Errorf("a JoinRefused of v0.1.0 reads %v, want generation 1", g)
	}
	if g := generationsOf(&Protocol{}); g != (Generations{1, 1}) {
		t.Errorf("zero fields read %v, want generation 1", g)
	}
}

// v0.1.0 knows the fields up to these numbers; it skips the others, as
// every proto3 parser does with a field it does not know.
var v010Fields = map[string]protowire.Number{
	"InitJoin": 3, "InitJoinAck": 3, "InitJoinNack": 3, "Join": 5, "Welcome": 4, "JoinRefused": 3,
}

// What v0.1.0 reads of a stamped message is exactly the message it would
// have sent itself, and the proof over it is the one it computes: the
// stamp is invisible to it.
func TestV010ReadsStampedMessagesAsItsOwn(t *testing.T) {
	secret := []byte("0123456789abcdef")
	msgs := append(handshakes(), NewJoinRefused(uaFromWireMust(wua("10.0.0.2", 4053, 22)), uaFromWireMust(wua("10.0.0.1", 4053, 11)),
		RefusalReason_REFUSAL_REASON_WRONG_SECRET, Current))
	for _, msg := range msgs {
		name := string(msg.ProtoReflect().Descriptor().Name())
		plain := proto.Clone(msg)
		clearProtocol(plain)
		Prove(secret, plain)
		stamped := proto.Clone(plain)
		Stamp(stamped, Generations{Speaks: 2, Oldest: 1})
		if err := Verify(secret, stamped); err != nil {
			t.Errorf("%s: the stamp changes the proof: %v", name, err)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(plain)
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(stamped)
		if err != nil {
			t.Fatal(err)
		}
		if got := known(t, b, v010Fields[name]); !bytes.Equal(got, want) {
			t.Errorf("%s: v0.1.0 reads %x, its own encoding is %x", name, got, want)
		}
	}
}

func uaFromWireMust(u *UniqueAddress) membership.UniqueAddress {
	out, err := uaFromWire(u, false)
	if err != nil {
		panic(err)
	}
	return out
}

// clearProtocol removes the Protocol field of a handshake message or a
// JoinRefused.
func clearProtocol(msg proto.Message) {
	fd := msg.ProtoReflect().Descriptor().Fields().ByName("protocol")
	if fd != nil {
		msg.ProtoReflect().Clear(fd)
	}
}

// known keeps the fields of b numbered up to max, in order.
func known(t *testing.T, b []byte, max protowire.Number) []byte {
	t.Helper()
	var out []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatal(protowire.ParseError(m))
		}
		if num <= max {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out
}
