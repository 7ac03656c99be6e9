package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/client"
)

func TestServerURLs(t *testing.T) {
	for _, tc := range []struct {
		url      string
		failover []string
		want     []string
		err      string
	}{
		{url: "opc.tcp://a:4840", want: []string{"opc.tcp://a:4840"}},
		{failover: []string{"opc.tcp://a:1", "opc.tcp://b:2"}, want: []string{"opc.tcp://a:1", "opc.tcp://b:2"}},
		{url: "opc.tcp://b:2", failover: []string{"opc.tcp://a:1", "opc.tcp://b:2", " ", "opc.tcp://a:1"}, want: []string{"opc.tcp://b:2", "opc.tcp://a:1"}},
		{err: "give a server: -u URL or -F URL1,URL2"},
		{failover: []string{""}, err: "give a server: -u URL or -F URL1,URL2"},
		{url: "http://a:80", err: `"http://a:80" is not an opc.tcp:// URL`},
		{url: "opc.tcp://a:1", failover: []string{"a:2"}, err: `"a:2" is not an opc.tcp:// URL`},
	} {
		got, err := serverURLs(tc.url, tc.failover)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("serverURLs(%q, %q) error = %v, want %q", tc.url, tc.failover, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("serverURLs(%q, %q) = %q, %v; want %q", tc.url, tc.failover, got, err, tc.want)
		}
	}
}

func TestParseNodeID(t *testing.T) {
	for s, want := range map[string]string{
		"i=2267":      "i=2267",
		"ns=2;s=Tank": "ns=2;s=Tank",
		"ns=1;i=5":    "ns=1;i=5",
		"s=a=b":       "s=a=b",
		"ns=1;b=AQI=": "ns=1;b=AQI=",
	} {
		n, err := parseNodeID(s)
		if err != nil || n.String() != want {
			t.Errorf("parseNodeID(%q) = %v, %v; want %s", s, n, err, want)
		}
	}
	for _, s := range []string{"", "2267", "Tank", "ns", "i", "i=", "ns=2", "ns=2;s", "ns=x;i=1", "i=abc", "x=1", "ns=70000;i=1"} {
		if n, err := parseNodeID(s); err == nil {
			t.Errorf("parseNodeID(%q) = %v, want an error", s, n)
		}
	}
}

func TestParseWriteArg(t *testing.T) {
	for _, tc := range []struct {
		arg, node, value string
		typed            bool
		want             any // the converted value when typed
	}{
		{arg: "ns=2;s=Tank=5", node: "ns=2;s=Tank", value: "5"},
		{arg: "i=2267=250:byte", node: "i=2267", value: "250", typed: true, want: uint8(250)},
		{arg: "ns=2;s=a=b=5", node: "ns=2;s=a", value: "b=5"},
		{arg: "ns=2;s=Clock=12:30", node: "ns=2;s=Clock", value: "12:30"},
		{arg: "ns=2;s=Clock=12:30:string", node: "ns=2;s=Clock", value: "12:30", typed: true, want: "12:30"},
		{arg: "s=T=2026-11-30T01:02:03.5Z:datetime", node: "s=T", value: "2026-11-30T01:02:03.5Z", typed: true,
			want: time.Date(2026, 11, 30, 1, 2, 3, 5e8, time.UTC)},
		{arg: "ns=2;s=Flag=true:bool", node: "ns=2;s=Flag", value: "true", typed: true, want: true},
		{arg: "ns=2;i=7=-12:int16", node: "ns=2;i=7", value: "-12", typed: true, want: int16(-12)},
		{arg: "ns=2;i=7=1.5:float", node: "ns=2;i=7", value: "1.5", typed: true, want: float32(1.5)},
		{arg: "ns=2;i=7=:string", node: "ns=2;i=7", value: "", typed: true, want: ""},
		{arg: "ns=2;i=7=", node: "ns=2;i=7", value: ""},
	} {
		w, err := parseWriteArg(tc.arg)
		if err != nil {
			t.Errorf("parseWriteArg(%q): %v", tc.arg, err)
			continue
		}
		if w.node.String() != tc.node || w.value != tc.value || w.typed != tc.typed {
			t.Errorf("parseWriteArg(%q) = node %s value %q typed %v; want %s %q %v", tc.arg, w.node, w.value, w.typed, tc.node, tc.value, tc.typed)
		}
		if tc.typed {
			if w.v == nil || fmt.Sprintf("%T %v", w.v.Value(), w.v.Value()) != fmt.Sprintf("%T %v", tc.want, tc.want) {
				t.Errorf("parseWriteArg(%q) value = %#v, want %#v", tc.arg, w.v, tc.want)
			}
		} else if w.v != nil {
			t.Errorf("parseWriteArg(%q) converted an untyped value", tc.arg)
		}
	}
	for arg, want := range map[string]string{
		"Tank=5":                  `write "Tank=5": want NODE=VALUE[:type]`,
		"i=2267":                  `write "i=2267": want NODE=VALUE[:type]`,
		"ns=2;s=Tank=abc:int32":   `write ns=2;s=Tank: value "abc" does not convert to int32: invalid syntax`,
		"i=2267=300:byte":         `write i=2267: value "300" does not convert to byte: value out of range`,
		"i=1=yes please:bool":     `write i=1: value "yes please" does not convert to bool`,
		"i=1=yesterday:datetime":  `write i=1: value "yesterday" does not convert to datetime`,
		"i=1=1e40:float":          `write i=1: value "1e40" does not convert to float`,
		"i=1=-1:uint64":           `write i=1: value "-1" does not convert to uint64`,
		"i=1=99999999999:int32":   `write i=1: value "99999999999" does not convert to int32`,
		"i=1=0x10:uint16":         `write i=1: value "0x10" does not convert to uint16`,
		"i=1=128:sbyte":           `write i=1: value "128" does not convert to sbyte`,
		"i=1=NaNish:double":       `write i=1: value "NaNish" does not convert to double`,
		"i=1=70000:uint16":        `write i=1: value "70000" does not convert to uint16`,
		"i=1=40000:int16":         `write i=1: value "40000" does not convert to int16`,
		"i=1=5000000000:uint32":   `write i=1: value "5000000000" does not convert to uint32`,
		"i=1=1.5:int64":           `write i=1: value "1.5" does not convert to int64`,
		"ns=2;s=Tank=:int32":      `write ns=2;s=Tank: value "" does not convert to int32`,
		"ns=2;s=Tank=5:Int32":     "", // not a type suffix: the value is "5:Int32", converted later
		"ns=2;s=Tank=5:int33":     "",
		"ns=2;s=Tank=5:datetime2": "",
	} {
		w, err := parseWriteArg(arg)
		if want == "" {
			if err != nil || w.typed {
				t.Errorf("parseWriteArg(%q) = typed %v, %v; want an untyped value", arg, w.typed, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("parseWriteArg(%q) error = %v, want %q…", arg, err, want)
		}
	}
}

func TestStatusName(t *testing.T) {
	for code, want := range map[ua.StatusCode]string{
		ua.StatusOK:                            "Good",
		ua.StatusUncertain:                     "Uncertain",
		ua.StatusBad:                           "Bad",
		ua.StatusBadNodeIDUnknown:              "BadNodeIdUnknown",
		ua.StatusBadNotWritable:                "BadNotWritable",
		ua.StatusBadUserAccessDenied:           "BadUserAccessDenied",
		ua.StatusBadTCPEndpointURLInvalid:      "BadTcpEndpointUrlInvalid",
		ua.StatusBadServerURIInvalid:           "BadServerUriInvalid",
		ua.StatusGoodNoData:                    "GoodNoData",
		ua.StatusBadNodeIDUnknown | 0x0400:     "BadNodeIdUnknown", // info bits
		ua.StatusCode(0x8FFF0000):              "0x8FFF0000",
		ua.StatusUncertainLastUsableValue:      "UncertainLastUsableValue",
		ua.StatusBadCommunicationError:         "BadCommunicationError",
		ua.StatusBadSecureChannelIDInvalid:     "BadSecureChannelIdInvalid",
		ua.StatusBadIdentityTokenInvalid:       "BadIdentityTokenInvalid",
		ua.StatusBadRequestInterrupted:         "BadRequestInterrupted",
		ua.StatusBadTypeMismatch:               "BadTypeMismatch",
		ua.StatusBadNoCommunication:            "BadNoCommunication",
		ua.StatusBadWaitingForInitialData:      "BadWaitingForInitialData",
		ua.StatusBadOutOfService:               "BadOutOfService",
		ua.StatusBadDataSetIDInvalid:           "BadDataSetIdInvalid",
		ua.StatusBadDiscoveryURLMissing:        "BadDiscoveryUrlMissing",
		ua.StatusBadCertificateURIInvalid:      "BadCertificateUriInvalid",
		ua.StatusBadReferenceTypeIDInvalid:     "BadReferenceTypeIdInvalid",
		ua.StatusBadTCPMessageTooLarge:         "BadTcpMessageTooLarge",
		ua.StatusBadAttributeIDInvalid:         "BadAttributeIdInvalid",
		ua.StatusBadMonitoredItemIDInvalid:     "BadMonitoredItemIdInvalid",
		ua.StatusBadSessionIDInvalid:           "BadSessionIdInvalid",
		ua.StatusBadSubscriptionIDInvalid:      "BadSubscriptionIdInvalid",
		ua.StatusBadEventIDUnknown:             "BadEventIdUnknown",
		ua.StatusBadViewIDUnknown:              "BadViewIdUnknown",
		ua.StatusBadNodeIDInvalid:              "BadNodeIdInvalid",
		ua.StatusBadSourceNodeIDInvalid:        "BadSourceNodeIdInvalid",
		ua.StatusBadTargetNodeIDInvalid:        "BadTargetNodeIdInvalid",
		ua.StatusBadParentNodeIDInvalid:        "BadParentNodeIdInvalid",
		ua.StatusBadNodeIDRejected:             "BadNodeIdRejected",
		ua.StatusBadNodeIDExists:               "BadNodeIdExists",
		ua.StatusBadDataTypeIDUnknown:          "BadDataTypeIdUnknown",
		ua.StatusBadTCPServerTooBusy:           "BadTcpServerTooBusy",
		ua.StatusBadTCPSecureChannelUnknown:    "BadTcpSecureChannelUnknown",
		ua.StatusBadTCPInternalError:           "BadTcpInternalError",
		ua.StatusBadTCPNotEnoughResources:      "BadTcpNotEnoughResources",
		ua.StatusBadTCPMessageTypeInvalid:      "BadTcpMessageTypeInvalid",
		ua.StatusBadIdentityChangeNotSupported: "BadIdentityChangeNotSupported",
	} {
		if got := statusName(code); got != want {
			t.Errorf("statusName(0x%08X) = %q, want %q", uint32(code), got, want)
		}
	}
	// Every code gopcua knows gets a Part 6 style name: severity first, no
	// Go-style initialisms.
	valid := regexp.MustCompile(`^(Good|Uncertain|Bad)[A-Za-z0-9_]*$`)
	goStyle := regexp.MustCompile(`ID|URI|URL|TCP`)
	for code := range ua.StatusCodes {
		if n := statusName(code); !valid.MatchString(n) || goStyle.MatchString(n) {
			t.Errorf("statusName(0x%08X) = %q", uint32(code), n)
		}
	}
}

func TestValueForms(t *testing.T) {
	ts := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.FixedZone("CET", 3600))
	status := &ua.ServerStatusDataType{
		StartTime: ts, CurrentTime: ts, State: ua.ServerStateRunning,
		BuildInfo: &ua.BuildInfo{ProductName: "otopcua"}, ShutdownReason: &ua.LocalizedText{},
	}
	for _, tc := range []struct {
		v              any
		json, text, ty string
	}{
		{uint8(250), `250`, `250`, "Byte"},
		{int32(-7), `-7`, `-7`, "Int32"},
		{true, `true`, `true`, "Boolean"},
		{1.5, `1.5`, `1.5`, "Double"},
		{float32(0.25), `0.25`, `0.25`, "Float"},
		{math.NaN(), `"NaN"`, `NaN`, "Double"},
		{math.Inf(-1), `"-Infinity"`, `-Infinity`, "Double"},
		{"urn:a:otopcua", `"urn:a:otopcua"`, `urn:a:otopcua`, "String"},
		{"", `""`, `""`, "String"},
		{ts, `"2026-11-30T00:02:03.456789Z"`, `2026-11-30T00:02:03.456789Z`, "DateTime"},
		{[]byte{1, 2, 255}, `"AQL/"`, `AQL/`, "ByteString"},
		{[]string{"urn:a", "urn:b"}, `["urn:a","urn:b"]`, `["urn:a","urn:b"]`, "String"},
		{[]uint8{}, `""`, `""`, "ByteString"},
		{ua.NewStringNodeID(2, "Tank"), `"ns=2;s=Tank"`, `ns=2;s=Tank`, "NodeId"},
		{&ua.QualifiedName{NamespaceIndex: 2, Name: "Tank"}, `"2:Tank"`, `2:Tank`, "QualifiedName"},
		{&ua.QualifiedName{Name: "Server"}, `"Server"`, `Server`, "QualifiedName"},
		{&ua.LocalizedText{Text: "Hallo", Locale: "de"}, `"Hallo"`, `Hallo`, "LocalizedText"},
		{ua.StatusBadNodeIDUnknown, `"BadNodeIdUnknown"`, `BadNodeIdUnknown`, "StatusCode"},
		{ua.NewExtensionObject(status),
			`{"BuildInfo":{"BuildDate":"0001-01-01T00:00:00Z","BuildNumber":"","ManufacturerName":"","ProductName":"otopcua","ProductURI":"","SoftwareVersion":""},"CurrentTime":"2026-11-30T00:02:03.456789Z","SecondsTillShutdown":0,"ShutdownReason":"","StartTime":"2026-11-30T00:02:03.456789Z","State":0}`,
			`{"BuildInfo":{"BuildDate":"0001-01-01T00:00:00Z","BuildNumber":"","ManufacturerName":"","ProductName":"otopcua","ProductURI":"","SoftwareVersion":""},"CurrentTime":"2026-11-30T00:02:03.456789Z","SecondsTillShutdown":0,"ShutdownReason":"","StartTime":"2026-11-30T00:02:03.456789Z","State":0}`,
			"ServerStatusDataType"},
	} {
		v := ua.MustVariant(tc.v)
		b, err := json.Marshal(jsonValue(v.Value()))
		if err != nil || string(b) != tc.json {
			t.Errorf("jsonValue(%#v) = %s, %v; want %s", tc.v, b, err, tc.json)
		}
		if got := textValue(v.Value()); got != tc.text {
			t.Errorf("textValue(%#v) = %s, want %s", tc.v, got, tc.text)
		}
		if got := typeName(v); got != tc.ty {
			t.Errorf("typeName(%#v) = %s, want %s", tc.v, got, tc.ty)
		}
	}
	if got := textValue(nil); got != "-" {
		t.Errorf("textValue(nil) = %q", got)
	}
	if got := typeName(nil); got != "Null" {
		t.Errorf("typeName(nil) = %q", got)
	}
}

// fixed inputs for the output tests
var (
	srvA = client.ServerRef{URI: "urn:a:otopcua", URL: "opc.tcp://127.0.0.1:4840"}
	srvB = client.ServerRef{URI: "urn:b:otopcua", URL: "opc.tcp://127.0.0.1:4841"}
	t0   = time.Date(2026, 11, 30, 1, 2, 3, 456000000, time.UTC)
)

func TestReadResultLines(t *testing.T) {
	dv := &ua.DataValue{Value: ua.MustVariant(uint8(250)), Status: ua.StatusOK, SourceTimestamp: t0, ServerTimestamp: t0.Add(time.Millisecond)}
	unknown := &ua.DataValue{Status: ua.StatusBadNodeIDUnknown}
	var text, js bytes.Buffer
	pt, pj := &printer{w: &text}, &printer{w: &js, json: true}
	for _, p := range []*printer{pt, pj} {
		if err := p.readResult(ua.NewNumericNodeID(0, 2267), dv, srvA); err != nil {
			t.Fatal(err)
		}
		if err := p.readResult(ua.NewStringNodeID(2, "Nope"), unknown, srvA); err != nil {
			t.Fatal(err)
		}
	}
	wantText := "i=2267  250  Byte  Good  2026-11-30T01:02:03.456Z\n" +
		"ns=2;s=Nope  -  Null  BadNodeIdUnknown  -\n"
	if text.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), wantText)
	}
	wantJSON := `{"node":"i=2267","value":250,"dataType":"Byte","status":"Good","sourceTimestamp":"2026-11-30T01:02:03.456Z","serverTimestamp":"2026-11-30T01:02:03.457Z","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}` + "\n" +
		`{"node":"ns=2;s=Nope","value":null,"dataType":"Null","status":"BadNodeIdUnknown","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}` + "\n"
	if js.String() != wantJSON {
		t.Errorf("json:\n%s\nwant:\n%s", js.String(), wantJSON)
	}
}

func TestWriteAndBrowseLines(t *testing.T) {
	var text, js bytes.Buffer
	pt, pj := &printer{w: &text}, &printer{w: &js, json: true}
	ref := &ua.ReferenceDescription{
		ReferenceTypeID: ua.NewNumericNodeID(0, id.Organizes), IsForward: true,
		NodeID:     ua.NewExpandedNodeID(ua.NewNumericNodeID(0, id.Server), "", 0),
		BrowseName: &ua.QualifiedName{Name: "Server"}, DisplayName: &ua.LocalizedText{Text: "Server"},
		NodeClass: ua.NodeClassObject,
	}
	custom := &ua.ReferenceDescription{
		ReferenceTypeID: ua.NewNumericNodeID(3, 4001), IsForward: true,
		NodeID:     ua.NewExpandedNodeID(ua.NewStringNodeID(2, "Tank"), "", 0),
		BrowseName: &ua.QualifiedName{NamespaceIndex: 2, Name: "Tank"}, NodeClass: ua.NodeClassVariable,
	}
	for _, p := range []*printer{pt, pj} {
		for _, err := range []error{
			p.writeResult(ua.NewNumericNodeID(0, 2267), ua.StatusBadNotWritable, srvA),
			p.reference(ref), p.reference(custom),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wantText := "i=2267  BadNotWritable\n" +
		"Organizes  i=2253  Server  Object\n" +
		"ns=3;i=4001  ns=2;s=Tank  2:Tank  Variable\n"
	if text.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), wantText)
	}
	wantJSON := `{"node":"i=2267","status":"BadNotWritable","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}` + "\n" +
		`{"referenceType":"Organizes","nodeId":"i=2253","browseName":"Server","displayName":"Server","nodeClass":"Object","forward":true}` + "\n" +
		`{"referenceType":"ns=3;i=4001","nodeId":"ns=2;s=Tank","browseName":"2:Tank","displayName":"","nodeClass":"Variable","forward":true}` + "\n"
	if js.String() != wantJSON {
		t.Errorf("json:\n%s\nwant:\n%s", js.String(), wantJSON)
	}
}

func TestSubscribeLines(t *testing.T) {
	note := client.Notification{
		At: t0, Node: ua.NewNumericNodeID(0, 2267), Server: srvA,
		Value: &ua.DataValue{Value: ua.MustVariant(uint8(250)), Status: ua.StatusOK, SourceTimestamp: t0.Add(-time.Millisecond)},
	}
	failover := client.Event{
		Kind: client.EventFailover, At: t0.Add(545 * time.Millisecond), From: srvA, To: srvB,
		Reason: "connection lost: EOF", Interrupted: t0.Add(421600 * time.Microsecond), Resumed: t0.Add(545 * time.Millisecond),
		FailoverTime: 123400 * time.Microsecond,
	}
	connected := client.Event{Kind: client.EventConnected, At: t0.Add(-time.Second), To: srvA, Reason: "highest ServiceLevel 250"}
	lost := client.Event{Kind: client.EventLost, At: t0.Add(time.Second), From: srvB, Reason: "connection lost: EOF"}
	var text, js bytes.Buffer
	pt, pj := &printer{w: &text}, &printer{w: &js, json: true}
	for _, p := range []*printer{pt, pj} {
		for _, err := range []error{p.event(connected), p.notification(note), p.event(failover), p.event(lost)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wantText := "2026-11-30T01:02:02.456Z  CONNECTED urn:a:otopcua (opc.tcp://127.0.0.1:4840)  reason: highest ServiceLevel 250\n" +
		"2026-11-30T01:02:03.456Z  i=2267  250  Good  urn:a:otopcua\n" +
		"2026-11-30T01:02:04.001Z  FAILOVER urn:a:otopcua (opc.tcp://127.0.0.1:4840) -> urn:b:otopcua (opc.tcp://127.0.0.1:4841)  reason: connection lost: EOF  failover time 123.4 ms\n" +
		"2026-11-30T01:02:04.456Z  LOST urn:b:otopcua (opc.tcp://127.0.0.1:4841)  reason: connection lost: EOF\n"
	if text.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), wantText)
	}
	wantJSON := `{"type":"connected","time":"2026-11-30T01:02:02.456Z","from":{"uri":"","url":""},"to":{"uri":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"},"reason":"highest ServiceLevel 250","failoverMs":0,"transferred":false}` + "\n" +
		`{"type":"notification","time":"2026-11-30T01:02:03.456Z","node":"i=2267","value":250,"dataType":"Byte","status":"Good","sourceTimestamp":"2026-11-30T01:02:03.455Z","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}` + "\n" +
		`{"type":"failover","time":"2026-11-30T01:02:04.001Z","from":{"uri":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"},"to":{"uri":"urn:b:otopcua","url":"opc.tcp://127.0.0.1:4841"},"reason":"connection lost: EOF","interrupted":"2026-11-30T01:02:03.8776Z","resumed":"2026-11-30T01:02:04.001Z","failoverMs":123.4,"transferred":false}` + "\n" +
		`{"type":"lost","time":"2026-11-30T01:02:04.456Z","from":{"uri":"urn:b:otopcua","url":"opc.tcp://127.0.0.1:4841"},"to":{"uri":"","url":""},"reason":"connection lost: EOF","failoverMs":0,"transferred":false}` + "\n"
	if js.String() != wantJSON {
		t.Errorf("json:\n%s\nwant:\n%s", js.String(), wantJSON)
	}
}

func TestMillis(t *testing.T) {
	for d, want := range map[time.Duration]float64{
		0: 0, 123400 * time.Microsecond: 123.4, 1500 * time.Nanosecond: 0.002, 2 * time.Second: 2000, 999 * time.Nanosecond: 0.001,
	} {
		if got := millis(d); got != want {
			t.Errorf("millis(%v) = %v, want %v", d, got, want)
		}
	}
}

var redundancyInfo = client.RedundancyInfo{
	Active: srvA, RedundancySupport: "Warm",
	ServerArray: []string{"urn:a:otopcua", "urn:b:otopcua"}, ServerUriArray: []string{"urn:a:otopcua", "urn:b:otopcua"},
	Servers: []client.ServerInfo{
		{ServerRef: srvA, URLs: []string{srvA.URL}, Up: true, Level: 250, LevelKnown: true, Active: true},
		{ServerRef: srvB, URLs: []string{srvB.URL}, Err: "dial tcp 127.0.0.1:4841: connection refused"},
	},
}

func TestRedundancyLines(t *testing.T) {
	var text, js bytes.Buffer
	if err := (&printer{w: &text}).redundancy(redundancyInfo); err != nil {
		t.Fatal(err)
	}
	want := `Active             urn:a:otopcua (opc.tcp://127.0.0.1:4840)
RedundancySupport  Warm
ServerArray        urn:a:otopcua, urn:b:otopcua
ServerUriArray     urn:a:otopcua, urn:b:otopcua

URI            URL                       LEVEL  UP   ACTIVE
urn:a:otopcua  opc.tcp://127.0.0.1:4840  250    yes  yes
urn:b:otopcua  opc.tcp://127.0.0.1:4841  -      no   no
urn:b:otopcua (opc.tcp://127.0.0.1:4841): dial tcp 127.0.0.1:4841: connection refused
`
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	if err := (&printer{w: &js, json: true}).redundancy(redundancyInfo); err != nil {
		t.Fatal(err)
	}
	var back client.RedundancyInfo
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("json %q: %v", js.String(), err)
	}
	if back.Active != srvA || len(back.Servers) != 2 || back.Servers[0].Level != 250 || back.Servers[1].Err == "" {
		t.Errorf("json round trip = %+v", back)
	}
}

// TestPrinterLinesStayWhole prints from many goroutines, as the event
// callback and the notification loop do; every line must arrive whole.
func TestPrinterLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	p := &printer{w: &buf, json: true}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				_ = p.event(client.Event{Kind: client.EventFailover, From: srvA, To: srvB, Reason: strings.Repeat("x", 500)})
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
}

// fakeSession answers the commands in-process.
type fakeSession struct {
	mu     sync.Mutex
	values map[string]*ua.DataValue // by NodeId text; missing: BadNodeIdUnknown
	writes []*ua.WriteValue
	deny   ua.StatusCode // the status of every write
	notes  chan client.Notification
	closed bool

	history       []*ua.DataValue // what HistoryRead hands on
	historyStatus ua.StatusCode
	historyAsked  any // the details of the last HistoryRead
}

func (f *fakeSession) HistoryRead(_ context.Context, n *ua.NodeID, details any, fn func(*ua.DataValue) bool) (ua.StatusCode, error) {
	f.mu.Lock()
	f.historyAsked = details
	f.mu.Unlock()
	for _, dv := range f.history {
		if !fn(dv) {
			break
		}
	}
	return f.historyStatus, nil
}

func (f *fakeSession) Read(_ context.Context, nodes ...*ua.NodeID) ([]*ua.DataValue, error) {
	var out []*ua.DataValue
	for _, n := range nodes {
		dv, ok := f.values[n.String()]
		if !ok {
			dv = &ua.DataValue{Status: ua.StatusBadNodeIDUnknown}
		}
		out = append(out, dv)
	}
	return out, nil
}

func (f *fakeSession) Write(_ context.Context, values ...*ua.WriteValue) ([]ua.StatusCode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, values...)
	out := make([]ua.StatusCode, len(values))
	for i := range out {
		out[i] = f.deny
	}
	return out, nil
}

func (f *fakeSession) Browse(_ context.Context, n *ua.NodeID) ([]*ua.ReferenceDescription, error) {
	if n.String() != "i=85" {
		return nil, ua.StatusBadNodeIDUnknown
	}
	return []*ua.ReferenceDescription{{
		ReferenceTypeID: ua.NewNumericNodeID(0, id.Organizes), IsForward: true,
		NodeID:     ua.NewExpandedNodeID(ua.NewNumericNodeID(0, id.Server), "", 0),
		BrowseName: &ua.QualifiedName{Name: "Server"}, DisplayName: &ua.LocalizedText{Text: "Server"}, NodeClass: ua.NodeClassObject,
	}}, nil
}

func (f *fakeSession) Redundancy(context.Context) (client.RedundancyInfo, error) {
	return redundancyInfo, nil
}

func (f *fakeSession) Active() client.ServerRef { return srvA }

func (f *fakeSession) Subscribe(context.Context, []*ua.NodeID, time.Duration, time.Duration) (<-chan client.Notification, error) {
	return f.notes, nil
}

func (f *fakeSession) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// withFake makes dialClient return f (or fail with dialErr) and records
// the options it was given.
func withFake(t *testing.T, f *fakeSession, dialErr error) *client.Options {
	t.Helper()
	old := dialClient
	var got client.Options
	dialClient = func(_ context.Context, opts client.Options) (session, error) {
		got = opts
		if dialErr != nil {
			return nil, dialErr
		}
		if opts.OnEvent != nil {
			opts.OnEvent(client.Event{Kind: client.EventConnected, At: t0, To: srvA})
		}
		return f, nil
	}
	t.Cleanup(func() { dialClient = old })
	return &got
}

func runClient(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"client"}, args...), &stdout, &stderr, nil)
	return code, stdout.String(), stderr.String()
}

func TestClientFlagsToOptions(t *testing.T) {
	got := withFake(t, &fakeSession{}, nil)
	code, _, stderr := runClient("-u", "opc.tcp://127.0.0.1:4840", "-F", "opc.tcp://127.0.0.1:4841,opc.tcp://127.0.0.1:4840",
		"--timeout", "00:00:02.500", "--prefer-hold", "1s", "--lost-after", "750ms", "--no-discovery", "--security", "None", "redundancy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Join(got.URLs, ",") != "opc.tcp://127.0.0.1:4840,opc.tcp://127.0.0.1:4841" || got.Timeout != 2500*time.Millisecond ||
		got.PreferHold != time.Second || got.LostAfter != 750*time.Millisecond || !got.NoDiscovery {
		t.Fatalf("options = %+v", *got)
	}
	code, _, _ = runClient("-u", "opc.tcp://127.0.0.1:4840", "redundancy")
	if code != 0 || got.Timeout != client.DefaultTimeout || got.PreferHold != client.DefaultPreferHold ||
		got.LostAfter != client.DefaultLostAfter || got.NoDiscovery {
		t.Fatalf("defaults: exit %d, options = %+v", code, *got)
	}
}

func TestClientUsageErrors(t *testing.T) {
	withFake(t, &fakeSession{}, errors.New("must not dial"))
	u := []string{"-u", "opc.tcp://127.0.0.1:4840"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"read", "i=2267"}, "give a server: -u URL or -F URL1,URL2"},
		{[]string{"-u", "127.0.0.1:4840", "read", "i=2267"}, `"127.0.0.1:4840" is not an opc.tcp:// URL`},
		{append(u, "--security", "sign", "read", "i=2267"), `--security "sign": accepted values are none or Policy:Mode`},
		{append(u, "--security", "Basic256Sha256:None", "read", "i=2267"), `--security "Basic256Sha256:None": accepted values`},
		{append(u, "--security", "Basic256Sha256:SignAndEncrypt", "read", "i=2267"), "needs --trust-server or --trust-dir DIR"},
		{append(u, "--security", "Basic256Sha256:Sign", "--cert", "c.der", "--trust-server", "read", "i=2267"), "--cert and --key are given together"},
		{append(u, "--trust-server", "read", "i=2267"), "need a secured --security"},
		{append(u, "--timeout", "10", "read", "i=2267"), `"10" has no unit`},
		{append(u, "--timeout", "0s", "read", "i=2267"), "--timeout 0s: must be positive"},
		{append(u, "--lost-after", "-1s", "read", "i=2267"), "--lost-after -1s: must be positive"},
		{append(u, "read"), "requires at least 1 arg"},
		{append(u, "read", "2267"), `"2267" is not a NodeId`},
		{append(u, "browse", "Objects"), `"Objects" is not a NodeId`},
		{append(u, "browse", "i=85", "i=2253"), "accepts at most 1 arg"},
		{append(u, "write", "i=2267"), `write "i=2267": want NODE=VALUE[:type]`},
		{append(u, "write", "ns=2;s=Tank=abc:int32"), `write ns=2;s=Tank: value "abc" does not convert to int32`},
		{append(u, "subscribe", "i=2267", "--interval", "0s"), "--interval 0s: must be positive"},
		{append(u, "subscribe", "i=2267", "--count", "-1"), "--count -1"},
		{append(u, "subscribe", "i=2267", "--duration", "soon"), `"soon"`},
		{append(u, "subscribe", "i=2267", "--mode", "hot"), `--mode "hot": accepted values are auto, warm, hot-a, hot-b, mirrored`},
		{append(u, "subscribe", "i=2267", "--mode", ""), `--mode "": accepted values are auto, warm, hot-a, hot-b, mirrored`},
		{append(u, "subscribe", "i=2267", "--dedup-window", "0s"), "--dedup-window 0s: must be positive"},
		{append(u, "subscribe", "i=2267", "--hot-queue", "0"), "--hot-queue 0: must be 1 or more"},
		{append(u, "subscribe", "i=2267", "--sampling-interval", "-1s"), "--sampling-interval -1s: must be 0 (every change) or more"},
		{append(u, "redundancy", "extra"), "unknown command"},
		{append(u, "frobnicate"), `unknown command "frobnicate"`},
		{append(u, "--no-such-flag", "read", "i=1"), "unknown flag: --no-such-flag"},
	} {
		code, stdout, stderr := runClient(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestClientNoServer(t *testing.T) {
	err := fmt.Errorf("%w: opc.tcp://127.0.0.1:1: connection refused; opc.tcp://127.0.0.1:2: connection refused", client.ErrNoServer)
	withFake(t, &fakeSession{}, err)
	code, stdout, stderr := runClient("-F", "opc.tcp://127.0.0.1:1,opc.tcp://127.0.0.1:2", "read", "i=2267")
	if code != exitFailure || stdout != "" || stderr != err.Error()+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestClientRead(t *testing.T) {
	f := &fakeSession{values: map[string]*ua.DataValue{
		"i=2267": {Value: ua.MustVariant(uint8(250)), Status: ua.StatusOK, SourceTimestamp: t0},
	}}
	withFake(t, f, nil)
	code, stdout, stderr := runClient("-u", "opc.tcp://127.0.0.1:4840", "read", "i=2267")
	if code != 0 || stdout != "i=2267  250  Byte  Good  2026-11-30T01:02:03.456Z\n" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runClient("-u", "opc.tcp://127.0.0.1:4840", "--json", "read", "i=2267", "ns=2;s=Nope")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != exitFailure || len(lines) != 2 || stderr != "" ||
		!strings.Contains(lines[0], `"value":250`) || !strings.Contains(lines[1], `"status":"BadNodeIdUnknown"`) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 after both lines", code, stdout, stderr)
	}
	if !f.closed {
		t.Fatal("session not closed")
	}
}

func TestClientWrite(t *testing.T) {
	f := &fakeSession{deny: ua.StatusOK, values: map[string]*ua.DataValue{
		"ns=2;s=Tank":  {Value: ua.MustVariant(float32(1)), Status: ua.StatusOK},
		"ns=2;s=Count": {Value: ua.MustVariant(uint16(1)), Status: ua.StatusOK},
		"ns=2;s=Name":  {Value: ua.MustVariant(&ua.LocalizedText{Text: "x"}), Status: ua.StatusOK},
		"ns=2;s=Empty": {Status: ua.StatusOK},
		"ns=2;s=List":  {Value: ua.MustVariant([]int32{1, 2}), Status: ua.StatusOK},
	}}
	withFake(t, f, nil)
	u := []string{"-u", "opc.tcp://127.0.0.1:4840"}
	code, stdout, stderr := runClient(append(u, "write", "ns=2;s=Tank=2.5", "ns=2;s=Count=7", "ns=2;s=Other=x:string")...)
	if code != 0 || stdout != "ns=2;s=Tank  Good\nns=2;s=Count  Good\nns=2;s=Other  Good\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var got []string
	for _, w := range f.writes {
		got = append(got, fmt.Sprintf("%s=%T(%v)", w.NodeID, w.Value.Value.Value(), w.Value.Value.Value()))
	}
	if want := "ns=2;s=Tank=float32(2.5) ns=2;s=Count=uint16(7) ns=2;s=Other=string(x)"; strings.Join(got, " ") != want {
		t.Fatalf("writes %s, want %s", strings.Join(got, " "), want)
	}

	// Untyped values that do not convert, or whose type is not known.
	for arg, want := range map[string]string{
		"ns=2;s=Count=70000": `write ns=2;s=Count: value "70000" does not convert to uint16`,
		"ns=2;s=Tank=full":   `write ns=2;s=Tank: value "full" does not convert to float`,
		"ns=2;s=Name=y":      "write ns=2;s=Name: the node holds a LocalizedText; give VALUE:type",
		"ns=2;s=Empty=1":     "write ns=2;s=Empty: the node has no value to take the type from",
		"ns=2;s=List=1":      "write ns=2;s=List: the node holds an array of Int32",
	} {
		code, stdout, stderr := runClient(append(u, "write", arg)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and %q", arg, code, stdout, stderr, want)
		}
	}

	// A denied write and an unknown node: every line, then exit 1.
	f.deny = ua.StatusBadNotWritable
	code, stdout, stderr = runClient(append(u, "--json", "write", "ns=2;s=Count=1", "ns=2;s=Nope=1")...)
	want := `{"node":"ns=2;s=Count","status":"BadNotWritable","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}` + "\n" +
		`{"node":"ns=2;s=Nope","status":"BadNodeIdUnknown","server":"urn:a:otopcua","url":"opc.tcp://127.0.0.1:4840"}` + "\n"
	if code != exitFailure || stdout != want || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and\n%s", code, stdout, stderr, want)
	}
}

func TestClientBrowseAndRedundancy(t *testing.T) {
	withFake(t, &fakeSession{}, nil)
	u := []string{"-u", "opc.tcp://127.0.0.1:4840"}
	code, stdout, stderr := runClient(append(u, "browse")...)
	if code != 0 || stdout != "Organizes  i=2253  Server  Object\n" {
		t.Fatalf("browse: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runClient(append(u, "browse", "i=2253")...)
	if code != exitFailure || stdout != "" || !strings.HasPrefix(stderr, "BadNodeIdUnknown: The node id refers") {
		t.Fatalf("browse unknown: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runClient(append(u, "redundancy")...)
	if code != 0 || !strings.HasPrefix(stdout, "Active             urn:a:otopcua") || !strings.Contains(stdout, "urn:a:otopcua  opc.tcp://127.0.0.1:4840  250    yes  yes\n") {
		t.Fatalf("redundancy: exit %d, stdout %q", code, stdout)
	}
}

func TestClientSubscribe(t *testing.T) {
	notes := make(chan client.Notification, 3)
	for i := range 3 {
		notes <- client.Notification{At: t0.Add(time.Duration(i) * time.Second), Node: ua.NewNumericNodeID(0, 2267), Server: srvA,
			Value: &ua.DataValue{Value: ua.MustVariant(uint8(240 + i)), Status: ua.StatusOK}}
	}
	withFake(t, &fakeSession{notes: notes}, nil)
	code, stdout, stderr := runClient("-u", "opc.tcp://127.0.0.1:4840", "subscribe", "i=2267", "--count", "2")
	want := "2026-11-30T01:02:03.456Z  CONNECTED urn:a:otopcua (opc.tcp://127.0.0.1:4840)\n" +
		"2026-11-30T01:02:03.456Z  i=2267  240  Good  urn:a:otopcua\n" +
		"2026-11-30T01:02:04.456Z  i=2267  241  Good  urn:a:otopcua\n"
	if code != 0 || stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want\n%s", code, stdout, stderr, want)
	}
	if len(notes) != 1 {
		t.Fatalf("--count 2 consumed %d notifications", 3-len(notes))
	}

	// The mode flags reach the options.
	one := make(chan client.Notification, 1)
	one <- client.Notification{At: t0, Node: ua.NewNumericNodeID(0, 2267), Server: srvA, Value: &ua.DataValue{Value: ua.MustVariant(uint8(1))}}
	opts := withFake(t, &fakeSession{notes: one}, nil)
	if code, _, stderr := runClient("-u", "opc.tcp://127.0.0.1:4840", "subscribe", "i=2267", "--count", "1", "--mode", "Hot-B", "--dedup-window", "250ms", "--hot-queue", "7"); code != 0 {
		t.Fatalf("--mode hot-b: exit %d, stderr %q", code, stderr)
	}
	if opts.Mode != client.ModeHotB || opts.DedupWindow != 250*time.Millisecond || opts.HotQueueSize != 7 {
		t.Fatalf("options %+v, want mode hot-b, dedup window 250ms, hot queue 7", *opts)
	}
	if code, _, _ := runClient("-u", "opc.tcp://127.0.0.1:4840", "subscribe", "i=2267", "--count", "0", "--duration", "1ms"); code != 0 || opts.Mode != client.ModeAuto || opts.DedupWindow != time.Second || opts.HotQueueSize != 100 {
		t.Fatalf("defaults: exit %d, options %+v", code, *opts)
	}

	withFake(t, &fakeSession{notes: notes}, nil)
	// --duration ends a quiet subscription with exit 0.
	code, stdout, stderr = runClient("-u", "opc.tcp://127.0.0.1:4840", "--json", "subscribe", "i=2267", "--duration", "20ms", "--interval", "00:00:00.100")
	if code != 0 || !strings.Contains(stdout, `"type":"connected"`) || !strings.Contains(stdout, `"value":242`) {
		t.Fatalf("--duration: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// The channel closing while nobody asked to stop is a runtime error.
	close(notes)
	code, _, stderr = runClient("-u", "opc.tcp://127.0.0.1:4840", "subscribe", "i=2267")
	if code != exitFailure || !strings.Contains(stderr, "the subscription ended") {
		t.Fatalf("closed channel: exit %d, stderr %q", code, stderr)
	}
}

// A :type suffix the client does not know is named in the error, not
// mistaken for part of the value.
func TestWriteUnknownTypeSuffixIsNamed(t *testing.T) {
	if _, err := parseWriteArg("ns=1;s=Setpoint=1:float128"); err != nil {
		t.Fatalf("an untyped value is converted later: %v", err)
	}
	err := conversionError(ua.NewStringNodeID(1, "Setpoint"), "1:float128", ua.TypeIDInt32, errors.New("invalid syntax"))
	if !strings.Contains(err.Error(), `"float128" is not a type this client writes`) {
		t.Fatalf("error %q does not name the unknown type", err)
	}
	err = conversionError(ua.NewStringNodeID(1, "Clock"), "12:30", ua.TypeIDInt32, errors.New("invalid syntax"))
	if strings.Contains(err.Error(), "is not a type") {
		t.Fatalf("error %q takes 30 for a type", err)
	}
}

// TestEventLinesNameTheMode: connected and failover lines say the client's
// mode, and a mirrored failover that fell back says why.
func TestEventLinesNameTheMode(t *testing.T) {
	connected := client.Event{Kind: client.EventConnected, At: t0, To: srvA, Reason: "initial", Mode: client.ModeHotA}
	fallback := client.Event{Kind: client.EventFailover, At: t0, From: srvA, To: srvB, Reason: "connection lost: EOF",
		FailoverTime: 12 * time.Millisecond, Mode: client.ModeMirrored, Fallback: "ActivateSession refused: BadSessionIdInvalid"}
	var text, js bytes.Buffer
	pt, pj := &printer{w: &text}, &printer{w: &js, json: true}
	for _, p := range []*printer{pt, pj} {
		if err := p.event(connected); err != nil {
			t.Fatal(err)
		}
		if err := p.event(fallback); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "mode: hot-a") ||
		!strings.Contains(lines[1], "mode: mirrored  fallback to warm: ActivateSession refused: BadSessionIdInvalid") {
		t.Fatalf("text:\n%s", text.String())
	}
	jl := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(jl) != 2 || !strings.Contains(jl[0], `"mode":"hot-a"`) || strings.Contains(jl[0], "fallback") ||
		!strings.Contains(jl[1], `"mode":"mirrored","fallback":"ActivateSession refused: BadSessionIdInvalid"`) {
		t.Fatalf("json:\n%s", js.String())
	}
}
