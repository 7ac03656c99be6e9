package interop_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/events"
)

type eventLine struct {
	Event   string         `json:"event"`
	Item    string         `json:"item"`
	Status  string         `json:"status"`
	Message string         `json:"message"`
	Fields  map[string]any `json:"fields"`
}

// TestNodeOPCUAEventSubscriber: node-opcua subscribes to the Server
// object's events of an in-process otopcua server (tests/interop/events.mjs)
// with two items, one selecting every audit field and one filtered
// OfType(AuditEventType). The test raises a BaseEventType event and an
// AuditWriteUpdateEventType event; node-opcua must decode both on the
// first item, the audit fields as raised, and only the audit event on the
// second.
func TestNodeOPCUAEventSubscriber(t *testing.T) {
	srv, err := opcua.New(opcua.Config{
		ListenHost: "127.0.0.1", PublicHostname: "127.0.0.1", Port: opcua.AnyPort,
		ApplicationURI: "urn:interop:events", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	setpoint := ua.NewStringNodeID(1, "press1/Setpoint")
	if _, err := srv.AddressSpace().AddVariable(setpoint, "Setpoint", "", ua.NewNumericNodeID(0, id.ObjectsFolder),
		ua.NewNumericNodeID(0, id.Int16), int16(5), byte(ua.AccessLevelTypeCurrentRead|ua.AccessLevelTypeCurrentWrite)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}

	node := startNodeScript(t, "events.mjs", srv.EndpointURL(), "60")
	stdin := node.Stdin
	next := func(what string) eventLine {
		t.Helper()
		var e eventLine
		node.next(what, &e)
		return e
	}

	if e := next("connected"); e.Event != "connected" {
		t.Fatalf("first line %+v", e)
	}
	for range 2 {
		if e := next("created"); e.Event != "created" || e.Status != "Good" {
			t.Fatalf("item creation: %+v", e)
		}
	}
	if e := next("subscribed"); e.Event != "subscribed" {
		t.Fatalf("want subscribed, got %+v", e)
	}

	plain := events.Event{EventType: ua.NewNumericNodeID(0, id.BaseEventType), Message: ua.NewLocalizedText("plain"), Severity: 100}
	if err := srv.AddressSpace().RaiseEvent(events.ServerObject, plain); err != nil {
		t.Fatal(err)
	}
	audit, err := events.AuditWriteUpdate{Node: setpoint, Status: false, ServerID: "urn:interop:events",
		ClientUserID: "operator", AttributeID: ua.AttributeIDValue, OldValue: int16(5), NewValue: int16(7),
		Message: "not primary", Severity: 700}.Event()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddressSpace().RaiseEvent(events.ServerObject, audit); err != nil {
		t.Fatal(err)
	}

	got := map[string][]map[string]any{}
	for len(got["all"]) < 2 || len(got["audit"]) < 1 {
		e := next("event")
		if e.Event != "event" {
			t.Fatalf("want an event, got %+v", e)
		}
		got[e.Item] = append(got[e.Item], e.Fields)
	}
	a := got["all"][1]
	want := map[string]any{
		"EventType": "ns=0;i=2100", "SourceNode": "ns=1;s=press1/Setpoint", "SourceName": "Attribute/Write",
		"Message": "not primary", "Severity": float64(700), "ClientUserId": "operator", "Status": false,
		"ServerId": "urn:interop:events", "AttributeId": float64(13), "OldValue": float64(5), "NewValue": float64(7),
	}
	for k, w := range want {
		if a[k] != w {
			t.Errorf("audit event %s = %#v, want %#v", k, a[k], w)
		}
	}
	if id, _ := a["EventId"].(string); len(id) != 32 {
		t.Errorf("EventId %v, want 16 bytes", a["EventId"])
	}
	for _, k := range []string{"Time", "ReceiveTime"} {
		if ts, _ := a[k].(string); ts == "" {
			t.Errorf("%s missing: %v", k, a[k])
		} else if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || time.Since(tm) > time.Minute {
			t.Errorf("%s = %s", k, ts)
		}
	}
	p := got["all"][0]
	if p["Message"] != "plain" || p["EventType"] != "ns=0;i=2041" || p["SourceName"] != "Server" {
		t.Errorf("plain event %v", p)
	}
	for _, k := range []string{"ClientUserId", "Status", "AttributeId", "OldValue", "NewValue"} {
		if p[k] != nil {
			t.Errorf("plain event %s = %v, want null", k, p[k])
		}
	}
	if len(got["audit"]) != 1 || got["audit"][0]["EventType"] != "ns=0;i=2100" {
		t.Errorf("OfType(AuditEventType) item got %v, want the audit event only", got["audit"])
	}

	stdin.Close()
	for {
		e := next("closed")
		if e.Event == "closed" {
			break
		}
		if e.Event == "event" && e.Item == "audit" {
			t.Errorf("a second event on the filtered item: %v", e.Fields)
		}
	}
	if err := node.Wait(); err != nil {
		t.Fatalf("node client: %v", err)
	}
}
