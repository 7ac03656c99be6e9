package singleton

import (
	"context"
	"errors"
	"sync"
)

// ExitGroup lets the cluster daemon's graceful leave wait for the
// hand-over of every singleton of this node. The daemon's exiting tasks
// are fixed when the daemon starts, before the managers (which need the
// daemon) exist, so the host creates the group first:
//
//	var exits singleton.ExitGroup
//	d, _ := daemon.Start(daemon.Options{..., ExitingTasks: []func(context.Context) error{exits.Task}})
//	med, _ := pubsub.Start(pubsub.Options{..., Membership: d})
//	m, _ := singleton.Start(singleton.Options{Daemon: d, Mediator: med, ..., Exit: &exits})
//
// The zero value is ready to use; it is safe for concurrent use.
type ExitGroup struct {
	mu       sync.Mutex // guards managers
	managers map[*Manager]bool
}

func (g *ExitGroup) add(m *Manager) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.managers == nil {
		g.managers = map[*Manager]bool{}
	}
	g.managers[m] = true
}

func (g *ExitGroup) remove(m *Manager) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.managers, m)
}

// Task is the daemon's exiting task: it runs HandOver on every manager of
// the group at once and returns when all have handed over, or with ctx's
// error (the daemon then leaves anyway).
func (g *ExitGroup) Task(ctx context.Context) error {
	g.mu.Lock()
	ms := make([]*Manager, 0, len(g.managers))
	for m := range g.managers {
		ms = append(ms, m)
	}
	g.mu.Unlock()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { errs[i] = m.HandOver(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
