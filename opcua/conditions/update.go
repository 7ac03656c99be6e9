package conditions

import (
	"fmt"
	"slices"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// Update makes st the state of condition name: it writes every component
// variable and raises one AlarmConditionType event (a new EventId) on the
// condition, which reaches the condition, its parent and the Server
// object, and returns that EventId. The TransitionTimes of the two-state
// variables that changed, LastSeverity (the previous severity, when it
// changed) and Comment's SourceTimestamp (when it changed) take st.Time.
// The variables are written before the event is raised, so a client that
// reads after the event sees the new state. ErrUnknown when name is not
// defined (or was removed before the event was raised), ErrClosed after
// Close.
func (m *Manager) Update(name string, st State) ([]byte, error) {
	m.raiseMu.Lock()
	defer m.raiseMu.Unlock()
	p, err := m.apply(name, st)
	if err != nil {
		return nil, err
	}
	if err := m.space.RaisePrepared(p.ConditionID, p); err != nil {
		return nil, fmt.Errorf("conditions: update %q: %w", name, err) // removed meanwhile
	}
	return slices.Clone(p.EventID), nil
}

// apply stores st as condition name's state, prepares its event and
// writes the component variables; it returns the event to raise.
func (m *Manager) apply(name string, st State) (*events.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	c, ok := m.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	if st.Time.IsZero() {
		st.Time = m.now()
	}
	c.transition(st)
	ev := events.Event{
		EventID:     slices.Clone(st.EventID),
		EventType:   alarmConditionType,
		SourceNode:  c.source(),
		SourceName:  c.spec.SourceName,
		Time:        st.Time,
		Message:     ua.NewLocalizedText(c.message()),
		Severity:    c.severity(),
		ConditionID: c.spec.NodeID,
	}
	for _, comp := range components {
		if k := comp.key(); !standardField(k) {
			if err := ev.Set(k, comp.value(c)); err != nil {
				panic("conditions: a component value must make a Variant: " + err.Error())
			}
		}
	}
	p, err := m.space.PrepareEvent(c.spec.NodeID, ev)
	if err != nil {
		return nil, fmt.Errorf("conditions: update %q: %w", name, err)
	}
	c.last = p
	for k, comp := range components {
		// The event's own Variant: the variables show what the event
		// carries, and a Variant cannot fail to be set.
		_ = c.vars[k].Set(p.Field(comp.key()), ua.StatusOK, st.Time)
	}
	return p, nil
}

// transition stores st as c's state, stamping the TransitionTimes of what
// changed. Manager.mu must be held.
func (c *condition) transition(st State) {
	prev := c.state
	prevSeverity := c.severity()
	at := st.Time
	if st.Enabled != prev.Enabled {
		c.enabledAt = at
	}
	if st.Active != prev.Active {
		c.activeAt = at
	}
	if st.Acked != prev.Acked {
		c.ackedAt = at
	}
	if st.Confirmed != prev.Confirmed {
		c.confirmedAt = at
	}
	if st.Comment != prev.Comment {
		c.commentAt = at
	}
	c.state = st
	if sev := c.severity(); sev != prevSeverity {
		c.lastSeverity, c.lastSeverityAt = prevSeverity, at
	}
}
