// Package pubsubtest runs several otopcua cluster nodes in one process
// for tests: each node is a local actor system with a cluster daemon on a
// daemon.MemNetwork and a pub/sub mediator on a pubsub.MemNetwork, all on
// one StepClock that the test advances (every tick delivered, no sleeps
// of cluster time). Kill stops a node silently as a crash would be seen
// by its peers (connection lost, probes refused).
//
// It is imported by the tests of cluster/pubsub and cluster/singleton;
// production code never uses it.
package pubsubtest
