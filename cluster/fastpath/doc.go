// Package fastpath decides when a peer may be marked unreachable at once,
// ahead of the phi-accrual failure detector.
//
// When a peer's connection breaks (protoactor's EndpointTerminatedEvent
// arrives within ≈ 2 ms of a SIGKILL) or the detector starts suspecting it,
// the driver makes up to MaxProbes TCP connects to the peer's cluster port
// within ProbeWindow ms, stopping at the first Accepted. Only if every probe
// made was actively refused (RST: no process listens) is the peer marked
// unreachable now. Silence (timeouts: a partition, a dropped link, an
// overloaded host) proves nothing and is left to the detector; an accepted
// connection means a process is listening.
//
// Known false positive: a firewall answering with a TCP reset
// (`REJECT --reject-with tcp-reset`) makes a live host look dead.
package fastpath
