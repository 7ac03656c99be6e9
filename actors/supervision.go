package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// DefaultSupervisor restarts a failed child, at most 10 times within
// 10 s; beyond that the child is stopped. For actors whose state can be
// rebuilt from scratch (probes, publishers).
func DefaultSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, 10*time.Second, func(any) actor.Directive { return actor.RestartDirective })
}

// StopOnFailure stops a failed child instead of restarting it, for actors
// whose state must not silently start over — the cluster daemon, whose
// restart would forget the membership while peers still count the node.
func StopOnFailure() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })
}
