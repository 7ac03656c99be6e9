package procs

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoOwner: none of the processes asked about holds the connection.
var ErrNoOwner = errors.New("no such process holds the connection")

// ConnOwner returns which of pids holds the open TCP connection from local
// to remote ("127.0.0.1:41234" → "127.0.0.1:502"), as seen from this
// process's network namespace: it finds the socket's inode in
// /proc/net/tcp (and tcp6, for IPv4-mapped addresses) and looks for it
// among each pid's file descriptors. A device under test asks it, while
// the connection is open, which node's connection wrote to it.
func ConnOwner(local, remote string, pids ...int) (int, error) {
	l, err := netip.ParseAddrPort(local)
	if err != nil {
		return 0, err
	}
	r, err := netip.ParseAddrPort(remote)
	if err != nil {
		return 0, err
	}
	inode, err := socketInode(l, r)
	if err != nil {
		return 0, err
	}
	link := "socket:[" + inode + "]"
	for _, pid := range pids {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // gone meanwhile
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && target == link {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("%s → %s (socket %s) among pids %v: %w", local, remote, inode, pids, ErrNoOwner)
}

// socketInode finds the inode of the TCP socket local → remote.
func socketInode(local, remote netip.AddrPort) (string, error) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		inode, found := scanTCPTable(f, local, remote)
		f.Close()
		if found {
			return inode, nil
		}
	}
	return "", fmt.Errorf("no TCP socket %s → %s in /proc/net/tcp{,6}", local, remote)
}

func scanTCPTable(f *os.File, local, remote netip.AddrPort) (inode string, found bool) {
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		l, okL := parseProcAddr(fields[1])
		r, okR := parseProcAddr(fields[2])
		if okL && okR && l == local && r == remote {
			return fields[9], true
		}
	}
	return "", false
}

// parseProcAddr reads an address of /proc/net/tcp ("0100007F:1F90": the
// IPv4 address as a little-endian word, the port in hex) or tcp6 (four
// little-endian words); an IPv4-mapped IPv6 address comes back as IPv4.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	b, err := hex.DecodeString(host)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i+4 <= len(b); i += 4 { // each 32-bit word is little-endian
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	var p uint16
	if _, err := fmt.Sscanf(port, "%04X", &p); err != nil {
		return netip.AddrPort{}, false
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), p), true
}
