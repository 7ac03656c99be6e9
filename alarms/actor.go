package alarms

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gopcua/opcua/ua"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/deployment"
)

// Messages of the engine actor.
type (
	applyMsg struct {
		doc      *deployment.Document
		compiled []*deployment.CompiledAlarm
	}
	applyResult struct{ err error }
	// tagMsg is a reading of a watched tag; w identifies the watch (a
	// reading of a watch since replaced is dropped).
	tagMsg struct {
		w      *tagState
		value  any
		status ua.StatusCode
		at     time.Time
	}
	alertMsg    struct{ t Transition }
	snapshotMsg struct{ s StateSnapshot }
	opMsg       struct {
		kind          Kind
		name          string
		eventID       []byte
		comment, user string
	}
	eventMsg struct {
		name    string
		eventID []byte
	}
	roleTick struct{}
	snapTick struct{}
	syncMsg  struct{}
)

// engineActor runs the core. The core outlives a restart of the actor
// (after a panic), so the alarms keep their state.
type engineActor struct{ c *core }

func (a *engineActor) Receive(ctx actor.Context) {
	c := a.c
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.start(ctx.Self())
	case *actor.Stopping:
		c.stop()
	case applyMsg:
		ctx.Respond(applyResult{c.apply(m.doc, m.compiled)})
	case tagMsg:
		c.onTag(m)
	case alertMsg:
		c.onAlert(m.t)
	case snapshotMsg:
		c.onSnapshot(m.s)
	case opMsg:
		ctx.Respond(c.op(m))
	case eventMsg:
		ctx.Respond(c.checkEvent(m))
	case upstreamMsg:
		c.onUpstream(m.u)
	case roleTick:
		c.onRoleTick()
	case snapTick:
		c.onSnapTick()
	case syncMsg:
		ctx.Respond(struct{}{})
	}
}

// start subscribes to the topics and arms the timers, once (a restarted
// actor keeps them).
func (c *core) start(self *actor.PID) {
	if c.self != nil {
		return
	}
	c.self = self
	o, root := &c.e.o, c.e.o.Root
	c.unsubs = append(c.unsubs,
		o.PubSub.Subscribe(TopicAlerts, func(_ membership.UniqueAddress, msg proto.Message) {
			t, err := DecodeTransition(msg)
			if err != nil {
				o.Logger.Debug("alerts message dropped", "err", err)
				return
			}
			if t.ClusterID == o.ClusterID {
				root.Send(self, alertMsg{t})
			}
		}),
		o.PubSub.Subscribe(TopicAlarmState, func(_ membership.UniqueAddress, msg proto.Message) {
			s, err := DecodeSnapshot(msg)
			if err != nil {
				o.Logger.Debug("alarm-state message dropped", "err", err)
				return
			}
			if s.ClusterID == o.ClusterID && s.Incarnation != c.incarnation {
				root.Send(self, snapshotMsg{s})
			}
		}))
	c.roleTimer = o.Clock.AfterFunc(o.RoleCheckInterval, func() { root.Send(self, roleTick{}) })
	c.snapTimer = o.Clock.AfterFunc(o.SnapshotInterval, func() { root.Send(self, snapTick{}) })
}

func (c *core) stop() {
	for _, u := range c.unsubs {
		u()
	}
	c.unsubs = nil
	for _, t := range []interface{ Stop() bool }{c.roleTimer, c.snapTimer} {
		if t != nil {
			t.Stop()
		}
	}
	for key, ts := range c.tags {
		ts.cancel()
		delete(c.tags, key)
	}
}

func (c *core) onRoleTick() {
	o := &c.e.o
	c.refreshRole()
	now := o.Clock.Now()
	if c.member() {
		for _, name := range c.order {
			if a := c.alarms[name]; a.deferred {
				a.deferred = false
				c.evaluate(a, now)
			}
		}
	}
	if c.primary {
		for _, name := range c.order {
			c.repair(c.alarms[name], now)
		}
	}
	self, root := c.self, o.Root
	c.roleTimer = o.Clock.AfterFunc(o.RoleCheckInterval, func() { root.Send(self, roleTick{}) })
}

func (c *core) onSnapTick() {
	o := &c.e.o
	if c.refreshRole() {
		c.publishSnapshot()
	}
	self, root := c.self, o.Root
	c.snapTimer = o.Clock.AfterFunc(o.SnapshotInterval, func() { root.Send(self, snapTick{}) })
}

// safely runs a callback of the host (Sink, OnTransition) so that its
// panic does not break the engine's state.
func (c *core) safely(what string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			c.e.o.Logger.Error("alarm engine callback panicked", "callback", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn()
}
