package interop_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/clientproc"
)

// The JSON `otopcua client` prints for read, write, browse and redundancy,
// and checks of it; tests/clientproc runs the client and parses the
// subscribe lines.

// cliRead is one node of `otopcua client read --json`.
type cliRead struct {
	Node            string   `json:"node"`
	Value           jsonText `json:"value"`
	DataType        string   `json:"dataType"`
	Status          string   `json:"status"`
	SourceTimestamp string   `json:"sourceTimestamp"`
	ServerTimestamp string   `json:"serverTimestamp"`
	Server          string   `json:"server"`
	URL             string   `json:"url"`
}

// cliWrite is one node of `otopcua client write --json`.
type cliWrite struct {
	Node   string `json:"node"`
	Status string `json:"status"`
	Server string `json:"server"`
	URL    string `json:"url"`
}

// cliRef is one reference of `otopcua client browse --json`.
type cliRef struct {
	ReferenceType string `json:"referenceType"`
	NodeID        string `json:"nodeId"`
	BrowseName    string `json:"browseName"`
	DisplayName   string `json:"displayName"`
	NodeClass     string `json:"nodeClass"`
	Forward       bool   `json:"forward"`
}

// cliRedundancy is `otopcua client redundancy --json`.
type cliRedundancy struct {
	Active            clientproc.Ref `json:"active"`
	RedundancySupport string         `json:"redundancySupport"`
	ServerArray       []string       `json:"serverArray"`
	ServerURIArray    []string       `json:"serverUriArray"`
	Servers           []cliServer    `json:"servers"`
}

// cliServer is one server of `otopcua client redundancy --json`.
type cliServer struct {
	URI        string   `json:"uri"`
	URL        string   `json:"url"`
	URLs       []string `json:"urls"`
	Up         bool     `json:"up"`
	Level      int      `json:"level"`
	LevelKnown bool     `json:"levelKnown"`
	Active     bool     `json:"active"`
	Error      string   `json:"error"`
}

// cliTimeout bounds one short CLI run (read, write, browse, redundancy).
const cliTimeout = 30 * time.Second

// readNodes runs `read --json` on srv and returns one result per node, in
// order.
func readNodes(t *testing.T, srv *nodeServer, nodes ...string) []cliRead {
	t.Helper()
	r := clientproc.Run(t, cliTimeout, append(append([]string{"read"}, nodes...), "-u", srv.URL, "--json")...)
	if r.Code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	reads := clientproc.JSONValues[cliRead](t, r)
	if len(reads) != len(nodes) {
		t.Fatalf("%d results for %d nodes:\n%s", len(reads), len(nodes), r)
	}
	for i, n := range nodes {
		if reads[i].Node != n {
			t.Fatalf("result %d is for %q, want %q:\n%s", i, reads[i].Node, n, r)
		}
	}
	return reads
}

// checkRead checks one read result: Good, the data type, both timestamps,
// the server that answered, and that ok accepts the value (described by
// want).
func checkRead(t *testing.T, r cliRead, srv *nodeServer, node, dataType, want string, ok func(float64) bool) {
	t.Helper()
	if r.Node != node || r.Status != "Good" || r.DataType != dataType || r.Server != srv.URI || r.URL != srv.URL {
		t.Fatalf("read %s = %+v, want Good %s from %s %s", node, r, dataType, srv.URI, srv.URL)
	}
	recent(t, node+" sourceTimestamp", parseTime(t, node+" sourceTimestamp", r.SourceTimestamp))
	recent(t, node+" serverTimestamp", parseTime(t, node+" serverTimestamp", r.ServerTimestamp))
	if !ok(number(t, r.Value)) {
		t.Fatalf("read %s = %s, want %s", node, r.Value, want)
	}
}

// equals is a checkRead predicate.
func equals(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

// writeNode runs `write --json ARG` on srv and checks the one result's
// status and the exit code.
func writeNode(t *testing.T, srv *nodeServer, arg, node, wantStatus string, wantCode int) {
	t.Helper()
	r := clientproc.Run(t, cliTimeout, "write", arg, "-u", srv.URL, "--json")
	if r.Code != wantCode {
		t.Fatalf("write %s: want exit %d:\n%s", arg, wantCode, r)
	}
	ws := clientproc.JSONValues[cliWrite](t, r)
	if len(ws) != 1 || ws[0] != (cliWrite{Node: node, Status: wantStatus, Server: srv.URI, URL: srv.URL}) {
		t.Fatalf("write %s: want one result %s for %s from %s %s:\n%s", arg, wantStatus, node, srv.URI, srv.URL, r)
	}
}

// browse runs `browse --json [NODE]` on srv.
func browse(t *testing.T, srv *nodeServer, node ...string) []cliRef {
	t.Helper()
	r := clientproc.Run(t, cliTimeout, append(append([]string{"browse"}, node...), "-u", srv.URL, "--json")...)
	if r.Code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	return clientproc.JSONValues[cliRef](t, r)
}

// checkNotification checks a Counter notification from srv.
func checkNotification(t *testing.T, l clientproc.Line, srv *nodeServer) {
	t.Helper()
	if l.Node != "ns=1;s=Counter" || l.Status != "Good" || l.DataType != "Double" || l.Server != srv.URI || l.URL != srv.URL {
		t.Fatalf("notification %s, want a Good Double for ns=1;s=Counter from %s %s", l.Raw, srv.URI, srv.URL)
	}
	recent(t, "notification time", l.Time)
	recent(t, "notification sourceTimestamp", l.SourceTimestamp)
}

// jsonText is a JSON value kept as its text; it prints as that text.
type jsonText []byte

func (j *jsonText) UnmarshalJSON(b []byte) error { *j = append(jsonText(nil), b...); return nil }
func (j jsonText) String() string                { return string(j) }

// number decodes a JSON number.
func number(t *testing.T, raw []byte) float64 {
	t.Helper()
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("value %s is not a JSON number: %v", raw, err)
	}
	return v
}

func parseTime(t *testing.T, what, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %q is not RFC 3339: %v", what, s, err)
	}
	return ts
}

// recent checks that ts is present and within a minute of now: the
// servers and the CLI run on this machine, so their clocks agree.
func recent(t *testing.T, what string, ts time.Time) {
	t.Helper()
	if ts.IsZero() {
		t.Fatalf("%s is absent", what)
	}
	if d := time.Since(ts); d.Abs() > time.Minute {
		t.Fatalf("%s %s is %v away from now", what, ts.Format(time.RFC3339Nano), d)
	}
}
