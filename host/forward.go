package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/alarms"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/forward/meshtransport"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/opcua/conditions"
)

// forwarding is request forwarding on a node: a Handler that serves the
// writes and condition methods peers send to this node through the write
// router and the alarm engine (bound once they exist; a request before
// answers BadNotSupported, nothing executed) — on every node with a
// cluster, whatever its own OpcUa:WriteMode, so that a Primary in the
// reference's modes still serves a peer switched to forward mode (a mode
// is changed one node at a time); and, under OpcUa:WriteMode forward
// (sends), a Sender that sends this node's client writes and condition
// methods to the Primary the role view names, over the pub/sub mediator.
type forwarding struct {
	sends  bool // OpcUa:WriteMode forward: this node's requests go to the Primary
	sender *forward.Sender
	tr     *meshtransport.Transport
	node   string
	nonce  uint64
	log    *slog.Logger
	seq    atomic.Uint32 // condition methods' key operation numbers
	writes atomic.Pointer[dataplane.Writes]
	engine atomic.Pointer[alarms.Engine]
}

func (w *dataPlaneWiring) newForwarding(sends bool) *forwarding {
	f := &forwarding{sends: sends, node: w.cfg.OpcUa.ApplicationUri, nonce: forward.NewNonce(), log: w.log}
	rights := w.cfg.OpcUa.Authorization.ByRole()
	h := forward.NewHandler(forward.HandlerOptions{
		Node: w.cfg.OpcUa.ApplicationUri, Gate: w.guard, Logger: w.log, Exec: forward.ExecutorFunc(f.execute),
		Authorize: func(role string, r forward.Right) bool { return slices.Contains(rights[role], string(r)) },
	})
	f.tr = meshtransport.Start(meshtransport.Options{Mesh: w.med, Handler: h, Logger: w.log})
	f.sender = forward.NewSender(forward.SenderOptions{
		Node: meshtransport.Name(w.med.Self()), Transport: f.tr, Timeout: w.cfg.OpcUa.WriteTimeout, Logger: w.log,
		Primary: func() (string, uint64, bool) {
			p, ok := w.view.Primary()
			if !ok {
				return "", 0, false
			}
			return p.NodeID + "#" + strconv.FormatUint(p.UID, 10), p.Epoch, true
		},
	})
	return f
}

func (f *forwarding) stop() {
	if f != nil {
		f.tr.Stop()
	}
}

// execute runs a request forwarded to this node (the Handler checked the
// rights, the gate and the epoch).
func (f *forwarding) execute(ctx context.Context, req forward.Request, epoch uint64) (ua.StatusCode, []byte) {
	switch req.Site {
	case gate.SiteWrite:
		if wr := f.writes.Load(); wr != nil {
			return wr.Execute(ctx, req, epoch)
		}
	case gate.SiteAck:
		if e := f.engine.Load(); e != nil {
			st := executeAck(e, req)
			f.log.Info("alarms: condition method forwarded from a peer", "method", req.Op, "from", req.From, "user", req.User, "status", st.Error())
			return st, nil
		}
	}
	return ua.StatusBadNotSupported, nil
}

// ackOp is the body of a forwarded condition method. It carries no
// EventId: EventIds are each node's own, checked on the sending node.
type ackOp struct {
	Name    string `json:"name"`
	Comment string `json:"comment,omitempty"`
}

// Condition methods as a forwarded request's Op.
const (
	opAcknowledge = "Acknowledge"
	opConfirm     = "Confirm"
	opAddComment  = "AddComment"
	opEnable      = "Enable"
	opDisable     = "Disable"
)

func executeAck(e *alarms.Engine, req forward.Request) ua.StatusCode {
	var op ackOp
	if err := json.Unmarshal(req.Body, &op); err != nil {
		return ua.StatusBadDecodingError
	}
	switch req.Op {
	case opAcknowledge:
		return e.Acknowledge(op.Name, nil, op.Comment, req.User)
	case opConfirm:
		return e.Confirm(op.Name, nil, op.Comment, req.User)
	case opAddComment:
		return e.AddComment(op.Name, nil, op.Comment, req.User)
	case opEnable:
		return e.Enable(op.Name, nil, "", req.User)
	case opDisable:
		return e.Disable(op.Name, nil, "", req.User)
	}
	return ua.StatusBadMethodInvalid
}

// ack runs a condition method: here when this node's gate allows (or
// refuses without a Primary to send to: the engine answers the denial),
// else on the Primary. The client's EventId is one of this node's events:
// it is checked here (e.CheckEvent) and the Primary acts on the alarm by
// name, without it.
func (f *forwarding) ack(g *gate.Guard, e *alarms.Engine, op string, a ackOp, eventID []byte, by conditions.Caller, local func() ua.StatusCode) ua.StatusCode {
	if f == nil || !f.sends {
		return local()
	}
	d := g.Look(gate.SiteAck)
	if act, _ := forward.Route(forward.RouteInput{Mode: forward.Forward, Site: gate.SiteAck, Permitted: true, Gate: d}); act != forward.Send {
		return local()
	}
	if st := e.CheckEvent(a.Name, eventID); st != ua.StatusOK {
		return st
	}
	body, err := json.Marshal(a)
	if err != nil {
		return ua.StatusBadEncodingError
	}
	right := forward.RightAcknowledge
	if op == opEnable || op == opDisable {
		right = forward.RightCall
	}
	r := f.sender.Forward(context.Background(), forward.Request{
		Key:  forward.Key{Node: f.node, Nonce: f.nonce, Session: by.Session, Op: f.seq.Add(1)},
		Site: gate.SiteAck, Right: right, User: by.User, Role: by.Role, Op: op, Body: body,
	})
	return r.Status
}
