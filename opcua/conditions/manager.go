package conditions

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/events"
)

// Manager owns the condition instances of one server: their nodes, their
// state and events, and the condition methods (Acknowledge, Confirm,
// Enable, Disable, AddComment, ConditionRefresh, ConditionRefresh2). All
// methods are safe for concurrent use. See the package documentation.
type Manager struct {
	srv     *opcua.Server
	space   *addrspace.AddressSpace
	actions Actions

	// raiseMu orders the events of the conditions: Update holds it from
	// its state change through the raise, ConditionRefresh from its
	// snapshot through the injection, so a refresh never delivers a state
	// older than one raised after it started. Taken before mu.
	raiseMu sync.Mutex

	mu      sync.Mutex
	byName  map[string]*condition // mu must be held.
	byNode  map[string]*condition // by the condition object's NodeId text; mu must be held.
	sources map[[2]string]int     // conditions per (Parent, SourceNode) HasEventSource reference; mu must be held.
	closed  bool                  // mu must be held.
}

// NewManager returns the Manager of srv's conditions and registers the
// condition methods with srv (marking them executable). actions carries
// out what clients call. One Manager per Server: a second one on the same
// server panics, its methods being taken.
func NewManager(srv *opcua.Server, actions Actions) *Manager {
	if srv == nil || actions == nil {
		panic("conditions: NewManager needs a server and the Actions")
	}
	m := &Manager{
		srv:     srv,
		space:   srv.AddressSpace(),
		actions: actions,
		byName:  make(map[string]*condition),
		byNode:  make(map[string]*condition),
		sources: make(map[[2]string]int),
	}
	for _, mid := range allMethodIDs {
		if err := srv.RegisterMethod(nsid(mid), m.method(mid)); err != nil {
			panic("conditions: one Manager per Server: the condition methods are registered already: " + err.Error())
		}
	}
	return m
}

// Close unregisters the condition methods (calls answer BadMethodInvalid)
// and stops the Manager: Define and Update then fail with ErrClosed. The
// condition nodes stay. It is safe to call more than once.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	for _, mid := range allMethodIDs {
		m.srv.UnregisterMethod(nsid(mid))
	}
}

// Define builds the instance nodes of s (see the package documentation)
// with the initial state: enabled, inactive, acknowledged, confirmed, not
// retained, Quality Good, Spec's Severity and Message, and no event yet.
// Defining the same Spec again does nothing; a Spec whose Name or NodeId a
// different condition has fails with ErrConflict (Remove it first), an
// incomplete one with ErrInvalidSpec; a NodeId some other node has fails
// with addrspace.ErrNodeExists. A failed Define leaves nothing behind.
func (m *Manager) Define(s Spec) error {
	if err := m.check(s); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if c, ok := m.byName[s.Name]; ok {
		if c.spec.equal(s) {
			return nil
		}
		return fmt.Errorf("%w: %q is defined with another spec", ErrConflict, s.Name)
	}
	if c, ok := m.byNode[s.NodeID.String()]; ok {
		return fmt.Errorf("%w: %s is condition %q", ErrConflict, s.NodeID, c.spec.Name)
	}
	now := m.space.Clock().Now()
	c := &condition{
		spec:      s,
		state:     State{Enabled: true, Acked: true, Confirmed: true, Quality: ua.StatusOK, Time: now},
		enabledAt: now, activeAt: now, ackedAt: now, confirmedAt: now,
		lastSeverity: s.Severity, lastSeverityAt: now, commentAt: now,
	}
	if err := m.build(c); err != nil {
		m.unbuild(c)
		return fmt.Errorf("conditions: define %q: %w", s.Name, err)
	}
	m.byName[s.Name] = c
	m.byNode[s.NodeID.String()] = c
	return nil
}

// check validates a Spec.
func (m *Manager) check(s Spec) error {
	switch {
	case s.Name == "":
		return fmt.Errorf("%w: Name is required", ErrInvalidSpec)
	case s.NodeID == nil || s.NodeID.Type() != ua.NodeIDTypeString || s.NodeID.StringID() == "":
		return fmt.Errorf("%w: NodeID of %q must be a String NodeId, got %v", ErrInvalidSpec, s.Name, s.NodeID)
	case s.Parent == nil:
		return fmt.Errorf("%w: Parent of %q is required", ErrInvalidSpec, s.Name)
	}
	return nil
}

// build creates c's nodes and references. m.mu must be held.
func (m *Manager) build(c *condition) error {
	s := c.spec
	cond := s.NodeID
	if err := m.space.AddObject(cond, fmt.Sprintf("%d:%s", cond.Namespace(), s.Name), s.Name, s.Parent, alarmConditionType); err != nil {
		return err
	}
	c.nodes = append(c.nodes, cond)
	// AddObject links a folder's child by Organizes; Part 9 has the
	// condition a component of its parent.
	if err := m.space.DeleteReference(s.Parent, organizes, cond); err != nil {
		return err
	}
	if err := m.space.AddReference(s.Parent, hasComponent, cond); err != nil {
		return err
	}
	if err := m.addComponents(c); err != nil {
		return err
	}
	for _, mid := range conditionMethodIDs {
		if err := m.space.AddReference(cond, hasComponent, nsid(mid)); err != nil {
			return err
		}
	}
	return m.linkEvents(c)
}

// addComponents adds the component variables of c. m.mu must be held.
func (m *Manager) addComponents(c *condition) error {
	cond := c.spec.NodeID
	c.vars = make([]*addrspace.Variable, len(components))
	for k, comp := range components {
		parent := cond
		if len(comp.path) > 1 {
			parent = component{path: comp.path[:len(comp.path)-1]}.nodeID(cond)
		}
		nid := comp.nodeID(cond)
		browse := "0:" + comp.path[len(comp.path)-1]
		var v *addrspace.Variable
		var err error
		if comp.typeDef == 0 {
			v, err = m.space.AddProperty(nid, browse, parent, nsid(comp.dataType), comp.value(c))
		} else {
			v, err = m.space.AddVariable(nid, browse, "", parent, nsid(comp.dataType), comp.value(c), readOnly)
		}
		if err != nil {
			return err
		}
		c.nodes = append(c.nodes, nid)
		c.vars[k] = v
		if comp.typeDef != 0 {
			if err := m.retype(nid, nsid(comp.typeDef)); err != nil {
				return err
			}
		}
	}
	return nil
}

// retype replaces the BaseDataVariableType AddVariable gives nid by typ.
func (m *Manager) retype(nid, typ *ua.NodeID) error {
	if err := m.space.DeleteReference(nid, hasTypeDefinition, baseDataVariable); err != nil {
		return err
	}
	return m.space.AddReference(nid, hasTypeDefinition, typ)
}

// linkEvents makes the condition's events reach its parent and the Server
// object: the condition and its parent become notifiers, Server
// -HasNotifier-> Parent -HasEventSource-> condition and SourceNode, and
// SourceNode -HasCondition-> condition. m.mu must be held.
func (m *Manager) linkEvents(c *condition) error {
	s := c.spec
	if err := m.space.SetEventNotifier(s.NodeID, addrspace.SubscribeToEvents); err != nil {
		return err
	}
	bits, err := m.eventNotifier(s.Parent)
	if err != nil {
		return err
	}
	if err := m.space.SetEventNotifier(s.Parent, bits|addrspace.SubscribeToEvents|addrspace.HistoryRead); err != nil {
		return err
	}
	if !events.SameNode(s.Parent, serverObject) {
		if err := m.space.AddReference(serverObject, hasNotifier, s.Parent); err != nil {
			return err
		}
	}
	if err := m.space.AddReference(s.Parent, hasEventSource, s.NodeID); err != nil {
		return err
	}
	if s.SourceNode == nil {
		return nil
	}
	if err := m.space.AddReference(s.SourceNode, hasCondition, s.NodeID); err != nil {
		return err
	}
	if err := m.space.AddReference(s.Parent, hasEventSource, s.SourceNode); err != nil {
		return err
	}
	m.sources[sourceKey(s)]++
	c.linked = true
	return nil
}

func sourceKey(s Spec) [2]string { return [2]string{s.Parent.String(), s.SourceNode.String()} }

// eventNotifier reads the EventNotifier attribute of an object.
func (m *Manager) eventNotifier(n *ua.NodeID) (byte, error) {
	dv := m.space.Read(&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDEventNotifier}, ua.TimestampsToReturnNeither)
	if dv.Status != ua.StatusOK || dv.Value == nil {
		return 0, fmt.Errorf("%w: parent %s is not an object (%v)", ErrInvalidSpec, n, dv.Status)
	}
	b, _ := dv.Value.Value().(byte)
	return b, nil
}

// unbuild deletes what build created of c. m.mu must be held.
func (m *Manager) unbuild(c *condition) {
	for _, n := range slices.Backward(c.nodes) {
		_ = m.space.DeleteNode(n) // its references go with it
	}
	s := c.spec
	if !c.linked {
		return // no source, or build failed before linking it
	}
	c.linked = false
	k := sourceKey(s)
	if m.sources[k]--; m.sources[k] == 0 {
		delete(m.sources, k)
		_ = m.space.DeleteReference(s.Parent, hasEventSource, s.SourceNode)
	}
}

// Remove deletes condition name's nodes (the deployment no longer has it).
// The parent stays an event notifier linked from the Server object; its
// HasEventSource reference to the source goes with the last condition of
// that source under it. ErrUnknown when name is not defined.
func (m *Manager) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	m.unbuild(c)
	delete(m.byName, name)
	delete(m.byNode, c.spec.NodeID.String())
	return nil
}

// Names returns the defined conditions' names, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.byName))
	for n := range m.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Snapshot returns condition name's current state and the EventId of its
// last event (nil before the first Update); ok is false when name is not
// defined.
func (m *Manager) Snapshot(name string) (State, []byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.byName[name]
	if !ok {
		return State{}, nil, false
	}
	var last []byte
	if c.last != nil {
		last = slices.Clone(c.last.EventID)
	}
	return c.state, last, true
}

// lookupNode returns the name of the condition whose object is n.
func (m *Manager) lookupNode(n *ua.NodeID) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.byNode[n.String()]
	if !ok {
		return "", false
	}
	return c.spec.Name, true
}

// now is the address space's clock.
func (m *Manager) now() time.Time { return m.space.Clock().Now() }
