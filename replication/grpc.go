package replication

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/otopcua/otopcua/localdb/hlc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
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
	serviceName   = "otopcua.localdb.v1.Sync"
	pullMethod    = "/" + serviceName + "/Pull"
	ackMethod     = "/" + serviceName + "/Ack"
	historyMethod = "/" + serviceName + "/History"
)

// wireCodec carries Pull, Batch and Ack in the package's binary form; it
// is forced on both ends, so no other codec is ever used on the service.
type wireCodec struct{}

func (wireCodec) Marshal(v any) ([]byte, error)      { return Encode(v) }
func (wireCodec) Unmarshal(data []byte, v any) error { return Decode(data, v) }
func (wireCodec) Name() string                       { return "otopcua-localdb-sync" }

// syncServer is what the service calls; *Replicator implements it. The
// key is checked before either method runs, before the request is read
// (see serverOptions).
type syncServer interface {
	pull(ctx context.Context, p *Pull) (*Batch, error)
	ack(ctx context.Context, a *Ack) (*Ack, error)
	history(ctx context.Context, p *HistoryPull) (*HistoryBatch, error)
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*syncServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Pull", Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			p := new(Pull)
			if err := dec(p); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			return intercept(ctx, p, in, pullMethod, func(ctx context.Context, req any) (any, error) {
				return srv.(syncServer).pull(ctx, req.(*Pull))
			})
		}},
		{MethodName: "Ack", Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			a := new(Ack)
			if err := dec(a); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			return intercept(ctx, a, in, ackMethod, func(ctx context.Context, req any) (any, error) {
				return srv.(syncServer).ack(ctx, req.(*Ack))
			})
		}},
		{MethodName: "History", Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			p := new(HistoryPull)
			if err := dec(p); err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			return intercept(ctx, p, in, historyMethod, func(ctx context.Context, req any) (any, error) {
				return srv.(syncServer).history(ctx, req.(*HistoryPull))
			})
		}},
	},
	Metadata: "replication/grpc.go",
}

// intercept runs handler through the server's unary interceptor, if any.
func intercept(ctx context.Context, req any, in grpc.UnaryServerInterceptor, method string, handler grpc.UnaryHandler) (any, error) {
	if in == nil {
		return handler(ctx, req)
	}
	return in(ctx, req, &grpc.UnaryServerInfo{FullMethod: method}, handler)
}

// maxRequestBytes is the largest message the server ever receives. The
// server receives only Pull and Ack (it sends the Batches); the larger is
// a Pull with a node id of hlc.MaxNodeLen characters, a table name of
// maxName (no replicated table is that long) and a cursor stamped by a
// node id of hlc.MaxNodeLen:
//
//	version, type                       2
//	node: uvarint length + bytes        1 + 64
//	table: uvarint length + bytes       1 + 64
//	stamp: wall, counter, length, node  8 + 4 + 1 + 64
//	limit                               4
//	                                  = 213 bytes
//
// gRPC refuses a longer announced message (codes.ResourceExhausted) from
// its 5-byte length prefix, before allocating for it: today 4 MiB was
// accepted, the size of the largest Batch, which only the puller receives.
const maxRequestBytes = 2 + (1 + hlc.MaxNodeLen) + (1 + maxName) + (8 + 4 + 1 + hlc.MaxNodeLen) + 4

// maxHeaderBytes bounds a request's header list (the key, the nonce and
// gRPC's own headers take a few hundred bytes); gRPC's default is 16 MiB.
const maxHeaderBytes = 8 << 10

// serverLimits bound what one client connection can make the server hold.
// The puller (Replicator.call) runs one Pull, then one Ack, on one
// connection per peer, every Interval (at most MaxBackoff apart), and
// sends no keepalive pings.
type serverLimits struct {
	// streams is the most concurrent streams per connection (HTTP/2
	// SETTINGS_MAX_CONCURRENT_STREAMS); a stream over it is reset with
	// REFUSED_STREAM. The puller uses one at a time.
	streams uint32
	// minPing is the shortest pause between a client's keepalive pings
	// while it has a stream; a client pinging more often, or pinging at
	// all without a stream (within gRPC's 20 s), gets GOAWAY
	// ENHANCE_YOUR_CALM at the third strike and is disconnected.
	minPing time.Duration
	// probe is how long a connection may stay silent before the server
	// pings it; a client that does not answer within probeTimeout (a
	// vanished peer holding a half-open connection) is disconnected.
	probe, probeTimeout time.Duration
	// idle closes a connection without a stream for that long (GOAWAY).
	// A puller is never idle longer than MaxBackoff.
	idle time.Duration
	// age closes any connection that old, after grace for its running
	// calls; the puller redials on its next round.
	age, grace time.Duration
	// handshake bounds the TLS handshake and HTTP/2 preface of a new
	// connection.
	handshake time.Duration
}

// defaultServerLimits are the served port's limits (docs/localdb-replication.md).
var defaultServerLimits = serverLimits{streams: 4, minPing: 5 * time.Minute, probe: time.Minute,
	probeTimeout: 20 * time.Second, idle: 2 * time.Minute,
	age: 30 * time.Minute, grace: 2 * callTimeout, handshake: 10 * time.Second}

// serverOptions are the served port's gRPC options: the codec, the limits
// above, the flow-control windows fixed at gRPC's minimum (64 KiB: the
// requests are a few hundred bytes, and a fixed window is not grown by
// bandwidth probes), the key check at the stream's HEADERS and the proof.
func (r *Replicator) serverOptions() []grpc.ServerOption {
	l := r.limits
	o := []grpc.ServerOption{
		grpc.ForceServerCodec(wireCodec{}),
		grpc.MaxRecvMsgSize(maxRequestBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes + 1024),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.MaxConcurrentStreams(l.streams),
		grpc.InitialWindowSize(64 << 10),
		grpc.InitialConnWindowSize(64 << 10),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.minPing, PermitWithoutStream: false}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.idle, MaxConnectionAge: l.age,
			MaxConnectionAgeGrace: l.grace, Time: l.probe, Timeout: l.probeTimeout}),
		grpc.ConnectionTimeout(l.handshake),
		grpc.InTapHandle(r.admit),
		grpc.UnaryInterceptor(r.prove),
	}
	if r.opts.ServerCredentials != nil {
		o = append(o, grpc.Creds(r.opts.ServerCredentials))
	}
	return o
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
