package clientproc

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The lines of the CLI's JSON contract, as the issue states them.
const (
	exampleNotification = `{"type":"notification","time":"2026-12-01T10:00:00.123456789Z","node":"i=2267","value":250,"dataType":"Byte","status":"Good","sourceTimestamp":"2026-12-01T10:00:00.1Z","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}`
	exampleConnected    = `{"type":"connected","time":"2026-12-01T10:00:00Z","from":{"uri":"","url":""},"to":{"uri":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"},"reason":"highest ServiceLevel","interrupted":"","resumed":"2026-12-01T10:00:00Z","failoverMs":0,"transferred":false}`
	exampleFailover     = `{"type":"failover","time":"2026-12-01T10:00:05.5Z","from":{"uri":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"},"to":{"uri":"urn:b:otopcua","url":"opc.tcp://127.0.0.1:4841"},"reason":"connection lost: EOF","interrupted":"2026-12-01T10:00:05.1Z","resumed":"2026-12-01T10:00:05.2234Z","failoverMs":123.4,"transferred":false}`
	exampleLost         = `{"type":"lost","time":"2026-12-01T10:00:09Z","from":{"uri":"urn:b:otopcua","url":"opc.tcp://127.0.0.1:4841"},"reason":"connection lost: EOF","interrupted":"2026-12-01T10:00:09Z"}`
)

func TestParseLine(t *testing.T) {
	read := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
	n, err := ParseLine([]byte(exampleNotification), read)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := n.Level(); !ok || v != 250 {
		t.Fatalf("level %d %v, want 250", v, ok)
	}
	wantTime := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	if n.Type != Notification || !n.Time.Equal(wantTime) || n.Read != read || n.Server != "urn:a:otopcua" ||
		n.Node != "i=2267" || n.DataType != "Byte" || n.Status != "Good" || n.URL != "opc.tcp://127.0.0.1:4840" ||
		!n.SourceTimestamp.Equal(time.Date(2026, 12, 1, 10, 0, 0, 1e8, time.UTC)) || n.Raw != exampleNotification {
		t.Fatalf("notification parsed as %+v", n)
	}

	c, err := ParseLine([]byte(exampleConnected), read)
	if err != nil {
		t.Fatal(err)
	}
	if c.Type != Connected || c.To.URI != "urn:a:otopcua" || c.From != (Ref{}) || !c.Interrupted.IsZero() || !c.HasMs || c.FailoverMs != 0 {
		t.Fatalf("connected parsed as %+v", c)
	}
	if _, ok := c.Level(); ok {
		t.Fatal("an event has no level")
	}

	f, err := ParseLine([]byte(exampleFailover), read)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != Failover || f.From.URI != "urn:a:otopcua" || f.To.URI != "urn:b:otopcua" || f.To.URL != "opc.tcp://127.0.0.1:4841" ||
		f.Reason != "connection lost: EOF" || f.FailoverMs != 123.4 || !f.HasMs || f.Transferred ||
		f.Resumed.Sub(f.Interrupted) != 123400*time.Microsecond {
		t.Fatalf("failover parsed as %+v", f)
	}

	l, err := ParseLine([]byte(exampleLost), read)
	if err != nil {
		t.Fatal(err)
	}
	if l.Type != Lost || l.From.URI != "urn:b:otopcua" || l.HasMs || !l.Resumed.IsZero() {
		t.Fatalf("lost parsed as %+v", l)
	}
}

func TestParseLineRejects(t *testing.T) {
	cases := map[string]string{
		"not JSON":                 `connected to opc.tcp://127.0.0.1:4840`,
		"two objects":              exampleConnected + exampleConnected,
		"unknown type":             `{"type":"hello","time":"2026-12-01T10:00:00Z"}`,
		"no time":                  `{"type":"notification","node":"i=2267","value":250,"server":"urn:a:otopcua"}`,
		"time not RFC 3339":        `{"type":"notification","time":"10:00:00","node":"i=2267","value":250,"server":"urn:a:otopcua"}`,
		"notification w/o server":  `{"type":"notification","time":"2026-12-01T10:00:00Z","node":"i=2267","value":250}`,
		"notification w/o value":   `{"type":"notification","time":"2026-12-01T10:00:00Z","node":"i=2267","server":"urn:a:otopcua"}`,
		"failover w/o to":          `{"type":"failover","time":"2026-12-01T10:00:00Z","from":{"uri":"urn:a:otopcua"}}`,
		"lost w/o from":            `{"type":"lost","time":"2026-12-01T10:00:00Z"}`,
		"bad interrupted":          `{"type":"failover","time":"2026-12-01T10:00:00Z","to":{"uri":"urn:b:otopcua"},"interrupted":"yesterday"}`,
		"failoverMs not a number":  `{"type":"failover","time":"2026-12-01T10:00:00Z","to":{"uri":"urn:b:otopcua"},"failoverMs":"12"}`,
		"bad sourceTimestamp":      `{"type":"notification","time":"2026-12-01T10:00:00Z","node":"i=2267","value":1,"server":"urn:a:otopcua","sourceTimestamp":"x"}`,
		"a JSON array, not object": `[1,2]`,
	}
	for name, line := range cases {
		if l, err := ParseLine([]byte(line), time.Now()); err == nil {
			t.Errorf("%s: %s parsed as %+v, want an error", name, line, l)
		}
	}
}

func TestParseLineLevel(t *testing.T) {
	for value, want := range map[string]int{"0": 0, "240": 240, "255": 255, "250.0": 250, "256": -1, "-1": -1, "24.5": -1, `"250"`: -1, "null": -1, "true": -1} {
		l, err := ParseLine([]byte(`{"type":"notification","time":"2026-12-01T10:00:00Z","node":"i=2267","value":`+value+`,"server":"s"}`), time.Now())
		if err != nil {
			t.Fatalf("value %s: %v", value, err)
		}
		v, ok := l.Level()
		if ok != (want >= 0) || ok && int(v) != want {
			t.Errorf("value %s: level %d %v, want %d", value, v, ok, want)
		}
	}
}

// TestReadLines: a stream as the CLI prints it, with a blank line, a
// line that breaks the contract, a line longer than bufio.Scanner's
// default limit and no newline after the last line.
func TestReadLines(t *testing.T) {
	long := `{"type":"failover","time":"2026-12-01T10:00:00Z","to":{"uri":"urn:b:otopcua"},"reason":"` + strings.Repeat("x", 100_000) + `"}`
	stream := exampleConnected + "\n\n" + exampleNotification + "\r\n" + "panic: oops\n" + long + "\n" + exampleLost
	var got []Line
	var bad []string
	n := 0
	now := func() time.Time { n++; return time.Unix(int64(n), 0) }
	err := ReadLines(strings.NewReader(stream), now, func(l Line) { got = append(got, l) }, func(line string, err error) {
		bad = append(bad, fmt.Sprintf("%s: %v", line, err))
	})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, l := range got {
		types = append(types, l.Type)
	}
	if strings.Join(types, ",") != "connected,notification,failover,lost" {
		t.Fatalf("types %v", types)
	}
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "panic: oops") {
		t.Fatalf("bad lines %q", bad)
	}
	if len(got[2].Reason) != 100_000 {
		t.Fatalf("the long line's reason has %d bytes", len(got[2].Reason))
	}
	// Stamped in reading order, once per non-blank line.
	for i := 1; i < len(got); i++ {
		if !got[i].Read.After(got[i-1].Read) {
			t.Fatalf("line %d read at %v, not after line %d at %v", i, got[i].Read, i-1, got[i-1].Read)
		}
	}
	if n != 5 {
		t.Fatalf("now called %d times, want once per non-blank line (5)", n)
	}
}

// TestReadLinesReportsReadErrors: an error other than EOF ends the
// reader and is returned, after the lines before it were delivered.
func TestReadLinesReportsReadErrors(t *testing.T) {
	boom := fmt.Errorf("boom")
	r := &failingReader{data: exampleConnected + "\n", err: boom}
	var got int
	err := ReadLines(r, time.Now, func(Line) { got++ }, func(string, error) { t.Fatal("no bad line expected") })
	if err != boom || got != 1 {
		t.Fatalf("err %v, %d lines; want boom after 1 line", err, got)
	}
}

type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}
