package membership

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Address is a node's network address without incarnation: the NodeId
// (`PublicHostname:Port`) of a cluster node.
type Address struct {
	Host string
	Port int
}

// String renders the NodeId form `host:port` (IPv6 hosts in brackets).
func (a Address) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Compare orders addresses as Akka does: host by ordinal string comparison,
// then port.
func (a Address) Compare(b Address) int {
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	return cmp.Compare(a.Port, b.Port)
}

// UniqueAddress is an Address plus the random uid drawn by one process start.
// Two processes started one after the other at the same host:port have the
// same Address and different UniqueAddresses.
type UniqueAddress struct {
	Host string
	Port int
	UID  uint64
}

// Address drops the incarnation uid.
func (u UniqueAddress) Address() Address { return Address{Host: u.Host, Port: u.Port} }

// NodeID is the `host:port` form shared by every incarnation at this address.
func (u UniqueAddress) NodeID() string { return u.Address().String() }

// String renders `host:port#uid`.
func (u UniqueAddress) String() string { return u.NodeID() + "#" + strconv.FormatUint(u.UID, 10) }

// IsZero reports whether u is the zero value (no node).
func (u UniqueAddress) IsZero() bool { return u == UniqueAddress{} }

// Compare orders unique addresses by address (Akka's address ordering), then
// by uid.
func (u UniqueAddress) Compare(v UniqueAddress) int {
	if c := u.Address().Compare(v.Address()); c != 0 {
		return c
	}
	return cmp.Compare(u.UID, v.UID)
}

// ErrBadAddress is returned (wrapped) by ParseAddress for input that is not a
// seed address.
var ErrBadAddress = errors.New("membership: bad node address")

// ParseAddress reads a seed or node address in either accepted form:
// `host:port` or the Akka compatibility form `akka.tcp://system@host:port`
// (any `akka...://system@` prefix; the system name is not checked). The port
// must be 1..65535 and the host non-empty.
func ParseAddress(s string) (Address, error) {
	rest := strings.TrimSpace(s)
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme := rest[:i]
		if !strings.HasPrefix(scheme, "akka") {
			return Address{}, fmt.Errorf("%w: %q: unknown scheme %q", ErrBadAddress, s, scheme)
		}
		rest = rest[i+3:]
		at := strings.LastIndex(rest, "@")
		if at <= 0 {
			return Address{}, fmt.Errorf("%w: %q: missing system@ before host", ErrBadAddress, s)
		}
		rest = rest[at+1:]
		rest = strings.TrimSuffix(rest, "/")
	}
	host, portText, err := net.SplitHostPort(rest)
	if err != nil {
		return Address{}, fmt.Errorf("%w: %q: %v", ErrBadAddress, s, err)
	}
	if host == "" {
		return Address{}, fmt.Errorf("%w: %q: empty host", ErrBadAddress, s)
	}
	if !validHost(host) {
		return Address{}, fmt.Errorf("%w: %q: invalid host %q (letters, digits and -._:%% only)", ErrBadAddress, s, host)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return Address{}, fmt.Errorf("%w: %q: port must be 1..65535", ErrBadAddress, s)
	}
	return Address{Host: host, Port: port}, nil
}

// validHost accepts DNS names, IPv4 and IPv6 literals (with a zone).
func validHost(h string) bool {
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-._:%", r):
		default:
			return false
		}
	}
	return true
}
