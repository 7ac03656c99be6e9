// Package linux is the on-premises executor of the floating address: the
// address lives on the loopback interface of the node that holds it, and
// a responder inside the otopcua process answers ARP (IPv4) and neighbour
// solicitations (IPv6) for it on the segment's interface — only while the
// process holds the address and its hold is current. Seizing announces it
// with gratuitous ARP or unsolicited neighbour advertisements; Observe
// sees who holds it through the node's own state and an ARP/ND probe. One
// L2 segment carries the address; the members and their clients are on
// it.
//
// Why the process answers, not the kernel: a kernel that carries the
// address on the interface keeps answering for it while the process is
// frozen (SIGSTOP, a long pause, a hung loop) and after it died (SIGKILL
// leaves the address where it was), so once the survivor seizes, two MACs
// answer and a client whose cache expires may pick the frozen or dead
// node. With the address on lo the kernel still accepts connections to it
// (Linux accepts a packet for any local address on any interface) but
// answers ARP/ND for it on no interface; the responder's answers stop with
// the process, and stop by themselves when the node's loop stops renewing
// the hold.
//
// Ops (floating.Op*): addr-add, announce (kind garp or unsolicited-na,
// count 1–20, interval 0–10 s), addr-del. A plan is checked whole before
// anything is done: an unknown op, another address or interface, an
// action whose epoch is not its plan's, or an announce kind that does not
// fit the address family refuses it.
//
//   - addr-add adds the address to lo as a host address (/32, /128;
//     IPv6 without DAD), then marks it held with a hold of Config.Hold:
//     the responder answers from then on.
//   - addr-del marks it released first (the responder falls silent), then
//     resets the TCP connections made to the address (IPv4; see
//     resetConnections: their clients reconnect at once, to the next
//     holder, instead of waiting for their own timeout), then removes it
//     from lo — and from the interface, where an older version of this
//     executor, or a human, put it.
//
// The hold (hold.go): the responder answers a request only while
// holding ∧ now < until, now read from the monotonic clock after the
// request was read. The node's loop calls Renew(now + HeartbeatTtl) after
// every successful heartbeat. A process frozen longer than its hold wakes
// silent and stays silent until its loop renews or releases; a closed or
// dead process answers nothing.
//
// The kernel's settings (IPv4, written once at New by a thread inside the
// interface's namespace, never by a shell): net.ipv4.conf.<iface>.arp_ignore
// = 1 (reply only for addresses on the receiving interface: never for the
// address on lo) unless the effective value (the larger of `all` and the
// interface's) is already 1, 2 or 8; net.ipv4.conf.<iface>.arp_announce =
// 2 (the kernel's own ARP requests name the interface's address, never
// the floating one) unless already 2. `all` is never written: when
// net.ipv4.conf.all.arp_ignore makes the kernel answer for lo's addresses
// whatever the interface says (3 to 7), New fails with that key in its
// error. IPv6 needs nothing: the kernel answers a solicitation only for
// addresses on the receiving interface.
//
// Choices:
//
//   - The IPv4 responder reads ARP on a packet socket and answers a
//     request for the address (an RFC 5227 probe too) unicast to the
//     requester; gratuitous requests and its own MAC's are ignored. The
//     IPv6 responder reads ICMPv6 on a socket bound to the unspecified
//     address (a neighbour's unicast reachability probe is sent to the
//     floating address itself) and joined to the address's solicited-node
//     group on the interface (the kernel joins it only for addresses on
//     the interface, and a bridge that snoops MLD forwards the group only
//     to members); it answers with a solicited advertisement (override,
//     target link-layer address) to the solicitor, or to all-nodes when the
//     solicitor has no address yet.
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
//     (Sighting.MACs, Probe). A node's own responder never answers its own
//     probe (it ignores its own MAC, and a node probes only when it does
//     not hold the address).
//   - Packets are built with mdlayher/arp and mdlayher/ndp over packet and
//     ICMPv6 sockets; nothing shells out.
//
// Invariants: Apply admits the plan's epoch in the fence (persisted) before
// its first action, and refuses an older one having done nothing;
// addr-add and addr-del are idempotent (already present / already absent
// is success; every entry of the address is removed, whatever its prefix
// length); the responder answers only while holding ∧ now < until; a
// release stops the answers before the address leaves lo; Observe never
// changes anything. Observe's "self" is the address on lo and held, or on
// the interface (where the kernel answers for it); otherwise it probes.
//
// Duties of the caller:
//
//  1. Call Apply, Observe, Look and RemoveIfPresent from one goroutine.
//  2. Call RemoveIfPresent at start-up, before the OPC UA port opens, so
//     that a leftover of an earlier run (on lo or on the interface) never
//     takes connections for the address.
//  3. Call Renew(now + HeartbeatTtl) after every successful heartbeat,
//     with a reading of Config.Clock; stop calling it when the node is no
//     longer fit to hold the address.
//  4. Keep Known current with the members' MACs from their heartbeats.
//  5. Close the executor when the node stops (the address stays as it is,
//     unanswered).
//
// Config.Namespace lets tests run the executors of several test hosts in
// one process; sockets are created, and /proc/sys written, on a thread
// that has entered the namespace, and sockets stay there. Production
// leaves it empty.
package linux
