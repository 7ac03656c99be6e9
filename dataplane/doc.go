// Package dataplane serves a ClusterId's field devices as OPC UA tags: the
// tag namespace kept equal to the applied deployment (Space), readings of
// the drivers stored into it, and client writes routed to the device
// behind the Primary gate.
//
// Invariants:
//   - Tag NodeIds are ns=<N>;s=<device>/<tag> where N is the index of
//     NamespaceURI(ClusterId), registered first on every node of the set,
//     so NodeIds, browse paths and values are identical across the set.
//   - Applying a deployment never replaces the Variable of a tag whose
//     DataType and writability stay: subscriptions to it keep flowing.
//   - A tag never read reads Bad_NoCommunication; after a failed read it
//     keeps its last value with the driver's Bad status.
//
// Runtime: the driver host (driver-host, kind DriverHostActor) and one
// child per device (device-<name>-<n>, DeviceActor) are actors of the
// node's supervision tree (HostOptions.Parent); a device child that panics
// is restarted alone and keeps its driver and connection. The deployment
// Follower is a goroutine the host owns: it is a loop of Config DB reads
// and LocalDb writes (blocking I/O with their own timeouts) whose result
// goes into the driver host through Apply; the write path's confirmation
// wait (Writes) runs on the requesting client's goroutine.
//
// Duties of the caller: call NewSpace before any other namespace is added
// to the address space; call Apply from one goroutine at a time.
package dataplane
