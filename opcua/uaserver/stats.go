package uaserver

import (
	"sync/atomic"
)

// Limit names: the label values of otopcua_opcua_limit_refusals_total{limit}
// for the limits this layer enforces. Each counts the clients refused or
// channels closed because of that limit.
const (
	LimitConnections                   = "connections"
	LimitConnectionsPerAddress         = "connections_per_address"
	LimitSessions                      = "sessions"
	LimitSessionsPerAddress            = "sessions_per_address"
	LimitUnactivatedSessions           = "unactivated_sessions"
	LimitUnactivatedSessionsPerAddress = "unactivated_sessions_per_address"
	LimitUnactivatedSessionTimeout     = "unactivated_session_timeout"
	LimitHelloTimeout                  = "hello_timeout"
	LimitOpenSecureChannelTimeout      = "open_secure_channel_timeout"
	LimitCreateSessionTimeout          = "create_session_timeout"
	LimitIdleChannelTimeout            = "idle_channel_timeout"
	LimitWriteTimeout                  = "write_timeout"
	LimitResponseSize                  = "response_size"
	LimitOperationsPerCall             = "operations_per_call"
	LimitActivationFailures            = "activation_failures_per_address"

	// LimitUnactivatedSessionEvictions counts the unactivated sessions
	// closed to make room for a session of another address
	// (MaxUnactivatedSessions full; see evictionVictim).
	LimitUnactivatedSessionEvictions = "unactivated_session_evictions"
	// LimitPasswordChecksPerAddress counts the ActivateSession requests
	// refused because their address had MaxPasswordChecksPerAddress
	// password checks running.
	LimitPasswordChecksPerAddress = "password_checks_per_address"
	// LimitSecureChannelOpensPerAddress counts the secured
	// OpenSecureChannel Issue requests refused because their address
	// made MaxSecureChannelOpensPerAddress a second.
	LimitSecureChannelOpensPerAddress = "secure_channel_opens_per_address"
	// LimitTokenRenewalsPerAddress counts the channels closed because
	// their address renewed more than MaxTokenRenewalsPerAddress tokens a
	// second.
	LimitTokenRenewalsPerAddress = "token_renewals_per_address"
	// LimitReplayedOpenSecureChannel counts the secured
	// OpenSecureChannel requests refused because the same request or
	// client nonce was seen within SecureChannelReplayWindow.
	LimitReplayedOpenSecureChannel = "replayed_open_secure_channel"
)

// Limits lists every limit name of this layer, for metrics that want each
// series to exist from the start.
var Limits = []string{
	LimitConnections, LimitConnectionsPerAddress,
	LimitSessions, LimitSessionsPerAddress, LimitUnactivatedSessions, LimitUnactivatedSessionsPerAddress,
	LimitUnactivatedSessionTimeout, LimitUnactivatedSessionEvictions, LimitPasswordChecksPerAddress,
	LimitHelloTimeout, LimitOpenSecureChannelTimeout, LimitCreateSessionTimeout, LimitIdleChannelTimeout,
	LimitWriteTimeout, LimitResponseSize, LimitOperationsPerCall, LimitActivationFailures,
	LimitSecureChannelOpensPerAddress, LimitTokenRenewalsPerAddress, LimitReplayedOpenSecureChannel,
}

// Stats is a snapshot of the service layer's load and counters.
type Stats struct {
	// Connections are the TCP connections held: handshakes in progress and
	// open secure channels.
	Connections int
	// Channels are the open secure channels (Hello answered).
	Channels int
	// SessionsActivated and SessionsUnactivated are the sessions held.
	SessionsActivated   int
	SessionsUnactivated int
	// CumulatedSessions counts every session created since start.
	CumulatedSessions uint64
	// RejectedSessions counts CreateSession and ActivateSession requests
	// refused (a limit, an invalid identity).
	RejectedSessions uint64
	// SessionTimeouts counts sessions ended because their timeout ran out,
	// unactivated ones included.
	SessionTimeouts uint64
	// RejectedRequests counts requests answered with a ServiceFault.
	RejectedRequests uint64
	// TokenRenewals counts OpenSecureChannel Renew requests answered.
	TokenRenewals uint64
	// SecurityRefusals counts channels closed by a security check: a
	// refused policy, mode or certificate, a bad signature or padding, a
	// sequence number out of order, an unknown or expired token.
	SecurityRefusals uint64
	// Refusals counts, by limit name (Limit…), the clients refused and the
	// channels closed because of that limit.
	Refusals map[string]uint64
}

// counters are the service layer's cumulative counts.
type counters struct {
	cumulatedSessions atomic.Uint64
	rejectedSessions  atomic.Uint64
	sessionTimeouts   atomic.Uint64
	rejectedRequests  atomic.Uint64
	tokensRenewed     atomic.Uint64
	securityRefusals  atomic.Uint64
	refusals          map[string]*atomic.Uint64 // keys: Limits; filled by newCounters, read-only after
}

func newCounters() *counters {
	c := &counters{refusals: make(map[string]*atomic.Uint64, len(Limits))}
	for _, l := range Limits {
		c.refusals[l] = new(atomic.Uint64)
	}
	return c
}

// refuse counts one refusal by limit. An unknown name is a programming
// error.
func (c *counters) refuse(limit string) {
	n, ok := c.refusals[limit]
	if !ok {
		panic("uaserver: refusal of an unlisted limit " + limit)
	}
	n.Add(1)
}

// Stats returns the current load and counters. Safe for concurrent use.
func (s *Server) Stats() Stats {
	st := Stats{
		CumulatedSessions: s.counters.cumulatedSessions.Load(),
		RejectedSessions:  s.counters.rejectedSessions.Load(),
		SessionTimeouts:   s.counters.sessionTimeouts.Load(),
		RejectedRequests:  s.counters.rejectedRequests.Load(),
		TokenRenewals:     s.counters.tokensRenewed.Load(),
		SecurityRefusals:  s.counters.securityRefusals.Load(),
		Refusals:          make(map[string]uint64, len(Limits)),
	}
	for l, n := range s.counters.refusals {
		st.Refusals[l] = n.Load()
	}
	s.mu.Lock()
	st.Channels = len(s.channels)
	st.Connections = s.conns.total
	s.mu.Unlock()
	st.SessionsActivated, st.SessionsUnactivated = s.sessions.counts()
	return st
}
