// Package drivers is the field-device side of the data plane: one Driver
// per device of a deployment reads the device's tags and writes them. It
// owns the Driver interface and what every driver shares: a Reading's
// status rules (Readings), the type of a tag's value (ValueType) and the
// range-checked conversion of a written value (Convert), the reconnect
// back-off (Backoff), the counters behind Stats, and the Poller that reads a
// driver at its poll interval on an injected clock. The drivers are
// drivers/modbus (Modbus TCP), drivers/simulated (signals for the demo) and
// drivers/opcua (an upstream OPC UA server mirrored by subscription: a
// Pusher, run by the driver host instead of polled; its tags carry the
// upstream's own status codes, see that package).
//
// # Status of a tag
//
// A Reading carries the tag's value, an OPC UA status (Part 4 StatusCode; the
// operation-level codes of Part 8, Data Access) and the source timestamp:
//
//	Good                   the last poll read the tag.
//	BadNoCommunication     the tag has never been read: before the first
//	                       poll, and while the device cannot be reached
//	                       (Part 8: "communication to the data source is
//	                       defined, but not established, and there is no last
//	                       known value available").
//	BadCommunicationError  the tag was read before, and the last poll could
//	                       not read it: no connection (refused, reset, dropped,
//	                       still in back-off), the request timed out, or the
//	                       answer was malformed (garbage, wrong unit or
//	                       transaction, an exception code outside the
//	                       protocol); also a gateway's exception 0A or 0B
//	                       (it cannot reach the device). The last value is
//	                       kept.
//	BadConfigurationError  the device refused the tag's request with Modbus
//	                       exception 01 Illegal Function or 02 Illegal Data
//	                       Address: the deployment names a table or an
//	                       address the device does not have.
//	BadOutOfRange          exception 03 Illegal Data Value (on a write: the
//	                       device refused the value).
//	BadDeviceFailure       exception 04 Server Device Failure, 05
//	                       Acknowledge, 06 Server Device Busy or 08 Memory
//	                       Parity Error: the device answered but could not
//	                       serve the request.
//	BadInternalError       the driver could not make the request (a bug).
//
// An exception is the answer to one request: it marks the tags of that
// request, and the other requests of the poll go on and stay Good. A broken
// connection marks the tags of the failed request and of the rest of the
// poll. Every Bad status keeps the tag's last value. SourceTime is the time
// of the read for Good, truncated to the millisecond (PolledTime); for a Bad
// status it is when the driver first saw that status (Part 4, DataValue: the
// time the source recognized the non-good status),
// and stays while the status stays, so a device that stays down is not a
// change per poll. Before the first poll it is zero.
//
// Writes answer Good or the status StatusOf gives: the exception codes as
// above, BadCommunicationError when there is no connection or it broke,
// BadOutOfRange for a value that does not fit the tag (refused before
// sending, never wrapped), BadTypeMismatch, BadNotWritable,
// BadNodeIdUnknown.
//
// # Invariants
//
//   - A Reading's Value has the Go type ValueType(tag) names, or is nil
//     (never read); it changes only on a good read (or, for a simulated
//     tag, a write).
//   - Read returns one Reading per tag, in the order of Device.Tags.
//   - Nothing a device sends makes a driver panic, block past its request
//     timeout, or leak a goroutine past Close (a connect in progress ends
//     within its dial bound and closes what it opened).
//   - Time comes from Options.Clock; no driver reads the wall clock itself
//     (the Modbus client's socket deadlines are the one exception: I/O).
//
// # The caller's duties
//
//  1. Make one driver per Device with its package's New and one Poller
//     for it; run the Poller's Run on its own goroutine.
//  2. Serve Poll.Readings (value, status, source time) as the tags'
//     Variables, with the DataType of ValueType.
//  3. Write only on the Primary, from any goroutine, and map the result
//     with StatusOf.
//  4. Read Health and Stats for the admin API and the metrics whenever;
//     show a device's state as Condition(Health, now, rule): degraded for
//     a device that takes connections while its reads all fail (ReadRun,
//     DefaultDegraded: 3 failed polls in a row over at least 5 s).
//  5. To stop: cancel the Poller's context, then Close the driver (Close
//     alone also stops Run with ErrClosed). Close never blocks.
package drivers
