package clientproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Line types of `otopcua client subscribe --json`.
const (
	Notification = "notification"
	Connected    = "connected"
	Failover     = "failover"
	Lost         = "lost"
)

// Ref names a server in an event: its ApplicationUri and the URL the
// client used.
type Ref struct {
	URI string `json:"uri"`
	URL string `json:"url"`
}

// Line is one JSON line of `otopcua client subscribe … --json`.
type Line struct {
	Seq  int       // its index among the lines that parsed, from 0
	Raw  string    // the line as printed
	Read time.Time // when the test read it
	Type string    // Notification, Connected, Failover, Lost
	Time time.Time // "time": when the CLI received it (notification) or decided (event)

	// Notification fields.
	Node            string
	Value           json.RawMessage
	DataType        string
	Status          string
	SourceTimestamp time.Time // zero when absent
	Server          string    // ApplicationUri of the server that sent it
	URL             string

	// Event fields.
	From, To    Ref
	Reason      string
	Interrupted time.Time // zero when absent
	Resumed     time.Time // zero when absent
	FailoverMs  float64
	HasMs       bool // failoverMs was present
	Transferred bool
	Security    string // "Policy:Mode" of the channel to To ("" when not printed)
	Mode        string // the client's mode ("" when not printed)
	Fallback    string // why a mirrored failover took the warm path ("" when it did not)
}

// Level is a notification's value as a ServiceLevel byte; false for an
// event or a value that is not a whole number in 0…255.
func (l Line) Level() (byte, bool) {
	var v *float64
	if l.Type != Notification || json.Unmarshal(l.Value, &v) != nil || v == nil || *v < 0 || *v > 255 || *v != float64(int(*v)) {
		return 0, false
	}
	return byte(*v), true
}

func (l Line) String() string {
	if l.Type == Notification {
		return fmt.Sprintf("%s notification %s=%s from %s (read %s)", l.Time.Format("15:04:05.000"), l.Node, l.Value, l.Server, l.Read.Format("15:04:05.000"))
	}
	return fmt.Sprintf("%s %s %s → %s reason %q failoverMs %.1f (read %s)", l.Time.Format("15:04:05.000"), l.Type, l.From.URI, l.To.URI, l.Reason, l.FailoverMs, l.Read.Format("15:04:05.000"))
}

// wire is a line as encoded; times are strings so that an empty or absent
// one is the zero time rather than a decoding error.
type wire struct {
	Type            string          `json:"type"`
	Time            string          `json:"time"`
	Node            string          `json:"node"`
	Value           json.RawMessage `json:"value"`
	DataType        string          `json:"dataType"`
	Status          string          `json:"status"`
	SourceTimestamp string          `json:"sourceTimestamp"`
	Server          string          `json:"server"`
	URL             string          `json:"url"`
	From            Ref             `json:"from"`
	To              Ref             `json:"to"`
	Reason          string          `json:"reason"`
	Interrupted     string          `json:"interrupted"`
	Resumed         string          `json:"resumed"`
	FailoverMs      *float64        `json:"failoverMs"`
	Transferred     bool            `json:"transferred"`
	Security        string          `json:"security"`
	Mode            string          `json:"mode"`
	Fallback        string          `json:"fallback"`
}

// ParseLine decodes one line against the CLI's contract: a known type, an
// RFC 3339 "time", a notification with a node, a value and a server, an
// event with a "to" server (a "lost" event with a "from" server). read is
// when the test read it; Seq is left 0.
func ParseLine(b []byte, read time.Time) (Line, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return Line{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return Line{}, errors.New("more than one JSON value on the line")
	}
	l := Line{Raw: string(b), Read: read, Type: w.Type, Node: w.Node, Value: w.Value, DataType: w.DataType,
		Status: w.Status, Server: w.Server, URL: w.URL, From: w.From, To: w.To, Reason: w.Reason, Transferred: w.Transferred, Security: w.Security,
		Mode: w.Mode, Fallback: w.Fallback}
	var err error
	if l.Time, err = parseTime("time", w.Time, true); err != nil {
		return Line{}, err
	}
	switch w.Type {
	case Notification:
		if w.Node == "" || len(w.Value) == 0 || w.Server == "" {
			return Line{}, errors.New("notification without node, value or server")
		}
		if l.SourceTimestamp, err = parseTime("sourceTimestamp", w.SourceTimestamp, false); err != nil {
			return Line{}, err
		}
	case Connected, Failover, Lost:
		if w.Type == Lost && w.From.URI == "" && w.From.URL == "" {
			return Line{}, errors.New("lost event without a from server")
		}
		if w.Type != Lost && w.To.URI == "" && w.To.URL == "" {
			return Line{}, fmt.Errorf("%s event without a to server", w.Type)
		}
		if l.Interrupted, err = parseTime("interrupted", w.Interrupted, false); err != nil {
			return Line{}, err
		}
		if l.Resumed, err = parseTime("resumed", w.Resumed, false); err != nil {
			return Line{}, err
		}
		if w.FailoverMs != nil {
			l.FailoverMs, l.HasMs = *w.FailoverMs, true
		}
	default:
		return Line{}, fmt.Errorf("unknown type %q", w.Type)
	}
	return l, nil
}

func parseTime(field, s string, required bool) (time.Time, error) {
	if s == "" {
		if required {
			return time.Time{}, fmt.Errorf("no %q", field)
		}
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", field, err)
	}
	return t, nil
}

// ReadLines reads r line by line until EOF or an error: every line that
// parses goes to add, every other non-blank line to bad. now stamps the
// lines (Line.Read). It returns the read error (nil at EOF).
func ReadLines(r io.Reader, now func() time.Time, add func(Line), bad func(line string, err error)) error {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes('\n')
		if line := bytes.TrimSpace(b); len(line) > 0 {
			if l, perr := ParseLine(line, now()); perr != nil {
				bad(string(line), perr)
			} else {
				add(l)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
