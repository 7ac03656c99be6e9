package linux

import (
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// resetConnections destroys every TCP connection of this namespace whose
// local address is the floating address (SOCK_DESTROY over the inet_diag
// netlink socket: the kernel sends the peer a reset), while the address is
// still on lo. Without it a client connected through the floating address
// hears nothing once the address leaves: the old holder's kernel can no
// longer send from it, and a client waiting for answers sends nothing that
// the new holder could reset, so it waits for its own timeout (tens of
// seconds for an OPC UA client) before it reconnects. Listening sockets
// are left alone. IPv4 only (AF_INET sockets and the v4-mapped ones of a
// dual-stack listener): the netlink library's destroy request does not
// carry IPv6 addresses, so an IPv6 client notices by its own timeout.
//
// It is best effort and returns how many connections it reset: a kernel
// built without INET_DIAG_DESTROY refuses, and the release goes on
// without it.
func (e *Executor) resetConnections() (n int, err error) {
	ip := e.cfg.Address.Addr()
	if !ip.Is4() {
		return 0, nil
	}
	err = e.space.run(func() error {
		// A server listening on every address with a dual-stack socket
		// (Go's net.Listen("tcp", "0.0.0.0:…") does) holds its IPv4
		// connections as AF_INET6 sockets with v4-mapped addresses.
		var socks []*netlink.Socket
		for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
			s, err := e.nl.SocketDiagTCP(fam)
			if err != nil {
				return err
			}
			socks = append(socks, s...)
		}
		for _, s := range socks {
			if s.State == tcpListen || !s.ID.Source.Equal(ip.AsSlice()) {
				continue
			}
			local := &net.TCPAddr{IP: s.ID.Source, Port: int(s.ID.SourcePort)}
			remote := &net.TCPAddr{IP: s.ID.Destination, Port: int(s.ID.DestinationPort)}
			if err := e.nl.SocketDestroy(local, remote); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// tcpListen is the kernel's TCP_LISTEN state (include/net/tcp_states.h).
const tcpListen = 10
