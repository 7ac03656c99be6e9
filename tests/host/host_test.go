// Package host_test runs the real `otopcua host` binary and talks to it the
// way a SCADA client and an operator would: over OPC UA and HTTP.
package host_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

const peerURI = "urn:peer-b:otopcua"

// startNode starts one node with a configured peer and the test hooks on.
func startNode(t *testing.T, extra func(cfg map[string]any)) (*procs.Node, string) {
	t.Helper()
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("node-a", ports)
	ua := cfg["OpcUa"].(map[string]any)
	ua["PeerApplicationUris"] = []string{peerURI}
	ua["PeerDiscoveryUrls"] = []string{"opc.tcp://127.0.0.1:1"}
	if extra != nil {
		extra(cfg)
	}
	n := procs.Start(t, "node-a", cfg, "OTOPCUA_TEST_HOOKS=1")
	n.WaitReady(30 * time.Second)
	return n, ua["ApplicationUri"].(string)
}

func connect(t *testing.T, endpoint string) *opcua.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := opcua.NewClient(endpoint, opcua.SecurityMode(ua.MessageSecurityModeNone), opcua.AutoReconnect(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func read(t *testing.T, c *opcua.Client, ids ...uint32) []*ua.DataValue {
	t.Helper()
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range ids {
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, n), AttributeID: ua.AttributeIDValue})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Read(ctx, req)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(resp.Results) != len(ids) {
		t.Fatalf("read returned %d results for %d nodes", len(resp.Results), len(ids))
	}
	return resp.Results
}

func TestRedundancySurfaceOverOPCUA(t *testing.T) {
	n, self := startNode(t, nil)
	c := connect(t, n.Endpoint())

	res := read(t, c, id.Server_ServiceLevel, id.Server_ServerArray, id.Server_ServerRedundancy_RedundancySupport,
		id.Server_ServerRedundancy_ServerURIArray, id.Server_ServerStatus_State)
	for i, dv := range res {
		if dv.Status != ua.StatusOK {
			t.Fatalf("result %d: status %v", i, dv.Status)
		}
	}
	if got, ok := res[0].Value.Value().(byte); !ok || got != 255 {
		t.Fatalf("ServiceLevel before the first computed value = %#v, want byte 255", res[0].Value.Value())
	}
	want := []string{self, peerURI}
	if got := res[1].Value.Value(); !slices.Equal(got.([]string), want) {
		t.Fatalf("ServerArray = %v, want %v", got, want)
	}
	if got := res[2].Value.Value(); got != int32(ua.RedundancySupportWarm) {
		t.Fatalf("RedundancySupport = %#v, want Warm (2)", got)
	}
	if got := res[3].Value.Value(); !slices.Equal(got.([]string), want) {
		t.Fatalf("ServerUriArray = %v, want %v (self first)", got, want)
	}
	if got := res[4].Value.Value(); got != int32(ua.ServerStateRunning) {
		t.Fatalf("ServerStatus.State = %#v, want Running", got)
	}

	// ServerRedundancy is a NonTransparentRedundancyType whose properties
	// a client can find by browsing.
	ctx := context.Background()
	br, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
		NodeID: ua.NewNumericNodeID(0, id.Server_ServerRedundancy), BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeID: ua.NewNumericNodeID(0, id.References), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll),
	}}})
	if err != nil || br.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("browse ServerRedundancy: %v %v", err, br)
	}
	found := map[string]bool{}
	for _, r := range br.Results[0].References {
		switch {
		case r.ReferenceTypeID.IntID() == id.HasTypeDefinition:
			found[fmt.Sprintf("type=%d", r.NodeID.NodeID.IntID())] = true
		case r.ReferenceTypeID.IntID() == id.HasProperty:
			found[r.BrowseName.Name] = r.NodeID.NodeID.IntID() == id.Server_ServerRedundancy_RedundancySupport ||
				r.NodeID.NodeID.IntID() == id.Server_ServerRedundancy_ServerURIArray
		}
	}
	for _, k := range []string{"type=2039", "RedundancySupport", "ServerUriArray"} {
		if !found[k] {
			t.Fatalf("browse of ServerRedundancy lacks %s: %v", k, found)
		}
	}

	// FindServers answers every server of the set.
	fs, err := c.FindServers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, s := range fs.Servers {
		uris = append(uris, s.ApplicationURI)
	}
	if !slices.Equal(uris, want) {
		t.Fatalf("FindServers = %v, want %v", uris, want)
	}
}

// TestServiceLevelSubscription subscribes to Server.ServiceLevel and moves
// it through the test hook POST /debug/service-level (the redundancy runtime
// drives it in production).
func TestServiceLevelSubscription(t *testing.T) {
	n, _ := startNode(t, nil)
	c := connect(t, n.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	notes := make(chan *opcua.PublishNotificationData, 16)
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, notes)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel(context.Background())
	mreq := opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewNumericNodeID(0, id.Server_ServiceLevel), ua.AttributeIDValue, 7)
	mres, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, mreq)
	if err != nil || mres.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("monitor ServiceLevel: %v %v", err, mres)
	}

	kick := time.NewTicker(time.Second)
	defer kick.Stop()
	next := func() byte {
		t.Helper()
		for {
			select {
			case <-ctx.Done():
				t.Fatal("no ServiceLevel notification in time")
			case <-kick.C:
				// gopcua's publish loop can stay paused when its first Publish
				// (no subscription yet) is answered BadNoSubscription after
				// Subscribe signalled resume; subscribing again resumes it.
				_, _ = c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: time.Second}, make(chan *opcua.PublishNotificationData, 1))
			case msg := <-notes:
				if msg.Error != nil {
					t.Fatalf("publish error: %v", msg.Error)
				}
				dc, ok := msg.Value.(*ua.DataChangeNotification)
				if !ok {
					continue // keep-alive or status
				}
				for _, item := range dc.MonitoredItems {
					if item.ClientHandle == 7 {
						return item.Value.Value.Value().(byte)
					}
				}
			}
		}
	}
	if got := next(); got != 255 {
		t.Fatalf("initial ServiceLevel notification = %d, want 255", got)
	}
	for _, level := range []byte{240, 250, 100} {
		if _, err := n.Post(fmt.Sprintf("/debug/service-level?level=%d", level)); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != level {
			t.Fatalf("notification after setting %d = %d", level, got)
		}
	}
	metrics, err := n.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `otopcua_redundancy_service_level_change_total{level="250"} 1`) {
		t.Fatalf("/metrics does not count the change to 250:\n%s", grep(metrics, "service_level"))
	}
}

// TestBadRequestsGetStatusCodes sends the requests that crash or mislead
// gopcua's own server and checks the node answers each with a status and
// keeps serving.
func TestBadRequestsGetStatusCodes(t *testing.T) {
	n, _ := startNode(t, nil)
	c := connect(t, n.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// DeleteMonitoredItems on a subscription that does not exist killed
	// gopcua's server (no recover).
	var got ua.StatusCode = 0xffffffff
	err := c.Send(ctx, &ua.DeleteMonitoredItemsRequest{SubscriptionID: 424242, MonitoredItemIDs: []uint32{1, 2}},
		func(r ua.Response) error {
			switch r := r.(type) {
			case *ua.DeleteMonitoredItemsResponse:
				got = r.ResponseHeader.ServiceResult
				if got == ua.StatusOK && len(r.Results) > 0 {
					got = r.Results[0]
				}
			case *ua.ServiceFault:
				got = r.ResponseHeader.ServiceResult
			}
			return nil
		})
	if err != nil && got == 0xffffffff {
		got = statusOf(err)
	}
	if got != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("DeleteMonitoredItems on an unknown subscription: %v (err %v), want BadSubscriptionIdInvalid", got, err)
	}

	// A write to an unknown namespace crashed gopcua v0.8.0; unknown NodeIds
	// were answered Good. ServiceLevel is read-only to clients.
	wr, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{
		{NodeID: ua.NewStringNodeID(77, "nowhere"), AttributeID: ua.AttributeIDValue, Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(int32(1))}},
		{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue, Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(byte(1))}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if wr.Results[0] != ua.StatusBadNodeIDUnknown || wr.Results[1] != ua.StatusBadNotWritable {
		t.Fatalf("write results = %v, want [BadNodeIdUnknown BadNotWritable]", wr.Results)
	}
	rr, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewStringNodeID(77, "nowhere"), AttributeID: ua.AttributeIDValue}}})
	if err != nil || rr.Results[0].Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("read of an unknown node: %v %v, want BadNodeIdUnknown", err, rr)
	}

	// Still serving, same client and a new one.
	if v := read(t, c, id.Server_ServiceLevel)[0].Value.Value(); v != byte(255) {
		t.Fatalf("ServiceLevel = %v after the bad requests", v)
	}
	c2 := connect(t, n.Endpoint())
	read(t, c2, id.Server_ServerArray)
	if !n.Alive() {
		t.Fatal("the node exited")
	}
}

func statusOf(err error) ua.StatusCode {
	if s, ok := err.(ua.StatusCode); ok {
		return s
	}
	return ua.StatusBad
}

// TestSIGTERMStopsGracefully: a supervisor's stop is a clean exit 0.
func TestSIGTERMStopsGracefully(t *testing.T) {
	n, _ := startNode(t, nil)
	n.Signal(syscall.SIGTERM)
	if code := n.WaitExit(15 * time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0\n%s", code, n.Log())
	}
}

// TestInvalidConfigStopsStartUp: start-up fails with exit 2 and names the
// key, the value and what is accepted.
func TestInvalidConfigStopsStartUp(t *testing.T) {
	cfg := procs.BaseConfig("bad", procs.NewPorts(t))
	cfg["Cluster"].(map[string]any)["SplitBrainResolverStrategy"] = "keep-newest"
	cfg["OpcUa"].(map[string]any)["Port"] = 70000
	n := procs.Start(t, "bad", cfg)
	if code := n.WaitExit(15 * time.Second); code != 2 {
		t.Fatalf("exit code = %d, want 2\n%s", code, n.Log())
	}
	log := n.Log()
	for _, want := range []string{"Cluster:SplitBrainResolverStrategy", "keep-newest", "keep-oldest", "OpcUa:Port", "70000"} {
		if !strings.Contains(log, want) {
			t.Fatalf("start-up error does not mention %q:\n%s", want, log)
		}
	}
}

// TestOPCUAPortInUse: a taken port stops start-up with a message naming the key.
func TestOPCUAPortInUse(t *testing.T) {
	first, _ := startNode(t, nil)
	cfg := procs.BaseConfig("second", procs.NewPorts(t))
	cfg["OpcUa"].(map[string]any)["Port"] = first.OpcPort
	n := procs.Start(t, "second", cfg)
	if code := n.WaitExit(15 * time.Second); code == 0 {
		t.Fatalf("second node on a used port exited 0\n%s", n.Log())
	}
	if log := n.Log(); !strings.Contains(log, "OpcUa:Port") || !strings.Contains(log, fmt.Sprint(first.OpcPort)) {
		t.Fatalf("error does not name OpcUa:Port and the port:\n%s", log)
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
