package forward

import (
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/gate"
)

// Right is the OPC UA right a request needs (OpcUa:Authorization's
// "write", "acknowledge", "call").
type Right string

const (
	RightWrite       Right = "write"
	RightAcknowledge Right = "acknowledge"
	RightCall        Right = "call"
)

// Request is one forwarded operation. Op and Body are the executor's:
// what to do (a tag's NodeId, a condition method) and its encoded
// arguments; forwarding neither reads nor changes them.
type Request struct {
	Key  Key
	Site gate.Site
	// Right is what the session needs; the Primary checks Role for it
	// again with its own OpcUa:Authorization.
	Right Right
	// User and Role are the session's identity on the sending node.
	User, Role string
	// From names the sending node (its ApplicationUri), for the audit.
	From string
	// Epoch is the redundancy epoch of the sender's last snapshot.
	Epoch uint64
	// Budget is what remains of the sender's deadline when it sent; the
	// Primary executes within it.
	Budget time.Duration
	Op     string
	Body   []byte
}

// Outcome says what the sender may do with a Response.
type Outcome int

const (
	// Done: the answer for the client (the execution's result, the first
	// one for this key, or a final refusal such as missing rights).
	Done Outcome = iota
	// Retry: refused before executing (not Primary, stale epoch, too many
	// in flight); nothing executed here, another Primary may take it.
	Retry
	// Pending: executing here; ask the same node again.
	Pending
)

// Response is the Primary's answer.
type Response struct {
	Outcome Outcome
	Status  ua.StatusCode
	Body    []byte
	// Primary names the node that answered, Epoch its epoch when it
	// executed (0 when it did not).
	Primary string
	Epoch   uint64
}
