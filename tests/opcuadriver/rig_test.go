// Package opcuadriver_test runs the OPC UA client driver ("driver":
// "opcua") on real processes: a node-opcua server written for these tests
// (tests/interop/upstream.mjs) is the upstream device, `otopcua host`
// nodes mirror it, and OPC UA sessions on our nodes check what they serve.
package opcuadriver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

const clusterID = "site-a"

// nodeConfig is a node's appsettings for a ClusterId sharing the SQLite
// Config DB in dir; seeds are the cluster addresses of the set.
func nodeConfig(name string, p procs.Ports, dir string, seeds []string, peers []string, writeMode string) map[string]any {
	cfg := procs.BaseConfig(name, p)
	cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = peers
	cfg["OpcUa"].(map[string]any)["WriteMode"] = writeMode
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

// startSingle starts one node (its own seed) in confirmed write mode.
func startSingle(t testing.TB) (*procs.Node, map[string]any) {
	t.Helper()
	p := procs.NewPorts(t)
	cfg := nodeConfig("a", p, t.TempDir(), []string{fmt.Sprintf("127.0.0.1:%d", p.Cluster)}, nil, "confirmed")
	n := procs.Start(t, "a", cfg)
	n.WaitReady(30 * time.Second)
	return n, cfg
}

// startPair starts nodes a (first seed, Primary) and b.
func startPair(t testing.TB, writeMode string) (a, b *procs.Node, cfgA map[string]any) {
	t.Helper()
	dir := t.TempDir()
	pa, pb := procs.NewPorts(t), procs.NewPorts(t)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", pa.Cluster), fmt.Sprintf("127.0.0.1:%d", pb.Cluster)}
	cfgA = nodeConfig("a", pa, dir, seeds, []string{"urn:b:otopcua"}, writeMode)
	cfgB := nodeConfig("b", pb, dir, seeds, []string{"urn:a:otopcua"}, writeMode)
	a = procs.Start(t, "a", cfgA)
	a.WaitReady(30 * time.Second)
	b = procs.Start(t, "b", cfgB)
	b.WaitReady(30 * time.Second)
	return a, b, cfgA
}

// session is a raw OPC UA session on one of our nodes (or the upstream).
type session struct {
	t  testing.TB
	ch *uaclient.Channel
	s  *uaclient.Session
}

func connect(t testing.TB, endpoint string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	s, err := uaclient.NewSession(ctx, ch, t.Name(), time.Minute, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, ch: ch, s: s}
}

func (c *session) call(req ua.Request) (ua.Response, error) {
	return c.ch.Call(context.Background(), req, c.s.Auth(), 10*time.Second)
}

func (c *session) read(nodes ...*ua.NodeID) []*ua.DataValue {
	c.t.Helper()
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
	}
	resp, err := c.call(req)
	if err != nil {
		c.t.Fatalf("Read: %v", err)
	}
	return resp.(*ua.ReadResponse).Results
}

func (c *session) write(n *ua.NodeID, v any) ua.StatusCode {
	c.t.Helper()
	resp, err := c.call(&ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: n, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}})
	if err != nil {
		c.t.Fatalf("Write: %v", err)
	}
	return resp.(*ua.WriteResponse).Results[0]
}

func (c *session) level() byte {
	c.t.Helper()
	b, _ := c.read(ua.NewNumericNodeID(0, id.Server_ServiceLevel))[0].Value.Value().(byte)
	return b
}

// namespace is the index of the ClusterId's tag namespace on the node.
func (c *session) namespace() uint16 {
	c.t.Helper()
	arr, _ := c.read(ua.NewNumericNodeID(0, id.Server_NamespaceArray))[0].Value.Value().([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return uint16(i)
		}
	}
	c.t.Fatalf("no tag namespace in %v", arr)
	return 0
}

// sample is one notification our client received.
type sample struct {
	sub    uint32
	handle uint32
	value  *ua.DataValue
	at     time.Time
}

// monitor is a subscription on our node: every item sampled at 0 (every
// change), queue 100, publishing every 100 ms; a goroutine publishes and
// collects every notification.
type monitor struct {
	c     *session
	id    uint32
	nodes []*ua.NodeID

	mu      sync.Mutex
	samples []sample
	subs    map[uint32]bool // subscription ids seen in Publish responses
	err     error
}

func (c *session) monitor(nodes []*ua.NodeID) *monitor {
	c.t.Helper()
	cs, err := c.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true})
	if err != nil {
		c.t.Fatal(err)
	}
	m := &monitor{c: c, id: cs.(*ua.CreateSubscriptionResponse).SubscriptionID, nodes: nodes, subs: map[uint32]bool{}}
	items := make([]*ua.MonitoredItemCreateRequest, len(nodes))
	for i, n := range nodes {
		items[i] = &ua.MonitoredItemCreateRequest{
			ItemToMonitor:       &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(i), SamplingInterval: 0, QueueSize: 100, DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
		}
	}
	mr, err := c.call(&ua.CreateMonitoredItemsRequest{SubscriptionID: m.id, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items})
	if err != nil {
		c.t.Fatal(err)
	}
	for i, r := range mr.(*ua.CreateMonitoredItemsResponse).Results {
		if r.StatusCode != ua.StatusOK {
			c.t.Fatalf("monitored item %v refused: %v", nodes[i], r.StatusCode)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.t.Cleanup(func() { cancel(); <-done })
	for k := 0; k < 3; k++ { // three Publish requests in flight
		go m.publishLoop(ctx, done, k == 0)
	}
	return m
}

func (m *monitor) publishLoop(ctx context.Context, done chan struct{}, owner bool) {
	if owner {
		defer close(done)
	}
	var acks []*ua.SubscriptionAcknowledgement
	for ctx.Err() == nil {
		resp, err := m.c.ch.Call(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: acks}, m.c.s.Auth(), 10*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				m.mu.Lock()
				m.err = err
				m.mu.Unlock()
			}
			return
		}
		at := time.Now()
		pr := resp.(*ua.PublishResponse)
		acks = nil
		if pr.NotificationMessage == nil {
			continue
		}
		if len(pr.NotificationMessage.NotificationData) > 0 {
			acks = []*ua.SubscriptionAcknowledgement{{SubscriptionID: pr.SubscriptionID, SequenceNumber: pr.NotificationMessage.SequenceNumber}}
		}
		m.mu.Lock()
		m.subs[pr.SubscriptionID] = true
		for _, eo := range pr.NotificationMessage.NotificationData {
			if dcn, ok := eo.Value.(*ua.DataChangeNotification); ok {
				for _, it := range dcn.MonitoredItems {
					m.samples = append(m.samples, sample{sub: pr.SubscriptionID, handle: it.ClientHandle, value: it.Value, at: at})
				}
			}
		}
		m.mu.Unlock()
	}
}

// take returns the samples so far and forgets them.
func (m *monitor) take() []sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		m.c.t.Fatalf("Publish: %v", m.err)
	}
	out := m.samples
	m.samples = nil
	return out
}

// count is how many samples came since the last take.
func (m *monitor) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.samples)
}

// subscriptionIDs are the ids of every Publish response so far.
func (m *monitor) subscriptionIDs() []uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []uint32
	for id := range m.subs {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// percentile is the p-th percentile (0..100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(float64(len(s)-1) * p / 100)
	return s[k]
}

// endpoint is the device fields naming one upstream server.
func endpoint(url string) string { return fmt.Sprintf(`"endpoint": %q,`, url) }

// deviceDoc is a deployment with one opcua device "up" (where: its
// endpoint fields, security and user) mirroring nVars of the upstream's
// changing variables and its special ones.
func deviceDoc(where string, nVars int) string { return doc(device("up", where, nVars)) }

// doc is a deployment of devices.
func doc(devices ...string) string {
	return fmt.Sprintf(`{"clusterId": %q, "devices": [%s]}`, clusterID, strings.Join(devices, ",\n"))
}

// device is one opcua device's JSON: nVars changing variables (every
// change sampled) and the upstream's special ones.
func device(name, where string, nVars int) string {
	var tags []string
	for i := 0; i < nVars; i++ {
		tags = append(tags, fmt.Sprintf(`{"name": "V%d", "nodeId": "ns=2;s=V%d", "type": "float64", "samplingInterval": "0s"}`, i, i))
	}
	tags = append(tags,
		`{"name": "Setpoint", "nodeId": "ns=2;s=Setpoint", "type": "int32", "writable": true, "samplingInterval": "0s"}`,
		`{"name": "Limited", "nodeId": "ns=2;s=Limited", "type": "int32", "writable": true}`,
		`{"name": "Flaky", "nodeId": "nsu=urn:otopcua:test:upstream;s=Flaky", "type": "float64", "samplingInterval": "0s"}`,
		`{"name": "Flag", "nodeId": "ns=2;s=Flag", "type": "bool"}`,
		`{"name": "WrongType", "nodeId": "ns=2;s=V0", "type": "int32"}`,
		`{"name": "Missing", "nodeId": "ns=2;s=Nope", "type": "float64"}`,
	)
	return fmt.Sprintf(`{"name": %q, "driver": "opcua", %s "publishingInterval": "100ms", "timeout": "1s", "tags": [
%s
]}`, name, where, strings.Join(tags, ",\n"))
}
