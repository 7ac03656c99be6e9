// Package leaseetcd runs the lease-majority drills of tests/failover on the
// etcd lease (Cluster:Lease:Provider etcd) instead of the Config DB lease:
// a pair of real `otopcua host` processes (tests/procs), three real
// etcd-server members, and one etcd member killed with SIGKILL midway
// through every drill, so that the lease is shown to work through the
// remaining two (a quorum of the three).
//
//	a  SIGKILL of the Primary (the etcd leader killed before, once the pair
//	   is healthy) → the survivor at 250 (time logged); its log shows the
//	   crash fast path acquiring the lease; the etcd key names the survivor
//	b  SIGSTOP of the Primary (the etcd leader killed right after the
//	   freeze) → the survivor at 250 after its promotion hold (time logged);
//	   SIGCONT → the woken node never reads 250 beside the survivor and
//	   exits with code 3
//	c  partition between the nodes (iptables DROP both ways; the nodes and
//	   the etcd members on test hosts of their own, etcd reachable from
//	   both nodes; the member the nodes try first killed right after the
//	   cut) → the Primary keeps 250 and the lease, the Secondary exits 3;
//	   "keeps 250" is strict: its subscribed client sees no other level
//	   after the cut, not even a brief fence at 100
//
// Every drill runs the invariant sampler of tests/failover: every 50 ms
// both nodes' ServiceLevel is read concurrently and the drill fails on any
// round with two 250s.
//
// Drills a and b start the etcd members on loopback (tests/etcd). Drill c
// needs them reachable from inside both node namespaces; tests/etcd starts
// members on 127.0.0.1 only, so this package starts them itself inside a
// third test host (`ip netns exec`, tests/netem's Host.Wrap) on that host's
// address. Requirements: the etcd binary (Debian package etcd-server), and
// for drill c root, iproute2 and iptables.
package leaseetcd
