package alarms

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/gate"
)

// This file is the engine's second input kind: the conditions of an
// upstream OPC UA server (an opcua device with "alarms"), reported by its
// driver on every node of the pair from that node's own upstream session.
// Such an alarm is not evaluated: its active, acknowledged and confirmed
// state is the upstream's. Its active/inactive changes are detections like
// an evaluation's (the Reconciler pairs them across the pair, so the
// Primary publishes each once); its acknowledged and confirmed changes are
// published by the acting Primary as they arrive and applied on every node
// from its own session. Acknowledge and Confirm on our condition are sent
// back upstream by the Primary (Options.Upstream), whose events then bring
// the new state.

// UpstreamMethods sends a condition method back to the device that
// reports the condition (the host adapts the driver host).
type UpstreamMethods interface {
	// AckCondition calls Acknowledge (Confirm when confirm) on the
	// device's condition id with comment and returns the device's status
	// (drivers.ConditionMethods). It may block up to the device's timeout;
	// it is called from the method's caller, never on the engine's
	// goroutine.
	AckCondition(device, id string, confirm bool, comment string) ua.StatusCode
}

// upstream is an alarm's origin when it mirrors an upstream condition.
type upstream struct {
	device, id string
}

// maxPendingUpdates bounds the condition updates held for devices the
// engine has not applied yet (a driver connects before the engine applies
// the same deployment).
const maxPendingUpdates = 256

// maxUpstreamName is the longest alarm name taken from an upstream
// ConditionId as it is; a longer one is hashed (alarm_history's alarm
// and transition_id columns hold 200 characters).
const maxUpstreamName = 120

// UpstreamName is the name of the alarm that mirrors condition id of
// device: "<device>/<ConditionId>" ("press1/ns=2;s=Tank1.High"), or
// "<device>/sha256:<32 hex digits of the ConditionId>" when longer than 120
// characters. It is the same on every node and across restarts; it never
// equals a deployed alarm's name (those have no '/'). Its condition's
// NodeId is ns=<ours>;s=<name>.
func UpstreamName(device, id string) string {
	name := device + "/" + id
	if len(name) <= maxUpstreamName {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	return device + "/sha256:" + hex.EncodeToString(sum[:16])
}

// Upstream hands the engine a device's condition update
// (drivers.ConditionSink). It never blocks; it may be called from any
// goroutine.
func (e *Engine) Upstream(u drivers.ConditionUpdate) {
	e.o.Root.Send(e.pid, upstreamMsg{u})
}

type upstreamMsg struct{ u drivers.ConditionUpdate }

// upstreamDevices are the devices of doc whose upstream conditions are
// mirrored.
func upstreamDevices(doc *deployment.Document) map[string]bool {
	out := map[string]bool{}
	for _, d := range doc.Devices {
		if d.Driver == deployment.DriverOPCUA && d.Alarms != nil {
			out[d.Name] = true
		}
	}
	return out
}

// applyUpstream follows a new deployment: the alarms of devices that no
// longer mirror their conditions go; updates held for devices now
// mirrored are taken. c.order is rebuilt by the caller afterwards.
func (c *core) applyUpstream(doc *deployment.Document) {
	c.upDevices = upstreamDevices(doc)
	for name, a := range c.alarms {
		if a.up != nil && !c.upDevices[a.up.device] {
			c.e.view.remove(name)
			c.safely("Sink.Remove", func() { c.e.o.Sink.Remove(name) })
			delete(c.alarms, name)
		}
	}
	held := c.upPending
	c.upPending = nil
	c.sortOrder()
	for _, u := range held {
		if c.upDevices[u.Device] {
			c.onUpstream(u)
		}
	}
}

// sortOrder rebuilds c.order from c.alarms.
func (c *core) sortOrder() {
	c.order = c.order[:0]
	for name := range c.alarms {
		c.order = append(c.order, name)
	}
	sort.Strings(c.order)
}

// onUpstream takes one condition update of a device.
func (c *core) onUpstream(u drivers.ConditionUpdate) {
	if !c.upDevices[u.Device] {
		if len(c.upPending) < maxPendingUpdates {
			c.upPending = append(c.upPending, u)
		} else {
			c.e.o.Logger.Warn("upstream condition update dropped: its device is not applied here yet", "device", u.Device)
		}
		return
	}
	now := c.e.o.Clock.Now()
	// The first refresh of a device after the engine started sets the
	// state of the conditions it lists without a transition (the other
	// node of the pair has told the cluster), like an alarm's first
	// evaluation; every later change is a detection.
	initial := u.Refresh && !c.upRefreshed[u.Device] && !c.onlyDriver()
	if u.Refresh {
		c.upRefreshed[u.Device] = true
	}
	listed := map[string]bool{}
	added := false
	for _, uc := range u.Conditions {
		name := UpstreamName(u.Device, uc.ID)
		listed[name] = true
		a := c.alarms[name]
		if a == nil {
			a = c.defineUpstream(name, u.Device, uc, now)
			added = true
		}
		c.observeUpstream(a, uc, initial, now)
	}
	if added {
		c.sortOrder()
	}
	if !u.Refresh {
		return
	}
	// A refresh lists what the upstream retains: a condition it does not
	// list has nothing to attend to (it went inactive and was
	// acknowledged during a break, or the upstream restarted without it).
	for _, name := range c.order {
		a := c.alarms[name]
		if a.up == nil || a.up.device != u.Device || listed[name] {
			continue
		}
		rest := drivers.UpstreamCondition{ID: a.up.id, Enabled: true, Acked: true, Confirmed: true,
			Severity: a.st.Severity, Message: a.st.Message, Time: now}
		c.observeUpstream(a, rest, false, now)
	}
}

// defineUpstream creates the alarm of an upstream condition in the start
// state (inactive, acknowledged, confirmed).
func (c *core) defineUpstream(name, device string, uc drivers.UpstreamCondition, now time.Time) *alarm {
	source := device
	if uc.Tag != "" {
		source = device + "/" + uc.Tag
	}
	def := Definition{Name: name, Source: source, SourceDevice: device, SourceTag: uc.Tag,
		Condition: "upstream " + uc.ID, Severity: uc.Severity, Message: uc.Message, Upstream: uc.ID}
	a := &alarm{def: def, up: &upstream{device: device, id: uc.ID}}
	a.st.Condition = NewCondition(def.Severity, def.Message)
	a.rec.TTL = int64(c.e.o.CreditTTL)
	c.alarms[name] = a
	c.e.o.Logger.Info("upstream condition mirrored", "alarm", name, "device", device, "source", source)
	c.safely("Sink.Define", func() { c.e.o.Sink.Define(def) })
	c.stamp(a, ChangeDefined, now)
	return a
}

// upstreamOf defines, in the rest state, the upstream condition a
// transition of the Primary names when this node's own session has not
// reported it yet, so that the transition is paired with this node's later
// detection (a credit) instead of being lost. nil when t names no upstream
// condition of a mirrored device (or a hashed name, whose ConditionId it
// cannot tell).
func (c *core) upstreamOf(t Transition) *alarm {
	device, id, ok := strings.Cut(t.Alarm, "/")
	if !ok || !c.upDevices[device] || strings.HasPrefix(id, "sha256:") || UpstreamName(device, id) != t.Alarm {
		return nil
	}
	_, tag, _ := strings.Cut(t.Source, "/")
	a := c.defineUpstream(t.Alarm, device, drivers.UpstreamCondition{ID: id, Tag: tag, Severity: t.Severity, Message: t.Message},
		c.e.o.Clock.Now())
	a.evaluated = true // the rest state is what this node holds: its next report is a detection
	c.sortOrder()
	return a
}

// observeUpstream applies one upstream state of a condition.
func (c *core) observeUpstream(a *alarm, uc drivers.UpstreamCondition, initial bool, now time.Time) {
	at := uc.Time
	if at.IsZero() {
		at = now
	}
	st := &a.st
	described := st.Severity != uc.Severity || st.Message != uc.Message
	st.Severity, st.Message, st.Value = uc.Severity, uc.Message, uc.SourceName
	st.SetQuality(QualityGood)
	if initial && !a.evaluated {
		// The first state this node learns, from the refresh at start:
		// set without a transition.
		a.evaluated = true
		st.Active, st.Acked, st.Confirmed = uc.Active, uc.Acked, uc.Confirmed
		st.Comment, st.User = uc.Comment, uc.User
		st.retain()
		if uc.Active {
			st.ActiveTime = at
		}
		c.stamp(a, ChangeInitial, at)
		return
	}
	// Otherwise every change from the state held (the rest state for a
	// condition never seen before) is a detection.
	a.evaluated = true
	if kind, changed := st.Observe(uc.Active); changed {
		if uc.Active {
			st.ActiveTime = at
			a.events = a.events[:0]
		}
		st.Acked, st.Confirmed = uc.Acked, uc.Confirmed
		st.Comment, st.User = uc.Comment, uc.User
		st.retain()
		c.stamp(a, kind, at)
		c.detected(a, c.transition(a, kind, ""), at)
		return
	}
	switch {
	case uc.Acked && !st.Acked:
		c.upstreamMethod(a, KindAcked, uc, at)
	case uc.Acked && uc.Confirmed && !st.Confirmed:
		c.upstreamMethod(a, KindConfirmed, uc, at)
	case uc.Acked != st.Acked || uc.Confirmed != st.Confirmed:
		// Unacknowledged again without going active: taken as it is.
		st.Acked, st.Confirmed = uc.Acked, uc.Confirmed
		st.retain()
		c.stamp(a, ChangeLearned, at)
	case described:
		c.stamp(a, ChangeDefinition, at)
	}
}

// upstreamMethod applies an acknowledgement (or confirmation) the
// upstream reports, on every node; the acting Primary publishes it.
func (c *core) upstreamMethod(a *alarm, kind Kind, uc drivers.UpstreamCondition, at time.Time) {
	st := &a.st
	if kind == KindAcked {
		st.Acked = true
	}
	st.Confirmed = uc.Confirmed
	st.Comment, st.User = uc.Comment, uc.User
	st.retain()
	c.stamp(a, kind, at)
	// The upstream's own event, reported to every node: the gate's to
	// allow, settled or not (the old Primary published its earlier ones).
	d := c.e.o.Gate.Check(gate.SiteAlarmEmit)
	if c.take(d); d.Allow {
		c.publish(a, c.transition(a, kind, ""))
	}
}

// upstreamOp answers a method on an upstream alarm, on the actor, after the
// gate and the EventId check: Acknowledge and Confirm go back upstream
// (the caller sends them, off the actor), AddComment stays ours, Enable and
// Disable are the upstream's to decide.
func (c *core) upstreamOp(a *alarm, m opMsg) (opResult, bool) {
	switch m.kind {
	case KindAcked, KindConfirmed:
		return opResult{status: ua.StatusOK, up: &upCall{device: a.up.device, id: a.up.id, confirm: m.kind == KindConfirmed}}, true
	case KindEnabled, KindDisabled:
		return opResult{status: ua.StatusBadNotSupported}, true
	}
	return opResult{}, false
}

// upCall is an upstream method the engine's caller sends.
type upCall struct {
	device, id string
	confirm    bool
}
