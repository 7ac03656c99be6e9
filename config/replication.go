package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// MinReplicationKeyLen is the shortest LocalDb:Replication:ApiKey accepted.
const MinReplicationKeyLen = 16

// PeerFormat describes an accepted LocalDb:Peers entry.
const PeerFormat = "host:port addresses such as node-b:4850 (the peer's LocalDb:SyncListenPort)"

// Replication is what LocalDbReplication decides from the LocalDb section.
type Replication struct {
	// On is true when a port, at least one peer and a key are all set.
	On bool
	// Listen is the address to serve on when On: Cluster:Hostname and
	// LocalDb:SyncListenPort (the cluster transport's interface).
	Listen string
	// Peers are the peers' addresses when On.
	Peers []string
	// APIKey is the shared secret when On.
	APIKey string
	// Missing names the keys that are not set, in key order; empty when On
	// or when none of the three is set (replication simply not wanted).
	Missing []string
}

// Reason is one line saying whether replication is on and why not.
func (r Replication) Reason() string {
	switch {
	case r.On:
		return fmt.Sprintf("LocalDb replication on: listening on %s, %d peer(s)", r.Listen, len(r.Peers))
	case len(r.Missing) == 0:
		return "LocalDb replication off (LocalDb:SyncListenPort, LocalDb:Peers and LocalDb:Replication:ApiKey are not set)"
	}
	return "LocalDb replication off: " + strings.Join(r.Missing, ", ") + " not set; it needs LocalDb:SyncListenPort, LocalDb:Peers and LocalDb:Replication:ApiKey"
}

// LocalDbReplication reports whether pair replication of the LocalDb is on,
// and when only some of its keys are set, which are missing. It expects a
// validated configuration.
func (c *Config) LocalDbReplication() Replication {
	l := &c.LocalDb
	var missing []string
	if l.SyncListenPort == 0 {
		missing = append(missing, "LocalDb:SyncListenPort")
	}
	if len(l.Peers) == 0 {
		missing = append(missing, "LocalDb:Peers")
	}
	if l.Replication.ApiKey == "" {
		missing = append(missing, "LocalDb:Replication:ApiKey")
	}
	switch len(missing) {
	case 0:
		return Replication{On: true, Listen: net.JoinHostPort(c.Cluster.Hostname, strconv.Itoa(l.SyncListenPort)),
			Peers: append([]string(nil), l.Peers...), APIKey: l.Replication.ApiKey}
	case 3:
		return Replication{}
	}
	return Replication{Missing: missing}
}

// validateReplication checks the replication keys that are set; leaving
// some unset is valid (replication stays off, LocalDbReplication says why).
func (c *Config) validateReplication(p *problems) {
	l := &c.LocalDb
	if l.SyncListenPort < 0 || l.SyncListenPort > 65535 {
		p.add("LocalDb:SyncListenPort", strconv.Itoa(l.SyncListenPort), "accepted values are 0 (replication off) or 1..65535")
	}
	seen := map[string]int{}
	for i, peer := range l.Peers {
		key := fmt.Sprintf("LocalDb:Peers:%d", i)
		if err := checkPeer(peer); err != nil {
			p.add(key, peer, "accepted values are "+PeerFormat)
			continue
		}
		if first, dup := seen[peer]; dup {
			p.add(key, peer, fmt.Sprintf("accepted values are addresses listed once; this one is already LocalDb:Peers:%d", first))
			continue
		}
		seen[peer] = i
	}
	if k := l.Replication.ApiKey; k != "" && len(k) < MinReplicationKeyLen {
		// The value is a secret: the message says how long it is, not what.
		p.add("LocalDb:Replication:ApiKey", fmt.Sprintf("(hidden, %d characters)", len(k)),
			fmt.Sprintf("accepted values are empty (replication off) or secrets of at least %d characters", MinReplicationKeyLen))
	}
}

// checkPeer accepts host:port with a host name or IP address and a port
// 1..65535.
func checkPeer(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if err := checkHost(host); err != nil {
		return err
	}
	_, err = parsePort(port)
	return err
}

// replicationClearText is the warning for LocalDb replication on, without
// Cluster:Tls, on a non-loopback address (this node's Cluster:Hostname or
// a peer's): LocalDb:Replication:ApiKey then crosses the network in clear
// text with every request, so whoever sees one request holds the key. ""
// when replication is off, Cluster:Tls is set or every address is loopback.
func (c *Config) replicationClearText() string {
	r := c.LocalDbReplication()
	if !r.On || c.Cluster.Tls.Enabled() {
		return ""
	}
	exposed := ""
	switch {
	case !c.Cluster.Loopback():
		exposed = fmt.Sprintf("listens on %s (Cluster:Hostname, LocalDb:SyncListenPort)", r.Listen)
	default:
		for i, peer := range r.Peers {
			if host, _, err := net.SplitHostPort(peer); err == nil && !loopbackHost(host) {
				exposed = fmt.Sprintf("pulls from %s (LocalDb:Peers:%d)", peer, i)
				break
			}
		}
	}
	if exposed == "" {
		return ""
	}
	return "LocalDb replication " + exposed + " without Cluster:Tls: LocalDb:Replication:ApiKey crosses the network in clear text with every request, " +
		"so anyone who can watch that network can take it and read or overwrite the replicated deployments and alarm events; " +
		"set Cluster:Tls (CaFile, CertFile, KeyFile) on both nodes"
}
