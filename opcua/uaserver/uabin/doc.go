// Package uabin is otopcua's hand-written OPC UA binary encoder for the
// responses a busy subscription sends all the time: PublishResponse with its
// NotificationMessage (DataChangeNotification, EventNotificationList,
// StatusChangeNotification, keep-alives) and ServiceFault. It appends straight into a caller's buffer
// and allocates nothing for the common values, where gopcua's reflection
// based ua.Encode allocates several small slices per field.
//
// # Invariant
//
// For every value it accepts, the bytes are exactly those ua.Encode writes
// (including gopcua's quirks: a nil pointer to a struct without its own
// Encode method writes nothing, an empty String is the null String, NaN is
// written as the canonical quiet NaN). The property tests in this package
// check that over random responses; FuzzAppendResponse extends them.
//
// # What it handles and what falls back
//
//   - Variants of every scalar builtin type the address space stores in
//     values (Boolean … Double, String, DateTime, ByteString, StatusCode,
//     XmlElement) and one-dimensional arrays of them are written directly,
//     and so are the scalar types events carry besides: NodeId (numeric
//     forms and non-empty String identifiers), LocalizedText and
//     QualifiedName. Any other Variant (a GUID or ByteString NodeId,
//     ExtensionObject, arrays of structures, multi-dimensional arrays, …) is
//     written by its own Encode method, which is what ua.Encode calls for
//     it.
//   - An ExtensionObject in NotificationData whose body is not a
//     DataChangeNotification, EventNotificationList or
//     StatusChangeNotification is written by its own Encode method.
//
// Measured (BenchmarkEncodeEvents, 1,000 AuditWriteUpdateEventType events of
// 14 fields, 2 loaded cores): ua.Encode 13–26 µs per event, the previous
// fallback of the whole EventNotificationList to its Encode method 9.8 µs,
// this encoder 0.3 µs and one allocation per event.
//   - Where ua.Encode would fail or panic (a nil Variant behind a DataValue
//     whose mask announces a value, a nil DataValue, DiagnosticInfo or
//     ExtensionObject type id), the fast path stops with ErrUnhandled and
//     AppendResponse encodes the whole response with ua.Encode instead, so
//     the caller sees gopcua's behaviour.
//   - Response types other than PublishResponse and ServiceFault are
//     encoded with ua.Encode.
package uabin
