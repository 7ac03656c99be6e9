package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"google.golang.org/protobuf/proto"
)

// Errors of Verify.
var (
	// ErrMissingProof: the receiver has a Cluster:Secret and the join
	// handshake message carried no proof.
	ErrMissingProof = errors.New("no Cluster:Secret proof")
	// ErrWrongProof: the proof does not match the receiver's secret.
	ErrWrongProof = errors.New("wrong Cluster:Secret")
)

// proofDomain separates these MACs from any other use of the secret.
const proofDomain = "otopcua cluster join proof v1"

// IsHandshake reports whether msg is a join handshake message, the only
// ones that carry a proof: InitJoin, InitJoinAck, InitJoinNack, Join and
// Welcome.
func IsHandshake(msg proto.Message) bool {
	switch msg.(type) {
	case *InitJoin, *InitJoinAck, *InitJoinNack, *Join, *Welcome:
		return true
	}
	return false
}

// Prove sets the proof of a join handshake message: HMAC-SHA256 under
// secret over the message kind, from (host, port, uid), to (host, port,
// uid) and, for Join, the roles and cluster id. from.uid is drawn fresh at
// every process start and to names the receiver, so a recorded proof is
// worth nothing for another node or another incarnation. Other messages
// are left alone.
func Prove(secret []byte, msg proto.Message) {
	if !IsHandshake(msg) {
		return // every outgoing message passes here: no MAC for a heartbeat
	}
	mac := proofOf(secret, msg)
	switch x := msg.(type) {
	case *InitJoin:
		x.Proof = mac
	case *InitJoinAck:
		x.Proof = mac
	case *InitJoinNack:
		x.Proof = mac
	case *Join:
		x.Proof = mac
	case *Welcome:
		x.Proof = mac
	}
}

// Verify checks the proof of a join handshake message in constant time:
// nil when it matches secret, ErrMissingProof when there is none,
// ErrWrongProof otherwise. Other messages return nil.
func Verify(secret []byte, msg proto.Message) error {
	var got []byte
	switch x := msg.(type) {
	case *InitJoin:
		got = x.GetProof()
	case *InitJoinAck:
		got = x.GetProof()
	case *InitJoinNack:
		got = x.GetProof()
	case *Join:
		got = x.GetProof()
	case *Welcome:
		got = x.GetProof()
	default:
		return nil
	}
	if len(got) == 0 {
		return ErrMissingProof
	}
	if !hmac.Equal(got, proofOf(secret, msg)) {
		return ErrWrongProof
	}
	return nil
}

type routed interface {
	GetFrom() *UniqueAddress
	GetTo() *UniqueAddress
}

// proofOf is the MAC of msg; every field is length-prefixed, so no two
// messages share an input.
func proofOf(secret []byte, msg proto.Message) []byte {
	h := hmac.New(sha256.New, secret)
	var buf []byte
	field := func(b []byte) {
		buf = binary.AppendUvarint(buf, uint64(len(b)))
		buf = append(buf, b...)
	}
	addr := func(u *UniqueAddress) {
		field([]byte(u.GetHost()))
		buf = binary.AppendUvarint(buf, uint64(u.GetPort()))
		buf = binary.AppendUvarint(buf, u.GetUid())
	}
	field([]byte(proofDomain))
	field([]byte(msg.ProtoReflect().Descriptor().Name()))
	if r, ok := msg.(routed); ok {
		addr(r.GetFrom())
		addr(r.GetTo())
	}
	if j, ok := msg.(*Join); ok {
		buf = binary.AppendUvarint(buf, uint64(len(j.GetRoles())))
		for _, r := range j.GetRoles() {
			field([]byte(r))
		}
		field([]byte(j.GetClusterId()))
	}
	h.Write(buf)
	return h.Sum(nil)
}
