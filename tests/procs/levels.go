package procs

import (
	"context"
	"fmt"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// ReadServiceLevel reads Server.ServiceLevel at endpoint over a fresh OPC
// UA session (security None, no reconnect), within 3 s.
func ReadServiceLevel(endpoint string) (byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := opcua.NewClient(endpoint, opcua.SecurityMode(ua.MessageSecurityModeNone), opcua.AutoReconnect(false))
	if err != nil {
		return 0, err
	}
	if err := c.Connect(ctx); err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{
		NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue,
	}}})
	if err != nil {
		return 0, err
	}
	if len(resp.Results) != 1 || resp.Results[0].Status != ua.StatusOK {
		return 0, fmt.Errorf("read ServiceLevel: %v", resp.Results)
	}
	b, ok := resp.Results[0].Value.Value().(byte)
	if !ok {
		return 0, fmt.Errorf("ServiceLevel is %T", resp.Results[0].Value.Value())
	}
	return b, nil
}
