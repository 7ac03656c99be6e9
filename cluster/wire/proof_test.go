package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
)

func wua(host string, port uint32, uid uint64) *UniqueAddress {
	return &UniqueAddress{Host: host, Port: port, Uid: uid}
}

func TestProofAcceptsTheSameSecretOnly(t *testing.T) {
	secret, other := []byte("0123456789abcdef-site-a"), []byte("0123456789abcdef-site-b")
	a, b := wua("10.0.0.1", 4053, 11), wua("10.0.0.2", 4053, 22)
	for _, msg := range []proto.Message{
		&InitJoin{From: a, To: wua("10.0.0.2", 4053, 0)},
		&InitJoinAck{From: b, To: a},
		&InitJoinNack{From: b, To: a},
		&Join{From: a, To: b, Roles: []string{"admin", "driver"}, ClusterId: "line1"},
		&Welcome{From: b, To: a, Gossip: &Gossip{}},
	} {
		name := string(msg.ProtoReflect().Descriptor().Name())
		if err := Verify(secret, msg); !errors.Is(err, ErrMissingProof) {
			t.Errorf("%s without proof: %v, want ErrMissingProof", name, err)
		}
		Prove(secret, msg)
		if err := Verify(secret, msg); err != nil {
			t.Errorf("%s with the same secret: %v", name, err)
		}
		if err := Verify(other, msg); !errors.Is(err, ErrWrongProof) {
			t.Errorf("%s with another secret: %v, want ErrWrongProof", name, err)
		}
	}
	if err := Verify(secret, &Heartbeat{From: a, To: b}); err != nil {
		t.Errorf("a heartbeat carries no proof and needs none: %v", err)
	}
}

// A proof recorded on the wire is worth nothing for another receiver, another
// incarnation of the sender, another message kind or other Join fields.
func TestProofIsBoundToTheMessage(t *testing.T) {
	secret := []byte("0123456789abcdef")
	a, b := wua("10.0.0.1", 4053, 11), wua("10.0.0.2", 4053, 22)
	join := &Join{From: a, To: b, Roles: []string{"driver"}, ClusterId: "line1"}
	Prove(secret, join)
	replays := map[string]*Join{
		"to another node":        {To: wua("10.0.0.3", 4053, 22)},
		"to another incarnation": {To: wua("10.0.0.2", 4053, 23)},
		"from another uid":       {From: wua("10.0.0.1", 4053, 12)},
		"from another port":      {From: wua("10.0.0.1", 4054, 11)},
		"other roles":            {Roles: []string{"admin", "driver"}},
		"another cluster id":     {ClusterId: "line2"},
	}
	for name, change := range replays {
		r := proto.Clone(join).(*Join)
		if change.From != nil {
			r.From = change.From
		}
		if change.To != nil {
			r.To = change.To
		}
		if change.Roles != nil {
			r.Roles = change.Roles
		}
		if change.ClusterId != "" {
			r.ClusterId = change.ClusterId
		}
		if err := Verify(secret, r); !errors.Is(err, ErrWrongProof) {
			t.Errorf("replayed %s: %v, want ErrWrongProof", name, err)
		}
	}
	ack := &InitJoinAck{From: a, To: b, Proof: join.Proof}
	if err := Verify(secret, ack); !errors.Is(err, ErrWrongProof) {
		t.Errorf("a Join's proof on an InitJoinAck: %v, want ErrWrongProof", err)
	}
}
