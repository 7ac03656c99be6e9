package main

import (
	"os"
	"sync/atomic"
)

// atomicCount counts changes made.
type atomicCount = atomic.Uint64

// selfPID is the harness process (its CPU is reported beside the nodes').
var selfPID = os.Getpid()
