// Package events holds the value types of OPC UA events (Part 3 §4.6,
// Part 5 §6.4) that the address space raises and the subscription engine
// delivers: Event, the FieldKey naming an event field by its browse path,
// and constructors for the event types otopcua raises (audit events; the
// alarms and conditions of Part 9 later build theirs the same way).
//
// It is a leaf: it imports gopcua's ua package and the standard library
// only, so that addrspace (which raises events) and subscription (which
// filters and queues them) share the types without importing each other.
//
// # Life of an event
//
//  1. The owner fills an Event: its EventType, Message, Severity and the
//     fields of its type in Fields, keyed by browse path (Field, FieldPath).
//  2. addrspace.AddressSpace.RaiseEvent checks the type, completes the
//     event with Prepare (EventId, ReceiveTime, Time, SourceNode,
//     SourceName, the standard fields as Variants, the type's ancestry) and
//     hands the same *Event to every watcher of every notifier it reaches.
//  3. The subscription engine selects the fields each monitored item asks
//     for (Event.Field) and filters by type (Event.OfType).
//
// # Invariants
//
//   - A prepared Event is immutable: Prepare copies what it is given, and
//     nobody modifies the result (watchers share it).
//   - EventIDs made by NewEventID are unique within the process and, with
//     overwhelming probability, across restarts and servers (a random
//     64-bit prefix per process and a counter).
package events
