package dataplane

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

// NamespaceURI is the namespace of a ClusterId's tags. Every node of the
// set registers it first, right after its own ApplicationUri, so it has
// the same index everywhere (Part 4 §6.6.2.2: identical NodeIds across
// the servers of a redundant set).
func NamespaceURI(clusterID string) string { return "urn:otopcua:cluster:" + clusterID }

// Space keeps the tag nodes of one ClusterId's namespace equal to the
// applied deployment: under Objects one folder per device (NodeId
// ns=N;s=<device>) and in it one Variable per tag (ns=N;s=<device>/<tag>)
// with the tag's DataType and AccessLevel. Apply changes only what the
// new document changes, so a subscription to a tag that stays keeps its
// Variable and its notifications.
//
// Apply is called by one goroutine at a time (the driver host); Variable
// and SetReading may be called concurrently with it and with each other.
type Space struct {
	as *addrspace.AddressSpace
	ns uint16

	mu   sync.RWMutex
	tags map[string]*tagNode // by "<device>/<tag>"; mu must be held.
	devs map[string]bool     // device folders present; mu must be held.
	// mirrors are the mirrored upstream subtrees, by device and
	// drivers.MirrorKey; mu must be held.
	mirrors map[string]map[string]*mirrorNode
}

// tagNode is one tag's Variable and the definition it was built from.
type tagNode struct {
	def deployment.Tag
	v   *addrspace.Variable
}

// NewSpace registers the ClusterId's namespace in as (call it before any
// other namespace is added, so the index is the same on every node).
func NewSpace(as *addrspace.AddressSpace, clusterID string) *Space {
	return &Space{as: as, ns: as.AddNamespace(NamespaceURI(clusterID)), tags: map[string]*tagNode{}, devs: map[string]bool{}, mirrors: map[string]map[string]*mirrorNode{}}
}

// AddressSpace is the address space the Space fills.
func (s *Space) AddressSpace() *addrspace.AddressSpace { return s.as }

// Namespace is the index of the ClusterId's namespace.
func (s *Space) Namespace() uint16 { return s.ns }

// DeviceNodeID and TagNodeID are the NodeIds of a device folder and a tag.
func (s *Space) DeviceNodeID(device string) *ua.NodeID { return ua.NewStringNodeID(s.ns, device) }
func (s *Space) TagNodeID(device, tag string) *ua.NodeID {
	return ua.NewStringNodeID(s.ns, device+"/"+tag)
}

// Variable returns the Variable of a tag, or nil.
func (s *Space) Variable(device, tag string) *addrspace.Variable {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.tags[device+"/"+tag]; n != nil {
		return n.v
	}
	return nil
}

// ApplyReport says what an Apply changed.
type ApplyReport struct {
	Added, Replaced, Removed, Kept int
	// Failed lists the nodes that could not be added or removed; the rest
	// of the document was applied.
	Failed []error
}

// Apply makes the namespace hold exactly doc's devices and tags. A tag
// whose definition changes in a way its node shows (DataType,
// writability) is replaced; one that is unchanged keeps its Variable (and
// its value and subscribers). doc must be valid (deployment.Validate).
func (s *Space) Apply(doc *deployment.Document) ApplyReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rep ApplyReport
	replaced := map[string]bool{}
	want := map[string]deployment.Tag{}
	devices, mirrored := map[string]bool{}, map[string]bool{}
	for _, d := range doc.Devices {
		devices[d.Name] = true
		mirrored[d.Name] = d.Mirror != nil
		for _, t := range d.Tags {
			want[d.Name+"/"+t.Name] = t
		}
	}
	// Remove tags that went or changed shape, then devices that went.
	for _, key := range sortedKeys(s.tags) {
		n := s.tags[key]
		t, ok := want[key]
		if ok && sameNode(n.def, t) {
			n.def = t
			rep.Kept++
			continue
		}
		if err := s.as.DeleteNode(n.v.NodeID()); err != nil && !errors.Is(err, addrspace.ErrUnknownNode) {
			rep.Failed = append(rep.Failed, fmt.Errorf("remove tag %s: %w", key, err))
			continue
		}
		delete(s.tags, key)
		if ok {
			rep.Replaced++
			replaced[key] = true
		} else {
			rep.Removed++
		}
	}
	s.dropMirrorsLocked(mirrored, &rep)
	for _, dev := range sortedKeys(s.devs) {
		if devices[dev] {
			continue
		}
		if err := s.as.DeleteNode(s.DeviceNodeID(dev)); err != nil && !errors.Is(err, addrspace.ErrUnknownNode) {
			rep.Failed = append(rep.Failed, fmt.Errorf("remove device %s: %w", dev, err))
			continue
		}
		delete(s.devs, dev)
	}
	// Add what is new.
	for _, d := range doc.Devices {
		if !s.devs[d.Name] {
			if err := s.as.AddFolder(s.DeviceNodeID(d.Name), d.Name, d.Name, ua.NewNumericNodeID(0, id.ObjectsFolder)); err != nil {
				rep.Failed = append(rep.Failed, fmt.Errorf("add device %s: %w", d.Name, err))
				continue
			}
			s.devs[d.Name] = true
		}
		for _, t := range d.Tags {
			key := d.Name + "/" + t.Name
			if n := s.tags[key]; n != nil {
				s.setHistory(n.v, t, d, &rep)
				continue
			}
			v, err := s.as.AddVariable(s.TagNodeID(d.Name, t.Name), t.Name, t.Name, s.DeviceNodeID(d.Name),
				ua.NewNumericNodeID(0, DataType(t)), nil, AccessLevel(t))
			if err != nil {
				rep.Failed = append(rep.Failed, fmt.Errorf("add tag %s: %w", key, err))
				continue
			}
			// Nothing read yet: null with BadNoCommunication, not Good null.
			v.SetDataValue(&ua.DataValue{EncodingMask: ua.DataValueStatusCode | ua.DataValueServerTimestamp,
				Status: ua.StatusBadNoCommunication, ServerTimestamp: s.as.Clock().Now()})
			s.tags[key] = &tagNode{def: t, v: v}
			s.setHistory(v, t, d, &rep)
			if !replaced[key] {
				rep.Added++
			}
		}
	}
	return rep
}

// setHistory sets the Historizing attribute of a tag's Variable and the
// HistoryRead bit of its AccessLevel as the tag's history settings (or
// its device's) say.
func (s *Space) setHistory(v *addrspace.Variable, t deployment.Tag, d deployment.Device, rep *ApplyReport) {
	on := t.History.Effective(d.History).On()
	lvl := AccessLevel(t)
	if on {
		lvl |= byte(ua.AccessLevelTypeHistoryRead)
	}
	if err := s.as.SetAccessLevel(v.NodeID(), lvl, lvl); err != nil {
		rep.Failed = append(rep.Failed, fmt.Errorf("history of tag %s/%s: %w", d.Name, t.Name, err))
		return
	}
	if err := s.as.SetHistorizing(v.NodeID(), on); err != nil {
		rep.Failed = append(rep.Failed, fmt.Errorf("history of tag %s/%s: %w", d.Name, t.Name, err))
	}
}

// sameNode reports whether a tag's node can stay as it is for the new
// definition: same DataType and the same writability.
func sameNode(a, b deployment.Tag) bool {
	return DataType(a) == DataType(b) && AccessLevel(a) == AccessLevel(b)
}

// DataType is the NodeId (namespace 0) of a tag's OPC UA DataType: the
// type's own, or Double when scale or offset apply.
func DataType(t deployment.Tag) uint32 {
	if t.Scale != nil || t.Offset != nil {
		return id.Double
	}
	return drivers.DataTypeOf(t.Type)
}

// AccessLevel is CurrentRead, plus CurrentWrite for a writable tag.
func AccessLevel(t deployment.Tag) byte {
	l := byte(ua.AccessLevelTypeCurrentRead)
	if t.Writable {
		l |= byte(ua.AccessLevelTypeCurrentWrite)
	}
	return l
}

// SetReading stores one reading of a tag: a Good value as it is; a Bad
// status keeps the last value with the new status (the value a client
// saw last is still there, its quality says it is stale).
func (s *Space) SetReading(device, tag string, value any, status ua.StatusCode, at time.Time) error {
	v := s.Variable(device, tag)
	if v == nil {
		return fmt.Errorf("dataplane: no tag %s/%s", device, tag)
	}
	return setReading(s, v, value, status, at)
}

// setReading is SetReading on a Variable.
func setReading(s *Space, v *addrspace.Variable, value any, status ua.StatusCode, at time.Time) error {
	if status == ua.StatusOK {
		return v.Set(value, status, at)
	}
	last := v.Value()
	dv := &ua.DataValue{
		EncodingMask:    ua.DataValueStatusCode | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Status:          status,
		SourceTimestamp: at,
		ServerTimestamp: s.as.Clock().Now(),
	}
	if last.Value != nil && last.Value.Value() != nil {
		dv.Value = last.Value
		dv.EncodingMask |= ua.DataValueValue
	}
	v.SetDataValue(dv)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
