package deployment

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestOPCUADeviceRules(t *testing.T) {
	dev := func(fields, tags string) string {
		return doc(`{"name": "up", "driver": "opcua", ` + fields + `"tags": [` + tags + `]}`)
	}
	const tag = `{"name": "Speed", "nodeId": "ns=2;s=Line1.Speed", "type": "float64"}`
	runRuleCases(t, []ruleCase{
		{"one endpoint", dev(`"endpoint": "opc.tcp://10.0.0.9:4840", `, tag), nil},
		{"a redundant pair", dev(`"endpoints": ["opc.tcp://a:4840", "opc.tcp://b:4840/ua"], `, tag), nil},
		{"every field", dev(`"endpoint": "opc.tcp://a:4840", "securityPolicy": "Basic256Sha256", "securityMode": "SignAndEncrypt", "username": "op", "passwordEnv": "UP_PASSWORD", "publishingInterval": "100ms", "timeout": "2s", `,
			`{"name": "S", "nodeId": "nsu=urn:plc;s=A;B", "type": "int32", "writable": true, "samplingInterval": "0s", "deadband": 0.5}`), nil},
		{"no endpoint", dev(``, tag), p("devices[0].endpoint", "", acceptEndpointOne)},
		{"both endpoint and endpoints", dev(`"endpoint": "opc.tcp://a:1", "endpoints": ["opc.tcp://b:1"], `, tag),
			p("devices[0].endpoint", `"opc.tcp://a:1"`, acceptEndpointOne)},
		{"not opc.tcp", dev(`"endpoint": "http://a:1", `, tag), p("devices[0].endpoint", `"http://a:1"`, acceptEndpoint)},
		{"a URL twice", dev(`"endpoints": ["opc.tcp://a:1", "opc.tcp://a:1"], `, tag),
			p("devices[0].endpoints[1]", `"opc.tcp://a:1"`, "accepted values are URLs listed once; devices[0].endpoints[0] has it")},
		{"policy without mode", dev(`"endpoint": "opc.tcp://a:1", "securityPolicy": "Basic256Sha256", `, tag),
			p("devices[0].securityMode", "", acceptPolicyMode)},
		{"unknown policy", dev(`"endpoint": "opc.tcp://a:1", "securityPolicy": "Basic256", "securityMode": "Sign", `, tag),
			p("devices[0].securityPolicy", `"Basic256"`, "accepted values are None, Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss")},
		{"user without password", dev(`"endpoint": "opc.tcp://a:1", "username": "op", `, tag),
			p("devices[0].username", `"op"`, acceptUserNeedsPassword)},
		{"poll interval", dev(`"endpoint": "opc.tcp://a:1", "pollInterval": "1s", `, tag),
			p("devices[0].pollInterval", `"1s"`, acceptNoPollOPCUA)},
		{"modbus address", dev(`"endpoint": "opc.tcp://a:1", "address": "a:502", `, tag),
			p("devices[0].address", `"a:502"`, "accepted only with driver modbus-tcp; remove it for driver opcua")},
		{"no nodeId", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "type": "int32"}`),
			p("devices[0].tags[0].nodeId", "", acceptNodeID+`; identifier "" is not i=, s=, g= or b= with a value`)},
		{"bad nodeId", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "nodeId": "ns=x;i=1", "type": "int32"}`),
			p("devices[0].tags[0].nodeId", `"ns=x;i=1"`, acceptNodeID+`; namespace index "x" is not a number 0..65535`)},
		{"register on an opcua tag", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "nodeId": "i=2258", "type": "int32", "table": "holding"}`),
			p("devices[0].tags[0].table", `"holding"`, notForOPCUATag)},
		{"deadband on a bool", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "nodeId": "i=1", "type": "bool", "deadband": 1}`),
			p("devices[0].tags[0].deadband", "1", acceptBoolDeadbandUA)},
		{"sampling too short", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "nodeId": "i=1", "type": "bool", "samplingInterval": "1ms"}`),
			p("devices[0].tags[0].samplingInterval", `"1ms"`, acceptSamplingInterval)},
		{"nodeId on a modbus tag", doc(`{"name": "m", "driver": "modbus-tcp", "address": "a:502", "tags": [{"name": "a", "table": "holding", "address": 0, "type": "int16", "nodeId": "i=1"}]}`),
			p("devices[0].tags[0].nodeId", `"i=1"`, onlyOPCUATag)},
		{"alarms true", dev(`"endpoint": "opc.tcp://a:1", "alarms": true, `, tag), nil},
		{"alarms false", dev(`"endpoint": "opc.tcp://a:1", "alarms": false, `, tag), nil},
		{"alarms object", dev(`"endpoint": "opc.tcp://a:1", "alarms": {"source": "ns=2;s=Line1", "max": 50}, `, tag), nil},
		{"alarms a number", dev(`"endpoint": "opc.tcp://a:1", "alarms": 1, `, tag), p("devices[0].alarms", "1", acceptUpstreamAlarms)},
		{"alarms bad source", dev(`"endpoint": "opc.tcp://a:1", "alarms": {"source": "x=1"}, `, tag),
			p("devices[0].alarms.source", `"x=1"`, acceptNodeID+`; identifier type "x" is not i, s, g or b`)},
		{"alarms max 0", dev(`"endpoint": "opc.tcp://a:1", "alarms": {"max": 0}, `, tag), p("devices[0].alarms.max", "0", acceptUpstreamAlarmsMax)},
		{"alarms max too large", dev(`"endpoint": "opc.tcp://a:1", "alarms": {"max": 10001}, `, tag), p("devices[0].alarms.max", "10001", acceptUpstreamAlarmsMax)},
		{"alarms unknown field", dev(`"endpoint": "opc.tcp://a:1", "alarms": {"notifier": "i=1"}, `, tag),
			p("devices[0].alarms.notifier", `"i=1"`, "unknown field; accepted fields are source, max")},
		{"alarms on a simulated device", doc(`{"name": "s", "driver": "simulated", "alarms": true, "tags": []}`),
			p("devices[0].alarms", "true", onlyOPCUADevice)},
		{"a browsePath", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "browsePath": "/nsu=http://x/UA/;Line1/2:Speed", "type": "int32"}`), nil},
		{"nodeId and browsePath", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "nodeId": "i=1", "browsePath": "/2:S", "type": "int32"}`),
			p("devices[0].tags[0].browsePath", `"/2:S"`, acceptNodeIDOrPath)},
		{"bad browsePath", dev(`"endpoint": "opc.tcp://a:1", `, `{"name": "S", "browsePath": "2:Line1", "type": "int32"}`),
			p("devices[0].tags[0].browsePath", `"2:Line1"`, acceptBrowsePath+`; element 1: starts with '2', not / or .`)},
		{"browsePath on a modbus tag", doc(`{"name": "m", "driver": "modbus-tcp", "address": "a:502", "tags": [{"name": "a", "table": "holding", "address": 0, "type": "int16", "browsePath": "/1:x"}]}`),
			p("devices[0].tags[0].browsePath", `"/1:x"`, onlyOPCUATag)},
		{"a mirror", dev(`"endpoint": "opc.tcp://a:1", "mirror": {"browsePath": "/2:Line1", "maxNodes": 500, "maxDepth": 3, "refresh": "10s"}, `, tag), nil},
		{"a mirror by nodeId", dev(`"endpoint": "opc.tcp://a:1", "mirror": {"nodeId": "nsu=urn:plc;s=Line1"}, `, ``), nil},
		{"a mirror without root", dev(`"endpoint": "opc.tcp://a:1", "mirror": {}, `, tag),
			p("devices[0].mirror.nodeId", "", acceptMirrorRoot+"; "+acceptNodeID+`; identifier "" is not i=, s=, g= or b= with a value`)},
		{"a mirror with two roots", dev(`"endpoint": "opc.tcp://a:1", "mirror": {"nodeId": "i=85", "browsePath": "/2:A"}, `, tag),
			p("devices[0].mirror.browsePath", `"/2:A"`, acceptMirrorRoot)},
		{"a mirror too large", dev(`"endpoint": "opc.tcp://a:1", "mirror": {"nodeId": "i=85", "maxNodes": 10001, "maxDepth": 33, "refresh": "100ms"}, `, tag),
			append(append(p("devices[0].mirror.maxNodes", "10001", acceptMirrorNodes), p("devices[0].mirror.maxDepth", "33", acceptMirrorDepth)...),
				p("devices[0].mirror.refresh", `"100ms"`, acceptMirrorRefresh)...)},
		{"a mirror root named as a tag", dev(`"endpoint": "opc.tcp://a:1", "mirror": {"browsePath": "/2:Line1/2:Speed"}, `, tag),
			p("devices[0].mirror.browsePath", `"/2:Line1/2:Speed"`, "accepted values are paths whose last browse name is not the name of a tag of the device: the mirrored root Speed would take the tag's NodeId")},
		{"a mirror on a simulated device", doc(`{"name": "s", "driver": "simulated", "mirror": {"nodeId": "i=85"}, "tags": []}`),
			p("devices[0].mirror", `{"nodeId":"i=85"}`, onlyOPCUADevice)},
		{"endpoint on a simulated device", doc(`{"name": "s", "driver": "simulated", "endpoint": "opc.tcp://a:1", "tags": []}`),
			p("devices[0].endpoint", `"opc.tcp://a:1"`, onlyOPCUADevice)},
	})
}

func TestParseNodeRef(t *testing.T) {
	for in, want := range map[string]NodeRef{
		"i=2258":                 {ID: "i=2258"},
		"ns=2;s=Line1.Speed":     {Namespace: 2, ID: "s=Line1.Speed"},
		"nsu=urn:a;b;s=x;i=1":    {NamespaceURI: "urn:a;b", ID: "s=x;i=1"},
		"nsu=http://x/UA/;i=100": {NamespaceURI: "http://x/UA/", ID: "i=100"},
	} {
		got, err := ParseNodeRef(in)
		if err != nil || got != want {
			t.Errorf("ParseNodeRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in && in != "i=2258" {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
	for _, in := range []string{"", "ns=1", "nsu=;s=x", "nsu=urn:x", "ns=70000;i=1", "i=x", "q=1", "s="} {
		if _, err := ParseNodeRef(in); err == nil {
			t.Errorf("ParseNodeRef(%q) accepted", in)
		}
	}
}

func TestParseBrowsePath(t *testing.T) {
	for _, c := range []struct {
		in   string
		want BrowsePath
		text string // String(), when not in
	}{
		{"/2:Line1/2:Speed", BrowsePath{{Namespace: 2, Name: "Line1"}, {Namespace: 2, Name: "Speed"}}, ""},
		{"/Server.ServiceLevel", BrowsePath{{Name: "Server"}, {Aggregates: true, Name: "ServiceLevel"}}, ""},
		{"/0:Server", BrowsePath{{Name: "Server"}}, "/Server"},
		{"/nsu=http://x.org/UA/;Line1/nsu=urn:a:b;Speed", BrowsePath{{NamespaceURI: "http://x.org/UA/", Name: "Line1"}, {NamespaceURI: "urn:a:b", Name: "Speed"}}, ""},
		{"/3:A&/B&.C&&D&:E", BrowsePath{{Namespace: 3, Name: "A/B.C&D:E"}}, ""},
		{"/12abc", BrowsePath{{Name: "12abc"}}, ""},
		{"/2:Motor 1.2:Speed (rpm)", BrowsePath{{Namespace: 2, Name: "Motor 1"}, {Aggregates: true, Namespace: 2, Name: "Speed (rpm)"}}, ""},
	} {
		got, err := ParseBrowsePath(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseBrowsePath(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		text := c.text
		if text == "" {
			text = c.in
		}
		if got.String() != text {
			t.Errorf("String() = %q, want %q", got.String(), text)
		}
	}
	for in, why := range map[string]string{
		"":                       "empty path",
		"2:Line1":                "element 1: starts with '2', not / or .",
		"/2:Line1/":              "element 2: empty browse name",
		"/2:":                    "element 1: empty browse name",
		"<Organizes>2:A":         "element 1: reference types in <> are not accepted; use / (hierarchical) or . (aggregates)",
		"/70000:A":               `element 1: namespace index "70000" is not a number 0..65535`,
		"/nsu=urn:x":             "element 1: no ';' after the namespace URI",
		"/nsu=;A":                "element 1: empty namespace URI",
		"/2:a:b":                 "element 1: reserved character ':' in a browse name: escape it as &:",
		"/2:a&b":                 "element 1: '&' escapes only one of /.<>:#!&",
		"/2:a#":                  "element 1: reserved character '#' in a browse name: escape it as &#",
		strings.Repeat("/a", 33): "more than 32 elements",
	} {
		_, err := ParseBrowsePath(in)
		if err == nil || err.Error() != why {
			t.Errorf("ParseBrowsePath(%q) = %v; want %q", in, err, why)
		}
	}
}

// The opcua device shown in docs/deployments.md is valid.
func TestOPCUADocumentedDevice(t *testing.T) {
	text, err := os.ReadFile("../docs/deployments.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "## OPC UA devices (driver opcua)")
	if !ok {
		t.Fatal("docs/deployments.md has no opcua section")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	dev, _, _ := strings.Cut(rest, "```")
	d, err := Decode([]byte(`{"clusterId": "site-a", "devices": [` + dev + `]}`))
	if err != nil {
		t.Fatalf("the documented device: %v", err)
	}
	if got := d.Devices[0]; got.Driver != DriverOPCUA || len(got.Tags) != 3 || got.PasswordEnv != "LINE1_PASSWORD" {
		t.Fatalf("decoded %+v", got)
	}
}
