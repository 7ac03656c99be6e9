package procs

import (
	"sync"
	"testing"
)

var (
	uniqueMu  sync.Mutex
	handedOut = map[int]bool{} // ports UniquePort returned; uniqueMu must be held.
)

// UniquePort is FreePort that never returns the same port twice in this
// process. FreePort closes its listener at once, so two calls in a row can
// return the same port. NewPortSet keeps one set of nodes distinct; tests
// that run in parallel in one test binary (each starting its own nodes)
// use UniquePort so that no two nodes of any of them share a port.
func UniquePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		p := FreePort(t)
		uniqueMu.Lock()
		fresh := !handedOut[p]
		handedOut[p] = true
		uniqueMu.Unlock()
		if fresh {
			return p
		}
	}
	t.Fatal("procs: no port that was not handed out before after 1000 tries")
	return 0
}

// NewUniquePorts is NewPorts with UniquePort.
func NewUniquePorts(t testing.TB) Ports {
	return Ports{Cluster: UniquePort(t), OpcUa: UniquePort(t), HTTP: UniquePort(t)}
}
