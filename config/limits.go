package config

import (
	"fmt"
	"strconv"
	"time"
)

// The OpcUa:Limits section is limits.Limits (opcua/limits): declared and
// defaulted there once; this file validates what a file or the environment
// gives.

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
	atLeast("MaxPasswordChecksPerAddress", l.MaxPasswordChecksPerAddress, 1)
	atLeast("MaxSecureChannelOpensPerAddress", l.MaxSecureChannelOpensPerAddress, 1)
	atLeast("MaxTokenRenewalsPerAddress", l.MaxTokenRenewalsPerAddress, 1)
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
	positive("SecureChannelReplayWindow", l.SecureChannelReplayWindow)
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
