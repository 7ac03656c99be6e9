package opcua

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/subscription"
)

var (
	t0             = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	serviceLevelID = nsid(id.Server_ServiceLevel)
)

const (
	selfURI  = "urn:otopcua:test:a"
	peerBURI = "urn:otopcua:test:b"
	peerCURI = "urn:otopcua:test:c"
)

// newTestServer builds (does not start) a server on loopback with a fake
// clock at t0; setup fields of cfg win over the test defaults.
func newTestServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.ListenHost == "" {
		cfg.ListenHost = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = AnyPort
	}
	if cfg.ApplicationURI == "" {
		cfg.ApplicationURI = selfURI
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewFakeClockAt(t0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readNode reads the Value of nid through the address space and fails the
// test unless it is Good and encodes.
func readNode(t testing.TB, s *Server, nid *ua.NodeID) any {
	t.Helper()
	dv := s.AddressSpace().Read(&ua.ReadValueID{NodeID: nid, AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnBoth)
	if dv.Status != ua.StatusOK {
		t.Fatalf("read %s: %v", nid, dv.Status)
	}
	if _, err := dv.Encode(); err != nil {
		t.Fatalf("read %s: the value does not encode: %v", nid, err)
	}
	return dv.Value.Value()
}

func redundantServers(t testing.TB, s *Server) []ua.RedundantServerDataType {
	t.Helper()
	var out []ua.RedundantServerDataType
	for _, eo := range readNode(t, s, nsid(id.Server_ServerRedundancy_RedundantServerArray)).([]*ua.ExtensionObject) {
		out = append(out, *eo.Value.(*ua.RedundantServerDataType))
	}
	return out
}

func TestServiceLevelNode(t *testing.T) {
	s := newTestServer(t, Config{})
	space := s.AddressSpace()
	if got := readNode(t, s, serviceLevelID); got != InitialServiceLevel {
		t.Fatalf("initial ServiceLevel = %#v, want byte 255", got)
	}
	var seen []byte
	cancel, st := space.Watch(serviceLevelID, func(dv *ua.DataValue) { seen = append(seen, dv.Value.Value().(byte)) })
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	defer cancel()
	s.SetServiceLevel(240)
	s.SetServiceLevel(250)
	if got := readNode(t, s, serviceLevelID); got != byte(250) || s.ServiceLevel() != 250 {
		t.Errorf("ServiceLevel = %v / %d, want 250", got, s.ServiceLevel())
	}
	if !slices.Equal(seen, []byte{240, 250}) {
		t.Errorf("subscribers saw %v, want [240 250]", seen)
	}
	// Clients cannot write it.
	st = space.Write(&ua.WriteValue{NodeID: serviceLevelID, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(byte(0))}})
	if st != ua.StatusBadNotWritable {
		t.Errorf("client write of ServiceLevel = %v, want BadNotWritable", st)
	}
	if got := readNode(t, s, serviceLevelID); got != byte(250) {
		t.Errorf("ServiceLevel after the refused write = %v", got)
	}
	al := space.Read(&ua.ReadValueID{NodeID: serviceLevelID, AttributeID: ua.AttributeIDAccessLevel}, ua.TimestampsToReturnNeither)
	if al.Value.Value() != byte(ua.AccessLevelTypeCurrentRead) {
		t.Errorf("ServiceLevel AccessLevel = %v, want CurrentRead only", al.Value.Value())
	}
}

// TestServiceLevelCeiling: while the ceiling is on, a read answers at most
// the ceiling, whatever was published, and a published level under the
// ceiling is read as it is; off again, the published level is read.
func TestServiceLevelCeiling(t *testing.T) {
	s := newTestServer(t, Config{})
	var on bool
	s.SetServiceLevelCeiling(100, func() bool { return on })
	s.SetServiceLevel(250)
	steps := []struct {
		on        bool
		published byte
		want      byte
	}{
		{false, 250, 250},
		{true, 250, 100},
		{true, 40, 40},
		{true, 100, 100},
		{false, 240, 240},
	}
	for _, st := range steps {
		on = st.on
		s.SetServiceLevel(st.published)
		if got := readNode(t, s, serviceLevelID); got != st.want {
			t.Errorf("ceiling on=%v, published %d: read %v, want %d", st.on, st.published, got, st.want)
		}
	}
	s.SetServiceLevelCeiling(0, nil)
	on = true
	s.SetServiceLevel(250)
	if got := readNode(t, s, serviceLevelID); got != byte(250) {
		t.Errorf("ceiling removed: read %v, want 250", got)
	}
}

func TestRedundancyNodes(t *testing.T) {
	for _, support := range []ua.RedundancySupport{ua.RedundancySupportWarm, ua.RedundancySupportHot} {
		t.Run(support.String(), func(t *testing.T) {
			s := newTestServer(t, Config{PeerApplicationURIs: []string{peerBURI, peerCURI}, RedundancySupport: support})
			want := []string{selfURI, peerBURI, peerCURI}
			if got := readNode(t, s, nsid(id.Server_ServerArray)).([]string); !slices.Equal(got, want) {
				t.Errorf("ServerArray = %v, want %v", got, want)
			}
			if got := readNode(t, s, nsid(id.Server_ServerRedundancy_ServerURIArray)).([]string); !slices.Equal(got, want) {
				t.Errorf("ServerUriArray = %v, want %v (this server first)", got, want)
			}
			if got := readNode(t, s, nsid(id.Server_ServerRedundancy_RedundancySupport)); got != int32(support) {
				t.Errorf("RedundancySupport = %#v, want int32 %d", got, support)
			}
			if got := readNode(t, s, nsid(id.Server_NamespaceArray)).([]string); len(got) < 2 || got[1] != selfURI {
				t.Errorf("NamespaceArray = %v, want the ApplicationURI at index 1", got)
			}
		})
	}
}

func TestServerRedundancyIsNonTransparent(t *testing.T) {
	s := newTestServer(t, Config{PeerApplicationURIs: []string{peerBURI}})
	refs, st := s.AddressSpace().Browse(&ua.BrowseDescription{
		NodeID: nsid(id.Server_ServerRedundancy), BrowseDirection: ua.BrowseDirectionForward,
		ResultMask: uint32(ua.BrowseResultMaskAll),
	})
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	var typeDefs []string
	props := map[string]string{}
	for _, r := range refs {
		switch {
		case r.ReferenceTypeID.Equal(nsid(id.HasTypeDefinition)):
			typeDefs = append(typeDefs, r.NodeID.NodeID.String())
		case r.ReferenceTypeID.Equal(nsid(id.HasProperty)):
			props[r.NodeID.NodeID.String()] = r.BrowseName.Name
			if r.BrowseName.NamespaceIndex != 0 {
				t.Errorf("%s BrowseName namespace %d, want 0", r.BrowseName.Name, r.BrowseName.NamespaceIndex)
			}
		}
	}
	if !slices.Equal(typeDefs, []string{"i=2039"}) {
		t.Errorf("type definitions %v, want only NonTransparentRedundancyType i=2039", typeDefs)
	}
	for nid, name := range map[string]string{"i=3709": "RedundancySupport", "i=11314": "ServerUriArray", "i=11313": "RedundantServerArray"} {
		if props[nid] != name {
			t.Errorf("HasProperty %s = %q, want %q (all: %v)", nid, props[nid], name, props)
		}
	}
	// A client resolving the path the spec names finds the node.
	res := s.AddressSpace().TranslateBrowsePath(&ua.BrowsePath{StartingNode: nsid(id.Server), RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{
		{ReferenceTypeID: nsid(id.HierarchicalReferences), IncludeSubtypes: true, TargetName: &ua.QualifiedName{Name: "ServerRedundancy"}},
		{ReferenceTypeID: nsid(id.HasProperty), TargetName: &ua.QualifiedName{Name: "ServerUriArray"}},
	}}})
	if res.StatusCode != ua.StatusOK || !res.Targets[0].TargetID.NodeID.Equal(nsid(id.Server_ServerRedundancy_ServerURIArray)) {
		t.Errorf("Server/ServerRedundancy/ServerUriArray: %v", res.StatusCode)
	}
}

func TestRedundantServerArray(t *testing.T) {
	logs := &strings.Builder{}
	s := newTestServer(t, Config{PeerApplicationURIs: []string{peerBURI, peerCURI},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	want := []ua.RedundantServerDataType{
		{ServerID: selfURI, ServiceLevel: 255, ServerState: ua.ServerStateRunning},
		{ServerID: peerBURI, ServiceLevel: 0, ServerState: ua.ServerStateUnknown},
		{ServerID: peerCURI, ServiceLevel: 0, ServerState: ua.ServerStateUnknown},
	}
	if got := redundantServers(t, s); !slices.Equal(got, want) {
		t.Fatalf("initial RedundantServerArray = %+v, want %+v", got, want)
	}
	s.SetServiceLevel(250)
	s.SetPeerStatus(peerBURI, 240, ua.ServerStateRunning)
	s.SetPeerStatus("urn:otopcua:stranger", 250, ua.ServerStateRunning)
	want[0].ServiceLevel = 250
	want[1] = ua.RedundantServerDataType{ServerID: peerBURI, ServiceLevel: 240, ServerState: ua.ServerStateRunning}
	if got := redundantServers(t, s); !slices.Equal(got, want) {
		t.Errorf("RedundantServerArray = %+v, want %+v", got, want)
	}
	if !strings.Contains(logs.String(), "urn:otopcua:stranger") {
		t.Error("no warning about the unknown peer")
	}
}

func TestServerStatus(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	s := newTestServer(t, Config{Clock: clk, BuildInfo: BuildInfo{SoftwareVersion: "1.2.3", BuildNumber: "abc"}})
	clk.Advance(90 * time.Second)
	now := t0.Add(90 * time.Second)
	if got := readNode(t, s, nsid(id.Server_ServerStatus_CurrentTime)); got != now {
		t.Errorf("CurrentTime = %v, want the time of the read %v", got, now)
	}
	if got := readNode(t, s, nsid(id.Server_ServerStatus_StartTime)); got != t0 {
		t.Errorf("StartTime = %v, want %v", got, t0)
	}
	if got := readNode(t, s, nsid(id.Server_ServerStatus_State)); got != int32(ua.ServerStateRunning) {
		t.Errorf("State = %#v, want int32 0 (Running)", got)
	}
	eo := readNode(t, s, nsid(id.Server_ServerStatus)).(*ua.ExtensionObject)
	st, ok := eo.Value.(*ua.ServerStatusDataType)
	if !ok || !st.CurrentTime.Equal(now) || !st.StartTime.Equal(t0) || st.State != ua.ServerStateRunning ||
		st.BuildInfo.SoftwareVersion != "1.2.3" || st.BuildInfo.ProductURI != DefaultProductURI {
		t.Errorf("ServerStatus = %+v", eo.Value)
	}
	bi := readNode(t, s, nsid(id.Server_ServerStatus_BuildInfo)).(*ua.ExtensionObject).Value.(*ua.BuildInfo)
	if bi.ProductName != DefaultProductName || bi.BuildNumber != "abc" {
		t.Errorf("BuildInfo = %+v", bi)
	}
	if got := readNode(t, s, nsid(id.Server_ServerStatus_BuildInfo_SoftwareVersion)); got != "1.2.3" {
		t.Errorf("BuildInfo.SoftwareVersion = %v", got)
	}
	if got := readNode(t, s, nsid(id.Server_Auditing)); got != false {
		t.Errorf("Auditing = %v", got)
	}
}

func TestServerCapabilities(t *testing.T) {
	s := newTestServer(t, Config{Limits: limits.Limits{MaxNodesPerRead: 500}, MaxContinuationPoints: 7})
	for _, c := range []struct {
		n    uint32
		want any
	}{
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerRead, uint32(500)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerWrite, uint32(10000)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerBrowse, uint32(10000)},
		{id.Server_ServerCapabilities_OperationLimits_MaxNodesPerMethodCall, uint32(1000)},
		{id.Server_ServerCapabilities_MaxBrowseContinuationPoints, uint16(7)},
		{id.Server_ServerCapabilities_MaxSessions, uint32(100)},
	} {
		if got := readNode(t, s, nsid(c.n)); got != c.want {
			t.Errorf("i=%d = %#v, want %#v", c.n, got, c.want)
		}
	}
}

// TestServerObjectEncodes reads every variable below the Server object and
// encodes it: a nil pointer inside a value would break a client's session.
func TestServerObjectEncodes(t *testing.T) {
	s := newTestServer(t, Config{PeerApplicationURIs: []string{peerBURI}})
	space := s.AddressSpace()
	queue := []*ua.NodeID{nsid(id.Server)}
	seen := map[string]bool{}
	count := 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		refs, _ := space.Browse(&ua.BrowseDescription{NodeID: n, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: nsid(id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)})
		for _, r := range refs {
			if seen[r.NodeID.NodeID.String()] {
				continue
			}
			seen[r.NodeID.NodeID.String()] = true
			queue = append(queue, r.NodeID.NodeID)
			if r.NodeClass != ua.NodeClassVariable {
				continue
			}
			dv := space.Read(&ua.ReadValueID{NodeID: r.NodeID.NodeID, AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnBoth)
			if _, err := dv.Encode(); err != nil {
				t.Errorf("%s (%s): %v", r.NodeID.NodeID, r.BrowseName.Name, err)
			}
			count++
		}
	}
	if count < 50 {
		t.Errorf("only %d variables below Server", count)
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	c, err := Config{PublicHostname: "plc-a", Port: 4841}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenHost != DefaultListenHost || c.ApplicationURI != "urn:otopcua:plc-a:4841" || c.RedundancySupport != ua.RedundancySupportWarm ||
		c.ApplicationName != DefaultApplicationName || c.BuildInfo.ProductName != DefaultProductName || c.MaxNodesPerRead != 10000 {
		t.Errorf("defaults: %+v", c)
	}
	if uc := c.uaserverConfig(); uc.ListenAddr != "0.0.0.0:4841" || uc.EndpointURL != "opc.tcp://plc-a:4841" {
		t.Errorf("service layer config: %q %q", uc.ListenAddr, uc.EndpointURL)
	}
	// The limits are one value: the service layer and the engine get the
	// server's, defaults filled in, and a limit set once reaches both.
	c, err = Config{Limits: limits.Limits{MaxSessions: 7, MaxSubscriptions: 9}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := limits.Defaults()
	want.MaxSessions, want.MaxSubscriptions = 7, 9
	if c.Limits != want || c.uaserverConfig().Limits != want || c.Subscriptions.Limits != want {
		t.Errorf("limits: server %+v, service layer %+v, engine %+v; want %+v", c.Limits, c.uaserverConfig().Limits, c.Subscriptions.Limits, want)
	}
	c, err = Config{}.withDefaults()
	if err != nil || c.Port != DefaultPort || c.PublicHostname == "" || c.PublicHostname == "0.0.0.0" {
		t.Errorf("zero config: port %d, public host %q, %v", c.Port, c.PublicHostname, err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"port out of range", Config{Port: 70000}, "Config.Port"},
		{"negative port", Config{Port: -5}, "Config.Port"},
		{"cold redundancy", Config{RedundancySupport: ua.RedundancySupportCold}, "Config.RedundancySupport"},
		{"transparent redundancy", Config{RedundancySupport: ua.RedundancySupportTransparent}, "Warm"},
		{"empty peer", Config{PeerApplicationURIs: []string{""}}, "PeerApplicationURIs[0]"},
		{"peer is self", Config{ApplicationURI: "urn:a", PeerApplicationURIs: []string{"urn:a"}}, "its own"},
		{"duplicate peer", Config{PeerApplicationURIs: []string{"urn:b", "urn:b"}}, "twice"},
		{"discovery URL count", Config{PeerApplicationURIs: []string{"urn:b", "urn:c"}, PeerDiscoveryURLs: []string{"opc.tcp://b:4840"}}, "PeerDiscoveryURLs"},
		{"discovery URL scheme", Config{PeerApplicationURIs: []string{"urn:b"}, PeerDiscoveryURLs: []string{"http://b"}}, "opc.tcp"},
		{"continuation points", Config{MaxContinuationPoints: 70000}, "MaxContinuationPoints"},
		{"limits on the engine", Config{Subscriptions: subscription.Options{Limits: limits.Limits{MaxSubscriptions: 3}}}, "Config.Limits"},
	} {
		if _, err := c.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// TestCurrentTimeIsPushed proves subscribers of CurrentTime and ServerStatus
// get a change every second after Start (Value items are watched, not
// polled, so reads alone would never reach them).
func TestCurrentTimeIsPushed(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	s := newTestServer(t, Config{Clock: clk})
	got := make(chan time.Time, 64)
	cancel, st := s.AddressSpace().Watch(nsid(id.Server_ServerStatus_CurrentTime), func(dv *ua.DataValue) {
		got <- dv.Value.Value().(time.Time)
	})
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	defer cancel()
	status := make(chan *ua.ServerStatusDataType, 64)
	cancelStatus, _ := s.AddressSpace().Watch(nsid(id.Server_ServerStatus), func(dv *ua.DataValue) {
		status <- dv.Value.Value().(*ua.ExtensionObject).Value.(*ua.ServerStatusDataType)
	})
	defer cancelStatus()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The ticker goroutine registers with the fake clock asynchronously:
	// advance until a tick lands, bounded by a real-time deadline.
	poll.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		clk.Advance(currentTimeTick)
		select {
		case ts := <-got:
			if ts.Before(t0.Add(currentTimeTick)) || ts.After(clk.Now()) {
				t.Fatalf("pushed CurrentTime %v, want a tick time in (%v, %v]", ts, t0, clk.Now())
			}
			if st := <-status; !st.CurrentTime.Equal(ts) || !st.StartTime.Equal(t0) {
				t.Fatalf("pushed ServerStatus %+v, want CurrentTime %v", st, ts)
			}
			return nil
		case <-time.After(20 * time.Millisecond):
			return errors.New("no CurrentTime push after Start")
		}
	})
}
