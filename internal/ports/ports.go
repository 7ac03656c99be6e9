// Package ports picks free TCP ports on loopback for processes started
// later (test nodes, the demo's pair), below the kernel's ephemeral port
// range.
//
// A port taken from the ephemeral range (listening on :0, then closing)
// can be handed by the kernel to any process's next outgoing connection
// as its source port before the node binds it, or while a node that is
// restarted at the same address is down; the node then fails to start
// with "address already in use". Ports below the range are never used as
// source ports.
//
// Invariant: Free returns distinct ports, each bound and released once
// by this call (free a moment ago).
package ports

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the smallest port Free picks: above the well-known and most
// registered service ports.
const lowest = 10000

// Free returns n distinct ports on 127.0.0.1 that were free a moment ago,
// below the ephemeral range; where that range starts too low to leave
// room, ports the kernel picks (from the ephemeral range).
func Free(n int) ([]int, error) {
	hi := ephemeralLow()
	if hi-lowest < 1000 {
		return kernelPicked(n)
	}
	seen := map[int]bool{}
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("no free port in %d–%d after %d tries", lowest, hi-1, tries)
		}
		p := lowest + rand.IntN(hi-lowest)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, p)
	}
	return out, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when the range cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}

// kernelPicked holds n listeners on :0 until all are chosen.
func kernelPicked(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("choose a free port"), err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
