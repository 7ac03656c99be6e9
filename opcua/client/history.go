package client

import (
	"context"
	"fmt"

	"github.com/gopcua/opcua/ua"
)

// HistoryRead reads node's history on the active server with details
// (*ua.ReadRawModifiedDetails, *ua.ReadAtTimeDetails or
// *ua.ReadProcessedDetails), following continuation points, and hands fn
// each value in the server's order; fn returning false stops the read
// (the server's continuation point is released). It returns the status
// of the last result (Good, GoodNoData, or the Bad code the server gave
// the node).
//
// When the connection fails before any value was handed on, the read
// starts again on the server the client moves to; after that it ends with
// an error saying how many values came, since the continuation point died
// with the session.
func (c *Client) HistoryRead(ctx context.Context, node *ua.NodeID, details any, fn func(*ua.DataValue) bool) (ua.StatusCode, error) {
	handed := 0
	var status ua.StatusCode
	err := c.do(ctx, true, func(cn *conn) error {
		var cp []byte
		for {
			resp, err := cn.call(ctx, &ua.HistoryReadRequest{
				HistoryReadDetails: ua.NewExtensionObject(details),
				TimestampsToReturn: ua.TimestampsToReturnSource,
				NodesToRead:        []*ua.HistoryReadValueID{{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}},
			})
			if err != nil {
				if handed > 0 {
					return fmt.Errorf("history read interrupted after %d values (not repeated, to hand no value twice): %v", handed, err)
				}
				return err
			}
			rs := resp.(*ua.HistoryReadResponse).Results
			if len(rs) != 1 || rs[0] == nil {
				return fmt.Errorf("HistoryRead: %d results for 1 node", len(rs))
			}
			r := rs[0]
			status = r.StatusCode
			if hd, ok := historyData(r); ok {
				for _, dv := range hd.DataValues {
					handed++
					if !fn(dv) {
						if len(r.ContinuationPoint) > 0 {
							c.releaseHistory(ctx, cn, node, r.ContinuationPoint)
						}
						return nil
					}
				}
			}
			if len(r.ContinuationPoint) == 0 || uint32(status)>>30 == 2 {
				return nil
			}
			cp = r.ContinuationPoint
		}
	})
	return status, err
}

func historyData(r *ua.HistoryReadResult) (*ua.HistoryData, bool) {
	if r.HistoryData == nil || r.HistoryData.Value == nil {
		return nil, false
	}
	switch v := r.HistoryData.Value.(type) {
	case *ua.HistoryData:
		return v, v != nil
	case ua.HistoryData:
		return &v, true
	}
	return nil, false
}

// releaseHistory releases a continuation point the caller no longer needs.
func (c *Client) releaseHistory(ctx context.Context, cn *conn, node *ua.NodeID, cp []byte) {
	_, _ = cn.call(ctx, &ua.HistoryReadRequest{
		HistoryReadDetails:        ua.NewExtensionObject(&ua.ReadRawModifiedDetails{}),
		TimestampsToReturn:        ua.TimestampsToReturnSource,
		ReleaseContinuationPoints: true,
		NodesToRead:               []*ua.HistoryReadValueID{{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}},
	})
}
