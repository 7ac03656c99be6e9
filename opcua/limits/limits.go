// Package limits declares the OpcUa:Limits section once: how much of the
// OPC UA server one client, and all clients together, may hold. The
// configuration reads it from OpcUa:Limits (the field names are the keys),
// the opcua server takes it as one value, and both the service layer
// (uaserver) and the subscription engine read their bounds from that same
// value; nothing copies it field by field.
//
// Every limit answers the client with the OPC UA Part 4 status named on
// its field, is counted in otopcua_opcua_limit_refusals_total{limit}, and
// the ones OPC UA defines a node for are published under
// Server.ServerCapabilities. A client's own address is the IP address its
// TCP connection comes from (the port is ignored), so clients behind one
// NAT share the per-address limits. A per-address or per-session limit
// above its server-wide one acts as the server-wide one.
//
// The package imports only the standard library.
package limits

import "time"

// Limits is the OpcUa:Limits section. A zero field takes its default
// (Defaults, WithDefaults); the configuration validates the values a file
// or the environment gives.
type Limits struct {
	// MaxConnections is the number of TCP connections (secure channels and
	// handshakes in progress) held at once; a connection beyond it is closed
	// at once after an ERR BadTcpNotEnoughResources. Default 500.
	MaxConnections int

	// MaxConnectionsPerAddress bounds the connections of one client IP
	// address (same ERR). Default 50.
	MaxConnectionsPerAddress int

	// MaxSessions is the number of sessions, activated or not, held at once;
	// CreateSession beyond it answers BadTooManySessions. Default 100.
	MaxSessions int

	// MaxSessionsPerAddress bounds the sessions created from one client IP
	// address (BadTooManySessions). Default 50.
	MaxSessionsPerAddress int

	// MaxUnactivatedSessions bounds the sessions created but not yet
	// activated, server-wide: they count against this small budget as well
	// as MaxSessions. When it is full, a new session evicts the oldest
	// unactivated session of the address holding the most of them, if
	// the newcomer's own address holds none or at least two fewer; else
	// it is refused (BadTooManySessions). A session whose password is
	// being checked is outside this budget (MaxPasswordChecksPerAddress).
	// Default 20.
	MaxUnactivatedSessions int

	// MaxUnactivatedSessionsPerAddress bounds the unactivated sessions of
	// one client IP address (BadTooManySessions). Default 5.
	MaxUnactivatedSessionsPerAddress int

	// MaxPasswordChecksPerAddress bounds the ActivateSession requests with
	// a user name and password that one client IP address has being
	// checked at once; one beyond it answers BadTooManySessions without
	// its password being looked at (and is not counted as a failed
	// sign-in). Default 2.
	MaxPasswordChecksPerAddress int

	// MaxSecureChannelOpensPerAddress is the number of secured
	// OpenSecureChannel (Issue) requests one client IP address may make
	// per second, with a burst of as many: each costs the server two RSA
	// private-key operations. One beyond it is answered ERR
	// BadTcpServerTooBusy and its connection closed before any of them.
	// Default 20.
	MaxSecureChannelOpensPerAddress int

	// MaxTokenRenewalsPerAddress is the number of secured
	// OpenSecureChannel Renew requests the channels of one client IP
	// address may make per second, with a burst of as many (a client
	// renews each channel once per 75 % of its token lifetime, at least
	// 10 s). One beyond it closes its channel with ERR
	// BadTcpServerTooBusy. Default 10.
	MaxTokenRenewalsPerAddress int

	// SecureChannelReplayWindow is how long a secured OpenSecureChannel is
	// remembered: the same request (byte for byte) or the same client nonce
	// within it is answered ERR BadNonceInvalid, the identical request
	// before any private-key operation. At most 100,000 requests are
	// remembered (about 12 MB with their nonces); beyond that the oldest is forgotten early.
	// Default 10 min.
	SecureChannelReplayWindow time.Duration

	// UnactivatedSessionTimeout is how long a session may stay unactivated
	// after CreateSession; it is then closed (the server's clock).
	// Default 10 s.
	UnactivatedSessionTimeout time.Duration

	// MinSessionTimeout is the shortest revised session timeout. Default 1 s.
	MinSessionTimeout time.Duration

	// MaxSessionTimeout is the longest revised session timeout. Default 1 h.
	MaxSessionTimeout time.Duration

	// DefaultSessionTimeout is the revised timeout of a session whose client
	// asked for 0, a negative value or NaN (kept within Min/MaxSessionTimeout).
	// Default 60 s.
	DefaultSessionTimeout time.Duration

	// HelloTimeout is how long a new TCP connection may take to send its
	// complete Hello; then it is closed. Real time (a socket deadline).
	// Default 5 s.
	HelloTimeout time.Duration

	// OpenSecureChannelTimeout is how long a connection may take from its
	// Hello to OpenSecureChannel; then it is closed. Real time. Default 5 s.
	OpenSecureChannelTimeout time.Duration

	// CreateSessionTimeout is how long a secure channel may stay open
	// without creating or activating a session on it; then it is closed (a
	// discovery client closes its channel long before). Real time.
	// Default 10 s.
	CreateSessionTimeout time.Duration

	// IdleChannelTimeout closes a secure channel that sent no request for
	// this long and has no Publish request waiting; a message that stops
	// half way is cut after the same time. Its session stays (the client
	// re-activates it on a new channel). Real time. Default 5 min.
	IdleChannelTimeout time.Duration

	// WriteTimeout bounds one response write; a client that does not read
	// its responses for this long loses its channel (its session survives
	// until the session timeout). Real time. Default 10 s.
	WriteTimeout time.Duration

	// MaxResponseSize is the largest response the server sends, whatever
	// MaxMessageSize the client announced (0 there means "no limit"); a
	// larger one is answered BadResponseTooLarge. Bytes. Default 4194304
	// (4 MiB).
	MaxResponseSize int

	// MaxSubscriptions bounds the subscriptions of the whole server,
	// orphaned ones included (BadTooManySubscriptions). Default 1000.
	MaxSubscriptions int

	// MaxSubscriptionsPerSession bounds CreateSubscription per session
	// (BadTooManySubscriptions). Default 100.
	MaxSubscriptionsPerSession int

	// MaxMonitoredItems bounds the monitored items of the whole server; an
	// item beyond it gets BadTooManyMonitoredItems. Default 250000.
	MaxMonitoredItems int

	// MaxMonitoredItemsPerSubscription bounds the items of one subscription
	// (BadTooManyMonitoredItems per item). Default 100000.
	MaxMonitoredItemsPerSubscription int

	// MaxMonitoredItemsPerCall bounds the items of one CreateMonitoredItems,
	// ModifyMonitoredItems, SetMonitoringMode, SetTriggering or
	// DeleteMonitoredItems request (BadTooManyOperations; OperationLimits
	// MaxMonitoredItemsPerCall). Default 10000.
	MaxMonitoredItemsPerCall int

	// MaxNodesPerRead bounds NodesToRead of one Read (BadTooManyOperations).
	// Default 10000.
	MaxNodesPerRead int

	// MaxNodesPerWrite bounds NodesToWrite of one Write. Default 10000.
	MaxNodesPerWrite int

	// MaxNodesPerBrowse bounds NodesToBrowse of one Browse and the
	// continuation points of one BrowseNext. Default 10000.
	MaxNodesPerBrowse int
}

// Defaults returns the OpcUa:Limits defaults, the values named on the
// fields of Limits.
func Defaults() Limits {
	return Limits{
		MaxConnections:                   500,
		MaxConnectionsPerAddress:         50,
		MaxSessions:                      100,
		MaxSessionsPerAddress:            50,
		MaxUnactivatedSessions:           20,
		MaxUnactivatedSessionsPerAddress: 5,
		MaxPasswordChecksPerAddress:      2,
		MaxSecureChannelOpensPerAddress:  20,
		MaxTokenRenewalsPerAddress:       10,
		SecureChannelReplayWindow:        10 * time.Minute,
		UnactivatedSessionTimeout:        10 * time.Second,
		MinSessionTimeout:                time.Second,
		MaxSessionTimeout:                time.Hour,
		DefaultSessionTimeout:            time.Minute,
		HelloTimeout:                     5 * time.Second,
		OpenSecureChannelTimeout:         5 * time.Second,
		CreateSessionTimeout:             10 * time.Second,
		IdleChannelTimeout:               5 * time.Minute,
		WriteTimeout:                     10 * time.Second,
		MaxResponseSize:                  4 << 20,
		MaxSubscriptions:                 1000,
		MaxSubscriptionsPerSession:       100,
		MaxMonitoredItems:                250000,
		MaxMonitoredItemsPerSubscription: 100000,
		MaxMonitoredItemsPerCall:         10000,
		MaxNodesPerRead:                  10000,
		MaxNodesPerWrite:                 10000,
		MaxNodesPerBrowse:                10000,
	}
}

// WithDefaults returns l with every zero or negative field set to its
// default; it leaves the others as they are (the bounds between fields,
// such as a per-address limit above its server-wide one, are the
// server's to apply).
func (l Limits) WithDefaults() Limits {
	d := Defaults()
	defInt(&l.MaxConnections, d.MaxConnections)
	defInt(&l.MaxConnectionsPerAddress, d.MaxConnectionsPerAddress)
	defInt(&l.MaxSessions, d.MaxSessions)
	defInt(&l.MaxSessionsPerAddress, d.MaxSessionsPerAddress)
	defInt(&l.MaxUnactivatedSessions, d.MaxUnactivatedSessions)
	defInt(&l.MaxUnactivatedSessionsPerAddress, d.MaxUnactivatedSessionsPerAddress)
	defInt(&l.MaxPasswordChecksPerAddress, d.MaxPasswordChecksPerAddress)
	defInt(&l.MaxSecureChannelOpensPerAddress, d.MaxSecureChannelOpensPerAddress)
	defInt(&l.MaxTokenRenewalsPerAddress, d.MaxTokenRenewalsPerAddress)
	defDur(&l.SecureChannelReplayWindow, d.SecureChannelReplayWindow)
	defDur(&l.UnactivatedSessionTimeout, d.UnactivatedSessionTimeout)
	defDur(&l.MinSessionTimeout, d.MinSessionTimeout)
	defDur(&l.MaxSessionTimeout, d.MaxSessionTimeout)
	defDur(&l.DefaultSessionTimeout, d.DefaultSessionTimeout)
	defDur(&l.HelloTimeout, d.HelloTimeout)
	defDur(&l.OpenSecureChannelTimeout, d.OpenSecureChannelTimeout)
	defDur(&l.CreateSessionTimeout, d.CreateSessionTimeout)
	defDur(&l.IdleChannelTimeout, d.IdleChannelTimeout)
	defDur(&l.WriteTimeout, d.WriteTimeout)
	defInt(&l.MaxResponseSize, d.MaxResponseSize)
	defInt(&l.MaxSubscriptions, d.MaxSubscriptions)
	defInt(&l.MaxSubscriptionsPerSession, d.MaxSubscriptionsPerSession)
	defInt(&l.MaxMonitoredItems, d.MaxMonitoredItems)
	defInt(&l.MaxMonitoredItemsPerSubscription, d.MaxMonitoredItemsPerSubscription)
	defInt(&l.MaxMonitoredItemsPerCall, d.MaxMonitoredItemsPerCall)
	defInt(&l.MaxNodesPerRead, d.MaxNodesPerRead)
	defInt(&l.MaxNodesPerWrite, d.MaxNodesPerWrite)
	defInt(&l.MaxNodesPerBrowse, d.MaxNodesPerBrowse)
	return l
}

func defInt(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

func defDur(v *time.Duration, def time.Duration) {
	if *v <= 0 {
		*v = def
	}
}
