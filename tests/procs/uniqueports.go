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
// return the same port; NewPorts uses UniquePort so that no two nodes
// started by one test binary or command share a port.
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
