// Package bootstrap holds the self-form fallback decision: whether a node
// that found no cluster through its seeds may form one on itself.
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
//
// DecideSelfForm is pure. Its caller (the node's driver):
//
//  1. starts a window when the join process starts, and again after each
//     WaitAnotherWindow;
//  2. at expiry TCP-probes OtherSeeds and passes whether any accepted;
//  3. on SelfForm joins itself (this wins even over a join in flight,
//     which is why guard 1 exists).
package bootstrap
