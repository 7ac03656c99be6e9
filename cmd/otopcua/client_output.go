package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/client"
)

// printer writes the client's output lines, text or JSON. Each line is
// one Write call to an unbuffered writer, so a pipe reader sees it at once.
// Safe for concurrent use: the client's event callback and the command's
// goroutine print through it; mu serialises their lines.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	err  error // the first write error; mu must be held
}

// line writes the text line, or v as one JSON object, per p.json.
func (p *printer) line(text string, v any) error {
	var out []byte
	if p.json {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		out = b.Bytes()
	} else {
		out = []byte(text + "\n")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.w.Write(out); err != nil && p.err == nil {
		p.err = err
	}
	return p.err
}

// lineTime is the text form of a timestamp: UTC, milliseconds; "-" for none.
func lineTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// jsonTime is the JSON form of a timestamp: RFC 3339 with nanoseconds, UTC;
// "" (omitted) for none.
func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// readLine is one read result in JSON.
type readLine struct {
	Node            string `json:"node"`
	Value           any    `json:"value"`
	DataType        string `json:"dataType"`
	Status          string `json:"status"`
	SourceTimestamp string `json:"sourceTimestamp,omitempty"`
	ServerTimestamp string `json:"serverTimestamp,omitempty"`
	Server          string `json:"server"`
	URL             string `json:"url"`
}

func (p *printer) readResult(n *ua.NodeID, dv *ua.DataValue, from client.ServerRef) error {
	if dv == nil {
		dv = &ua.DataValue{Status: ua.StatusBad}
	}
	v := variantValue(dv.Value)
	text := strings.Join([]string{n.String(), textValue(v), typeName(dv.Value), statusName(dv.Status), lineTime(dv.SourceTimestamp)}, "  ")
	return p.line(text, readLine{
		Node: n.String(), Value: jsonValue(v), DataType: typeName(dv.Value), Status: statusName(dv.Status),
		SourceTimestamp: jsonTime(dv.SourceTimestamp), ServerTimestamp: jsonTime(dv.ServerTimestamp),
		Server: from.URI, URL: from.URL,
	})
}

// writeLine is one write result in JSON.
type writeLine struct {
	Node   string `json:"node"`
	Status string `json:"status"`
	Server string `json:"server"`
	URL    string `json:"url"`
}

func (p *printer) writeResult(n *ua.NodeID, st ua.StatusCode, from client.ServerRef) error {
	return p.line(n.String()+"  "+statusName(st), writeLine{Node: n.String(), Status: statusName(st), Server: from.URI, URL: from.URL})
}

// browseLine is one reference in JSON.
type browseLine struct {
	ReferenceType string `json:"referenceType"`
	NodeID        string `json:"nodeId"`
	BrowseName    string `json:"browseName"`
	DisplayName   string `json:"displayName"`
	NodeClass     string `json:"nodeClass"`
	Forward       bool   `json:"forward"`
}

func (p *printer) reference(r *ua.ReferenceDescription) error {
	l := browseLine{
		ReferenceType: referenceTypeName(r.ReferenceTypeID), NodeID: expandedText(r.NodeID),
		BrowseName: qualifiedText(r.BrowseName), NodeClass: nodeClassName(r.NodeClass), Forward: r.IsForward,
	}
	if r.DisplayName != nil {
		l.DisplayName = r.DisplayName.Text
	}
	return p.line(strings.Join([]string{l.ReferenceType, l.NodeID, l.BrowseName, l.NodeClass}, "  "), l)
}

// notificationLine is one data change in JSON.
type notificationLine struct {
	Type            string `json:"type"` // "notification"
	Time            string `json:"time"`
	Node            string `json:"node"`
	Value           any    `json:"value"`
	DataType        string `json:"dataType"`
	Status          string `json:"status"`
	SourceTimestamp string `json:"sourceTimestamp,omitempty"`
	Server          string `json:"server"`
	URL             string `json:"url"`
}

func (p *printer) notification(n client.Notification) error {
	dv := n.Value
	if dv == nil {
		dv = &ua.DataValue{}
	}
	v := variantValue(dv.Value)
	text := strings.Join([]string{lineTime(n.At), nodeText(n.Node), textValue(v), statusName(dv.Status), n.Server.URI}, "  ")
	return p.line(text, notificationLine{
		Type: "notification", Time: jsonTime(n.At), Node: nodeText(n.Node), Value: jsonValue(v),
		DataType: typeName(dv.Value), Status: statusName(dv.Status), SourceTimestamp: jsonTime(dv.SourceTimestamp),
		Server: n.Server.URI, URL: n.Server.URL,
	})
}

// eventLine is one client.Event in JSON.
type eventLine struct {
	Type        string           `json:"type"` // connected, failover, lost
	Time        string           `json:"time"`
	From        client.ServerRef `json:"from"`
	To          client.ServerRef `json:"to"`
	Reason      string           `json:"reason"`
	Interrupted string           `json:"interrupted,omitempty"`
	Resumed     string           `json:"resumed,omitempty"`
	FailoverMs  float64          `json:"failoverMs"`
	Transferred bool             `json:"transferred"`
	Security    string           `json:"security,omitempty"` // Policy:Mode of the channel to To
	Mode        string           `json:"mode,omitempty"`     // the client's mode (what auto chose)
	Fallback    string           `json:"fallback,omitempty"` // why a mirrored failover took the warm path
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// eventText is the text line of an event, without the time.
func eventText(e client.Event) string {
	var s string
	switch e.Kind {
	case client.EventConnected:
		s = "CONNECTED " + e.To.String()
	case client.EventFailover:
		s = fmt.Sprintf("FAILOVER %s -> %s", e.From, e.To)
	case client.EventLost:
		s = "LOST " + e.From.String()
	default:
		s = strings.ToUpper(string(e.Kind)) + " " + e.From.String() + " -> " + e.To.String()
	}
	if e.Security != "" {
		s += "  security: " + e.Security
	}
	if e.Mode != "" {
		s += "  mode: " + string(e.Mode)
	}
	if e.Fallback != "" {
		s += "  fallback to warm: " + e.Fallback
	}
	if e.Reason != "" {
		s += "  reason: " + e.Reason
	}
	if e.Kind == client.EventFailover {
		s += fmt.Sprintf("  failover time %.1f ms", millis(e.FailoverTime))
	}
	return s
}

func (p *printer) event(e client.Event) error {
	return p.line(lineTime(e.At)+"  "+eventText(e), eventLine{
		Type: string(e.Kind), Time: jsonTime(e.At), From: e.From, To: e.To, Reason: e.Reason,
		Interrupted: jsonTime(e.Interrupted), Resumed: jsonTime(e.Resumed),
		FailoverMs: millis(e.FailoverTime), Transferred: e.Transferred, Security: e.Security,
		Mode: string(e.Mode), Fallback: e.Fallback,
	})
}

// redundancy prints the redundancy surface of the active server and a
// table of every server: one JSON object, or a text block.
func (p *printer) redundancy(info client.RedundancyInfo) error {
	if p.json {
		return p.line("", info)
	}
	list := func(l []string) string {
		if len(l) == 0 {
			return "-"
		}
		return strings.Join(l, ", ")
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Active\t%s\n", info.Active)
	fmt.Fprintf(tw, "RedundancySupport\t%s\n", info.RedundancySupport)
	fmt.Fprintf(tw, "ServerArray\t%s\n", list(info.ServerArray))
	fmt.Fprintf(tw, "ServerUriArray\t%s\n", list(info.ServerUriArray))
	tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "URI\tURL\tLEVEL\tUP\tACTIVE")
	var errs []string
	for _, s := range info.Servers {
		level := "-"
		if s.LevelKnown {
			level = fmt.Sprint(s.Level)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", orDash(s.URI), orDash(s.URL), level, yesNo(s.Up), yesNo(s.Active))
		if s.Err != "" {
			errs = append(errs, fmt.Sprintf("%s: %s", s.ServerRef, s.Err))
		}
	}
	tw.Flush()
	for _, e := range errs {
		b.WriteString(e + "\n")
	}
	return p.line(strings.TrimSuffix(b.String(), "\n"), nil)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
