package client

import (
	"context"
	"fmt"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// activeConn returns the active server's conn, waiting up to the Timeout
// for one, and the channel closed when the active server changes next.
func (c *Client) activeConn(ctx context.Context) (*conn, <-chan struct{}, error) {
	deadline := time.NewTimer(c.opts.Timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, ErrClosed
		}
		changed := c.changed
		if a := c.active; a != nil && a.conn != nil && !a.conn.isLost() {
			cn := a.conn
			c.mu.Unlock()
			return cn, changed, nil
		}
		c.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return nil, nil, fmt.Errorf("%w: %w", errNoActive, c.noServerError())
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// do runs fn on the active server; when the connection fails under it
// and retry is set, once more on the server the client moves to.
func (c *Client) do(ctx context.Context, retry bool, fn func(cn *conn) error) error {
	for attempt := 0; ; attempt++ {
		cn, changed, err := c.activeConn(ctx)
		if err != nil {
			return err
		}
		err = fn(cn)
		if err == nil || !transportError(err) || !retry || attempt > 0 {
			return err
		}
		cn.fail(err) // its server loop reports the loss; the controller moves
		select {
		case <-changed:
		case <-ctx.Done():
			return err
		case <-time.After(c.opts.Timeout):
			return err
		}
	}
}

// Read reads the Value attribute of nodes on the active server, moving to
// the next best server once when the active one fails mid-request.
func (c *Client) Read(ctx context.Context, nodes ...*ua.NodeID) ([]*ua.DataValue, error) {
	rv := make([]*ua.ReadValueID, len(nodes))
	for i, n := range nodes {
		rv[i] = &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}
	}
	var out []*ua.DataValue
	err := c.do(ctx, true, func(cn *conn) error {
		resp, err := cn.call(ctx, &ua.ReadRequest{NodesToRead: rv, TimestampsToReturn: ua.TimestampsToReturnBoth})
		if err != nil {
			return err
		}
		out = resp.(*ua.ReadResponse).Results
		if len(out) != len(nodes) {
			return fmt.Errorf("Read: %d results for %d nodes", len(out), len(nodes))
		}
		return nil
	})
	return out, err
}

// Write writes values on the active server and returns each write's
// status (a Bad status is a result, not an error). A write is never sent
// twice: when the connection fails under it, the error says so and the
// caller decides (the old server may have applied it).
func (c *Client) Write(ctx context.Context, values ...*ua.WriteValue) ([]ua.StatusCode, error) {
	var out []ua.StatusCode
	err := c.do(ctx, false, func(cn *conn) error {
		resp, err := cn.call(ctx, &ua.WriteRequest{NodesToWrite: values})
		if err != nil {
			return err
		}
		out = resp.(*ua.WriteResponse).Results
		if len(out) != len(values) {
			return fmt.Errorf("Write: %d results for %d values", len(out), len(values))
		}
		return nil
	})
	return out, err
}

// Browse returns every forward reference of node, of any type
// (BrowseNext followed to the end).
func (c *Client) Browse(ctx context.Context, node *ua.NodeID) ([]*ua.ReferenceDescription, error) {
	var out []*ua.ReferenceDescription
	err := c.do(ctx, true, func(cn *conn) error {
		out = nil
		resp, err := cn.call(ctx, &ua.BrowseRequest{
			View:                          &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
			RequestedMaxReferencesPerNode: 1000,
			NodesToBrowse: []*ua.BrowseDescription{{
				NodeID: node, BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeID: ua.NewTwoByteNodeID(0), IncludeSubtypes: true,
				NodeClassMask: 0, ResultMask: uint32(ua.BrowseResultMaskAll),
			}},
		})
		if err != nil {
			return err
		}
		results := resp.(*ua.BrowseResponse).Results
		for pages := 0; ; pages++ {
			if len(results) != 1 {
				return fmt.Errorf("Browse: %d results for one node", len(results))
			}
			r := results[0]
			if r.StatusCode != ua.StatusOK {
				return fmt.Errorf("Browse %s: %w", node, r.StatusCode)
			}
			out = append(out, r.References...)
			if len(r.ContinuationPoint) == 0 {
				return nil
			}
			if pages > 10000 {
				return fmt.Errorf("Browse %s: more than 10000 pages", node)
			}
			next, err := cn.call(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{r.ContinuationPoint}})
			if err != nil {
				return err
			}
			results = next.(*ua.BrowseNextResponse).Results
		}
	})
	return out, err
}

// Redundancy reads the active server's redundancy surface and returns it
// with the client's live view of every server.
func (c *Client) Redundancy(ctx context.Context) (RedundancyInfo, error) {
	var info RedundancyInfo
	err := c.do(ctx, true, func(cn *conn) error {
		resp, err := cn.call(ctx, &ua.ReadRequest{
			NodesToRead: []*ua.ReadValueID{
				{NodeID: serverArrayNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
				{NodeID: serverURIArrayNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
				{NodeID: redundancySupportNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			},
			TimestampsToReturn: ua.TimestampsToReturnNeither,
		})
		if err != nil {
			return err
		}
		r := resp.(*ua.ReadResponse).Results
		if len(r) != 3 {
			return fmt.Errorf("Read: %d results for 3 nodes", len(r))
		}
		info.Active = ServerRef{URI: cn.uri, URL: cn.url}
		info.ServerArray, info.ServerUriArray = stringsOf(r[0]), stringsOf(r[1])
		info.RedundancySupport = redundancySupportName(r[2])
		return nil
	})
	c.waitViews(ctx, min(c.opts.Timeout, 3*time.Second))
	info.Servers = c.Servers()
	return info, err
}

// waitViews waits at most d until every server the client can connect to
// has answered once (its level known) or failed once: a server found by
// discovery a moment ago would otherwise show as not up yet.
func (c *Client) waitViews(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c.mu.Lock()
		done := true
		for _, s := range c.servers {
			if !s.dropped && len(s.urls) > 0 && !s.failed() && !(s.conn != nil && s.levelKnown) {
				done = false
			}
		}
		c.mu.Unlock()
		if done {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redundancySupportName names a RedundancySupport value (Part 5 §12.5).
func redundancySupportName(dv *ua.DataValue) string {
	if dv == nil || dv.Status != ua.StatusOK || dv.Value == nil {
		if dv != nil && dv.Status != ua.StatusOK {
			return "unknown (" + dv.Status.Error() + ")"
		}
		return "unknown"
	}
	names := []string{"None", "Cold", "Warm", "Hot", "Transparent", "HotAndMirrored"}
	if v, ok := dv.Value.Value().(int32); ok && v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprint(dv.Value.Value())
}

// Servers is the client's view of the set, in preference order.
func (c *Client) Servers() []ServerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ServerInfo
	for _, s := range c.servers {
		if s.dropped {
			continue
		}
		info := ServerInfo{
			ServerRef: s.ref(),
			URLs:      append([]string{}, s.urls...),
			Up:        s.conn != nil && !s.conn.isLost(),
			Active:    s == c.active,
		}
		if info.Up {
			info.Level, info.LevelKnown = s.level, s.levelKnown
		} else {
			info.Err = s.err
			if len(s.urls) == 0 {
				info.Err = "no endpoint URL known (the server is named by the set but not found by FindServers; give its URL with -F)"
			}
		}
		out = append(out, info)
	}
	return out
}

// Active is the active server (zero when none).
func (c *Client) Active() ServerRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active == nil {
		return ServerRef{}
	}
	return c.active.ref()
}

// Subscribe monitors the Value of nodes with the given publishing and
// sampling interval on the active server and keeps doing so across
// failovers. A node the server refuses is reported once as a
// Notification whose Value carries only the refusal's status.
func (c *Client) Subscribe(ctx context.Context, nodes []*ua.NodeID, interval time.Duration) (*Subscription, error) {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	return c.SubscribeSampled(ctx, nodes, interval, interval)
}

// SubscribeSampled is Subscribe with a sampling interval apart from the
// publishing interval: sampling 0 asks the server to queue every change
// (what a client that must see every value of a fast counter needs).
func (c *Client) SubscribeSampled(ctx context.Context, nodes []*ua.NodeID, interval, sampling time.Duration) (*Subscription, error) {
	return c.subscribe(ctx, nodes, interval, sampling, nil)
}

func (c *Client) subscribe(ctx context.Context, nodes []*ua.NodeID, interval, sampling time.Duration, params []Item) (*Subscription, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("client: Subscribe needs at least one node")
	}
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	s := &userSub{c: c, nodes: nodes, interval: interval, sampling: max(sampling, 0), itemSpec: params, out: make(chan Notification, 1024),
		dedup: Dedup{Window: int64(c.opts.DedupWindow)}}
	reply := make(chan error, 1)
	select {
	case c.inbox <- msgSubscribe{sub: s, reply: reply}:
	case <-c.ctx.Done():
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case err := <-reply:
		if err != nil {
			return nil, err
		}
		return &Subscription{s: s}, nil
	case <-c.ctx.Done():
		return nil, ErrClosed
	}
}

// Item is one node of SubscribeItems with its own monitoring parameters.
type Item struct {
	// Node is the monitored node (its Value attribute).
	Node *ua.NodeID
	// Sampling is the item's sampling interval: 0 asks for every change,
	// below 0 for the publishing interval.
	Sampling time.Duration
	// Deadband, when above 0, is an absolute deadband: a DataChangeFilter
	// (StatusValue) on the item.
	Deadband float64
	// Events, when set, makes the item an event item: Node's
	// EventNotifier is monitored with this filter, and each event arrives
	// as a Notification with Event set (Sampling and Deadband are not
	// used). Its queue is EventQueueSize.
	Events *ua.EventFilter
}

// EventQueueSize is the queue size of an event item: the events that wait
// upstream between two Publish responses or during a break.
const EventQueueSize = 1000

// Call calls methods on the active server, once (a method is never
// called twice: a connection lost under it is the caller's to judge). The
// results are the server's, one per request.
func (c *Client) Call(ctx context.Context, methods ...*ua.CallMethodRequest) ([]*ua.CallMethodResult, error) {
	var out []*ua.CallMethodResult
	err := c.do(ctx, false, func(cn *conn) error {
		resp, err := cn.call(ctx, &ua.CallRequest{MethodsToCall: methods})
		if err != nil {
			return err
		}
		out = resp.(*ua.CallResponse).Results
		if len(out) != len(methods) {
			return fmt.Errorf("Call: %d results for %d methods", len(out), len(methods))
		}
		return nil
	})
	return out, err
}

// SubscribeItems is Subscribe with each node's own sampling interval and
// deadband.
func (c *Client) SubscribeItems(ctx context.Context, items []Item, interval time.Duration) (*Subscription, error) {
	nodes := make([]*ua.NodeID, len(items))
	for i, it := range items {
		nodes[i] = it.Node
	}
	return c.subscribe(ctx, nodes, interval, 0, items)
}

// ReadAttributes reads any attributes on the active server, moving to
// the next best server once when the active one fails mid-request. The
// results are the server's, one per ReadValueID.
func (c *Client) ReadAttributes(ctx context.Context, ids []*ua.ReadValueID) ([]*ua.DataValue, error) {
	var out []*ua.DataValue
	err := c.do(ctx, true, func(cn *conn) error {
		resp, err := cn.call(ctx, &ua.ReadRequest{NodesToRead: ids, TimestampsToReturn: ua.TimestampsToReturnBoth})
		if err != nil {
			return err
		}
		out = resp.(*ua.ReadResponse).Results
		if len(out) != len(ids) {
			return fmt.Errorf("Read: %d results for %d attributes", len(out), len(ids))
		}
		return nil
	})
	return out, err
}

// Close ends every session and stops the client. Notification channels
// are closed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var conns []*conn
	for _, s := range c.servers {
		if s.conn != nil {
			conns = append(conns, s.conn)
		}
	}
	subs := c.subs
	c.mu.Unlock()
	done := make(chan struct{}, len(conns))
	for _, cn := range conns {
		go func() { cn.close(time.Second); done <- struct{}{} }()
	}
	for range conns {
		<-done
	}
	c.cancel()
	c.wg.Wait()
	for _, s := range subs {
		s.end()
	}
	return nil
}

// TranslateBrowsePaths resolves browse paths to NodeIds on the active
// server (TranslateBrowsePathsToNodeIds), one result per path, moving to
// the next best server once when the active one fails mid-request.
func (c *Client) TranslateBrowsePaths(ctx context.Context, paths []*ua.BrowsePath) ([]*ua.BrowsePathResult, error) {
	var out []*ua.BrowsePathResult
	err := c.do(ctx, true, func(cn *conn) error {
		resp, err := cn.call(ctx, &ua.TranslateBrowsePathsToNodeIDsRequest{BrowsePaths: paths})
		if err != nil {
			return err
		}
		out = resp.(*ua.TranslateBrowsePathsToNodeIDsResponse).Results
		if len(out) != len(paths) {
			return fmt.Errorf("TranslateBrowsePathsToNodeIds: %d results for %d paths", len(out), len(paths))
		}
		return nil
	})
	return out, err
}

// BrowseLimit returns at most limit forward hierarchical references
// (HierarchicalReferences and its subtypes) of node to Objects and
// Variables, following BrowseNext; truncated says that the server had
// more, whose continuation point is released. A server that answers more
// references than asked is cut to limit.
func (c *Client) BrowseLimit(ctx context.Context, node *ua.NodeID, limit int) (refs []*ua.ReferenceDescription, truncated bool, err error) {
	if limit <= 0 {
		return nil, true, nil
	}
	err = c.do(ctx, true, func(cn *conn) error {
		refs, truncated = nil, false
		resp, err := cn.call(ctx, &ua.BrowseRequest{
			View:                          &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
			RequestedMaxReferencesPerNode: uint32(min(limit, 1000)),
			NodesToBrowse: []*ua.BrowseDescription{{
				NodeID: node, BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeID: ua.NewNumericNodeID(0, id.HierarchicalReferences), IncludeSubtypes: true,
				NodeClassMask: uint32(ua.NodeClassObject | ua.NodeClassVariable), ResultMask: uint32(ua.BrowseResultMaskAll),
			}},
		})
		if err != nil {
			return err
		}
		results := resp.(*ua.BrowseResponse).Results
		for {
			if len(results) != 1 {
				return fmt.Errorf("Browse: %d results for one node", len(results))
			}
			r := results[0]
			if r.StatusCode != ua.StatusOK {
				return fmt.Errorf("Browse %s: %w", node, r.StatusCode)
			}
			refs = append(refs, r.References...)
			if len(refs) >= limit {
				truncated = len(refs) > limit || len(r.ContinuationPoint) > 0
				refs = refs[:limit]
				if len(r.ContinuationPoint) > 0 {
					_, _ = cn.call(ctx, &ua.BrowseNextRequest{ReleaseContinuationPoints: true, ContinuationPoints: [][]byte{r.ContinuationPoint}})
				}
				return nil
			}
			if len(r.ContinuationPoint) == 0 {
				return nil
			}
			next, err := cn.call(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{r.ContinuationPoint}})
			if err != nil {
				return err
			}
			results = next.(*ua.BrowseNextResponse).Results
		}
	})
	return refs, truncated, err
}
