package opcua

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
)

// fields is an event's fields in eventFilter's order, from a map of the
// ones present (the others null, as a server sends a field the event's
// type does not have).
func fields(set map[int]any) []*ua.Variant {
	f := make([]*ua.Variant, nFields)
	for i := range f {
		f[i] = &ua.Variant{}
		if v, ok := set[i]; ok {
			f[i] = ua.MustVariant(v)
		}
	}
	return f
}

func TestParseEvent(t *testing.T) {
	level := ua.NewStringNodeID(2, "Level")
	tagOf := func(n *ua.NodeID) string {
		if n.String() == level.String() {
			return "Level"
		}
		return ""
	}
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	alarm := func(more map[int]any) map[int]any {
		m := map[int]any{
			fEventID: []byte{1, 2}, fEventType: ua.NewNumericNodeID(0, id.AlarmConditionType),
			fConditionID: ua.NewStringNodeID(2, "TankHigh"), fBranchID: ua.NewTwoByteNodeID(0),
			fSourceNode: level, fSourceName: "Level", fTime: at,
			fMessage: &ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: "tank high"}, fSeverity: uint16(800),
			fConditionName: "TankHigh", fRetain: true, fEnabled: true, fActive: true, fAcked: false, fConfirmed: false,
			fComment: &ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: "seen"}, fClientUserID: "op",
		}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	base := drivers.UpstreamCondition{ID: "ns=2;s=TankHigh", Name: "TankHigh", Tag: "Level", SourceName: "Level",
		Active: true, Enabled: true, Retain: true, Severity: 800, Message: "tank high", Comment: "seen", User: "op",
		Time: at, EventID: []byte{1, 2}}
	with := func(edit func(*drivers.UpstreamCondition)) drivers.UpstreamCondition {
		c := base
		edit(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		f    []*ua.Variant
		kind eventKind
		want drivers.UpstreamCondition
	}{
		{"active, unacknowledged", fields(alarm(nil)), evCondition, base},
		{"acknowledged", fields(alarm(map[int]any{fAcked: true})), evCondition, with(func(c *drivers.UpstreamCondition) { c.Acked = true })},
		{"inactive, confirmed", fields(alarm(map[int]any{fActive: false, fAcked: true, fConfirmed: true, fRetain: false})), evCondition,
			with(func(c *drivers.UpstreamCondition) {
				c.Active, c.Acked, c.Confirmed, c.Retain = false, true, true, false
			})},
		{"source not mirrored", fields(alarm(map[int]any{fSourceNode: ua.NewStringNodeID(2, "Pump")})), evCondition,
			with(func(c *drivers.UpstreamCondition) { c.Tag = "" })},
		{"no ConfirmedState: confirmed", fields(func() map[int]any { m := alarm(nil); delete(m, fConfirmed); return m }()), evCondition,
			with(func(c *drivers.UpstreamCondition) { c.Confirmed = true })},
		{"not acknowledgeable (a ConditionType): acknowledged", fields(func() map[int]any {
			m := alarm(nil)
			delete(m, fAcked)
			delete(m, fActive)
			return m
		}()), evCondition, with(func(c *drivers.UpstreamCondition) { c.Active, c.Acked = false, true })},
		{"severity above 1000 is 1000, no name is the id", fields(alarm(map[int]any{fSeverity: uint16(1200), fConditionName: ""})), evCondition,
			with(func(c *drivers.UpstreamCondition) { c.Severity, c.Name = 1000, "ns=2;s=TankHigh" })},
		{"a branch", fields(alarm(map[int]any{fBranchID: ua.NewStringNodeID(2, "b1")})), evIgnore, drivers.UpstreamCondition{}},
		{"no ConditionId (a plain event)", fields(func() map[int]any { m := alarm(nil); delete(m, fConditionID); return m }()), evIgnore, drivers.UpstreamCondition{}},
		{"refresh start", fields(map[int]any{fEventType: ua.NewNumericNodeID(0, id.RefreshStartEventType)}), evRefreshStart, drivers.UpstreamCondition{}},
		{"refresh end", fields(map[int]any{fEventType: ua.NewNumericNodeID(0, id.RefreshEndEventType)}), evRefreshEnd, drivers.UpstreamCondition{}},
		{"too few fields", fields(nil)[:3], evIgnore, drivers.UpstreamCondition{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, kind := parseEvent(tc.f, tagOf)
			if kind != tc.kind {
				t.Fatalf("kind %v, want %v", kind, tc.kind)
			}
			if !bytes.Equal(got.EventID, tc.want.EventID) {
				t.Fatalf("EventID %x, want %x", got.EventID, tc.want.EventID)
			}
			got.EventID, tc.want.EventID = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestEventFilterSelectsEveryField(t *testing.T) {
	f := eventFilter()
	if len(f.SelectClauses) != nFields {
		t.Fatalf("%d select clauses, want %d", len(f.SelectClauses), nFields)
	}
	for i, s := range f.SelectClauses {
		if s == nil || s.TypeDefinitionID == nil {
			t.Fatalf("select clause %d unset", i)
		}
	}
	if len(f.WhereClause.Elements) != 5 {
		t.Fatalf("where clause %+v", f.WhereClause)
	}
}

// TestConditionMirror feeds the event item's notifications to a driver:
// a refresh is reported once, whole, at its end; a live event at once; a
// condition beyond alarms.max is left out with one log line.
func TestConditionMirror(t *testing.T) {
	var got []drivers.ConditionUpdate
	var logs bytes.Buffer
	dev := deployment.Device{Name: "up", Driver: deployment.DriverOPCUA, Endpoint: "opc.tcp://127.0.0.1:1",
		Alarms: &deployment.UpstreamAlarms{Max: 1}}
	d, err := New(dev, drivers.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnConditions: func(u drivers.ConditionUpdate) { got = append(got, u) }})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(m map[int]any) client.Notification { return client.Notification{Event: fields(m)} }
	cond := func(name string, active bool) client.Notification {
		return ev(map[int]any{fEventType: ua.NewNumericNodeID(0, id.AlarmConditionType), fConditionID: ua.NewStringNodeID(2, name),
			fActive: active, fSeverity: uint16(500)})
	}
	start := ev(map[int]any{fEventType: ua.NewNumericNodeID(0, id.RefreshStartEventType)})
	end := ev(map[int]any{fEventType: ua.NewNumericNodeID(0, id.RefreshEndEventType)})

	d.onEvents([]client.Notification{start, cond("A", true), cond("A", false)})
	if len(got) != 0 {
		t.Fatalf("reported before the refresh ended: %+v", got)
	}
	d.onEvents([]client.Notification{end})
	if len(got) != 1 || !got[0].Refresh || len(got[0].Conditions) != 1 || got[0].Conditions[0].Active {
		t.Fatalf("refresh reported as %+v, want A once, inactive (its last state)", got)
	}
	d.onEvents([]client.Notification{cond("A", true), cond("B", true), cond("C", true)})
	if len(got) != 2 || got[1].Refresh || got[1].Conditions[0].ID != "ns=2;s=A" || !got[1].Conditions[0].Active {
		t.Fatalf("live events reported as %+v, want A active only (max 1)", got)
	}
	if n := strings.Count(logs.String(), "more upstream conditions than alarms.max"); n != 1 {
		t.Fatalf("the bound was logged %d times, want once:\n%s", n, logs.String())
	}
	if st := d.AckCondition(t.Context(), "ns=2;s=B", false, ""); st != ua.StatusBadNodeIDUnknown {
		t.Fatalf("ack of a condition left out: %v", st)
	}
	if st := d.AckCondition(t.Context(), "ns=2;s=A", false, ""); st != ua.StatusBadCommunicationError {
		t.Fatalf("ack while not connected: %v", st)
	}
}
