// Package addrspace is otopcua's OPC UA address space: the nodes, their
// attributes and references, the live Values of its variables and the
// events its notifiers report. It serves the service layer
// (uaserver.NodeStore: Read, Write, Browse, TranslateBrowsePath) and the
// subscription engine (subscription.Source and subscription.EventSource via
// AddressSpace.Source: Read, Watch, WatchEvents and the event type checks).
//
// # What it holds
//
// New starts from namespace 0 of the OPC UA standard nodeset (every node of
// gopcua's embedded Opc.Ua.NodeSet2.xml with its attributes, the values the
// nodeset gives, and every reference stored in both directions). The nodeset
// is compiled once into ns0.bin.gz (see ns0Table) so that New costs a few
// milliseconds instead of a quarter of a second of XML parsing. The owner
// adds namespaces (AddNamespace keeps Server_NamespaceArray current) and
// nodes (AddFolder, AddObject, AddVariable, AddProperty, AddReference).
//
// # Events
//
// The owner raises an event with RaiseEvent(node, events.Event): the
// address space checks its EventType (BaseEventType or a subtype),
// completes it (events.Event.Prepare: EventId, times, SourceNode and
// SourceName, the type's ancestry) and hands the one immutable event to the
// watchers of every notifier it reaches: node itself when it is a notifier,
// the notifiers above it along inverse HasEventSource references
// (HasNotifier is a subtype), each once, and always the Server object
// (i=2253), whose EventNotifier is SubscribeToEvents in the standard
// nodeset. SetEventNotifier makes the owner's objects notifiers. The
// alarms and conditions of Part 9 raise their condition events the same
// way; an event's ConditionID is what an empty select-clause path with
// AttributeId NodeId selects. An owner that must keep the event its
// subscribers saw (a condition's last event, sent again by
// ConditionRefresh) splits the raise: PrepareEvent completes it,
// RaisePrepared reports that same event. Notifiers names the notifiers an
// event on a node reaches, EventTypes a type's ancestry (what HistoryRead
// needs to filter stored events by type). SetExecutable marks the methods
// the server implements; the standard nodeset's start not executable.
//
// # Concurrency
//
// One RWMutex (AddressSpace.mu) guards the structure: the node table, every
// node attribute except the Value, and the references. Readers (Read,
// Browse, TranslateBrowsePath, Watch) take it shared; node management takes
// it exclusive. The Value of a variable lives outside it, in its Variable:
// an atomic pointer to an immutable *ua.DataValue, so producers (Variable.Set)
// and readers never contend on the structure lock, and the Read/Set data race
// of gopcua's own server cannot happen here. Each Variable keeps its watchers
// in a watchList: O(1) edits under the list's own mutex and an immutable
// snapshot, rebuilt once after edits, that Set walks. Set calls the
// watchers synchronously, on the producer's goroutine, with no lock held.
// Event notifiers keep their event watchers in the same watchList type, and
// RaiseEvent likewise calls them with no lock held, after it released mu.
// Lock order: nsMu, then mu, then a watchList's mu (see
// locksordering.txt).
//
// # Invariants
//
//  1. A stored DataValue is never modified; Set and Write store new ones.
//  2. Every reference is held twice, forward by its source and inverse by its
//     target; AddReference, DeleteReference and DeleteNode keep both.
//  3. A type node's super is the source of its inverse HasSubtype reference;
//     IncludeSubtypes and DataType checks walk that chain.
//  4. Namespace 0 nodes are never created or deleted by the owner; their
//     references and access levels may be changed (the Server object's
//     redundancy nodes are).
//
// # Duties of the owner
//
//  1. Register the server's namespace first (index 1 is the server's own
//     ApplicationUri by Part 5) and every other namespace before adding nodes
//     in it.
//  2. Give every Variable a DataType and access level that match what it
//     Sets: Set does not type-check (client writes are checked).
//  3. Keep WriteHook, Getter, Watch and WatchEvents callbacks short and
//     non-blocking; they run on service or producer goroutines.
//  4. Raise events with an EventType of the standard nodeset (the address
//     space has no ObjectType of the owner's own yet) and fill the fields
//     that type declares; RaiseEvent does not check Fields against the
//     type.
package addrspace
