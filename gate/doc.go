// Package gate decides whether this node may act as its ClusterId's Primary
// on the data plane: inbound OPC UA writes to field devices, alarm condition
// methods, the alerts emit and the historian drain. A warm standby never
// touches a shared field device.
//
// # The policy
//
// Decide is the whole policy, a pure function of an Input: the site, the
// last redundancy snapshot's role for this node, the live number of Up
// driver members of its ClusterId, whether this node is a cluster member
// yet, whether it is alone by configuration, the Primary's licence
// (LicenceOf), whether the process woke from a pause and has not heard
// every peer since (package cluster/woken's fence, under every downing
// strategy) and the snapshot's epoch. Its table (every site alike):
//
//	role           licence              member  alone  drivers    woken       verdict  reason (String / Label)
//	any            any                  any     any    any        yes      →  deny     not primary (woken from a pause, not yet heard every peer) / woken
//	Primary        Licensed             any     any    any        no       →  allow    primary / —
//	Primary        Holding, Unlicensed  any     any    any        no       →  deny     not primary (no lease or promotion hold) / fenced
//	FencedPrimary  any                  any     any    any        no       →  deny     not primary (no lease or promotion hold) / fenced
//	Secondary      any                  any     any    any        no       →  deny     not primary / secondary
//	Detached       any                  any     any    any        no       →  deny     not primary / detached
//	Unknown        any                  no      no     any        no       →  deny     not primary (not a cluster member yet) / not-member
//	Unknown        any                  no      yes    any        no       →  allow    primary / —
//	Unknown        any                  yes     any    0 or 1     no       →  allow    primary / —
//	Unknown        any                  yes     any    2 or more  no       →  deny     not primary (role unknown) / role-unknown
//
// The woken row is first: a process that did not run for longer than the
// failure detector's acceptable pause (SIGSTOP, a VM pause) may have been
// replaced by its peer while it was frozen, and what its snapshot says is
// from before the freeze; it acts on nothing until it has heard every peer
// of its ClusterId again (a node alone by configuration is never woken).
//
// An allowed decision carries the epoch of the snapshot that made this node
// Primary (0 while no snapshot named it): the fencing token of what it
// services. A denied one carries 0.
//
// The not-a-member row is the restart into a running pair: a node that
// applied its cached deployment before it joined sees no driver member at
// all, while its peer may be the Primary; it waits until the cluster tells.
// A node alone by configuration (a single-node set: no
// OpcUa:PeerApplicationUris and no Cluster:SeedNodes but its own address,
// or no cluster at all) has nobody to wait for and services.
//
// # The helper
//
// Every site asks through a Guard (Check for an action, Look for a
// periodic look at the verdict), which gathers the Input from a Source
// (*redundancy.RoleView on a node), calls Decide, counts every denial with
// its site and reason label, and logs a site's verdict only when it
// changes, so that a client hammering a denied node cannot flood the log.
//
// The package depends on the standard library only (TestGateIsALeaf): every
// caller can link it without the actor runtime, gRPC or OpenTelemetry.
//
// Duties of the caller:
//
//  1. Build one Guard per node from its RoleView and hand it to every site.
//  2. Call Check once per action (a write, a method call, a detection that
//     would be emitted, a drain round) and act only on Allow; call Look for
//     looks that are not actions (they are logged on change, not counted).
//  3. Fence what is serviced with the Decision's Epoch.
//  4. A new site adds a Site constant and its label; Decide's table
//     applies to it unchanged unless the table says otherwise.
package gate
