package alarms

import (
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/gate"
)

// onAlert handles a transition of this ClusterId received on the alerts
// topic: counted, handed to the OnTransition hooks, and — when another
// node published it and this node does not act as Primary — applied.
func (c *core) onAlert(t Transition) {
	c.e.inst.transition(t.Kind)
	if hs := c.e.hooks.Load(); hs != nil {
		for _, h := range *hs {
			c.safely("OnTransition", func() { h(t) })
		}
	}
	if strings.HasPrefix(t.TransitionID, c.idPrefix) {
		return // this node's own publication
	}
	c.heard()
	a := c.alarms[t.Alarm]
	if a == nil {
		a = c.upstreamOf(t) // an upstream condition this node's session has not reported yet
	}
	if a == nil {
		return // not deployed here (yet, or any more)
	}
	if c.refreshRole() {
		if !c.otherPrimary[t.Publisher] {
			c.otherPrimary[t.Publisher] = true
			c.e.o.Logger.Warn("another node publishes alarm transitions while this node acts as Primary; its transitions are not applied here",
				"publisher", t.Publisher, "epoch", t.Epoch)
		}
		return
	}
	now := c.e.o.Clock.Now()
	a.primary, a.primaryKnown = t.condition(), true
	switch t.Kind {
	case KindActive, KindInactive:
		if a.st.Enabled && a.evaluated {
			a.rec.Remote(t.Active, false, now.UnixNano())
		}
	case KindEnabled:
		if c.enable(a, now) {
			c.evaluate(a, now)
		}
	case KindDisabled:
		c.disable(a, now)
	}
	c.learn(a, now)
}

// onSnapshot applies the Primary's alarm-state snapshot: enabled as it
// says, pending detections it has behind it dropped (Reconciler.Settle),
// acknowledged, confirmed and comment learned where this node is in step.
func (c *core) onSnapshot(s StateSnapshot) {
	c.heard()
	if c.refreshRole() {
		return
	}
	now := c.e.o.Clock.Now()
	for i := range s.Alarms {
		as := &s.Alarms[i]
		a := c.alarms[as.Alarm]
		if a == nil {
			continue
		}
		a.primary, a.primaryKnown = as.condition(), true
		switch {
		case as.Enabled && !a.st.Enabled:
			if c.enable(a, now) {
				c.evaluate(a, now)
			}
		case !as.Enabled && a.st.Enabled:
			c.disable(a, now)
		}
		if a.evaluated && a.st.Enabled {
			a.rec.Settle(as.Active, a.st.Active, now.UnixNano())
		}
		c.learn(a, now)
	}
}

// op is a method call (Acknowledge, Confirm, Enable, Disable, AddComment)
// on the actor.
func (c *core) op(m opMsg) opResult {
	// A method is the gate's to allow, settled or not: the old Primary
	// cannot have published this node's operator's action.
	d := c.e.o.Gate.Check(gate.SiteAck)
	if c.take(d); !d.Allow {
		c.e.o.Logger.Debug("alarm method refused", "alarm", m.name, "method", string(m.kind), "user", m.user, "reason", d.Reason.String())
		return opResult{status: ua.StatusBadInvalidState}
	}
	a := c.alarms[m.name]
	if a == nil {
		return opResult{status: ua.StatusBadNodeIDUnknown}
	}
	switch m.kind {
	case KindAcked, KindConfirmed, KindComment:
		if len(m.eventID) > 0 && !a.knowsEvent(m.eventID) {
			return opResult{status: ua.StatusBadEventIDUnknown}
		}
	}
	if a.up != nil {
		if r, ok := c.upstreamOp(a, m); ok {
			return r
		}
	}
	return opResult{status: c.localOp(a, m)}
}

// opResult is an op's answer: a status, or (up set) a method the caller
// sends upstream.
type opResult struct {
	status ua.StatusCode
	up     *upCall
}

// localOp is an op the engine answers itself.
func (c *core) localOp(a *alarm, m opMsg) ua.StatusCode {
	now := c.e.o.Clock.Now()
	var st ua.StatusCode
	switch m.kind {
	case KindAcked:
		st = a.st.Acknowledge(m.comment, m.user)
	case KindConfirmed:
		st = a.st.Confirm(m.comment, m.user)
	case KindComment:
		st = a.st.AddComment(m.comment, m.user)
	case KindEnabled:
		if !c.enable(a, now) {
			return ua.StatusBadConditionAlreadyEnabled
		}
		c.publish(a, c.transition(a, KindEnabled, m.user))
		c.evaluate(a, now)
		return ua.StatusOK
	case KindDisabled:
		if !c.disable(a, now) {
			return ua.StatusBadConditionAlreadyDisabled
		}
		c.publish(a, c.transition(a, KindDisabled, m.user))
		return ua.StatusOK
	default:
		return ua.StatusBadMethodInvalid
	}
	if st != ua.StatusOK {
		return st
	}
	c.stamp(a, m.kind, now)
	c.publish(a, c.transition(a, m.kind, ""))
	return ua.StatusOK
}

// checkEvent is an op's EventId check alone, asked by no gate: Good when
// eventID is empty or one alarm m.name issued since it last went active.
func (c *core) checkEvent(m eventMsg) ua.StatusCode {
	a := c.alarms[m.name]
	switch {
	case a == nil:
		return ua.StatusBadNodeIDUnknown
	case len(m.eventID) > 0 && !a.knowsEvent(m.eventID):
		return ua.StatusBadEventIDUnknown
	}
	return ua.StatusOK
}

// enable enables a disabled alarm, afresh; its next evaluation is a
// detection. It reports whether the alarm was disabled.
func (c *core) enable(a *alarm, at time.Time) bool {
	if a.st.Enable() != ua.StatusOK {
		return false
	}
	a.rec.Reset(false)
	a.evaluated = true
	a.events = a.events[:0]
	c.stamp(a, KindEnabled, at)
	return true
}

// disable disables an enabled alarm and reports whether it was enabled.
func (c *core) disable(a *alarm, at time.Time) bool {
	if a.st.Disable() != ua.StatusOK {
		return false
	}
	a.rec.Reset(a.st.Active)
	c.stamp(a, KindDisabled, at)
	return true
}
