// Package clustertls holds real-process tests of the authenticated
// cluster transport: `otopcua host` nodes on loopback with Cluster:Tls
// certificates from a CA generated in the test and a Cluster:Secret. A
// pair forms; a node with another secret or without a client certificate
// is refused and both sides log it; the same node with the right
// settings joins; a SIGKILL of the oldest still elects the survivor. The
// first seed of a running pair restarted with another secret never forms
// a cluster of its own (no second Primary) and joins once it has the
// right one.
package clustertls
