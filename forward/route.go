package forward

import (
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/gate"
)

// Mode is OpcUa:WriteMode as the forwarding decision reads it.
type Mode int

const (
	// Optimistic: the reference's mode; a denied write is reverted.
	Optimistic Mode = iota
	// Confirmed: a denied write answers StatusNotPrimary.
	Confirmed
	// Forward: a write or condition method the gate denies on this node
	// is sent to the Primary of its ClusterId.
	Forward
)

// StatusNotPrimary is the status the confirmed mode answers for a denied
// write (dataplane.StatusNotPrimary): what a forwarded request answers
// when no Primary took it within its deadline, nothing executed.
var StatusNotPrimary = ua.StatusBadInvalidState

// Action is what the site does with one request.
type Action int

const (
	// Local: execute here; this node is the Primary (the gate allowed).
	Local Action = iota
	// Send: forward to the Primary.
	Send
	// Refuse: answer Status here, nothing sent, nothing executed.
	Refuse
)

func (a Action) String() string {
	switch a {
	case Local:
		return "local"
	case Send:
		return "send"
	default:
		return "refuse"
	}
}

// RouteInput is everything the routing of one request needs.
type RouteInput struct {
	Mode Mode
	Site gate.Site
	// Permitted: the session on this node holds the right the request
	// needs (write, acknowledge or call).
	Permitted bool
	// Gate is this node's gate decision for Site.
	Gate gate.Decision
}

// Route is the forwarding decision:
//
//	permitted  gate                 site                  mode              →  action  status
//	no         any                  any                   any               →  refuse  BadUserAccessDenied
//	yes        allow                any                   any               →  local   —
//	yes        deny (Detached)      any                   any               →  refuse  StatusNotPrimary
//	yes        deny (other reason)  write, ack            forward           →  send    —
//	yes        deny (other reason)  write, ack            optimistic/confd  →  refuse  StatusNotPrimary
//	yes        deny                 alarm-emit, drain, …  any               →  refuse  StatusNotPrimary
//
// The rights come first: a Viewer's write is refused on the node the
// client is on and never sent. A Detached node is not part of a pair and
// has no Primary to send to. Every other denial (Secondary, role unknown,
// not a member yet, fenced, woken) sends: the Primary's own gate and its
// epoch check decide there, so a stale view here cannot make anything
// execute. In optimistic mode a refused write is the caller's revert.
func Route(in RouteInput) (Action, ua.StatusCode) {
	switch {
	case !in.Permitted:
		return Refuse, ua.StatusBadUserAccessDenied
	case in.Gate.Allow:
		return Local, ua.StatusOK
	case in.Gate.Reason == gate.DeniedDetached, in.Mode != Forward, !Forwardable(in.Site):
		return Refuse, StatusNotPrimary
	}
	return Send, ua.StatusOK
}

// Forwardable reports whether requests at site may be forwarded: a
// client's write and its condition methods, not the node's own detections
// or drain (each node's Primary does those itself).
func Forwardable(s gate.Site) bool {
	return s == gate.SiteWrite || s == gate.SiteAck
}
