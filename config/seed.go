package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// SeedAddress is a cluster address from Cluster:SeedNodes.
type SeedAddress struct {
	Host string
	Port int
}

// String renders the address as host:port (IPv6 hosts in brackets); the
// result parses back to the same SeedAddress.
func (a SeedAddress) String() string {
	return net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}

// Equal compares two addresses; host names compare case-insensitively.
func (a SeedAddress) Equal(b SeedAddress) bool {
	return a.Port == b.Port && strings.EqualFold(a.Host, b.Host)
}

// akkaPrefix is the compatibility form of a seed address.
const akkaPrefix = "akka.tcp://"

// systemName is the actor system name accepted in akka.tcp addresses.
const systemName = "otopcua"

// SeedFormat describes the accepted seed address forms.
const SeedFormat = "host:port or akka.tcp://otopcua@host:port, port 1..65535"

// ParseSeedAddress parses "host:port" or "akka.tcp://otopcua@host:port".
// The host is a DNS name (letters, digits, '-', '_', '.') or an IP address
// (IPv6 in brackets); the port is 1..65535.
func ParseSeedAddress(s string) (SeedAddress, error) {
	rest := s
	if len(rest) >= len(akkaPrefix) && strings.EqualFold(rest[:len(akkaPrefix)], akkaPrefix) {
		rest = rest[len(akkaPrefix):]
		system, hostPort, ok := strings.Cut(rest, "@")
		if !ok {
			return SeedAddress{}, fmt.Errorf("seed address %q: missing \"%s@\" before host:port", s, systemName)
		}
		if !strings.EqualFold(system, systemName) {
			return SeedAddress{}, fmt.Errorf("seed address %q: actor system must be %q, not %q", s, systemName, system)
		}
		rest = hostPort
	} else if strings.Contains(rest, "://") {
		return SeedAddress{}, fmt.Errorf("seed address %q: only the akka.tcp:// scheme is accepted", s)
	}
	host, portText, err := net.SplitHostPort(rest)
	if err != nil {
		return SeedAddress{}, fmt.Errorf("seed address %q: %w", s, err)
	}
	if err := checkHost(host); err != nil {
		return SeedAddress{}, fmt.Errorf("seed address %q: %w", s, err)
	}
	port, err := parsePort(portText)
	if err != nil {
		return SeedAddress{}, fmt.Errorf("seed address %q: %w", s, err)
	}
	return SeedAddress{Host: host, Port: port}, nil
}

func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, errors.New("port must be 1..65535")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("port must be 1..65535")
		}
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, errors.New("port must be 1..65535")
	}
	return p, nil
}

// checkHost accepts an IP address or a DNS-style host name.
func checkHost(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	if net.ParseIP(h) != nil {
		return nil
	}
	if len(h) > 253 {
		return errors.New("host name longer than 253 characters")
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_'
		if !ok {
			return fmt.Errorf("host %q: only letters, digits, '-', '_', '.' or an IP address", h)
		}
	}
	return nil
}
