// Package deployment is the unit of configuration of a ClusterId's data
// plane: one versioned JSON document naming the field devices, their tags
// and the scripted alarms over them. It owns the document's types,
// decoding and validation, and the compilation of the alarms' conditions
// (condition.go: CompileAlarms, the typed device.tag environment, the
// bounds on hostile conditions); storing it (configdb's deployments table, the
// LocalDb cache) and applying it (drivers, address space) belong to other
// packages. docs/deployments.md is the format as an OT engineer reads it.
//
// Decode reads the bytes strictly — one JSON object in UTF-8, field names
// as documented and case-sensitive, no field unknown or written twice,
// every value of its JSON type, durations in either of config's forms
// (config.ParseDuration: "00:00:00.100" or "100ms") — and then applies
// every rule of Validate. It reports all problems at once, each with the
// path of the value in the document (devices[0].tags[3].address), the value
// as written and what is accepted, the way package config reports a bad
// appsettings.json.
//
// DecodeTypeless is Decode except that an opcua tag may leave out its
// type: only otopcua deploy calls it, takes the missing types from the
// upstream, writes them into the text with WithTypes (every other byte
// kept) and decodes the result with Decode before storing it.
//
// Invariants:
//
//   - A *Document returned by Decode satisfies every rule: Validate
//     returns nil for it.
//   - Decoding is canonical: json.Marshal of a decoded Document decodes to
//     an equal Document (FuzzDecode checks it). Absent fields, null and
//     empty lists decode to the zero value; Duration zero means "absent,
//     use the default" and MarshalJSON writes the Go form ("100ms").
//   - Problems come in document order (see ValidationError), so the same
//     document always gives the same list.
//   - The package has no state; Decode and Validate are safe to call from
//     any goroutine.
//
// Duties of the caller:
//
//  1. Decode every document before using it (never DecodeTypeless: a
//     node needs every tag's type) — what otopcua deploy stores
//     and what a node reads back from the Config DB or its LocalDb cache
//     alike — and refuse (keep the previous version) when Decode fails:
//     a document stored by an older otopcua may break a newer rule.
//  2. Check that Document.ClusterId is the node's own Node:ClusterId.
//  3. Read the optional fields through their Effective… methods (or the
//     Default… constants) so that every consumer applies the same defaults.
//  4. Treat a decoded Document as read-only; it may be shared.
package deployment
