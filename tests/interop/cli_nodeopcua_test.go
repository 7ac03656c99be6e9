package interop_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/procs"
)

// These tests run the real `otopcua client` binary against node-opcua's
// OPC UA server (tests/interop/server.mjs), a stack that is not otopcua:
// the CLI must not depend on anything only otopcua's server does.

// TestClientAgainstNodeOPCUAServer: read, write, browse, subscribe and
// redundancy against one node-opcua server at ServiceLevel 230. The
// subtests share the server and run in order (read sees Setpoint's initial
// 0 before write changes it).
func TestClientAgainstNodeOPCUAServer(t *testing.T) {
	srv := startNodeServers(t, []string{"urn:otopcua-interop:node-opcua:single"}, []int{230})[0]
	// The fixture itself, checked with gopcua, so that a failure below is
	// the CLI's and not server.mjs's.
	t.Run("fixture", func(t *testing.T) { checkFixture(t, srv) })
	t.Run("read", func(t *testing.T) { testRead(t, srv) })
	t.Run("write", func(t *testing.T) { testWrite(t, srv) })
	t.Run("browse", func(t *testing.T) { testBrowse(t, srv) })
	t.Run("subscribe", func(t *testing.T) { testSubscribe(t, srv) })
	t.Run("redundancy", func(t *testing.T) { testRedundancy(t, srv) })
	t.Run("unreachable", testUnreachable)
}

func testRead(t *testing.T, srv *nodeServer) {
	reads := readNodes(t, srv, "ns=1;s=Setpoint", "ns=1;s=Counter", "i=2267")
	checkRead(t, reads[0], srv, "ns=1;s=Setpoint", "Int32", "the initial 0", equals(0))
	checkRead(t, reads[1], srv, "ns=1;s=Counter", "Double", "a whole count >= 0",
		func(v float64) bool { return v >= 0 && v == math.Trunc(v) })
	checkRead(t, reads[2], srv, "i=2267", "Byte", fmt.Sprintf("the server's ServiceLevel %d", srv.Level), equals(float64(srv.Level)))
}

func testWrite(t *testing.T, srv *nodeServer) {
	setpointIs := func(want int) {
		t.Helper()
		r := readNodes(t, srv, "ns=1;s=Setpoint")[0]
		checkRead(t, r, srv, "ns=1;s=Setpoint", "Int32", fmt.Sprint(want), equals(float64(want)))
	}
	// No type: the CLI reads the node's DataType (Int32) first.
	writeNode(t, srv, "ns=1;s=Setpoint=42", "ns=1;s=Setpoint", "Good", 0)
	setpointIs(42)
	writeNode(t, srv, "ns=1;s=Setpoint=-7:int32", "ns=1;s=Setpoint", "Good", 0)
	setpointIs(-7)
	// node-opcua refuses a Double for an Int32 variable, and any write to
	// the read-only Counter: a result that is not Good is exit 1.
	writeNode(t, srv, "ns=1;s=Setpoint=1.5:double", "ns=1;s=Setpoint", "BadTypeMismatch", 1)
	writeNode(t, srv, "ns=1;s=Counter=3", "ns=1;s=Counter", "BadNotWritable", 1)
	setpointIs(-7)
}

func testBrowse(t *testing.T, srv *nodeServer) {
	explicit := browse(t, srv, "i=85")
	for _, want := range []string{"Setpoint", "Counter"} {
		i := slices.IndexFunc(explicit, func(r cliRef) bool { return r.NodeID == "ns=1;s="+want })
		if i < 0 {
			t.Fatalf("browse i=85 lacks ns=1;s=%s: %+v", want, explicit)
		}
		r := explicit[i]
		if !strings.HasSuffix(r.BrowseName, want) || r.DisplayName != want || r.NodeClass != "Variable" || !r.Forward ||
			(r.ReferenceType != "Organizes" && r.ReferenceType != "i=35") {
			t.Fatalf("browse i=85: reference to %s is %+v, want browse and display name %s, a forward Organizes to a Variable", r.NodeID, r, want)
		}
	}
	// Without a node, browse starts at Objects (i=85).
	ids := func(refs []cliRef) []string {
		var out []string
		for _, r := range refs {
			out = append(out, r.NodeID)
		}
		slices.Sort(out)
		return out
	}
	if got, want := ids(browse(t, srv)), ids(explicit); !slices.Equal(got, want) {
		t.Fatalf("browse without a node lists %v, browse i=85 lists %v", got, want)
	}
}

// testSubscribe: --count 5 prints five increasing Counter notifications
// and ends with exit 0; on a healthy server the only event is connected.
func testSubscribe(t *testing.T, srv *nodeServer) {
	r := clientproc.Run(t, cliTimeout, "subscribe", "ns=1;s=Counter", "--count", "5", "--interval", "200ms", "-u", srv.URL, "--json")
	if r.Code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	var values []float64
	for _, l := range r.Lines(t) {
		switch l.Type {
		case clientproc.Notification:
			checkNotification(t, l, srv)
			values = append(values, number(t, l.Value))
		case clientproc.Connected:
			if l.To != (clientproc.Ref{URI: srv.URI, URL: srv.URL}) {
				t.Fatalf("connected event %+v, want to %s %s:\n%s", l, srv.URI, srv.URL, r)
			}
		default:
			t.Fatalf("unexpected line type %q on a healthy single server:\n%s", l.Type, r)
		}
	}
	if len(values) != 5 {
		t.Fatalf("--count 5 gave %d notifications:\n%s", len(values), r)
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			t.Fatalf("Counter notifications %v do not increase:\n%s", values, r)
		}
	}
}

func testRedundancy(t *testing.T, srv *nodeServer) {
	r := clientproc.Run(t, cliTimeout, "redundancy", "-u", srv.URL, "--json")
	if r.Code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	red := clientproc.JSONValues[cliRedundancy](t, r)
	if len(red) != 1 {
		t.Fatalf("want one JSON object:\n%s", r)
	}
	got := red[0]
	if got.Active != (clientproc.Ref{URI: srv.URI, URL: srv.URL}) {
		t.Fatalf("active = %+v, want %s %s:\n%s", got.Active, srv.URI, srv.URL, r)
	}
	i := slices.IndexFunc(got.Servers, func(s cliServer) bool { return s.URI == srv.URI })
	if i < 0 {
		t.Fatalf("servers lacks %s:\n%s", srv.URI, r)
	}
	if s := got.Servers[i]; !s.Up || !s.Active || !s.LevelKnown || s.Level != srv.Level || s.URL != srv.URL || s.Error != "" {
		t.Fatalf("server entry %+v, want up, active, level %d known, url %s, no error:\n%s", s, srv.Level, srv.URL, r)
	}
	// node-opcua's Server object: RedundancySupport None (0), ServerArray
	// its own ApplicationUri.
	if !strings.EqualFold(got.RedundancySupport, "None") || !slices.Equal(got.ServerArray, []string{srv.URI}) {
		t.Fatalf("redundancySupport %q, serverArray %q; node-opcua serves None and [%s]:\n%s", got.RedundancySupport, got.ServerArray, srv.URI, r)
	}

	human := clientproc.Run(t, cliTimeout, "redundancy", "-u", srv.URL)
	if human.Code != 0 || !strings.Contains(human.Stdout, srv.URI) {
		t.Fatalf("want exit 0 and %s in the output:\n%s", srv.URI, human)
	}
}

// testUnreachable: no server listening is a runtime error, exit 1.
func testUnreachable(t *testing.T) {
	url := fmt.Sprintf("opc.tcp://127.0.0.1:%d", procs.UniquePort(t))
	r := clientproc.Run(t, cliTimeout, "read", "i=2267", "-u", url, "--timeout", "2s", "--json")
	if r.Code != 1 {
		t.Fatalf("no server listening: want exit 1:\n%s", r)
	}
}

// TestClientFailoverBetweenNodeOPCUAServers: two node-opcua servers that
// know nothing of each other (levels 200 and 190) given with -F; the CLI
// subscribes on the first, and when its node process is SIGKILLed moves to
// the second, says so in a failover event, and its notifications resume
// from there.
func TestClientFailoverBetweenNodeOPCUAServers(t *testing.T) {
	srvs := startNodeServers(t,
		[]string{"urn:otopcua-interop:node-opcua:a", "urn:otopcua-interop:node-opcua:b"}, []int{200, 190})
	a, b := srvs[0], srvs[1]
	c := clientproc.Start(t, "subscribe", "ns=1;s=Counter", "-F", a.URL+","+b.URL, "--no-discovery", "--json", "--interval", "200ms")

	pos := subscribedOn(t, c, a, 3)
	killed := time.Now()
	a.Kill()
	fromB, pos := awaitFailover(t, c, pos, a, b, killed)
	for ; len(fromB) < 3; pos++ {
		l := c.LineAt(30*time.Second, pos, "B's notifications after the failover event")
		if l.Type != clientproc.Notification || l.Server != b.URI {
			t.Fatalf("%s after the failover to B, want B's notifications", l.Raw)
		}
		checkNotification(t, l, b)
		fromB = append(fromB, number(t, l.Value))
	}
	for i := 1; i < len(fromB); i++ {
		if fromB[i] <= fromB[i-1] {
			t.Fatalf("B's Counter notifications %v do not increase", fromB)
		}
	}
	endsCleanly(t, c, pos, b)
}

// subscribedOn reads the client's lines from the first on: the connected
// event to a, then n notifications from a, and nothing else. It returns
// the Seq of the line after them.
func subscribedOn(t *testing.T, c *clientproc.Proc, a *nodeServer, n int) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	connected := false
	pos := 0
	for ; n > 0; pos++ {
		l := c.LineAt(time.Until(deadline), pos, fmt.Sprintf("%d more notifications from %s", n, a.URI))
		switch {
		case l.Type == clientproc.Connected && !connected:
			if l.To != (clientproc.Ref{URI: a.URI, URL: a.URL}) {
				t.Fatalf("connected event %s, want to %s %s, the highest level", l.Raw, a.URI, a.URL)
			}
			connected = true
		case l.Type == clientproc.Notification && connected:
			if l.Server != a.URI {
				t.Fatalf("notification %s, want from %s, the highest level", l.Raw, a.URI)
			}
			checkNotification(t, l, a)
			n--
		default:
			t.Fatalf("unexpected %s (connected event seen: %v) while every server is up", l.Raw, connected)
		}
	}
	return pos
}

// awaitFailover reads lines from Seq pos on, after a was killed, until the
// failover event, checks it (from a to b, failoverMs in (0, 10 s),
// interrupted after the kill, not transferred) and returns the values of
// b's notifications that came before it and the Seq of the line after it.
// A's last notifications may still come before the event. B's must not —
// the event announces the move to B — but that is reported with Errorf so
// that the rest of the test still runs.
func awaitFailover(t *testing.T, c *clientproc.Proc, pos int, a, b *nodeServer, killed time.Time) ([]float64, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var early []string
	var fromB []float64
	for ; ; pos++ {
		l := c.LineAt(time.Until(deadline), pos, "the failover event")
		switch {
		case l.Type == clientproc.Notification && l.Server == a.URI:
		case l.Type == clientproc.Notification && l.Server == b.URI:
			checkNotification(t, l, b)
			early = append(early, l.Raw)
			fromB = append(fromB, number(t, l.Value))
		case l.Type == clientproc.Failover:
			if len(early) > 0 {
				t.Errorf("%d notification(s) from B came before the failover event that announces the move to B:\n%s\n%s",
					len(early), strings.Join(early, "\n"), l.Raw)
			}
			checkFailover(t, l, a, b, killed)
			return fromB, pos + 1
		default:
			t.Fatalf("unexpected %s after %s was killed, want a failover to %s", l.Raw, a.URI, b.URI)
		}
	}
}

func checkFailover(t *testing.T, l clientproc.Line, a, b *nodeServer, killed time.Time) {
	t.Helper()
	if l.From != (clientproc.Ref{URI: a.URI, URL: a.URL}) || l.To != (clientproc.Ref{URI: b.URI, URL: b.URL}) {
		t.Fatalf("failover event %s, want from %s %s to %s %s", l.Raw, a.URI, a.URL, b.URI, b.URL)
	}
	if l.FailoverMs <= 0 || l.FailoverMs >= 10000 {
		t.Fatalf("failover event %s: failoverMs want in (0, 10000)", l.Raw)
	}
	if l.Transferred {
		t.Fatalf("failover event %s: transferred, but two independent node-opcua servers cannot transfer a subscription", l.Raw)
	}
	if l.Interrupted.IsZero() || l.Resumed.IsZero() {
		t.Fatalf("failover event %s: want both interrupted and resumed", l.Raw)
	}
	if l.Interrupted.Before(killed.Add(-time.Second)) || l.Resumed.Before(l.Interrupted) || l.Resumed.Sub(killed) > 10*time.Second {
		t.Fatalf("failover event %s: A was killed at %v", l.Raw, killed.UTC())
	}
	t.Logf("failover %.1f ms (interrupted %v after the kill, resumed %v after it)",
		l.FailoverMs, l.Interrupted.Sub(killed), l.Resumed.Sub(killed))
}

// endsCleanly sends SIGTERM and expects exit 0 with nothing but b's
// notifications from Seq pos to the end: b is still up, so no lost or
// failover event.
func endsCleanly(t *testing.T, c *clientproc.Proc, pos int, b *nodeServer) {
	t.Helper()
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ; ; pos++ {
		l, ok := c.LineOrEnd(time.Until(deadline), pos, "the end after SIGTERM")
		if !ok {
			break
		}
		if l.Type != clientproc.Notification || l.Server != b.URI {
			t.Fatalf("%s after SIGTERM while %s is still up, want only its notifications", l.Raw, b.URI)
		}
	}
	if _, err := c.WaitExit(time.Until(deadline)); err != nil {
		t.Fatalf("otopcua client subscribe after SIGTERM: %v, want exit 0", err)
	}
}

// checkFixture reads what server.mjs promises with gopcua: its
// ApplicationUri and endpoint, Setpoint 0 (Int32), Counter (Double) and
// its ServiceLevel.
func checkFixture(t *testing.T, srv *nodeServer) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	apps, err := opcua.FindServers(ctx, srv.URL)
	if err != nil {
		t.Fatalf("FindServers %s: %v", srv.URL, err)
	}
	if len(apps) != 1 || apps[0].ApplicationURI != srv.URI {
		t.Fatalf("FindServers %s: %+v, want one server %s", srv.URL, apps, srv.URI)
	}
	eps, err := opcua.GetEndpoints(ctx, srv.URL)
	if err != nil {
		t.Fatalf("GetEndpoints %s: %v", srv.URL, err)
	}
	if len(eps) != 1 || eps[0].EndpointURL != srv.URL || eps[0].SecurityMode != ua.MessageSecurityModeNone {
		t.Fatalf("GetEndpoints %s: %+v, want one endpoint %s with security None", srv.URL, eps, srv.URL)
	}
	c, err := opcua.NewClient(srv.URL, opcua.SecurityMode(ua.MessageSecurityModeNone), opcua.AutoReconnect(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", srv.URL, err)
	}
	defer c.Close(context.Background())
	var nodes []*ua.ReadValueID
	for _, n := range []string{"ns=1;s=Setpoint", "ns=1;s=Counter", "i=2267"} {
		nodes = append(nodes, &ua.ReadValueID{NodeID: ua.MustParseNodeID(n), AttributeID: ua.AttributeIDValue})
	}
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: nodes, TimestampsToReturn: ua.TimestampsToReturnBoth})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(resp.Results) != 3 {
		t.Fatalf("read: %d results", len(resp.Results))
	}
	for i, r := range resp.Results {
		if r.Status != ua.StatusOK {
			t.Fatalf("read %s: %v", nodes[i].NodeID, r.Status)
		}
	}
	if v, ok := resp.Results[0].Value.Value().(int32); !ok || v != 0 {
		t.Fatalf("Setpoint = %T %v, want int32 0", resp.Results[0].Value.Value(), resp.Results[0].Value.Value())
	}
	if _, ok := resp.Results[1].Value.Value().(float64); !ok {
		t.Fatalf("Counter = %T, want float64", resp.Results[1].Value.Value())
	}
	if v, ok := resp.Results[2].Value.Value().(byte); !ok || int(v) != srv.Level {
		t.Fatalf("ServiceLevel = %T %v, want byte %d", resp.Results[2].Value.Value(), resp.Results[2].Value.Value(), srv.Level)
	}
}
