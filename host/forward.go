package host

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/forward/meshtransport"
	"github.com/otopcua/otopcua/gate"
)

// forwarding wires OpcUa:WriteMode forward: a Sender that sends a
// non-Primary's client writes to the Primary the role view names, over
// the pub/sub mediator, and a Handler that serves the writes sent to this
// node through writes (set by bind before the first request can arrive at
// a tag: a write before it answers BadNodeIdUnknown, nothing executed).
// It returns the Forwarder for the write router, bind, and stop.
func (w *dataPlaneWiring) forwarding() (dataplane.Forwarder, func(*dataplane.Writes), func()) {
	var writes atomic.Pointer[dataplane.Writes]
	rights := w.cfg.OpcUa.Authorization.ByRole()
	h := forward.NewHandler(forward.HandlerOptions{
		Node: w.cfg.OpcUa.ApplicationUri, Gate: w.guard, Logger: w.log,
		Authorize: func(role string, r forward.Right) bool { return slices.Contains(rights[role], string(r)) },
		Exec: forward.ExecutorFunc(func(ctx context.Context, req forward.Request, epoch uint64) (ua.StatusCode, []byte) {
			wr := writes.Load()
			if req.Site != gate.SiteWrite || wr == nil {
				return ua.StatusBadNotSupported, nil
			}
			return wr.Execute(ctx, req, epoch)
		}),
	})
	tr := meshtransport.Start(meshtransport.Options{Mesh: w.med, Handler: h, Logger: w.log})
	s := forward.NewSender(forward.SenderOptions{
		Node: meshtransport.Name(w.med.Self()), Transport: tr, Timeout: w.cfg.OpcUa.WriteTimeout, Logger: w.log,
		Primary: func() (string, uint64, bool) {
			p, ok := w.view.Primary()
			if !ok {
				return "", 0, false
			}
			return p.NodeID + "#" + strconv.FormatUint(p.UID, 10), p.Epoch, true
		},
	})
	return s, writes.Store, tr.Stop
}
