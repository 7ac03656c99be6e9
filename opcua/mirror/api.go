package mirror

import (
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
)

// Defaults of Options (the OpcUa:Mirror config keys).
const (
	DefaultAckTimeout  = 50 * time.Millisecond
	DefaultMaxLagBytes = 16 << 20
	DefaultQueueSize   = 100
	DefaultMatchWindow = time.Second
)

// Transport carries batches of records between the members of a redundant
// set. Send hands one batch to the member named to and must not block on
// the network: a batch it cannot deliver is dropped (the member notices
// from the missing acknowledgement). Batches from one sender to one
// receiver must arrive in order. The receiving side calls Member.Receive.
type Transport interface {
	Send(to string, batch []byte) error
}

// Options configure a Member. Zero values take the defaults above.
type Options struct {
	// Self names this member as its peers name it (the cluster
	// incarnation, host:port#uid).
	Self string
	// Transport carries the batches; required.
	Transport Transport
	// Sync: a NotificationMessage leaves for the client only once every
	// ready peer acknowledged it (it holds the record, queued in order;
	// it applies it before any takeover), or AckTimeout passed
	// (OpcUa:Mirror:Sync, default true). Without it the message goes at once and a failover
	// right after it may deliver its values a second time.
	Sync bool
	// AckTimeout bounds the wait of Sync (OpcUa:Mirror:AckTimeout,
	// default 50 ms). A peer that misses it puts the session back to Warm.
	AckTimeout time.Duration
	// MaxLagBytes bounds what one peer may hold unacknowledged
	// (OpcUa:Mirror:MaxLagBytes, default 16 MiB); beyond it the largest
	// sessions are dropped to Warm, never queued.
	MaxLagBytes int
	// QueueSize is the queue of every mirrored data item on a replica
	// (OpcUa:Mirror:QueueSize, default 100 values): the values a client
	// can be owed after a failover.
	QueueSize int
	// MatchWindow: a value sampled here and one reported by the serving
	// member are the same device value when they are equal and their
	// SourceTimestamps differ by at most this (OpcUa:Mirror:MatchWindow,
	// default 1 s).
	MatchWindow time.Duration
	// Clock drives session expiry of replicas and the ack timeout.
	Clock clockwork.Clock
	// Logger; default discard.
	Logger *slog.Logger
	// ObserveLag, when set, gets the time from handing a record to the
	// Transport to the peer's acknowledgement (otopcua_mirror_lag_seconds).
	// Called from the member's goroutines; must not block.
	ObserveLag func(peer string, d time.Duration)
}

// Stats is a member's view of mirroring, for metrics and the admin page.
type Stats struct {
	// Served is the number of sessions this member serves and mirrors.
	Served int `json:"served"`
	// Peers are the members this one mirrors to, by name.
	Peers map[string]PeerStats `json:"peers"`
	// Origins are the members whose sessions this one holds, by name.
	Origins map[string]OriginStats `json:"origins"`
	// Dropped counts sessions put back to Warm, by reason.
	Dropped map[string]uint64 `json:"dropped"`
	// Takeovers counts ActivateSessions of a mirrored session here, by
	// result ("ok", "refused", "not-ready").
	Takeovers map[string]uint64 `json:"takeovers"`
	// RecordsOut, BytesOut, RecordsIn, BytesIn count the traffic.
	RecordsOut, BytesOut, RecordsIn, BytesIn uint64
}

// PeerStats is one receiving peer.
type PeerStats struct {
	// Ready: the peer acknowledged the snapshot of this member's
	// sessions; it is a hot standby for them.
	Ready bool `json:"ready"`
	// LagBytes are sent and not yet acknowledged.
	LagBytes int `json:"lagBytes"`
}

// OriginStats is one member whose sessions this one mirrors.
type OriginStats struct {
	// Ready: its snapshot arrived whole (otopcua_mirror_ready).
	Ready bool `json:"ready"`
	// Sessions held for it.
	Sessions int `json:"sessions"`
}
