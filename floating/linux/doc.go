// Package linux is the on-premises executor of the floating address: it
// adds the address to a local interface over netlink, announces it with
// gratuitous ARP (IPv4) or unsolicited neighbour advertisements (IPv6), and
// observes who holds it through the interface's state and an ARP/ND probe.
// One L2 segment carries the address; the members and their clients are on
// it.
//
// Ops (floating.Op*): addr-add, announce (kind garp or unsolicited-na,
// count 1–20, interval 0–10 s), addr-del. A plan is checked whole before
// anything is done: an unknown op, another address or interface, an
// action whose epoch is not its plan's, or an announce kind that does not
// fit the address family refuses it.
//
// Choices:
//
//   - The address is added with its configured prefix length and
//     IFA_F_NOPREFIXROUTE: the kernel adds its local route (so it answers
//     ARP/ND and accepts connections) but no prefix route, so routing and
//     source-address selection stay what the node's own addresses make them.
//     The address must therefore lie in a subnet the interface already
//     reaches — the node's own address on the same segment, which gratuitous
//     ARP needs anyway.
//   - IPv6 addresses are added with IFA_F_NODAD: a takeover from a frozen
//     holder that still answers would otherwise leave the address
//     "dadfailed", and DAD's tentative second would delay every seize.
//   - Gratuitous ARP sends, per round, an ARP request and an ARP reply, both
//     broadcast, sender and target IP the address, sender MAC the
//     interface's (the reply's target MAC too: Linux takes a reply as
//     gratuitous only then). Some neighbours honour only one of the two.
//   - The unsolicited NA carries the override flag and the target
//     link-layer address, to all-nodes (ff02::1), from the link-local
//     address. Like gratuitous ARP it updates an entry a neighbour already
//     has; a neighbour without one resolves the address afresh anyway.
//   - The ARP probe is RFC 5227's (sender IP 0.0.0.0): nobody's cache
//     learns the prober. The ND probe is a solicitation to the address's
//     solicited-node group from the link-local address. Both are sent again
//     half-way through the probe; every MAC that answers (or announces the
//     address meanwhile) is kept, so a dual hold shows as two MACs
//     (Sighting.MACs, Probe).
//   - Packets are built with mdlayher/arp and mdlayher/ndp over a packet
//     socket and an ICMPv6 socket; nothing shells out.
//
// Invariants: Apply admits the plan's epoch in the fence (persisted) before
// its first action, and refuses an older one having done nothing;
// addr-add and addr-del are idempotent (already present / already absent
// is success; every entry of the address is removed, whatever its prefix
// length); Observe never changes anything.
//
// Duties of the caller:
//
//  1. Call Apply, Observe, Look and RemoveIfPresent from one goroutine.
//  2. Call RemoveIfPresent at start-up, before the OPC UA port opens, so
//     that a leftover of an earlier run never answers for the address.
//  3. Keep Known current with the members' MACs from their heartbeats.
//  4. Close the executor when the node stops (the address stays as it is).
//
// Config.Namespace lets tests run the executors of several test hosts in
// one process; sockets are created on a thread that has entered the
// namespace and stay there. Production leaves it empty.
package linux
