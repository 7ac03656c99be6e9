package alarms

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/expr-lang/expr/vm"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/gate"
)

// core is the engine's state; only the actor's goroutine touches it.
type core struct {
	e    *Engine
	self *actor.PID

	alarms map[string]*alarm
	order  []string // alarm names, sorted
	tags   map[string]*tagState
	env    deployment.Env
	vm     vm.VM

	// primary: this node acts as Primary for the alarms — the gate's
	// verdict when the engine last asked, once settled (settled); epoch
	// is the fencing token the verdict came with (what this node
	// publishes carries it). allowed is the gate's verdict alone,
	// allowedAt when it last turned true; heardOther when another node's
	// transition or snapshot last came.
	primary    bool
	epoch      uint64
	allowed    bool
	allowedAt  time.Time
	heardOther time.Time

	eventSeq uint64
	// seqs are the transitions this node published per alarm name; they
	// outlive a redefinition, so that TransitionIDs never repeat.
	seqs        map[string]uint64
	idPrefix    string // "<uid>/" of this node's TransitionIDs
	incarnation string // the uid as 16 hex digits

	// upDevices are the devices whose upstream conditions are mirrored
	// (upstream.go); upPending the updates of other devices, held until
	// an apply; upRefreshed the devices whose first refresh came.
	upDevices   map[string]bool
	upPending   []drivers.ConditionUpdate
	upRefreshed map[string]bool

	roleTimer, snapTimer clockwork.Timer
	unsubs               []func()
	otherPrimary         map[string]bool // publishers warned about while acting as Primary
}

// alarm is one deployed alarm.
type alarm struct {
	def Definition // a new source or condition redefines the alarm
	ca  *deployment.CompiledAlarm
	st  State
	rec Reconciler[Transition]
	// evaluated: the first evaluation since start (or redefinition) is
	// done; the next ones are detections.
	evaluated bool
	// deferred: a first evaluation came before this node was a cluster
	// member; it is made again once the node is one (onRoleTick).
	deferred bool
	// badLogged: the quality went Bad and it was logged; reset when Good.
	badLogged bool
	// primary is the Primary's state as its last transition or snapshot
	// told it (known once one came).
	primary      Condition
	primaryKnown bool
	// events are the event ids issued since the alarm last went active
	// (at most maxEventIDs), which the methods accept.
	events [][]byte
	// inputs are the watched tags of ca.Refs, in order.
	inputs []*tagState
	// up is the upstream condition the alarm mirrors; nil for a deployed
	// alarm (then ca is set).
	up *upstream
}

const maxEventIDs = 16

// tagState is one watched tag: its last reading and the alarms reading it.
type tagState struct {
	ref    deployment.TagRef
	key    string        // ref.Key()
	status ua.StatusCode // of the last reading; BadWaitingForInitialData until one came
	alarms []*alarm
	cancel func()
}

func newCore(e *Engine) *core {
	return &core{
		e: e, alarms: map[string]*alarm{}, tags: map[string]*tagState{}, env: deployment.Env{}, seqs: map[string]uint64{},
		idPrefix: fmt.Sprintf("%016x/", e.o.UID), incarnation: fmt.Sprintf("%016x", e.o.UID),
		otherPrimary: map[string]bool{}, upDevices: map[string]bool{}, upRefreshed: map[string]bool{},
	}
}

// refreshRole looks at the gate (logged when the verdict changes, not
// counted: it is not an action) and, when this node just became the acting
// Primary, publishes what the old Primary did not. It returns the verdict.
func (c *core) refreshRole() bool { return c.take(c.e.o.Gate.Look(gate.SiteAlarmEmit)) }

// take records the gate's decision d and promotes when this node just
// became the acting Primary. It returns whether this node acts as Primary
// for the alarms: the gate allows it and the takeover settled.
func (c *core) take(d gate.Decision) bool {
	now := c.e.o.Clock.Now()
	if d.Allow && !c.allowed {
		c.allowedAt = now
	}
	was := c.primary
	c.allowed, c.epoch = d.Allow, d.Epoch
	c.primary = d.Allow && c.settled(now)
	if c.primary && !was {
		c.promote()
	}
	return c.primary
}

// settled reports whether a takeover that started at allowedAt has
// settled at now: at once when no other node published here within
// TakeoverSettle before it (a node alone, or the first Primary of the
// cluster); else TakeoverSettle after it. Until then the old Primary's
// alerts still in flight are reconciled as a Secondary does: they consume
// this node's pending detections of the same changes, which are published
// only when the takeover settled.
func (c *core) settled(now time.Time) bool {
	settle := c.e.o.TakeoverSettle
	return c.heardOther.IsZero() || c.allowedAt.Sub(c.heardOther) > settle || now.Sub(c.allowedAt) >= settle
}

// heard notes that another node's transition or snapshot came.
func (c *core) heard() { c.heardOther = c.e.o.Clock.Now() }

// onlyDriver reports the single-node posture: this node is the only driver
// member, so nobody else told the cluster about an alarm found active at
// start.
func (c *core) onlyDriver() bool { return c.e.o.Gate.Input().Drivers == 1 }

// member reports whether this node is a cluster member yet.
func (c *core) member() bool { return c.e.o.Gate.Input().Member }

// promote publishes every alarm's pending detections, oldest first, and a
// snapshot.
func (c *core) promote() {
	n := 0
	for _, name := range c.order {
		a := c.alarms[name]
		for _, t := range a.rec.Promote() {
			c.publish(a, t)
			n++
		}
	}
	c.e.o.Logger.Info("acting as Primary for the alarms", "published_pending", n)
	c.publishSnapshot()
}

// apply is Engine.Apply on the actor.
func (c *core) apply(doc *deployment.Document, compiled []*deployment.CompiledAlarm) error {
	now := c.e.o.Clock.Now()
	want := map[string]*deployment.CompiledAlarm{}
	for _, ca := range compiled {
		want[ca.Alarm.Name] = ca
	}
	for _, name := range c.order {
		if want[name] == nil && c.alarms[name].up == nil {
			c.e.view.remove(name)
			c.safely("Sink.Remove", func() { c.e.o.Sink.Remove(name) })
			delete(c.alarms, name)
		}
	}
	var fresh []*alarm
	for _, ca := range compiled {
		a := c.alarms[ca.Alarm.Name]
		switch {
		case a == nil || a.def.Source != ca.Alarm.Source || a.def.Condition != ca.Alarm.Condition:
			a = c.define(ca, doc)
			fresh = append(fresh, a)
		default:
			c.redefine(a, ca, doc, now)
		}
	}
	c.sortOrder()
	c.applyUpstream(doc)
	c.watch()
	for _, a := range fresh {
		c.evaluate(a, now)
	}
	return nil
}

// define (re)creates an alarm in its start state.
func (c *core) define(ca *deployment.CompiledAlarm, doc *deployment.Document) *alarm {
	def := definitionOf(ca.Alarm.Name, ca.Alarm.Source, ca.Alarm.Condition, ca.Alarm.Severity, ca.Alarm.Message)
	a := &alarm{def: def, ca: ca}
	a.st.Condition = NewCondition(def.Severity, def.Message)
	a.rec.TTL = int64(c.creditTTL(ca, doc))
	c.alarms[def.Name] = a
	c.safely("Sink.Define", func() { c.e.o.Sink.Define(def) })
	c.stamp(a, ChangeDefined, c.e.o.Clock.Now())
	return a
}

// redefine takes a new severity and message for an alarm whose condition
// and source stay.
func (c *core) redefine(a *alarm, ca *deployment.CompiledAlarm, doc *deployment.Document, now time.Time) {
	a.ca = ca
	a.rec.TTL = int64(c.creditTTL(ca, doc))
	if a.def.Severity == ca.Alarm.Severity && a.def.Message == ca.Alarm.Message {
		return
	}
	a.def.Severity, a.def.Message = ca.Alarm.Severity, ca.Alarm.Message
	a.st.Severity, a.st.Message = ca.Alarm.Severity, ca.Alarm.Message
	c.safely("Sink.Define", func() { c.e.o.Sink.Define(a.def) })
	c.stamp(a, ChangeDefinition, now)
}

// creditTTL is the greater of Options.CreditTTL and three poll intervals of
// the slowest device the condition reads.
func (c *core) creditTTL(ca *deployment.CompiledAlarm, doc *deployment.Document) time.Duration {
	ttl := c.e.o.CreditTTL
	for _, r := range ca.Refs {
		for i := range doc.Devices {
			if d := &doc.Devices[i]; d.Name == r.Device {
				ttl = max(ttl, 3*d.EffectivePollInterval())
			}
		}
	}
	return ttl
}

// watch makes the watched tags those the alarms read: new ones are
// watched, ones no alarm reads any more are cancelled, and the index from
// tag to alarms is rebuilt.
func (c *core) watch() {
	need := map[string]deployment.TagRef{}
	for _, a := range c.alarms {
		if a.ca == nil {
			continue // an upstream condition reads no tag
		}
		for _, r := range a.ca.Refs {
			need[r.Key()] = r
		}
	}
	for key, ts := range c.tags {
		if r, ok := need[key]; !ok || r != ts.ref {
			ts.cancel()
			delete(c.tags, key)
			delete(c.env, key)
		}
	}
	for key, r := range need {
		if c.tags[key] != nil {
			c.tags[key].alarms = c.tags[key].alarms[:0]
			continue
		}
		ts := &tagState{ref: r, key: key, status: ua.StatusBadWaitingForInitialData}
		c.tags[key] = ts
		self, root := c.self, c.e.o.Root
		ts.cancel = c.e.o.Values.Watch(r.Device, r.Tag, func(value any, status ua.StatusCode, at time.Time) {
			root.Send(self, tagMsg{w: ts, value: value, status: status, at: at})
		})
	}
	for _, name := range c.order {
		a := c.alarms[name]
		a.inputs = a.inputs[:0]
		if a.ca == nil {
			continue
		}
		for _, r := range a.ca.Refs {
			ts := c.tags[r.Key()]
			ts.alarms = append(ts.alarms, a)
			a.inputs = append(a.inputs, ts)
		}
	}
}

// onTag stores a reading and evaluates the alarms that read the tag.
func (c *core) onTag(m tagMsg) {
	ts := m.w
	if c.tags[ts.key] != ts {
		return // a watch since cancelled
	}
	if m.at.IsZero() { // a reading without a source time: now
		m.at = c.e.o.Clock.Now()
	}
	ts.status = m.status
	if isGood(m.status) {
		if v, ok := ts.ref.Kind.Convert(m.value); ok {
			c.env[ts.key] = v
		} else {
			ts.status = ua.StatusBadTypeMismatch
		}
	}
	for _, a := range ts.alarms {
		c.evaluate(a, m.at)
	}
}

// statusName is "BadCommunicationError (0x80050000)".
func statusName(s ua.StatusCode) string {
	name := "StatusCode"
	if d, ok := ua.StatusCodes[s]; ok {
		name = strings.TrimPrefix(d.Name, "Status")
	}
	return fmt.Sprintf("%s (0x%08X)", name, uint32(s))
}

// isGood: a Good or Uncertain status (not Bad).
func isGood(s ua.StatusCode) bool { return s&0x80000000 == 0 }

// evaluate runs one alarm's condition on the current readings and applies
// the result; at is the time of the reading that caused it.
func (c *core) evaluate(a *alarm, at time.Time) {
	if !a.st.Enabled || a.ca == nil { // an upstream condition is not evaluated
		return
	}
	for _, ts := range a.inputs {
		switch {
		case ts.status == ua.StatusBadWaitingForInitialData:
			c.setBad(a, "", at) // waiting for the first reading: not worth a log line
			return
		case !isGood(ts.status):
			c.setBad(a, fmt.Sprintf("tag %s is %s", ts.key, statusName(ts.status)), at)
			return
		}
	}
	out, err := c.vm.Run(a.ca.Program, c.env)
	if err != nil {
		c.setBad(a, "evaluation failed: "+firstLine(err.Error()), at)
		return
	}
	active, ok := out.(bool)
	if !ok {
		c.setBad(a, fmt.Sprintf("evaluation gave %T, not a bool", out), at)
		return
	}
	c.setGood(a, active, at)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// setBad makes the quality Bad and logs why, once until it is Good again.
func (c *core) setBad(a *alarm, why string, at time.Time) {
	if why != "" && !a.badLogged {
		a.badLogged = true
		c.e.o.Logger.Warn("alarm quality Bad; it keeps its state until it can be evaluated", "alarm", a.def.Name, "reason", why)
	}
	if a.st.SetQuality(QualityBad) {
		c.stamp(a, ChangeQuality, at)
	}
}

// setGood applies a successful evaluation.
func (c *core) setGood(a *alarm, active bool, at time.Time) {
	if !a.evaluated && !c.member() {
		// Whether an alarm found active now is news (this node alone) or
		// the Primary's knowledge (a pair) is only known once this node
		// is a member: the first evaluation waits for it.
		a.deferred = true
		return
	}
	qualityChanged := a.st.SetQuality(QualityGood)
	if qualityChanged && a.badLogged {
		a.badLogged = false
		c.e.o.Logger.Info("alarm quality Good again", "alarm", a.def.Name)
	}
	if !a.evaluated {
		a.evaluated = true
		a.st.Value = c.valueText(a)
		if !active || !c.onlyDriver() {
			a.st.SetInitial(active)
			if active {
				a.st.ActiveTime = at
			}
			a.rec.Reset(active)
			if a.primaryKnown {
				a.st.Learn(a.primary)
			}
			c.stamp(a, ChangeInitial, at)
			return
		}
		// The only driver member found it active: nobody told the
		// cluster, so it is a transition.
		a.rec.Reset(false)
	}
	kind, changed := a.st.Observe(active)
	if !changed {
		if qualityChanged {
			a.st.Value = c.valueText(a)
			c.stamp(a, ChangeQuality, at)
		}
		return
	}
	a.st.Value = c.valueText(a)
	if active {
		a.st.ActiveTime = at
		a.events = a.events[:0]
	}
	c.stamp(a, kind, at)
	c.detected(a, c.transition(a, kind, ""), at)
}

// detected hands a local detection to the reconciler and publishes it when
// it says so.
func (c *core) detected(a *alarm, t Transition, at time.Time) {
	primary := c.take(c.e.o.Gate.Check(gate.SiteAlarmEmit)) // a denial is counted
	now := c.e.o.Clock.Now()
	switch a.rec.Local(t.Active, t, primary, now.UnixNano()) {
	case Publish:
		c.publish(a, t)
	case Matched:
		c.learn(a, at)
	}
	c.repair(a, now)
}

// repair publishes the alarm's state when, acting as Primary, the last
// published transition says otherwise (Reconciler.Repair).
func (c *core) repair(a *alarm, at time.Time) {
	if !a.st.Enabled || !a.evaluated || !a.rec.Repair(a.st.Active, c.primary, at.UnixNano()) {
		return
	}
	kind := KindInactive
	if a.st.Active {
		kind = KindActive
	}
	c.e.o.Logger.Info("publishing an alarm's state that the published transitions do not end in", "alarm", a.def.Name, "active", a.st.Active)
	c.publish(a, c.transition(a, kind, ""))
}

// learn takes the Primary's acknowledged, confirmed and comment state when
// this node is in step with it.
func (c *core) learn(a *alarm, at time.Time) {
	if c.primary || !a.primaryKnown || !a.evaluated || !a.rec.InSync() {
		return
	}
	if a.st.Learn(a.primary) {
		c.stamp(a, ChangeLearned, at)
	}
}

// transition builds the alarm's transition of kind from its current state,
// with user instead of the state's when not empty (TransitionID, Publisher
// and Epoch are set by publish).
func (c *core) transition(a *alarm, kind Kind, user string) Transition {
	st := &a.st
	t := Transition{
		ClusterID: c.e.o.ClusterID, Alarm: a.def.Name, Kind: kind, Time: st.Time,
		Severity: st.Severity, Message: st.Message, Source: a.def.Source, Value: st.Value,
		User: st.User, Comment: st.Comment,
		Active: st.Active, Acked: st.Acked, Confirmed: st.Confirmed, Enabled: st.Enabled,
	}
	if user != "" {
		t.User = user
	}
	return t
}

// publish sends a transition with a new TransitionID.
func (c *core) publish(a *alarm, t Transition) {
	c.seqs[a.def.Name]++
	t.TransitionID = c.idPrefix + a.def.Name + "/" + strconv.FormatUint(c.seqs[a.def.Name], 10)
	t.Publisher, t.Epoch = c.e.o.NodeID, c.epoch
	if err := c.e.o.PubSub.Publish(TopicAlerts, t.Encode()); err != nil {
		c.e.o.Logger.Error("alarm transition not published", "alarm", a.def.Name, "kind", string(t.Kind), "err", err)
	}
}

// publishSnapshot sends the state of every alarm on alarm-state, except
// those not evaluated yet (their state says nothing: a receiver would take
// "acknowledged" from a start state).
func (c *core) publishSnapshot() {
	s := StateSnapshot{
		ClusterID: c.e.o.ClusterID, Publisher: c.e.o.NodeID, Incarnation: c.incarnation,
		Epoch: c.epoch, Time: c.e.o.Clock.Now(), Alarms: make([]AlarmState, 0, len(c.order)),
	}
	for _, name := range c.order {
		a := c.alarms[name]
		if !a.evaluated && a.st.Enabled {
			continue
		}
		st := &a.st
		s.Alarms = append(s.Alarms, AlarmState{Alarm: name, Active: st.Active, Acked: st.Acked, Confirmed: st.Confirmed,
			Enabled: st.Enabled, Comment: st.Comment, User: st.User})
	}
	if err := c.e.o.PubSub.Publish(TopicAlarmState, s.Encode()); err != nil {
		c.e.o.Logger.Error("alarm-state snapshot not published", "err", err)
	}
}

// stamp records a change: its time, a new event id, the view and the Sink.
func (c *core) stamp(a *alarm, change Kind, at time.Time) {
	c.eventSeq++
	id := make([]byte, 16)
	binary.BigEndian.PutUint64(id, c.e.o.UID)
	binary.BigEndian.PutUint64(id[8:], c.eventSeq)
	a.st.LastEventID, a.st.Time, a.st.Change = id, at, change
	if len(a.events) == maxEventIDs {
		a.events = append(a.events[:0], a.events[1:]...)
	}
	a.events = append(a.events, id)
	st := a.st
	c.e.view.set(a.def, st)
	c.safely("Sink.Update", func() { c.e.o.Sink.Update(a.def.Name, st) })
}

// knowsEvent reports whether id is one of the alarm's event ids since it
// last went active.
func (a *alarm) knowsEvent(id []byte) bool {
	for _, e := range a.events {
		if string(e) == string(id) {
			return true
		}
	}
	return false
}

// valueText renders the readings the condition read.
func (c *core) valueText(a *alarm) string {
	var b strings.Builder
	for i, ts := range a.inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ts.key)
		b.WriteByte('=')
		fmt.Fprint(&b, c.env[ts.key])
	}
	return b.String()
}
