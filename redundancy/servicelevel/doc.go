// Package servicelevel is the one place that decides the OPC UA
// Server.ServiceLevel byte a node shows: Of maps every input — the node's
// cluster membership, its driver role, the Config DB probe, the age of its
// redundancy snapshot entry, its peers' OPC UA probes of it, its role, the
// elected Primary's lease-majority licence, the woken-process fence, the
// pins (a manual failover's drain, the test hook) and device health
// (Redundancy:DeviceHealth) — to the byte. The whole table is in Of's doc
// comment.
//
// It is a leaf: it depends on the standard library and package gate (for
// gate.Role and gate.Licence) only, never on the actor runtime, gRPC, a
// database or OPC UA, and it reads no clock: the caller passes the instant
// its inputs were gathered at (Inputs.Now).
//
// Duties of the caller (package redundancy's OpcUaPublishActor on a driver
// node; package host on a node without the driver role):
//
//  1. gather every input at one instant and call Of again whenever one
//     changes and at least every HealthTick, so that the 30-second
//     freshness rules take effect;
//  2. hand every result to the one publisher in front of the OPC UA server,
//     which suppresses repeats (Server.ServiceLevel starts at Unset);
//  3. never adjust the byte afterwards: a new rule is a new input here.
package servicelevel
