package uaserver

import (
	"github.com/gopcua/opcua/ua"
)

// NodeStore is the address space as the service layer sees it. Every method
// is safe for concurrent use, never blocks on I/O and never panics on
// client-supplied input (a bad NodeId or attribute is a status, not a crash).
// Writer is the client a write comes from: its session, the request's
// RequestHandle and the WriteValue's index in the request.
type Writer struct {
	Session SessionInfo
	Handle  uint32
	Index   int
}

// WriterStore is a NodeStore told who writes: the Write service calls
// WriteAs in place of Write when the store has it, after the session's
// rights were checked. WriteAs answers as Write does.
type WriterStore interface {
	WriteAs(w Writer, wv *ua.WriteValue) ua.StatusCode
}

type NodeStore interface {
	// Read answers one ReadValueID, applying ttr to the timestamps of the
	// returned DataValue. Unknown node: Status BadNodeIdUnknown; attribute the
	// node class does not have: BadAttributeIdInvalid; a non-empty IndexRange
	// on a value that cannot be indexed: BadIndexRangeInvalid.
	Read(rv *ua.ReadValueID, ttr ua.TimestampsToReturn) *ua.DataValue

	// Write applies one WriteValue sent by a client and returns its status:
	// Good, BadNodeIdUnknown, BadAttributeIdInvalid, BadNotWritable (no
	// CurrentWrite in AccessLevel/UserAccessLevel, or not the Value
	// attribute), BadTypeMismatch, BadWriteNotSupported.
	Write(wv *ua.WriteValue) ua.StatusCode

	// Browse returns every reference of desc.NodeID that matches desc
	// (BrowseDirection, ReferenceTypeID with IncludeSubtypes, NodeClassMask),
	// with the fields of each ReferenceDescription filled as ResultMask asks.
	// Paging (RequestedMaxReferencesPerNode, continuation points) is the
	// service layer's job. Status: Good, BadNodeIdUnknown,
	// BadReferenceTypeIDInvalid, BadBrowseDirectionInvalid.
	Browse(desc *ua.BrowseDescription) ([]*ua.ReferenceDescription, ua.StatusCode)

	// TranslateBrowsePath resolves one BrowsePath (Part 4 §5.8.4).
	TranslateBrowsePath(p *ua.BrowsePath) *ua.BrowsePathResult
}
