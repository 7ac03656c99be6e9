// Package netem impairs the network between otopcua processes in
// multi-process tests, without the kernel's netem qdisc (not available on
// the machines the tests run on).
//
// Two tools:
//
//   - Proxy, a userspace TCP proxy on a loopback address that forwards to a
//     target and can be switched at any time between Pass, Blackhole (every
//     connection is accepted and held, nothing is forwarded, nothing is
//     reset: a silent partition) and Reset (the port refuses connections and
//     every open one is reset: what a dead process looks like), with a
//     separate delay per direction. It sits between two processes only when
//     one of them dials the proxy's address, so it serves one-hop
//     interpositions: a bare listener on a seed's address, or the advertised
//     address of a node that binds elsewhere.
//
//   - Net, a set of network namespaces ("test hosts") joined by veth pairs
//     to a bridge in a namespace of its own, with an address each, where
//     processes run under `ip netns exec` and partitions are iptables rules
//     inside the namespaces: DROP (silent, connects time out) or REJECT with
//     a TCP reset (a live host that looks dead). The harness reaches a host's
//     own loopback through Host.DialContext, which opens the socket inside
//     the namespace, so no address is ever added outside the namespaces the
//     test created; Host.Listen opens a listener inside a host's namespace
//     (on its own loopback, say), so a test can give a process there a path
//     of its own to a server on the machine's loopback, and cut it.
//
// Invariants: traffic only ever goes to loopback or to addresses inside the
// namespaces a Net created; everything a test creates (listeners,
// namespaces, veths, iptables rules, processes left in a namespace) is
// removed by t.Cleanup, also when the test fails.
//
// Duties of the caller: call Require (directly or through NewNet) before
// using namespaces, so a machine without root, iproute2 or a working
// iptables fails the test with a message that says what is missing.
package netem
