package addrspace

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Sentinel errors of the node-management methods.
var (
	ErrUnknownNode    = errors.New("addrspace: unknown node")
	ErrNotVariable    = errors.New("addrspace: node is not a variable")
	ErrNodeExists     = errors.New("addrspace: node already exists")
	ErrNotReference   = errors.New("addrspace: node is not a reference type")
	ErrBadNamespace   = errors.New("addrspace: namespace index not registered")
	ErrStandardNodeID = errors.New("addrspace: namespace 0 is reserved for the standard nodes")
)

// StandardNamespaceURI is the URI of namespace 0.
const StandardNamespaceURI = "http://opcfoundation.org/UA/"

// WriteHook decides a client write of the Value attribute after the address
// space has checked node, attribute, access level and type. It returns:
//
//   - ua.StatusOK: the value is stored and the client gets Good;
//   - WriteHandled: the hook took the write over (forwarded it to a device,
//     reverted it, ...): nothing is stored and the client gets Good;
//   - any other code: nothing is stored and the client gets that code.
//
// Hooks run on the service goroutine of the writing client with no lock of
// the address space held (they may call Set or Read) and must not block.
// dv must not be modified.
type WriteHook func(id *ua.NodeID, dv *ua.DataValue) ua.StatusCode

// WriterHook is a WriteHook told who writes: w is the client's session and
// request when the write came through WriteAs (the OPC UA Write service),
// nil when it came through Write. Same results and rules as WriteHook.
type WriterHook func(w *uaserver.Writer, id *ua.NodeID, dv *ua.DataValue) ua.StatusCode

// WriteHandled is the WriteHook result meaning "accepted, not stored by the
// address space". It is ua.StatusGoodCompletesAsynchronously, which clients
// never see: Write reports ua.StatusOK in its place.
const WriteHandled ua.StatusCode = 0x002E0000

// Options tune an AddressSpace. Zero values take the documented defaults.
type Options struct {
	// Clock stamps server timestamps of Set and of reads.
	// Default: the real clock.
	Clock clockwork.Clock
}

// AddressSpace is a thread-safe OPC UA address space holding the standard
// namespace 0 and the nodes its owner adds. See the package documentation
// for the locking model.
type AddressSpace struct {
	clock clockwork.Clock

	nsMu sync.Mutex // serialises AddNamespace; taken before mu

	mu         sync.RWMutex
	nodes      map[nodeKey]*node // mu
	namespaces []string          // mu
	nsArray    *Variable         // Server_NamespaceArray, immutable

	hook atomic.Pointer[WriteHook] // the global write hook
}

// New builds an address space holding namespace 0 of the OPC UA standard
// nodeset. The first namespace added with AddNamespace gets index 1, which
// Part 5 reserves for the server's own ApplicationUri.
func New(opts Options) *AddressSpace {
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	as := &AddressSpace{clock: opts.Clock, namespaces: []string{StandardNamespaceURI}}
	as.nodes = standardNodes().instantiate(as)
	nsArray := as.nodes[numKey(id.Server_NamespaceArray)]
	if nsArray == nil || nsArray.v == nil {
		panic("addrspace: the standard nodeset has no Server_NamespaceArray variable")
	}
	as.nsArray = nsArray.v
	as.publishNamespaces()
	return as
}

// Clock returns the clock the address space stamps server timestamps with.
func (as *AddressSpace) Clock() clockwork.Clock { return as.clock }

// AddNamespace registers uri and returns its namespace index; a URI already
// registered keeps its index. Server_NamespaceArray follows at once.
func (as *AddressSpace) AddNamespace(uri string) uint16 {
	as.nsMu.Lock()
	defer as.nsMu.Unlock()
	as.mu.Lock()
	if i := slices.Index(as.namespaces, uri); i >= 0 {
		as.mu.Unlock()
		return uint16(i)
	}
	as.namespaces = append(as.namespaces, uri)
	idx := uint16(len(as.namespaces) - 1)
	as.mu.Unlock()
	as.publishNamespaces()
	return idx
}

// Namespaces returns a copy of the namespace table, index 0 first.
func (as *AddressSpace) Namespaces() []string {
	as.mu.RLock()
	defer as.mu.RUnlock()
	return slices.Clone(as.namespaces)
}

// publishNamespaces stores the namespace table in Server_NamespaceArray.
// nsMu must be held (or the address space not yet shared).
func (as *AddressSpace) publishNamespaces() {
	as.mu.RLock()
	ns := slices.Clone(as.namespaces)
	as.mu.RUnlock()
	if err := as.nsArray.Set(ns, ua.StatusOK, time.Time{}); err != nil {
		panic("addrspace: a []string must make a Variant: " + err.Error())
	}
}

// SetWriteHook installs h as the global write hook, run before any per-node
// hook on every client write; nil removes it.
func (as *AddressSpace) SetWriteHook(h WriteHook) {
	if h == nil {
		as.hook.Store(nil)
		return
	}
	as.hook.Store(&h)
}

// Variable returns the handle of variable id.
func (as *AddressSpace) Variable(nid *ua.NodeID) (*Variable, error) {
	if nid == nil {
		return nil, ErrUnknownNode
	}
	as.mu.RLock()
	n := as.nodes[keyOf(nid)]
	as.mu.RUnlock()
	switch {
	case n == nil:
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, nid)
	case n.class != ua.NodeClassVariable:
		return nil, fmt.Errorf("%w: %s", ErrNotVariable, nid)
	}
	return n.v, nil
}

// SetValue is Variable(id).Set for cold paths that hold a NodeId.
func (as *AddressSpace) SetValue(nid *ua.NodeID, value any, status ua.StatusCode, sourceTime time.Time) error {
	v, err := as.Variable(nid)
	if err != nil {
		return err
	}
	return v.Set(value, status, sourceTime)
}

// Len returns the number of nodes.
func (as *AddressSpace) Len() int {
	as.mu.RLock()
	defer as.mu.RUnlock()
	return len(as.nodes)
}

// lookup returns node nid or nil. mu must be held.
func (as *AddressSpace) lookup(nid *ua.NodeID) *node {
	if nid == nil {
		return nil
	}
	return as.nodes[keyOf(nid)]
}
