package client

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// ErrNoServer: no server of the set could be reached. The error wrapping it
// names every URL tried and why it failed, and wraps each server's last
// error too (errors.As finds a *uaclient.ActivationError when a server
// refused the user).
var ErrNoServer = errors.New("no server of the redundant set is reachable")

// ErrClosed: the Client was closed.
var ErrClosed = errors.New("client closed")

// Defaults of Options.
const (
	DefaultPreferHold = 5 * time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultLostAfter  = 3 * time.Second
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
	// DefaultHotQueueSize is Options.HotQueueSize's default.
	DefaultHotQueueSize = 100
	// DefaultDedupWindow is Options.DedupWindow's default.
	DefaultDedupWindow = time.Second
)

// Options configure a Client. Zero values take the defaults above.
type Options struct {
	// URLs are the endpoint URLs to start from (opc.tcp://host:port), in
	// order of preference: on equal ServiceLevel the earlier one wins.
	URLs []string
	// PreferHold is how long another server must hold a strictly higher
	// ServiceLevel than the active one before the client moves to it while
	// the active one is healthy (≥ 200).
	PreferHold time.Duration
	// Timeout bounds every request, and connecting (TCP, Hello, secure
	// channel, session).
	Timeout time.Duration
	// LostAfter: a server that sent no Publish response (data or
	// keep-alive) for this long is lost. The watch subscription keeps alive
	// every LostAfter/3.
	LostAfter time.Duration
	// MinBackoff and MaxBackoff bound the reconnect back-off per server.
	MinBackoff, MaxBackoff time.Duration
	// NoDiscovery: use only URLs; do not follow ServerArray, ServerUriArray
	// or FindServers.
	NoDiscovery bool
	// OnEvent is called for every Event, one call at a time (never
	// concurrently), before any notification from the event's new server
	// is delivered. It must return quickly: it holds back the controller or
	// the new server's Publish loop.
	OnEvent func(Event)
	// Logger gets connection and selection logs. Default: discard.
	Logger *slog.Logger
	// Clock drives the hold timer and back-off. Default: the real clock.
	Clock clockwork.Clock
	// ApplicationName names the client in its sessions.
	ApplicationName string

	// Security signs (and encrypts) every connection; see Security.
	// Default (nil): security None.
	Security *Security

	// Mode is how the client uses the set: ModeAuto (default: chosen from
	// the first active server's RedundancySupport, see ModeFor), ModeWarm,
	// ModeHotA, ModeHotB or ModeMirrored. See Mode.
	Mode Mode
	// HotQueueSize is the queue size of every monitored item in the Hot
	// and Mirrored modes, in values (Hot (a): what a backup buffers in
	// Sampling mode, reported at a failover; Mirrored: what waits in the
	// session while the client moves; DiscardOldest). Default 100.
	HotQueueSize uint32
	// DedupWindow is the Hot modes' de-duplication window (see Dedup):
	// two equal values of one node whose SourceTimestamps are at most this
	// far apart are one value, and a value older than the newest delivered
	// one by more than this is dropped. Default 1 s.
	DedupWindow time.Duration

	// PublishRequests is how many Publish requests each session keeps
	// queued at its server. Default 2; a subscriber of many fast items
	// needs more, as a server caps the notifications of one response
	// (node-opcua: 1,000) and answers only as many as it holds requests.
	PublishRequests int

	// User activates every session (on every server of the set, and again
	// after each reconnect and failover) with this user's UserName token,
	// the password encrypted with each server's own certificate and nonce.
	// A server that offers no encrypted UserName token is not used
	// (uaclient.ErrNoUserNameToken). nil: anonymous sessions.
	User *uaclient.UserName
}

// ServerRef names one server of the set.
type ServerRef struct {
	URI string `json:"uri"` // ApplicationUri ("" before first contact)
	URL string `json:"url"` // endpoint URL
}

func (r ServerRef) String() string {
	switch {
	case r.URI == "" && r.URL == "":
		return "none"
	case r.URI == "":
		return r.URL
	case r.URL == "":
		return r.URI
	}
	return fmt.Sprintf("%s (%s)", r.URI, r.URL)
}

// ServerInfo is the client's view of one server of the set.
type ServerInfo struct {
	ServerRef
	// URLs are every endpoint URL known for the server.
	URLs []string `json:"urls"`
	// Up: a session is open and its Publish responses arrive.
	Up bool `json:"up"`
	// Level is the last ServiceLevel seen; LevelKnown is false until one
	// arrived.
	Level      byte `json:"level"`
	LevelKnown bool `json:"levelKnown"`
	// Active: the client's requests and subscriptions go here.
	Active bool `json:"active"`
	// Err is the last connection error while the server is not Up.
	Err string `json:"error,omitempty"`
}

// EventKind tells events apart.
type EventKind string

const (
	// EventConnected: the first server became active.
	EventConnected EventKind = "connected"
	// EventFailover: the active server changed.
	EventFailover EventKind = "failover"
	// EventLost: the active server was lost and no other server is
	// reachable; the client keeps trying.
	EventLost EventKind = "lost"
)

// Event reports a change of the active server.
type Event struct {
	Kind EventKind `json:"type"`
	// At is when the event completed: for a failover, when the first
	// Publish response from To arrived (Resumed).
	At     time.Time `json:"time"`
	From   ServerRef `json:"from"`
	To     ServerRef `json:"to"`
	Reason string    `json:"reason"`
	// Interrupted is when the connection to From was found broken (or, for
	// a planned move, when the client decided to move).
	Interrupted time.Time `json:"interrupted"`
	// Resumed is when the first Publish response from To arrived (zero
	// when the client has no subscription: then when To's session was
	// ready).
	Resumed time.Time `json:"resumed"`
	// FailoverTime is Part 4's failover time, Resumed − Interrupted.
	FailoverTime time.Duration `json:"-"`
	// Transferred: the subscriptions were moved with
	// TransferSubscriptions instead of being re-created.
	Transferred bool `json:"transferred"`
	// Security is the policy and mode of the channel to To, as
	// "Basic256Sha256:SignAndEncrypt" or "None:None" ("" when To is none).
	Security string `json:"security,omitempty"`
	// Mode is the client's mode (never auto: the one auto chose).
	Mode Mode `json:"mode"`
	// Fallback says why a Mirrored failover fell back to the Warm path (a
	// new session, TransferSubscriptions or re-created subscriptions): the
	// next server refused to activate the session; "" when it did not.
	Fallback string `json:"fallback,omitempty"`
}

// Notification is one data change of a subscribed node.
type Notification struct {
	// At is when the Publish response carrying it arrived.
	At time.Time
	// Node is the node as subscribed.
	Node *ua.NodeID
	// Value is the value, status and timestamps the server sent; nil for
	// an event (a refused event item carries the refusal's status here).
	Value *ua.DataValue
	// Event is an event's fields, in the order of the item's select
	// clauses (Item.Events); nil for a data change.
	Event []*ua.Variant
	// Server is the server that sent it.
	Server ServerRef
}

// RedundancyInfo is what the active server says of its redundant set,
// plus the client's live view of every server.
type RedundancyInfo struct {
	Active            ServerRef    `json:"active"`
	RedundancySupport string       `json:"redundancySupport"` // None, Cold, Warm, Hot, Transparent, HotAndMirrored
	ServerArray       []string     `json:"serverArray"`
	ServerUriArray    []string     `json:"serverUriArray"`
	Servers           []ServerInfo `json:"servers"`
}
