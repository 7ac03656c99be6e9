// Package uawire guards gopcua's binary decoder against hostile lengths.
//
// gopcua's ua.Decode allocates a slice of whatever element count the wire
// claims before it reads one element, and nests Variants, DataValues,
// ExtensionObjects and DiagnosticInfos without a bound: a message of a few
// dozen bytes can exhaust memory or the stack and kill the process. Both
// sides of otopcua meet such messages — the server from clients
// (opcua/uaserver), the client from servers (opcua/uaclient) — so both call
// CheckService before ua.DecodeService.
//
// Invariant: a message CheckService accepts decodes with memory
// proportional to its size. CheckService allocates nothing per element.
package uawire
