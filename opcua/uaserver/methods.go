package uaserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
	"github.com/otopcua/otopcua/opcua/subscription"
)

// AnonymousUser is SessionInfo.UserID of a session activated with an
// anonymous (or absent) identity token.
const AnonymousUser = "anonymous"

// SessionInfo describes the session a method call runs in.
type SessionInfo struct {
	// ID is the session as the subscription engine knows it (for
	// subscription.Engine.InjectEvents).
	ID subscription.SessionID
	// NodeID is the SessionId the client got from CreateSession.
	NodeID *ua.NodeID
	// Name is the SessionName the client chose.
	Name string
	// UserID names the session's user: the UserName token's user name,
	// the user a trusted certificate names, or AnonymousUser.
	UserID string
	// Role is the user's role (AnonymousRole for an anonymous session).
	Role string
	// Rights are the role's rights (Config.Authorization).
	Rights Rights
}

// Argument is one input argument of a method, as Call checks it before
// the method runs.
type Argument struct {
	// Name is the argument's name, for logs.
	Name string
	// Type is the built-in type the argument's Variant must hold, e.g.
	// ua.TypeIDByteString; a Variant of another type, a null Variant
	// included, is refused (BadTypeMismatch).
	Type ua.TypeID
}

// MethodCall is one method invocation of a Call request, its arguments
// checked.
type MethodCall struct {
	Session  SessionInfo
	ObjectID *ua.NodeID
	MethodID *ua.NodeID
	// Inputs are the input arguments: as many as Method.Inputs declares,
	// each of its declared type. They are shared with the request and must
	// not be modified.
	Inputs []*ua.Variant
}

// MethodFunc runs one method call and returns its output arguments and its
// status, the CallMethodResult's StatusCode (Good, or the Bad code that
// says why the method did nothing).
//
// It runs on the worker goroutine of the caller's secure channel: every
// later request of that channel waits until it returns, so it must be
// quick and must not block (no I/O, no waiting for another node, no lock
// held for long). ctx is cancelled when the channel closes. A panic
// answers BadInternalError for that method and is logged.
type MethodFunc func(ctx context.Context, c *MethodCall) (outputs []*ua.Variant, status ua.StatusCode)

// Method is an executable method registered with RegisterMethod.
type Method struct {
	// Inputs are the input arguments in order (the method node's
	// InputArguments); Call refuses a call with fewer
	// (BadArgumentsMissing), more (BadTooManyArguments) or of another type
	// (BadInvalidArgument, the argument's InputArgumentResult
	// BadTypeMismatch).
	Inputs []Argument
	// Func runs a checked call. Required.
	Func MethodFunc
	// Right is what the session's role must hold to call the method; a
	// session without it gets BadUserAccessDenied before the arguments
	// are checked. Default (0): RightCall.
	Right Rights
}

// ErrMethodRegistered is returned by RegisterMethod for a method id that
// already has a handler.
var ErrMethodRegistered = errors.New("uaserver: method already registered")

// methodTable holds the registered methods by method NodeId. Its mu is a
// leaf lock: nothing is taken while it is held, and no method runs under it.
type methodTable struct {
	mu      sync.RWMutex
	methods map[events.NodeKey]Method // mu must be held.
}

// RegisterMethod makes method methodID callable: Call runs m.Func for
// every call of methodID on an Object or ObjectType that has the method
// as a component (itself, its type definition or a supertype, Part 4
// §5.11.2). It may be called before or after Start, concurrently with
// calls. The method node must exist in the NodeStore for clients to find
// it; Call does not consult its Executable attributes (the owner sets
// them). ErrMethodRegistered when methodID has a handler.
func (s *Server) RegisterMethod(methodID *ua.NodeID, m Method) error {
	if methodID == nil || m.Func == nil {
		return fmt.Errorf("uaserver: RegisterMethod: a method id and a Func are required")
	}
	t := &s.methods
	t.mu.Lock()
	defer t.mu.Unlock()
	k := events.KeyOf(methodID)
	if _, ok := t.methods[k]; ok {
		return fmt.Errorf("%w: %s", ErrMethodRegistered, methodID)
	}
	if t.methods == nil {
		t.methods = make(map[events.NodeKey]Method)
	}
	t.methods[k] = m
	return nil
}

// UnregisterMethod removes the handler of methodID; its calls answer
// BadMethodInvalid again. A call already running finishes.
func (s *Server) UnregisterMethod(methodID *ua.NodeID) {
	if methodID == nil {
		return
	}
	t := &s.methods
	t.mu.Lock()
	delete(t.methods, events.KeyOf(methodID))
	t.mu.Unlock()
}

func (t *methodTable) lookup(methodID *ua.NodeID) (Method, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m, ok := t.methods[events.KeyOf(methodID)]
	return m, ok
}

// callMethods implements Call (Part 4 §5.11.2).
func (s *Server) callMethods(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.CallRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.MethodsToCall), s.cfg.MaxNodesPerMethodCall); err != nil {
		return nil, err
	}
	info := c.sess.info()
	results := make([]*ua.CallMethodResult, len(req.MethodsToCall))
	for i, m := range req.MethodsToCall {
		results[i] = s.callOne(c.ch.ctx, info, m)
	}
	return &ua.CallResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

func callResult(code ua.StatusCode, args []ua.StatusCode, out []*ua.Variant) *ua.CallMethodResult {
	if args == nil {
		args = []ua.StatusCode{}
	}
	if out == nil {
		out = []*ua.Variant{}
	}
	return &ua.CallMethodResult{
		StatusCode:                   code,
		InputArgumentResults:         args,
		InputArgumentDiagnosticInfos: []*ua.DiagnosticInfo{},
		OutputArguments:              out,
	}
}

// callOne checks and runs one CallMethodRequest: the object, the method's
// handler and membership, the arguments, in that order.
func (s *Server) callOne(ctx context.Context, info SessionInfo, m *ua.CallMethodRequest) *ua.CallMethodResult {
	if m == nil || m.ObjectID == nil || m.MethodID == nil {
		return callResult(ua.StatusBadNodeIDInvalid, nil, nil)
	}
	class, st := s.nodeClass(m.ObjectID)
	switch {
	case st == ua.StatusBadNodeIDUnknown:
		return callResult(st, nil, nil)
	case st != ua.StatusOK:
		return callResult(ua.StatusBadNodeIDInvalid, nil, nil)
	case class != ua.NodeClassObject && class != ua.NodeClassObjectType:
		return callResult(ua.StatusBadNodeIDInvalid, nil, nil)
	}
	method, ok := s.methods.lookup(m.MethodID)
	if !ok || !s.hasMethod(m.ObjectID, class, m.MethodID) {
		return callResult(ua.StatusBadMethodInvalid, nil, nil)
	}
	if need := cmp.Or(method.Right, RightCall); !info.Rights.Has(need) {
		return callResult(ua.StatusBadUserAccessDenied, nil, nil)
	}
	switch {
	case len(m.InputArguments) < len(method.Inputs):
		return callResult(ua.StatusBadArgumentsMissing, nil, nil)
	case len(m.InputArguments) > len(method.Inputs):
		return callResult(ua.StatusBadTooManyArguments, nil, nil)
	}
	args, bad := checkArguments(method.Inputs, m.InputArguments)
	if bad {
		return callResult(ua.StatusBadInvalidArgument, args, nil)
	}
	out, code := s.runMethod(ctx, method, &MethodCall{Session: info, ObjectID: m.ObjectID, MethodID: m.MethodID, Inputs: m.InputArguments})
	for _, v := range out {
		if v == nil {
			s.log.Error("uaserver: method returned a nil output argument", "method", m.MethodID.String())
			return callResult(ua.StatusBadInternalError, args, nil)
		}
	}
	return callResult(code, args, out)
}

// checkArguments returns the InputArgumentResults of args against decl
// (same length) and whether one is bad.
func checkArguments(decl []Argument, args []*ua.Variant) ([]ua.StatusCode, bool) {
	res := make([]ua.StatusCode, len(args))
	bad := false
	for k, a := range args {
		if a == nil || a.Type() != decl[k].Type || a.Has(ua.VariantArrayValues) {
			res[k] = ua.StatusBadTypeMismatch
			bad = true
		}
	}
	return res, bad
}

// runMethod runs m.Func under recover.
func (s *Server) runMethod(ctx context.Context, m Method, c *MethodCall) (out []*ua.Variant, code ua.StatusCode) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("uaserver: method panicked", "method", c.MethodID.String(), "object", c.ObjectID.String(),
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out, code = nil, ua.StatusBadInternalError
		}
	}()
	return m.Func(ctx, c)
}

// nodeClass reads the NodeClass of n: BadNodeIdUnknown for a node the
// NodeStore does not have.
func (s *Server) nodeClass(n *ua.NodeID) (ua.NodeClass, ua.StatusCode) {
	rv := &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDNodeClass, DataEncoding: &ua.QualifiedName{}}
	dv := s.nodes.Read(rv, ua.TimestampsToReturnNeither)
	switch {
	case dv == nil:
		return 0, ua.StatusBadInternalError
	case dv.Status != ua.StatusOK:
		return 0, dv.Status
	case dv.Value == nil:
		return 0, ua.StatusBadInternalError
	}
	c, ok := dv.Value.Value().(int32)
	if !ok {
		return 0, ua.StatusBadInternalError
	}
	return ua.NodeClass(c), ua.StatusOK
}

// maxMethodTypeDepth bounds the walk from an object through its type's
// supertypes looking for a method.
const maxMethodTypeDepth = 16

// hasMethod reports whether method is a component (HasComponent or a
// subtype) of object, of the object's type definition or of a supertype
// of it; for an ObjectType, of it or a supertype (Part 4 §5.11.2).
func (s *Server) hasMethod(object *ua.NodeID, class ua.NodeClass, method *ua.NodeID) bool {
	node := object
	for depth := 0; node != nil && depth < maxMethodTypeDepth; depth++ {
		refs, st := s.nodes.Browse(&ua.BrowseDescription{
			NodeID: node, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: ua.NewNumericNodeID(0, id.HasComponent), IncludeSubtypes: true,
			NodeClassMask: uint32(ua.NodeClassMethod),
		})
		if st != ua.StatusOK {
			return false
		}
		for _, r := range refs {
			if r != nil && r.NodeID != nil && events.SameNode(r.NodeID.NodeID, method) {
				return true
			}
		}
		if depth == 0 && class == ua.NodeClassObject {
			node = s.target(node, id.HasTypeDefinition, ua.BrowseDirectionForward)
		} else {
			node = s.target(node, id.HasSubtype, ua.BrowseDirectionInverse)
		}
	}
	return false
}

// target returns the node at the other end of n's first refType reference
// in direction dir, or nil.
func (s *Server) target(n *ua.NodeID, refType uint32, dir ua.BrowseDirection) *ua.NodeID {
	refs, st := s.nodes.Browse(&ua.BrowseDescription{
		NodeID: n, BrowseDirection: dir, ReferenceTypeID: ua.NewNumericNodeID(0, refType),
	})
	if st != ua.StatusOK {
		return nil
	}
	for _, r := range refs {
		if r != nil && r.NodeID != nil && r.NodeID.NodeID != nil {
			return r.NodeID.NodeID
		}
	}
	return nil
}
