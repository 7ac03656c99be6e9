package dataplane

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

// mirrorNode is one node of a device's mirrored upstream subtree in the
// Space, and the definition it was built from.
type mirrorNode struct {
	def drivers.MirrorNode
	v   *addrspace.Variable // nil for a folder
}

// MirrorNodeID is the NodeId of a mirrored node: ns=N;s=<device>/<key>
// (drivers.MirrorKey of its browse path from the mirrored root), so the
// same upstream subtree has the same NodeIds on every node of the set and
// across restarts.
func (s *Space) MirrorNodeID(device, key string) *ua.NodeID {
	return ua.NewStringNodeID(s.ns, device+"/"+key)
}

// MirrorVariable returns the Variable of a mirrored node, or nil.
func (s *Space) MirrorVariable(device, key string) *addrspace.Variable {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.mirrors[device][key]; n != nil {
		return n.v
	}
	return nil
}

// ApplyMirror makes the device's mirrored subtree exactly nodes (parents
// before children): a node that is unchanged keeps its NodeId, Variable,
// value and subscribers; one that went is removed with its descendants;
// one whose attributes changed is replaced (with its descendants). The
// device's folder must be in the Space. The root is refused when a tag of
// the device has its NodeId.
func (s *Space) ApplyMirror(device string, nodes []drivers.MirrorNode) ApplyReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rep ApplyReport
	if !s.devs[device] {
		rep.Failed = append(rep.Failed, fmt.Errorf("mirror of device %s: the device is not deployed", device))
		return rep
	}
	cur := s.mirrors[device]
	if cur == nil {
		cur = map[string]*mirrorNode{}
		s.mirrors[device] = cur
	}
	want := make(map[string]drivers.MirrorNode, len(nodes))
	for _, n := range nodes {
		want[n.Key] = n
	}
	s.removeMirrorLocked(device, func(key string, n *mirrorNode) bool {
		w, ok := want[key]
		return !ok || !reflect.DeepEqual(w, n.def)
	}, &rep)
	s.mirrors[device] = cur
	for _, n := range nodes {
		if cur[n.Key] != nil {
			rep.Kept++
			continue
		}
		parent := s.DeviceNodeID(device)
		if len(n.Path) > 1 {
			pk := drivers.MirrorKey(n.Path[:len(n.Path)-1])
			if p := cur[pk]; p == nil || p.v != nil {
				continue // its parent failed or is not a folder
			}
			parent = s.MirrorNodeID(device, pk)
		} else if s.tags[device+"/"+n.Key] != nil {
			rep.Failed = append(rep.Failed, fmt.Errorf("mirror of device %s: the root %s has the NodeId of the tag %s", device, n.Key, n.Key))
			continue
		}
		mn, err := s.addMirrorLocked(device, n, parent)
		if err != nil {
			rep.Failed = append(rep.Failed, fmt.Errorf("mirror of device %s: %s: %w", device, n.Key, err))
			continue
		}
		cur[n.Key] = mn
		rep.Added++
	}
	return rep
}

// removeMirrorLocked removes the device's mirrored nodes for which drop
// is true, and their descendants, deepest first. mu must be held.
func (s *Space) removeMirrorLocked(device string, drop func(key string, n *mirrorNode) bool, rep *ApplyReport) {
	cur := s.mirrors[device]
	keys := sortedKeys(cur)
	sort.SliceStable(keys, func(i, j int) bool { return len(cur[keys[i]].def.Path) < len(cur[keys[j]].def.Path) })
	gone := map[string]bool{}
	for _, k := range keys {
		n := cur[k]
		parentGone := len(n.def.Path) > 1 && gone[drivers.MirrorKey(n.def.Path[:len(n.def.Path)-1])]
		gone[k] = parentGone || drop(k, n)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if !gone[k] {
			continue
		}
		for _, child := range []string{"EURange", "EngineeringUnits"} {
			_ = s.as.DeleteNode(s.MirrorNodeID(device, drivers.MirrorKey(append(append([]string(nil), cur[k].def.Path...), child))))
		}
		if err := s.as.DeleteNode(s.MirrorNodeID(device, k)); err != nil && !errors.Is(err, addrspace.ErrUnknownNode) {
			rep.Failed = append(rep.Failed, fmt.Errorf("mirror of device %s: remove %s: %w", device, k, err))
			continue
		}
		delete(cur, k)
		rep.Removed++
	}
	if len(cur) == 0 {
		delete(s.mirrors, device)
	}
}

// addMirrorLocked adds one mirrored node below parent. mu must be held.
func (s *Space) addMirrorLocked(device string, n drivers.MirrorNode, parent *ua.NodeID) (*mirrorNode, error) {
	nid := s.MirrorNodeID(device, n.Key)
	browseName := fmt.Sprintf("%d:%s", s.ns, n.Path[len(n.Path)-1])
	if n.Folder {
		if err := s.as.AddFolder(nid, browseName, n.DisplayName, parent); err != nil {
			return nil, err
		}
		return &mirrorNode{def: n}, s.as.SetDescription(nid, n.Description)
	}
	lvl := byte(ua.AccessLevelTypeCurrentRead)
	if n.Writable {
		lvl |= byte(ua.AccessLevelTypeCurrentWrite)
	}
	v, err := s.as.AddVariable(nid, browseName, n.DisplayName, parent, ua.NewNumericNodeID(0, n.DataType), nil, lvl)
	if err != nil {
		return nil, err
	}
	v.SetDataValue(&ua.DataValue{EncodingMask: ua.DataValueStatusCode | ua.DataValueServerTimestamp,
		Status: ua.StatusBadNoCommunication, ServerTimestamp: s.as.Clock().Now()})
	if n.ValueRank != -1 {
		if err := s.as.SetValueRank(nid, n.ValueRank, []uint32{0}); err != nil {
			return nil, err
		}
	}
	if err := s.as.SetDescription(nid, n.Description); err != nil {
		return nil, err
	}
	prop := func(name string, dt uint32, value any) error {
		pid := s.MirrorNodeID(device, drivers.MirrorKey(append(append([]string(nil), n.Path...), name)))
		_, err := s.as.AddProperty(pid, "0:"+name, nid, ua.NewNumericNodeID(0, dt), ua.MustVariant(ua.NewExtensionObject(value)))
		return err
	}
	if n.EURange != nil {
		if err := prop("EURange", id.Range, n.EURange); err != nil {
			return nil, err
		}
	}
	if n.EngineeringUnits != nil {
		if err := prop("EngineeringUnits", id.EUInformation, n.EngineeringUnits); err != nil {
			return nil, err
		}
	}
	return &mirrorNode{def: n, v: v}, nil
}

// SetMirrorReading stores one reading of a mirrored Variable as
// SetReading does for a tag.
func (s *Space) SetMirrorReading(device, key string, value any, status ua.StatusCode, at time.Time) error {
	v := s.MirrorVariable(device, key)
	if v == nil {
		return fmt.Errorf("dataplane: no mirrored node %s/%s", device, key)
	}
	return setReading(s, v, value, status, at)
}

// dropMirrorsLocked removes the mirrored nodes of the devices keep does
// not keep. mu must be held.
func (s *Space) dropMirrorsLocked(keep map[string]bool, rep *ApplyReport) {
	for _, dev := range sortedKeys(s.mirrors) {
		if !keep[dev] {
			s.removeMirrorLocked(dev, func(string, *mirrorNode) bool { return true }, rep)
		}
	}
}
