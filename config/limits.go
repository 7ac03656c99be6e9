package config

import (
	"fmt"
	"strconv"
	"time"
)

// LimitsConfig is the "OpcUa:Limits" section: how much of the server one
// client, and all clients together, may hold. Every limit answers the
// client with the OPC UA Part 4 status named on its field, is counted in
// otopcua_opcua_limit_refusals_total{limit}, and the ones OPC UA defines a
// node for are published under Server.ServerCapabilities. A client's own
// address is the IP address its TCP connection comes from (the port is
// ignored), so clients behind one NAT share the per-address limits. A
// per-address or per-session limit above its server-wide one acts as the
// server-wide one.
type LimitsConfig struct {
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
	// as MaxSessions (BadTooManySessions). Default 20.
	MaxUnactivatedSessions int

	// MaxUnactivatedSessionsPerAddress bounds the unactivated sessions of
	// one client IP address (BadTooManySessions). Default 5.
	MaxUnactivatedSessionsPerAddress int

	// UnactivatedSessionTimeout is how long a session may stay unactivated
	// after CreateSession; it is then closed. Default 10 s.
	UnactivatedSessionTimeout time.Duration

	// MinSessionTimeout is the shortest revised session timeout. Default 1 s.
	MinSessionTimeout time.Duration

	// MaxSessionTimeout is the longest revised session timeout. Default 1 h.
	MaxSessionTimeout time.Duration

	// DefaultSessionTimeout is the revised timeout of a session whose client
	// asked for 0, a negative value or NaN. Default 60 s.
	DefaultSessionTimeout time.Duration

	// HelloTimeout is how long a new TCP connection may take to send its
	// Hello; then it is closed. Default 5 s.
	HelloTimeout time.Duration

	// OpenSecureChannelTimeout is how long a connection may take from its
	// Hello to OpenSecureChannel; then it is closed. Default 5 s.
	OpenSecureChannelTimeout time.Duration

	// CreateSessionTimeout is how long a secure channel may stay open
	// without creating or activating a session on it; then it is closed (a
	// discovery client closes its channel long before). Default 10 s.
	CreateSessionTimeout time.Duration

	// IdleChannelTimeout closes a secure channel that sent no request for
	// this long and has no Publish request waiting. Its session stays (the
	// client re-activates it on a new channel). Default 5 min.
	IdleChannelTimeout time.Duration

	// WriteTimeout bounds one response write; a client that does not read
	// its responses for this long loses its channel. Default 10 s.
	WriteTimeout time.Duration

	// MaxResponseSize is the largest response the server sends, whatever
	// MaxMessageSize the client announced (0 there means "no limit"); a
	// larger one is answered BadResponseTooLarge. Bytes. Default 4194304
	// (4 MiB).
	MaxResponseSize int

	// MaxSubscriptions bounds the subscriptions of the whole server
	// (BadTooManySubscriptions). Default 1000.
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

// defaultLimits are the OpcUa:Limits defaults.
func defaultLimits() LimitsConfig {
	return LimitsConfig{
		MaxConnections:                   500,
		MaxConnectionsPerAddress:         50,
		MaxSessions:                      100,
		MaxSessionsPerAddress:            50,
		MaxUnactivatedSessions:           20,
		MaxUnactivatedSessionsPerAddress: 5,
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

// minResponseSize is the smallest OpcUa:Limits:MaxResponseSize accepted:
// below it ordinary responses (GetEndpoints, a Publish of a few hundred
// values) would not fit.
const minResponseSize = 65536

func (c *Config) validateLimits(p *problems) {
	l := &c.OpcUa.Limits
	atLeast := func(name string, v, lo int) {
		if v < lo {
			p.add("OpcUa:Limits:"+name, strconv.Itoa(v), fmt.Sprintf("accepted values are whole numbers ≥ %d", lo))
		}
	}
	atLeast("MaxConnections", l.MaxConnections, 1)
	atLeast("MaxConnectionsPerAddress", l.MaxConnectionsPerAddress, 1)
	atLeast("MaxSessions", l.MaxSessions, 1)
	atLeast("MaxSessionsPerAddress", l.MaxSessionsPerAddress, 1)
	atLeast("MaxUnactivatedSessions", l.MaxUnactivatedSessions, 1)
	atLeast("MaxUnactivatedSessionsPerAddress", l.MaxUnactivatedSessionsPerAddress, 1)
	atLeast("MaxResponseSize", l.MaxResponseSize, minResponseSize)
	atLeast("MaxSubscriptions", l.MaxSubscriptions, 1)
	atLeast("MaxSubscriptionsPerSession", l.MaxSubscriptionsPerSession, 1)
	atLeast("MaxMonitoredItems", l.MaxMonitoredItems, 1)
	atLeast("MaxMonitoredItemsPerSubscription", l.MaxMonitoredItemsPerSubscription, 1)
	atLeast("MaxMonitoredItemsPerCall", l.MaxMonitoredItemsPerCall, 1)
	atLeast("MaxNodesPerRead", l.MaxNodesPerRead, 1)
	atLeast("MaxNodesPerWrite", l.MaxNodesPerWrite, 1)
	atLeast("MaxNodesPerBrowse", l.MaxNodesPerBrowse, 1)

	positive := func(name string, d time.Duration) { checkPositive(p, "OpcUa:Limits:"+name, d) }
	positive("UnactivatedSessionTimeout", l.UnactivatedSessionTimeout)
	positive("MinSessionTimeout", l.MinSessionTimeout)
	positive("MaxSessionTimeout", l.MaxSessionTimeout)
	positive("DefaultSessionTimeout", l.DefaultSessionTimeout)
	positive("HelloTimeout", l.HelloTimeout)
	positive("OpenSecureChannelTimeout", l.OpenSecureChannelTimeout)
	positive("CreateSessionTimeout", l.CreateSessionTimeout)
	positive("IdleChannelTimeout", l.IdleChannelTimeout)
	positive("WriteTimeout", l.WriteTimeout)
	if l.MinSessionTimeout > 0 && l.MaxSessionTimeout > 0 && l.MinSessionTimeout > l.MaxSessionTimeout {
		p.add("OpcUa:Limits:MinSessionTimeout", l.MinSessionTimeout.String(),
			"accepted values are durations ≤ OpcUa:Limits:MaxSessionTimeout ("+l.MaxSessionTimeout.String()+")")
	}
	if d := l.DefaultSessionTimeout; d > 0 && (d < l.MinSessionTimeout || d > l.MaxSessionTimeout) {
		p.add("OpcUa:Limits:DefaultSessionTimeout", d.String(),
			"accepted values are durations between OpcUa:Limits:MinSessionTimeout ("+l.MinSessionTimeout.String()+
				") and OpcUa:Limits:MaxSessionTimeout ("+l.MaxSessionTimeout.String()+")")
	}
}
