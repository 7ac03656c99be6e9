package replication

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Metadata keys. The puller sends its key and a fresh nonce; the peer
// answers with proofHeader, HMAC-SHA256(key, nonce), so the puller applies
// nothing from a peer that does not hold the same key either.
const (
	keyHeader   = "x-otopcua-replication-key"
	nonceHeader = "x-otopcua-replication-nonce"
	proofHeader = "x-otopcua-replication-proof"
)

const (
	serviceName = "otopcua.localdb.v1.Sync"
	pullMethod  = "/" + serviceName + "/Pull"
	ackMethod   = "/" + serviceName + "/Ack"
)

// wireCodec carries Pull, Batch and Ack in the package's binary form; it
// is forced on both ends, so no other codec is ever used on the service.
type wireCodec struct{}

func (wireCodec) Marshal(v any) ([]byte, error)      { return Encode(v) }
func (wireCodec) Unmarshal(data []byte, v any) error { return Decode(data, v) }
func (wireCodec) Name() string                       { return "otopcua-localdb-sync" }

// syncServer is what the service calls; *Replicator implements it.
type syncServer interface {
	// authorize checks the caller's key and sets the proof header; a
	// refusal is a codes.Unauthenticated status.
	authorize(ctx context.Context) error
	pull(ctx context.Context, p *Pull) (*Batch, error)
	ack(ctx context.Context, a *Ack) (*Ack, error)
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*syncServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Pull", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			s := srv.(syncServer)
			if err := s.authorize(ctx); err != nil { // before the body is even decoded
				return nil, err
			}
			in := new(Pull)
			if err := dec(in); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			return s.pull(ctx, in)
		}},
		{MethodName: "Ack", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			s := srv.(syncServer)
			if err := s.authorize(ctx); err != nil {
				return nil, err
			}
			in := new(Ack)
			if err := dec(in); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			return s.ack(ctx, in)
		}},
	},
	Metadata: "replication/grpc.go",
}

// keysEqual compares two keys in constant time (over their SHA-256, so the
// time does not depend on the length either).
func keysEqual(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// proof is the answer to a nonce under key.
func proof(key, nonce string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// Refusal reasons (the reason label of otopcua_localdb_sync_refused_total).
const (
	// ReasonMissingKey: a peer called without a key.
	ReasonMissingKey = "missing_key"
	// ReasonWrongKey: a peer called with another key.
	ReasonWrongKey = "wrong_key"
	// ReasonPeerRefusedKey: the peer refused this node's key.
	ReasonPeerRefusedKey = "peer_refused_key"
	// ReasonBadProof: the peer answered without proving it holds the key.
	ReasonBadProof = "peer_bad_proof"
	// ReasonFutureStamp: the peer sent a stamp too far ahead of this
	// node's clock.
	ReasonFutureStamp = "future_stamp"
	// ReasonMalformed: the peer sent a malformed message or change.
	ReasonMalformed = "malformed"
)

// incomingKey reads the caller's key and nonce from ctx.
func incomingKey(ctx context.Context) (key, nonce string, ok bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	keys, nonces := md.Get(keyHeader), md.Get(nonceHeader)
	if len(keys) != 1 || keys[0] == "" {
		return "", "", false
	}
	if len(nonces) == 1 {
		nonce = nonces[0]
	}
	return keys[0], nonce, true
}

// unauthenticated is the status a refused caller gets: it names what to
// check, never the key.
func unauthenticated(reason string) error {
	return status.Error(codes.Unauthenticated, fmt.Sprintf("LocalDb replication refused (%s): both nodes need the same LocalDb:Replication:ApiKey", reason))
}
