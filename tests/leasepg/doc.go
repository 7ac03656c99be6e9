// Package leasepg runs the lease-majority drill matrix of
// docs/redundancy.md ("lease-majority on a shared lease") on real
// processes with the lease in a REAL PostgreSQL Config DB
// (Cluster:Lease:Provider configdb, ConfigDb:Provider postgres).
//
// Each drill starts a pair (a, b) of `otopcua host` processes on test hosts
// of their own (tests/netem network namespaces, plus a "scada" host for the
// test's OPC UA clients). PostgreSQL (tests/pg) and a Modbus TCP field
// device (internal/fielddevice) run on the machine's loopback; each node
// reaches them through forwarders the test owns: a listener inside the
// node's namespace on its own 127.0.0.1 at the server's port, so the
// node's configuration names the same 127.0.0.1 address as the root
// namespace's, and its path to the database goes through a netem.Proxy
// that the test blackholes to cut that node, and only that node, from the
// Config DB.
//
// Both nodes serve the device through one deployment with a writable
// holding register (press1/Setpoint). A writer writes to BOTH nodes every
// 100 ms with values that tell them apart (a: 10000+i, b: 20000+i) and the
// device logs every value it receives (fielddevice.Options.OnWrite), so the
// register history says which node's gate let a write through. An
// independent sampler reads Server.ServiceLevel (i=2267) of both nodes
// every 50 ms over long-lived gopcua sessions.
//
// Invariants the drills assert: no sampled instant with two nodes at 250;
// after a failover only one node's values reach the device; a fenced or
// downed node's values never reach it after the point the documentation
// gives.
//
// Duties of the caller: run as root with iproute2, iptables and the
// PostgreSQL server binaries installed (netem.Require and pg.Start fail the
// test naming what is missing); run the drills one at a time on a small
// machine (they are not parallel).
package leasepg
