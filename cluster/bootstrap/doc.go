// Package bootstrap holds the decisions on forming a new cluster: the
// self-form fallback (whether a node that found no cluster through its
// seeds may form one on itself) and the first seed's rule, both under the
// refusal guard.
//
// Akka lets only the first listed seed form a new cluster; every other node
// waits in InitJoin until some seed answers. The fallback (setting
// SelfFormAfter, default 10 s, ≤ 0 disables) lets a node with no membership
// after the window join itself — guarded twice (reference Redundancy.md,
// "Bootstrap: the self-form fallback"):
//
//  1. Reachability: an expired window is not evidence the peers are down.
//     If any other seed accepts a TCP connection, wait another window.
//  2. Seed membership: only a node whose own address is in its own seed
//     list may self-form; any other node never does.
//  3. Refusal: a node that a member of the mesh refused (wrong
//     Cluster:Secret, a TLS handshake refused) never forms a cluster of its
//     own — neither by this fallback nor as the first seed (DecideFirstSeed)
//     — because the mesh is running and would get a second cluster with
//     the same ClusterId. It keeps asking to join (see Refusal).
//
// DecideSelfForm and DecideFirstSeed are pure. The caller of
// DecideSelfForm (the node's driver):
//
//  1. starts a window when the join process starts, and again after each
//     WaitAnotherWindow;
//  2. at expiry TCP-probes OtherSeeds and passes whether any accepted;
//  3. on SelfForm joins itself (this wins even over a join in flight,
//     which is why guard 1 exists);
//  4. on Refused starts a new window, and passes every refusal it holds
//     (a refusal by an address ends when a handshake message from that
//     address is accepted).
package bootstrap
