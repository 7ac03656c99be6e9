package opcua

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startServer starts a server with the real clock on 127.0.0.1 and a free
// port, and connects gopcua's client to the endpoint it advertises.
func startServer(t *testing.T, cfg Config) (*Server, *gopcua.Client) {
	t.Helper()
	cfg.Clock = clockwork.NewRealClock()
	cfg.PublicHostname = "127.0.0.1"
	s := newTestServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !s.Listening() || s.Addr() == nil {
		t.Fatal("not listening after Start")
	}
	c, err := gopcua.NewClient(s.EndpointURL(),
		gopcua.SecurityMode(ua.MessageSecurityModeNone),
		gopcua.AutoReconnect(false),
		gopcua.RequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect %s: %v", s.EndpointURL(), err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return s, c
}

func clientRead(t *testing.T, c *gopcua.Client, nodes ...uint32) []*ua.DataValue {
	t.Helper()
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: nsid(n), AttributeID: ua.AttributeIDValue})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Read(ctx, req)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(resp.Results) != len(nodes) {
		t.Fatalf("Read: %d results for %d nodes", len(resp.Results), len(nodes))
	}
	for k, dv := range resp.Results {
		if dv.Status != ua.StatusOK {
			t.Fatalf("Read i=%d: %v", nodes[k], dv.Status)
		}
	}
	return resp.Results
}

// TestClientSeesRedundancySurface is what a SCADA client does: read
// ServiceLevel, ServerArray and the ServerRedundancy object over opc.tcp.
func TestClientSeesRedundancySurface(t *testing.T) {
	s, c := startServer(t, Config{
		PeerApplicationURIs: []string{peerBURI},
		PeerDiscoveryURLs:   []string{"opc.tcp://127.0.0.1:4999"},
		RedundancySupport:   ua.RedundancySupportHot,
	})

	if got := clientRead(t, c, id.Server_ServiceLevel)[0].Value.Value(); got != byte(255) {
		t.Fatalf("ServiceLevel before the first computed value = %#v, want byte 255", got)
	}
	s.SetServiceLevel(240)
	if got := clientRead(t, c, id.Server_ServiceLevel)[0].Value.Value(); got != byte(240) {
		t.Fatalf("ServiceLevel after SetServiceLevel(240) = %#v", got)
	}

	res := clientRead(t, c, id.Server_ServerArray, id.Server_ServerRedundancy_RedundancySupport,
		id.Server_ServerRedundancy_ServerURIArray, id.Server_ServerRedundancy_RedundantServerArray, id.Server_ServerStatus)
	want := []string{selfURI, peerBURI}
	if got, _ := res[0].Value.Value().([]string); !slices.Equal(got, want) {
		t.Errorf("ServerArray = %#v, want %v", res[0].Value.Value(), want)
	}
	if got := res[1].Value.Value(); got != int32(ua.RedundancySupportHot) {
		t.Errorf("RedundancySupport = %#v, want int32 3 (Hot)", got)
	}
	if got, _ := res[2].Value.Value().([]string); !slices.Equal(got, want) {
		t.Errorf("ServerUriArray = %#v, want %v", res[2].Value.Value(), want)
	}
	if eos, _ := res[3].Value.Value().([]*ua.ExtensionObject); len(eos) != 2 {
		t.Errorf("RedundantServerArray = %#v", res[3].Value.Value())
	} else if self, ok := eos[0].Value.(*ua.RedundantServerDataType); !ok || self.ServerID != selfURI || self.ServiceLevel != 240 {
		t.Errorf("RedundantServerArray[0] = %#v", eos[0].Value)
	}
	if eo, _ := res[4].Value.Value().(*ua.ExtensionObject); eo == nil {
		t.Errorf("ServerStatus = %#v", res[4].Value.Value())
	} else if st, ok := eo.Value.(*ua.ServerStatusDataType); !ok || st.State != ua.ServerStateRunning || time.Since(st.CurrentTime) > time.Minute {
		t.Errorf("ServerStatus = %#v", eo.Value)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ns, err := c.NamespaceArray(ctx)
	if err != nil || len(ns) < 2 || ns[1] != selfURI {
		t.Errorf("NamespaceArray = %v, %v", ns, err)
	}

	// Browse ServerRedundancy as a client discovering the redundancy mode.
	br, err := c.Browse(ctx, &ua.BrowseRequest{
		NodesToBrowse: []*ua.BrowseDescription{{
			NodeID: nsid(id.Server_ServerRedundancy), BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: nsid(id.References), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll),
		}},
	})
	if err != nil || len(br.Results) != 1 || br.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("Browse ServerRedundancy: %v %+v", err, br)
	}
	var typeDef *ua.NodeID
	props := map[string]bool{}
	for _, r := range br.Results[0].References {
		switch {
		case r.ReferenceTypeID.Equal(nsid(id.HasTypeDefinition)):
			typeDef = r.NodeID.NodeID
		case r.ReferenceTypeID.Equal(nsid(id.HasProperty)):
			props[r.BrowseName.Name] = r.BrowseName.NamespaceIndex == 0
		}
	}
	if typeDef == nil || !typeDef.Equal(nsid(id.NonTransparentRedundancyType)) {
		t.Errorf("ServerRedundancy type definition = %v, want i=2039", typeDef)
	}
	for _, name := range []string{"RedundancySupport", "ServerUriArray", "RedundantServerArray"} {
		if !props[name] {
			t.Errorf("ServerRedundancy has no property 0:%s (got %v)", name, props)
		}
	}

	// FindServers lists the whole set, this server first.
	fs, err := c.FindServers(ctx)
	if err != nil {
		t.Fatalf("FindServers: %v", err)
	}
	var found []string
	for _, app := range fs.Servers {
		found = append(found, app.ApplicationURI)
	}
	if !slices.Equal(found, want) {
		t.Errorf("FindServers = %v, want %v", found, want)
	} else if urls := fs.Servers[1].DiscoveryURLs; len(urls) != 1 || urls[0] != "opc.tcp://127.0.0.1:4999" {
		t.Errorf("peer discovery URLs = %v", urls)
	}

	// Clients cannot write ServiceLevel.
	wr, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
		NodeID: nsid(id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(byte(0))},
	}}})
	if err != nil || len(wr.Results) != 1 || wr.Results[0] != ua.StatusBadNotWritable {
		t.Errorf("Write ServiceLevel: %v %+v, want BadNotWritable", err, wr)
	}
	if s.ServiceLevel() != 240 {
		t.Errorf("ServiceLevel changed by a client write: %d", s.ServiceLevel())
	}
}

// TestClientSubscriptionSeesServiceLevelChange subscribes to ServiceLevel
// and expects each SetServiceLevel as a data change.
func TestClientSubscriptionSeesServiceLevelChange(t *testing.T) {
	s, c := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	notes := make(chan *gopcua.PublishNotificationData, 16)
	sub, err := c.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, notes)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer func() { _ = sub.Cancel(context.Background()) }()
	item := gopcua.NewMonitoredItemCreateRequestWithDefaults(nsid(id.Server_ServiceLevel), ua.AttributeIDValue, 1)
	mr, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, item)
	if err != nil || mr.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("Monitor: %v %+v", err, mr)
	}
	kick := time.NewTicker(time.Second)
	defer kick.Stop()
	next := func() byte {
		t.Helper()
		for {
			select {
			case <-kick.C:
				kickPublishLoop(ctx, t, c)
			case n := <-notes:
				if n.Error != nil {
					t.Fatalf("notification error: %v", n.Error)
				}
				if dc, ok := n.Value.(*ua.DataChangeNotification); ok && len(dc.MonitoredItems) > 0 {
					return dc.MonitoredItems[len(dc.MonitoredItems)-1].Value.Value.Value().(byte)
				}
			case <-ctx.Done():
				t.Fatal("no data change before the deadline")
			}
		}
	}
	if got := next(); got != 255 {
		t.Fatalf("first ServiceLevel notification %d, want 255", got)
	}
	s.SetServiceLevel(200)
	if got := next(); got != 200 {
		t.Fatalf("after SetServiceLevel(200) the client got %d", got)
	}
	s.SetServiceLevel(250)
	if got := next(); got != 250 {
		t.Fatalf("after SetServiceLevel(250) the client got %d", got)
	}
}

func TestStartAndCloseLifecycle(t *testing.T) {
	s := newTestServer(t, Config{})
	if s.Listening() || s.EndpointURL() != "" {
		t.Fatal("listening before Start")
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err == nil {
		t.Error("a second Start succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if s.Listening() {
		t.Error("listening after Close")
	}
	if err := s.Start(ctx); err == nil {
		t.Error("Start after Close succeeded")
	}
	// The port is taken: Start reports it instead of panicking.
	a := newTestServer(t, Config{})
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	b := newTestServer(t, Config{Port: a.Addr().(*net.TCPAddr).Port})
	if err := b.Start(ctx); err == nil {
		t.Error("a second server on the same port started")
	}
}

// kickPublishLoop works around a race in gopcua's client: its publish loop
// starts at Connect, and when its first Publish (no subscription yet) is
// answered BadNoSubscription after Subscribe has already signalled
// "resume", the loop can take the resume first and the pause last and
// stay paused: no notification ever arrives. Subscribing again signals
// resume once more. Called when a second has passed without a
// notification; a spare subscription is harmless.
func kickPublishLoop(ctx context.Context, t *testing.T, c *gopcua.Client) {
	t.Helper()
	if _, err := c.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: time.Second}, make(chan *gopcua.PublishNotificationData, 1)); err != nil {
		t.Logf("kick subscription: %v", err)
	}
}

// TestClientReadsEstimatedReturnTime: a client reads
// Server.EstimatedReturnTime (i=12885) as a DateTime — MinDateTime (the
// zero time, "unknown") until the host sets it, then the instant it set,
// which goes back to unknown when cleared.
func TestClientReadsEstimatedReturnTime(t *testing.T) {
	s, c := startServer(t, Config{})
	read := func() time.Time {
		t.Helper()
		v, ok := clientRead(t, c, id.Server_EstimatedReturnTime)[0].Value.Value().(time.Time)
		if !ok {
			t.Fatalf("EstimatedReturnTime is %T, want a DateTime", clientRead(t, c, id.Server_EstimatedReturnTime)[0].Value.Value())
		}
		return v
	}
	if got := read(); !got.IsZero() {
		t.Fatalf("EstimatedReturnTime before any failover = %v, want MinDateTime (unknown)", got)
	}
	back := time.Date(2026, 3, 1, 12, 0, 42, 125_000_000, time.FixedZone("CET", 3600))
	s.SetEstimatedReturnTime(back)
	if got := read(); !got.Equal(back) {
		t.Fatalf("EstimatedReturnTime = %v, want %v", got, back)
	}
	s.SetEstimatedReturnTime(time.Time{})
	if got := read(); !got.IsZero() {
		t.Fatalf("EstimatedReturnTime after clearing = %v, want MinDateTime", got)
	}
}
