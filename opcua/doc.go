// Package opcua is otopcua's OPC UA server with the redundancy surface that
// SCADA and HMI clients read to choose a server of a non-transparent
// redundant set (Part 4 §6.6.2, Part 5 §6.3.7–6.3.9).
//
// New composes three packages: addrspace (the nodes), subscription (the
// monitored-item engine, reading the address space through
// AddressSpace.Source) and uaserver (the opc.tcp service layer over the
// address space). It then fills the Server object (i=2253):
//
//   - ServiceLevel (i=2267): Byte, read-only for clients (a Write answers
//     BadNotWritable), 255 until the first SetServiceLevel; every
//     SetServiceLevel is a data change for subscribers.
//   - ServerArray (i=2254): this server's ApplicationURI, then
//     Config.PeerApplicationURIs.
//   - NamespaceArray (i=2255): kept current by the address space; namespace
//     1 is this server's ApplicationURI.
//   - ServerStatus (i=2256) and its children: StartTime, CurrentTime (the
//     time of each read; pushed to subscribers every second), State Running,
//     BuildInfo, SecondsTillShutdown, ShutdownReason.
//   - ServerRedundancy (i=2296), retyped from ServerRedundancyType to
//     NonTransparentRedundancyType (i=2039), with the properties
//     RedundancySupport (i=3709, Warm, Hot or HotAndMirrored), ServerUriArray (i=11314,
//     every server of the set, this one first) and RedundantServerArray
//     (i=11313). RedundantServerArray is optional for NonTransparent
//     redundancy; it is published so that a client connected to any one
//     server sees each server's ServiceLevel and state: this server's live,
//     the peers' as SetPeerStatus last reported (ServiceLevel 0, state
//     Unknown until then).
//   - ServerCapabilities: the operation limits the service layer enforces
//     (MaxNodesPerHistoryReadEvents among them), MaxBrowseContinuationPoints,
//     MaxHistoryContinuationPoints, MaxSessions, MaxSelectClauseParameters
//     and MaxWhereClauseParameters (the engine's EventFilter bounds);
//     HistoryServerCapabilities AccessHistoryEventsCapability (true while
//     an event history is set) and MaxReturnEventValues; Auditing false
//     (the server raises audit events for writes only).
//   - The Server object is an event notifier (EventNotifier
//     SubscribeToEvents): clients create event monitored items on it, and
//     every event raised with AddressSpace().RaiseEvent reaches it (the
//     engine gets the address space as its EventSource).
//   - ServerDiagnostics (i=2274): EnabledFlag (i=2294) true and read-only;
//     ServerDiagnosticsSummary (i=2275, ServerDiagnosticsSummaryDataType)
//     and its UInt32 children from the service layer's and the engine's
//     Stats: current and cumulated sessions and subscriptions, rejected
//     sessions and requests (ServiceFaults), session timeouts, publishing
//     intervals in use; ServerViewCount, SessionAbortCount and the
//     SecurityRejected counts are 0. A client Read computes them at the
//     read; the status tick (1 s) stores the changed ones, which is what
//     subscribers see. The engine reads them through diagSource, never
//     through a Getter: it may read with its locks held, which
//     Engine.Stats takes (diagnostics.go).
//
// RegisterMetrics adds the OPC UA load gauges and the limit refusal counter
// to an OTel meter (metrics.go lists the names).
//
// # Hooks for other packages
//
// Packages that add behaviour on top of the server (opcua/conditions, the
// Part 9 conditions) import this one and use: RegisterMethod (an
// executable method behind Call, marked Executable in the address space),
// InjectEvents (events for the event items of one subscription of one
// session: ConditionRefresh) and SetEventHistory (the store HistoryRead
// with ReadEventDetails reads; it sets the HistoryRead bit of the Server
// object's EventNotifier).
//
// # ServiceLevel publishers
//
// The redundancy layer computes ServiceLevel before the server may exist.
// It publishes through a ServiceLevelPublisher: NullServiceLevelPublisher
// (drops; a node without an endpoint), DeferredServiceLevelPublisher (keeps
// the latest level until Bind, then forwards) and ServerServiceLevelPublisher
// (writes into a started Server).
//
// # Duties of the caller
//
//  1. Give every server of a set its own ApplicationURI and list the others
//     in PeerApplicationURIs in the same order on every node.
//  2. Add application namespaces and nodes through AddressSpace before or
//     after Start; install write hooks (the primary gate) there.
//  3. Close the Server; it ends every session before stopping the engine.
//
// The server's goroutines (listener, one reader per secure channel, the
// diagnostics tick) are socket I/O loops owned by the Server, outside the
// node's actor tree: a client cannot panic them (malformed requests get a
// status code), and Close ends them all.
package opcua
