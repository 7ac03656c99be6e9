package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/internal/histfill"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	clusterID = "bench"
	every     = 100 * time.Millisecond
	day       = 24 * time.Hour
)

// row is one read.
type row struct {
	Server    string        `json:"server"`
	Read      string        `json:"read"`
	Run       int           `json:"run"`
	Values    int           `json:"values"`
	Calls     int           `json:"calls"`
	Took      time.Duration `json:"took_ns"`
	ServerCPU time.Duration `json:"server_cpu_ns"`
	Note      string        `json:"note,omitempty"`
}

// run fills the store, starts the node (and node-opcua's historian) and
// reads.
func run(t testing.TB, s settings) []row {
	from := time.Now().Add(-time.Duration(s.values)*every - time.Hour).Truncate(time.Second)
	to := from.Add(time.Duration(s.values) * every)
	var rows []row
	if s.only["raw"] || s.only["processed"] {
		rows = append(rows, otopcua(t, s, from, to)...)
	}
	if s.only["node-opcua"] {
		rows = append(rows, nodeOPCUA(t, s, from, to)...)
	}
	return rows
}

// otopcua measures the reads on a real otopcua node.
func otopcua(t testing.TB, s settings, from, to time.Time) []row {
	dir := filepath.Join(t.TempDir(), "history")
	began := time.Now()
	if err := histfill.Fill(dir, "sim/Big", from, every, s.values, histfill.Analog); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "store filled with %d values in %v\n", s.values, time.Since(began).Round(time.Millisecond))
	cfg := procs.BaseConfig("hr", procs.NewPorts(t))
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(t.TempDir(), "config.db")}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["History"] = map[string]any{"Path": dir}
	n := procs.Start(t, "hr", cfg)
	n.WaitReady(60 * time.Second)
	procs.Deploy(t, cfg, fmt.Sprintf(`{"clusterId": %q, "devices": [{"name": "sim", "driver": "simulated", "pollInterval": "1s",
  "tags": [{"name": "Big", "type": "float64", "signal": "constant", "min": 50, "historize": true}]}]}`, clusterID))
	c := dial(t, n.Endpoint())
	ns := namespace(t, c)
	node := ua.NewStringNodeID(ns, "sim/Big")
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		_, _, err := readRaw(c, node, to.Add(-time.Second), to, 100)
		return err
	})
	var rows []row
	cpu := func() time.Duration {
		d, err := measure.CPUTime(n.PID())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if s.only["raw"] {
		for i := 1; i <= s.runs; i++ {
			c0, t0 := cpu(), time.Now()
			got, calls, err := readRaw(c, node, from, to, s.per)
			took := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			if got != s.values {
				t.Fatalf("otopcua raw read: %d values, want %d", got, s.values)
			}
			rows = append(rows, row{Server: "otopcua", Read: "raw", Run: i, Values: got, Calls: calls, Took: took, ServerCPU: cpu() - c0})
		}
	}
	if s.only["processed"] {
		lo := to.Add(-day)
		if lo.Before(from) {
			lo = from
		}
		for _, iv := range []time.Duration{time.Hour, time.Minute, time.Second} {
			for i := 1; i <= s.runs; i++ {
				c0, t0 := cpu(), time.Now()
				got, calls, err := readAverage(c, node, lo, to, iv)
				took := time.Since(t0)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row{Server: "otopcua", Read: "Average per " + short(iv) + " over " + short(to.Sub(lo)), Run: i,
					Values: got, Calls: calls, Took: took, ServerCPU: cpu() - c0})
			}
		}
	}
	return rows
}

// nodeOPCUA measures the raw read on node-opcua's historian holding the
// same values.
func nodeOPCUA(t testing.TB, s settings, from, to time.Time) []row {
	dir := filepath.Join(procs.RepoRoot(), "tests", "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-opcua-server")); err != nil {
		t.Fatalf("node-opcua-server is not installed (npm ci in tests/interop): %v", err)
	}
	port := procs.UniquePort(t)
	cmd := exec.Command("node", "historian.mjs", fmt.Sprint(port), fmt.Sprint(from.UnixMilli()), fmt.Sprint(every.Milliseconds()), fmt.Sprint(s.values))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "ready ") {
				ready <- l
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-ready:
	case <-time.After(10 * time.Minute):
		t.Fatal("node-opcua's historian did not load its history in 10 minutes")
	}
	f := strings.Fields(line)
	fmt.Fprintf(os.Stderr, "node-opcua historian loaded %d values in %v (RSS %s bytes)\n", s.values, time.Since(began).Round(time.Millisecond), f[2])
	c := dial(t, f[1])
	node := ua.NewStringNodeID(1, "Big")
	var rows []row
	for i := 1; i <= s.runs; i++ {
		c0, err := measure.CPUTime(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		got, calls, err := readRaw(c, node, from, to, s.per)
		took := time.Since(t0)
		c1, _ := measure.CPUTime(cmd.Process.Pid)
		r := row{Server: "node-opcua", Read: "raw", Run: i, Values: got, Calls: calls, Took: took, ServerCPU: c1 - c0}
		if err != nil {
			r.Note = err.Error()
		} else if got != s.values {
			r.Note = fmt.Sprintf("%d values, want %d", got, s.values)
		}
		rows = append(rows, r)
	}
	return rows
}

// dial connects gopcua's client (security None) to endpoint.
func dial(t testing.TB, endpoint string) *gopcua.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := gopcua.NewClient(endpoint, gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false),
		gopcua.RequestTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func namespace(t testing.TB, c *gopcua.Client) uint16 {
	resp, err := c.Read(context.Background(), &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}})
	if err != nil {
		t.Fatal(err)
	}
	arr, _ := resp.Results[0].Value.Value().([]string)
	if i := slices.Index(arr, "urn:otopcua:cluster:"+clusterID); i >= 0 {
		return uint16(i)
	}
	t.Fatalf("no tag namespace in %v", arr)
	return 0
}

// readRaw reads node's values in [from, to), per a call, following
// continuation points; it returns how many values came in how many calls.
func readRaw(c *gopcua.Client, node *ua.NodeID, from, to time.Time, per int) (int, int, error) {
	var cp []byte
	got, calls := 0, 0
	var last time.Time
	for {
		resp, err := c.HistoryReadRawModified(context.Background(), []*ua.HistoryReadValueID{{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}},
			&ua.ReadRawModifiedDetails{StartTime: from, EndTime: to, NumValuesPerNode: uint32(per)})
		calls++
		if err != nil {
			return got, calls, err
		}
		r := resp.Results[0]
		if r.StatusCode != ua.StatusOK && r.StatusCode != ua.StatusGoodNoData {
			return got, calls, fmt.Errorf("call %d: %v", calls, r.StatusCode)
		}
		if hd, ok := r.HistoryData.Value.(*ua.HistoryData); ok {
			for _, dv := range hd.DataValues {
				if !dv.SourceTimestamp.After(last) {
					return got, calls, fmt.Errorf("value %d at %v after %v", got, dv.SourceTimestamp, last)
				}
				last = dv.SourceTimestamp
			}
			got += len(hd.DataValues)
		}
		if cp = r.ContinuationPoint; len(cp) == 0 {
			return got, calls, nil
		}
	}
}

// readAverage reads the Average of node per interval over [from, to),
// following continuation points; it returns how many intervals came in
// how many calls. Every interval must be Good.
func readAverage(c *gopcua.Client, node *ua.NodeID, from, to time.Time, interval time.Duration) (int, int, error) {
	var cp []byte
	got, calls := 0, 0
	for {
		resp, err := c.HistoryReadProcessed(context.Background(), []*ua.HistoryReadValueID{{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}},
			&ua.ReadProcessedDetails{StartTime: from, EndTime: to, ProcessingInterval: float64(interval.Milliseconds()),
				AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, id.AggregateFunction_Average)},
				AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}})
		calls++
		if err != nil {
			return got, calls, err
		}
		r := resp.Results[0]
		if r.StatusCode != ua.StatusOK {
			return got, calls, fmt.Errorf("call %d: %v", calls, r.StatusCode)
		}
		if hd, ok := r.HistoryData.Value.(*ua.HistoryData); ok {
			for _, dv := range hd.DataValues {
				if dv.Status>>30 != 0 {
					return got, calls, fmt.Errorf("interval %d: %v", got, dv.Status)
				}
			}
			got += len(hd.DataValues)
		}
		if cp = r.ContinuationPoint; len(cp) == 0 {
			return got, calls, nil
		}
	}
}

// short is d in its largest whole unit ("1h", "1min", "24h", "1s").
func short(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dmin", d/time.Minute)
	}
	return d.Round(time.Millisecond).String()
}

// printRows prints the table and one JSON line per kind of read with the
// median run.
func printRows(w io.Writer, rows []row) {
	fmt.Fprintf(w, "| server | read | run | values | calls | time | values/s | server CPU |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		note := ""
		if r.Note != "" {
			note = " (" + r.Note + ")"
		}
		fmt.Fprintf(w, "| %s | %s%s | %d | %d | %d | %v | %.0f | %v |\n", r.Server, r.Read, note, r.Run, r.Values, r.Calls,
			r.Took.Round(time.Millisecond), float64(r.Values)/r.Took.Seconds(), r.ServerCPU.Round(10*time.Millisecond))
	}
	byKind := map[string][]row{}
	var kinds []string
	for _, r := range rows {
		k := r.Server + " " + r.Read
		if byKind[k] == nil {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], r)
	}
	fmt.Fprintln(w)
	for _, k := range kinds {
		rs := byKind[k]
		slices.SortFunc(rs, func(a, b row) int { return int(a.Took - b.Took) })
		b, _ := json.Marshal(rs[len(rs)/2])
		fmt.Fprintf(w, "%s\n", b)
	}
}
