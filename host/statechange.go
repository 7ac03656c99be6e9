package host

import (
	"context"
	"log/slog"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// stateChangeTimeout bounds the audit write and the send of a failover
// requested over OPC UA.
const stateChangeTimeout = 30 * time.Second

// stateChangeArgs are the input arguments of RequestServerStateChange
// (Part 5 §9.4): State, EstimatedReturnTime, SecondsTillShutdown, Reason,
// Restart.
var stateChangeArgs = []uaserver.Argument{
	{Name: "State", Type: ua.TypeIDInt32},
	{Name: "EstimatedReturnTime", Type: ua.TypeIDDateTime},
	{Name: "SecondsTillShutdown", Type: ua.TypeIDUint32},
	{Name: "Reason", Type: ua.TypeIDLocalizedText},
	{Name: "Restart", Type: ua.TypeIDBoolean},
}

// registerStateChange makes Server.RequestServerStateChange (i=12886) the
// OPC UA way to the admin page's manual failover: an Administrator's
// session calling it on the Primary with State Shutdown and Restart true
// makes this node fail over exactly as "Trigger failover" does (audit row
// cluster.manual-failover with the actor "opcua:USER", ServiceLevel 0 and
// EstimatedReturnTime while clients move, graceful leave, exit 0, restart
// as the youngest). Another role is refused BadUserAccessDenied; another
// state, or Restart false (otopcua always restarts), BadInvalidArgument;
// on a Secondary, or with fewer than two Up driver members,
// BadInvalidState. The checks are answered at once; the audit write and
// the request run after the call returns (a method must not wait on the
// Config DB), and their failure is logged.
func registerStateChange(srv *opcua.Server, b *adminBackend, clusterID string, logger *slog.Logger) error {
	return srv.RegisterMethod(ua.NewNumericNodeID(0, id.Server_RequestServerStateChange), uaserver.Method{
		Inputs: stateChangeArgs,
		Right:  uaserver.RightCall,
		Func: func(_ context.Context, c *uaserver.MethodCall) ([]*ua.Variant, ua.StatusCode) {
			if c.Session.Role != string(admin.RoleAdministrator) {
				return nil, ua.StatusBadUserAccessDenied
			}
			state, _ := c.Inputs[0].Value().(int32)
			restart, _ := c.Inputs[4].Value().(bool)
			if ua.ServerState(state) != ua.ServerStateShutdown || !restart {
				return nil, ua.StatusBadInvalidArgument
			}
			st := b.members.Snapshot()
			target, err := b.plan(st, clusterID)
			if err != nil || target != st.Self {
				logger.Info("RequestServerStateChange refused", "user", c.Session.UserID, "err", err, "self", st.Self.NodeID(), "primary", target.NodeID())
				return nil, ua.StatusBadInvalidState
			}
			actor := "opcua:" + c.Session.UserID
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), stateChangeTimeout)
				defer cancel()
				if _, err := b.Failover(ctx, clusterID, actor); err != nil {
					logger.Error("RequestServerStateChange: failover not sent", "user", c.Session.UserID, "err", err)
				}
			}()
			logger.Warn("RequestServerStateChange: manual failover of this node requested over OPC UA", "user", c.Session.UserID)
			return nil, ua.StatusOK
		},
	})
}
