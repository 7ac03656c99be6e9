// Package floating runs the floating address drills of
// docs/floating-address.md on real processes: two `otopcua host` nodes (a
// and b) on test hosts of their own (tests/netem network namespaces on one
// bridge), a client host on the same bridge, PostgreSQL as the Config DB
// (tests/pg, the heartbeat stream and the lease-majority lease) and a
// Modbus TCP field device (internal/fielddevice) on the machine's
// loopback, reached by each node through forwarders on its own 127.0.0.1.
//
// The floating address is an unused address of the bridge's subnet
// (netem.Subnet + "100"), Redundancy:FloatingAddress with the linux
// provider on each host's eth0. A deployment serves one tag,
// press1/Counter, a holding register the test bumps every 100 ms.
//
// Two observers of their own, never the code under test:
//
//   - the sampler probes the address from the client namespace every
//     20 ms for the whole drill (floating/linux.Probe: an ARP probe no
//     cache learns from, every MAC that answers kept), so a round with two
//     MACs is a dual hold, and the first round with the survivor's MAC is
//     when the address answered there;
//   - an independent node-opcua client (tests/interop/floating.mjs) in the
//     client namespace, subscribed through opc.tcp://FLOATING:4840 with its
//     default reconnection, nothing redundancy-aware.
//
// The drills: SIGKILL of the Primary (IPv4, -floating.trials trials, and
// one IPv6 trial), SIGSTOP of the Primary and a 60 s partition under
// lease-majority, auto-down refused without AllowDualClaim, a planned
// failover, and drift made by hand (missing, extra, a foreign holder).
//
// Invariants the drills assert: no sampled round with two MACs; after a
// SIGKILL the survivor's MAC answers and the client receives new values
// without a restart or a configuration change; a node restarted as
// Secondary never answers for the address; GET /api/floating on both
// nodes names one owner, held only by it, and
// otopcua_floating_address_owned is 1 there and 0 on the other.
//
// Flags: -floating.trials (default 2) is the number of SIGKILL trials;
// docs/benchmarks-failover.md's figures come from 10.
//
// Duties of the caller: run as root with iproute2, iptables, the
// PostgreSQL server binaries and tests/interop's node_modules installed
// (scripts/test.sh installs them); netem.Require, pg.Start and the client
// fail the test naming what is missing.
package floating
