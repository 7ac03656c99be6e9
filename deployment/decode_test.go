package deployment

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// designExample is the document of DESIGN.md §"Deployment document".
const designExample = `{
  "clusterId": "site-a",
  "devices": [
    {
      "name": "press1",
      "driver": "modbus-tcp",
      "address": "10.20.0.5:502",
      "unitId": 1,
      "pollInterval": "00:00:00.100",
      "timeout": "1s",
      "tags": [
        {"name": "Setpoint",    "table": "holding",  "address": 0,  "type": "int16",   "writable": true},
        {"name": "Speed",       "table": "holding",  "address": 10, "type": "float32", "wordOrder": "big"},
        {"name": "Temperature", "table": "input",    "address": 0,  "type": "int16",   "scale": 0.1, "offset": 0},
        {"name": "Run",         "table": "coil",     "address": 1,  "type": "bool",    "writable": true},
        {"name": "Fault",       "table": "discrete", "address": 0,  "type": "bool"}
      ]
    },
    {
      "name": "sim",
      "driver": "simulated",
      "tags": [{"name": "Ramp", "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}]
    }
  ],
  "alarms": [
    {"name": "HighTemperature", "source": "press1/Temperature", "condition": "press1.Temperature > 80",
     "severity": 700, "message": "Temperature above 80 °C"}
  ]
}`

func intp(v int) *int              { return &v }
func floatp(v float64) *float64    { return &v }
func dur(d time.Duration) Duration { return Duration(d) }

func TestDecodeDesignExample(t *testing.T) {
	doc, err := Decode([]byte(designExample))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := &Document{
		ClusterId: "site-a",
		Devices: []Device{
			{Name: "press1", Driver: DriverModbusTCP, Address: "10.20.0.5:502", UnitId: intp(1),
				PollInterval: dur(100 * time.Millisecond), Timeout: dur(time.Second),
				Tags: []Tag{
					{Name: "Setpoint", Table: TableHolding, Address: intp(0), Type: TypeInt16, Writable: true},
					{Name: "Speed", Table: TableHolding, Address: intp(10), Type: TypeFloat32, WordOrder: WordOrderBig},
					{Name: "Temperature", Table: TableInput, Address: intp(0), Type: TypeInt16, Scale: floatp(0.1), Offset: floatp(0)},
					{Name: "Run", Table: TableCoil, Address: intp(1), Type: TypeBool, Writable: true},
					{Name: "Fault", Table: TableDiscrete, Address: intp(0), Type: TypeBool},
				}},
			{Name: "sim", Driver: DriverSimulated, Tags: []Tag{
				{Name: "Ramp", Type: TypeFloat64, Signal: SignalRamp, Period: dur(10 * time.Second), Min: floatp(0), Max: floatp(100)},
			}},
		},
		Alarms: []Alarm{{Name: "HighTemperature", Source: "press1/Temperature", Condition: "press1.Temperature > 80",
			Severity: 700, Message: "Temperature above 80 °C"}},
	}
	if !reflect.DeepEqual(doc, want) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", doc, want)
	}
	if p := doc.Validate(); p != nil {
		t.Fatalf("Validate of a decoded document: %v", p)
	}
	sim := &doc.Devices[1]
	if sim.EffectiveUnitId() != DefaultUnitId || sim.EffectivePollInterval() != time.Second || sim.EffectiveTimeout() != time.Second {
		t.Errorf("defaults: unit %d poll %v timeout %v", sim.EffectiveUnitId(), sim.EffectivePollInterval(), sim.EffectiveTimeout())
	}
	press := &doc.Devices[0]
	if press.EffectivePollInterval() != 100*time.Millisecond {
		t.Errorf("EffectivePollInterval = %v", press.EffectivePollInterval())
	}
	tags := press.Tags
	if tags[0].Span() != 1 || tags[1].Span() != 2 || tags[0].EffectiveWordOrder() != WordOrderBig || !tags[2].Scaled() || tags[0].Scaled() {
		t.Errorf("tag helpers: span %d %d, word order %q, scaled %v %v",
			tags[0].Span(), tags[1].Span(), tags[0].EffectiveWordOrder(), tags[2].Scaled(), tags[0].Scaled())
	}
}

// The examples shipped in docs/deployments.md decode.
func TestDecodeDocumentationExamples(t *testing.T) {
	text, err := os.ReadFile("../docs/deployments.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(text), "```json\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("docs/deployments.md has %d JSON examples, want at least 2", len(blocks))
	}
	for i, b := range blocks {
		src, _, _ := strings.Cut(b, "```")
		if !strings.Contains(src, `"clusterId"`) {
			continue // a fragment
		}
		if _, err := Decode([]byte(src)); err != nil {
			t.Errorf("example %d of docs/deployments.md: %v\n%s", i+1, err, src)
		}
	}
}

func TestDecodeSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"empty", "", 1, 1, "the document is empty"},
		{"blank", " \n\t ", 2, 3, "the document is empty"},
		{"truncated", "{\n  \"clusterId\": \"a\",\n  \"devices\": [", 3, 15, "the document ends early"},
		{"bad character", "{\n  \"clusterId\": x\n}", 2, 16, "invalid character 'x' looking for beginning of value"},
		{"missing comma", `{"clusterId": "a" "devices": []}`, 1, 19, "invalid character '\"' after object key:value pair"},
		{"trailing text", "{}\n{}", 2, 1, "text after the document's closing brace"},
		{"comment", "// c\n{}", 1, 1, "invalid character '/' looking for beginning of value"},
		{"not UTF-8", "{\"clusterId\": \"s\xffa\"}", 1, 17, "the document is not UTF-8 text"},
		{"byte order mark then garbage", "\xef\xbb\xbf}", 1, 4, "invalid character '}' looking for beginning of value"},
		{"deep", strings.Repeat("[", 100), 1, 65, "nested deeper than 64 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Decode([]byte(tc.src))
			var se *SyntaxError
			if doc != nil || !errors.As(err, &se) {
				t.Fatalf("Decode = %v, %v; want a *SyntaxError", doc, err)
			}
			if se.Line != tc.line || se.Column != tc.col || se.Msg != tc.msg {
				t.Fatalf("got line %d column %d %q; want line %d column %d %q", se.Line, se.Column, se.Msg, tc.line, tc.col, tc.msg)
			}
			if want := fmt.Sprintf("line %d, column %d: %s", tc.line, tc.col, tc.msg); err.Error() != want {
				t.Fatalf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestDecodeByteOrderMark(t *testing.T) {
	if _, err := Decode(append([]byte("\xef\xbb\xbf"), designExample...)); err != nil {
		t.Fatalf("a document with a UTF-8 byte order mark: %v", err)
	}
}

func TestDecodeTooLarge(t *testing.T) {
	big := make([]byte, MaxSize+1)
	if _, err := Decode(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decode of %d bytes = %v, want ErrTooLarge", len(big), err)
	}
}

// problemsOf decodes src and returns its problems (nil when it is valid);
// any other error fails the test.
func problemsOf(t *testing.T, src string) []Problem {
	t.Helper()
	doc, err := Decode([]byte(src))
	if err == nil {
		if doc == nil {
			t.Fatal("Decode returned neither a document nor an error")
		}
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Decode: %v (%T), want a *ValidationError", err, err)
	}
	if doc != nil {
		t.Fatal("Decode returned a document with its error")
	}
	if len(ve.Problems) == 0 {
		t.Fatal("ValidationError without problems")
	}
	return ve.Problems
}

func checkProblems(t *testing.T, src string, want []Problem) {
	t.Helper()
	got := problemsOf(t, src)
	if reflect.DeepEqual(got, want) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "document\n%s\ngot %d problems:\n", src, len(got))
	for _, p := range got {
		fmt.Fprintf(&b, "  %#v\n", p)
	}
	fmt.Fprintf(&b, "want %d:\n", len(want))
	for _, p := range want {
		fmt.Fprintf(&b, "  %#v\n", p)
	}
	t.Error(b.String())
}

// Helpers that build small documents: doc of devices, a Modbus device
// "press1" and a simulated device "sim" of tags.
func doc(devices ...string) string {
	return `{"clusterId": "site-a", "devices": [` + strings.Join(devices, ", ") + `]}`
}

func docAlarms(alarms ...string) string {
	return `{"clusterId": "site-a", "devices": [` +
		mb(`{"name": "Temperature", "table": "input", "address": 0, "type": "int16"}`) +
		`], "alarms": [` + strings.Join(alarms, ", ") + `]}`
}

func mb(tags ...string) string {
	return `{"name": "press1", "driver": "modbus-tcp", "address": "10.0.0.1:502", "tags": [` + strings.Join(tags, ", ") + `]}`
}

func sm(tags ...string) string {
	return `{"name": "sim", "driver": "simulated", "tags": [` + strings.Join(tags, ", ") + `]}`
}

// holding is a valid int16 holding-register tag at address a.
func holding(name string, a int) string {
	return fmt.Sprintf(`{"name": %q, "table": "holding", "address": %d, "type": "int16"}`, name, a)
}

func ramp(name string) string {
	return fmt.Sprintf(`{"name": %q, "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}`, name)
}

type ruleCase struct {
	name string
	src  string
	want []Problem // nil: valid
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkProblems(t, tc.src, tc.want) })
	}
}

func p(path, value, accepted string) []Problem {
	return []Problem{{Path: path, Value: value, Accepted: accepted}}
}

func TestDecodeStrictJSON(t *testing.T) {
	const tagFieldList = "name, table, address, type, wordOrder, scale, offset, writable, signal, period, min, max, nodeId, browsePath, samplingInterval, deadband, historize, historyDeadband, historyMaxInterval, historyRetention"
	runRuleCases(t, []ruleCase{
		{"the document is not an object", `[1, 2]`,
			p("$", "[1,2]", "accepted values are a JSON object with the fields clusterId, devices, alarms")},
		{"unknown top-level field with a suggestion", `{"clusterId": "site-a", "Devices": []}`,
			p("Devices", "[]", "unknown field (did you mean devices?); accepted fields are clusterId, devices, alarms")},
		{"unknown tag field", doc(mb(`{"name": "a", "table": "holding", "address": 0, "type": "int16", "bits": {"x": [1, 2]}}`)),
			p("devices[0].tags[0].bits", `{"x":[1,2]}`, "unknown field; accepted fields are "+tagFieldList)},
		{"unknown device field, misspelt", doc(`{"name": "press1", "driver": "modbus-tcp", "adress": "10.0.0.1:502", "tags": []}`),
			[]Problem{
				{"devices[0].adress", `"10.0.0.1:502"`, "unknown field (did you mean address?); accepted fields are name, driver, address, unitId, pollInterval, timeout, endpoint, endpoints, securityPolicy, securityMode, username, passwordEnv, publishingInterval, alarms, mirror, historize, historyDeadband, historyMaxInterval, historyRetention, tags"},
				{"devices[0].address", "", acceptHostPort},
			}},
		{"field names are case-sensitive", doc(`{"Name": "press1", "driver": "simulated", "tags": []}`),
			[]Problem{
				{"devices[0].Name", `"press1"`, "unknown field (did you mean name?); accepted fields are name, driver, address, unitId, pollInterval, timeout, endpoint, endpoints, securityPolicy, securityMode, username, passwordEnv, publishingInterval, alarms, mirror, historize, historyDeadband, historyMaxInterval, historyRetention, tags"},
				{"devices[0].name", "", acceptName},
			}},
		{"unknown fields that are not identifiers", `{"clusterId": "site-a", "": 1, "a b": 2, "dev.ices": 3}`,
			[]Problem{
				{`[""]`, "1", "unknown field; accepted fields are clusterId, devices, alarms"},
				{`["a b"]`, "2", "unknown field; accepted fields are clusterId, devices, alarms"},
				{`["dev.ices"]`, "3", "unknown field (did you mean devices?); accepted fields are clusterId, devices, alarms"},
			}},
		{"a field written twice", `{"clusterId": "site-a", "clusterId": "site-b", "devices": []}`,
			p("clusterId", `"site-b"`, "accepted: each field once per object; clusterId is written twice")},
		{"null is absent", `{"clusterId": "site-a", "devices": null, "alarms": null}`, nil},
		{"null for a required field", doc(`{"name": null, "driver": "simulated", "tags": []}`),
			p("devices[0].name", "null", acceptName)},
		{"text where a number belongs", doc(mb(`{"name": "a", "table": "holding", "address": "1", "type": "int16"}`)),
			p("devices[0].tags[0].address", `"1"`, acceptRegister)},
		{"a fraction where a whole number belongs", doc(`{"name": "press1", "driver": "modbus-tcp", "address": "h:502", "unitId": 1.5, "tags": []}`),
			p("devices[0].unitId", "1.5", acceptUnitID)},
		{"a whole number written as 1e2 or 1.0", doc(`{"name": "press1", "driver": "modbus-tcp", "address": "h:502", "unitId": 1e2, "tags": [` +
			`{"name": "a", "table": "coil", "address": 3.0, "type": "bool"}]}`), nil},
		{"a number beyond every range", doc(mb(`{"name": "a", "table": "holding", "address": 1e30, "type": "int16"}`)),
			p("devices[0].tags[0].address", "1e30", acceptRegister)},
		{"a number beyond float64", doc(mb(`{"name": "a", "table": "holding", "address": 0, "type": "int16", "scale": 1e400}`)),
			p("devices[0].tags[0].scale", "1e400", acceptScale)},
		{"a number where text belongs", doc(`{"name": 7, "driver": "simulated", "tags": []}`),
			p("devices[0].name", "7", acceptName)},
		{"text where true or false belongs", doc(mb(`{"name": "a", "table": "holding", "address": 0, "type": "int16", "writable": "yes"}`)),
			p("devices[0].tags[0].writable", `"yes"`, "accepted values are true, false")},
		{"an object where a list belongs", doc(`{"name": "sim", "driver": "simulated", "tags": {"name": "a"}}`),
			p("devices[0].tags", `{"name":"a"}`, `accepted values are lists of tags: [{"name": …, "type": …}]`)},
		{"a list element that is not an object", `{"clusterId": "site-a", "devices": ["press1"]}`,
			p("devices[0]", `"press1"`, "accepted values are objects with the fields name, driver, address, unitId, pollInterval, timeout, endpoint, endpoints, securityPolicy, securityMode, username, passwordEnv, publishingInterval, alarms, mirror, historize, historyDeadband, historyMaxInterval, historyRetention, tags")},
		{"a duration written as a number", doc(`{"name": "sim", "driver": "simulated", "pollInterval": 100, "tags": []}`),
			p("devices[0].pollInterval", "100", acceptPollInterval)},
		{"a duration neither form reads", doc(`{"name": "sim", "driver": "simulated", "pollInterval": "100 ms", "tags": []}`),
			p("devices[0].pollInterval", `"100 ms"`, acceptPollInterval)},
		{"a duration without a unit", doc(`{"name": "sim", "driver": "simulated", "pollInterval": "100", "tags": []}`),
			p("devices[0].pollInterval", `"100"`, acceptPollInterval)},
		{"a TimeSpan out of range", doc(`{"name": "sim", "driver": "simulated", "pollInterval": "00:00:60", "tags": []}`),
			p("devices[0].pollInterval", `"00:00:60"`, acceptPollInterval)},
		{"the value as written, escapes kept", `{"clusterId": "site\u0020a", "devices": []}`,
			p("clusterId", `"site\u0020a"`, acceptClusterID)},
		{"a problem below a bad value is not reported", `{"clusterId": "site-a", "devices": {"name": "x y"}}`,
			p("devices", `{"name":"x y"}`, `accepted values are lists of devices: [{"name": …, "driver": …, "tags": […]}]`)},
		{"fields of a tag of an unknown driver still report their type", doc(`{"name": "d", "driver": "opc", "tags": [{"name": "a", "address": "x", "type": 1}]}`),
			[]Problem{
				{"devices[0].driver", `"opc"`, "accepted values are modbus-tcp, simulated, opcua (did you mean opcua?)"},
				{"devices[0].tags[0].address", `"x"`, acceptRegister},
				{"devices[0].tags[0].type", "1", "accepted values are bool, int16, uint16, int32, uint32, float32, float64"},
			}},
	})
}

func TestDocumentRules(t *testing.T) {
	long := strings.Repeat("n", 64)
	runRuleCases(t, []ruleCase{
		{"valid minimal", `{"clusterId": "site-a"}`, nil},
		{"clusterId missing", `{"devices": []}`, p("clusterId", "", acceptClusterID)},
		{"clusterId empty", `{"clusterId": ""}`, p("clusterId", `""`, acceptClusterID)},
		{"clusterId with a space", `{"clusterId": "site a"}`, p("clusterId", `"site a"`, acceptClusterID)},
		{"clusterId of every allowed character", `{"clusterId": "Site_A-1.b"}`, nil},

		{"device name missing", doc(`{"driver": "simulated", "tags": []}`), p("devices[0].name", "", acceptName)},
		{"device name with a slash", doc(`{"name": "press/1", "driver": "simulated", "tags": []}`),
			p("devices[0].name", `"press/1"`, "accepted values are names of 1 to 64 characters A-Z a-z 0-9 _ - .")},
		{"device name of 64 characters", doc(`{"name": "` + long + `", "driver": "simulated", "tags": []}`), nil},
		{"device name of 65 characters", doc(`{"name": "` + long + `x", "driver": "simulated", "tags": []}`),
			p("devices[0].name", `"`+long+`x"`, acceptName)},
		{"device name non-ASCII", doc(`{"name": "prèss", "driver": "simulated", "tags": []}`),
			p("devices[0].name", `"prèss"`, acceptName)},
		{"device names unique", doc(sm(), mb(), `{"name": "sim", "driver": "simulated", "tags": []}`),
			p("devices[2].name", `"sim"`, "accepted values are device names used once in the document; devices[0] already has this name")},
		{"device names are case-sensitive", doc(sm(), `{"name": "SIM", "driver": "simulated", "tags": []}`), nil},

		{"driver missing", doc(`{"name": "d", "tags": []}`), p("devices[0].driver", "", "accepted values are modbus-tcp, simulated, opcua")},
		{"driver unknown", doc(`{"name": "d", "driver": "opc-ua", "tags": []}`),
			p("devices[0].driver", `"opc-ua"`, "accepted values are modbus-tcp, simulated, opcua (did you mean opcua?)")},
		{"driver in the wrong case", doc(`{"name": "d", "driver": "Simulated", "tags": []}`),
			p("devices[0].driver", `"Simulated"`, "accepted values are modbus-tcp, simulated, opcua (did you mean simulated?)")},

		{"pollInterval below 10ms", doc(`{"name": "sim", "driver": "simulated", "pollInterval": "00:00:00.005", "tags": []}`),
			p("devices[0].pollInterval", `"00:00:00.005"`, "accepted values are durations of at least 10ms, as a TimeSpan such as 00:00:10, 1.02:03:04 or 00:00:00.250, or a Go duration such as 10s or 250ms (default 1s)")},
		{"pollInterval zero written", doc(`{"name": "sim", "driver": "simulated", "pollInterval": "0s", "tags": []}`),
			p("devices[0].pollInterval", `"0s"`, acceptPollInterval)},
		{"pollInterval negative", doc(`{"name": "sim", "driver": "simulated", "pollInterval": "-00:00:01", "tags": []}`),
			p("devices[0].pollInterval", `"-00:00:01"`, acceptPollInterval)},
		{"pollInterval of exactly 10ms, both forms", doc(`{"name": "a", "driver": "simulated", "pollInterval": "10ms", "tags": []}`,
			`{"name": "b", "driver": "simulated", "pollInterval": "00:00:00.010", "tags": []}`), nil},
	})
}

func TestModbusDeviceRules(t *testing.T) {
	dev := func(fields string) string {
		return doc(`{"name": "press1", "driver": "modbus-tcp", ` + fields + `"tags": []}`)
	}
	runRuleCases(t, []ruleCase{
		{"address missing", dev(``), p("devices[0].address", "", acceptHostPort)},
		{"address without a port", dev(`"address": "10.0.0.1", `), p("devices[0].address", `"10.0.0.1"`, acceptHostPort)},
		{"address port 0", dev(`"address": "10.0.0.1:0", `), p("devices[0].address", `"10.0.0.1:0"`, acceptHostPort)},
		{"address port 65536", dev(`"address": "10.0.0.1:65536", `), p("devices[0].address", `"10.0.0.1:65536"`, acceptHostPort)},
		{"address port not a number", dev(`"address": "plc:modbus", `), p("devices[0].address", `"plc:modbus"`, acceptHostPort)},
		{"address port with a sign", dev(`"address": "plc:+502", `), p("devices[0].address", `"plc:+502"`, acceptHostPort)},
		{"address host with a space", dev(`"address": "plc one:502", `), p("devices[0].address", `"plc one:502"`, acceptHostPort)},
		{"address host empty", dev(`"address": ":502", `), p("devices[0].address", `":502"`, acceptHostPort)},
		{"address host name, IPv4, IPv6", doc(
			`{"name": "a", "driver": "modbus-tcp", "address": "plc-1.line_2.lan:502", "tags": []}`,
			`{"name": "b", "driver": "modbus-tcp", "address": "127.0.0.1:1502", "tags": []}`,
			`{"name": "c", "driver": "modbus-tcp", "address": "[::1]:65535", "tags": []}`), nil},
		{"unitId -1", dev(`"address": "h:502", "unitId": -1, `), p("devices[0].unitId", "-1", "accepted values are whole numbers 0..255 (default 1)")},
		{"unitId 256", dev(`"address": "h:502", "unitId": 256, `), p("devices[0].unitId", "256", acceptUnitID)},
		{"unitId 0 and 255", doc(
			`{"name": "a", "driver": "modbus-tcp", "address": "h:502", "unitId": 0, "tags": []}`,
			`{"name": "b", "driver": "modbus-tcp", "address": "h:502", "unitId": 255, "tags": []}`), nil},
		{"timeout zero", dev(`"address": "h:502", "timeout": "00:00:00", `),
			p("devices[0].timeout", `"00:00:00"`, "accepted values are durations greater than 0, as a TimeSpan such as 00:00:10, 1.02:03:04 or 00:00:00.250, or a Go duration such as 10s or 250ms (default 1s)")},
		{"timeout negative", dev(`"address": "h:502", "timeout": "-1s", `), p("devices[0].timeout", `"-1s"`, acceptTimeout)},
		{"timeout 1ns", dev(`"address": "h:502", "timeout": "1ns", `), nil},
	})
}

func TestSimulatedDeviceRules(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"Modbus settings on a simulated device", doc(`{"name": "sim", "driver": "simulated", "address": "h:502", "unitId": 3, "timeout": "1s", "tags": []}`),
			[]Problem{
				{"devices[0].address", `"h:502"`, "accepted only with driver modbus-tcp; remove it for driver simulated"},
				{"devices[0].unitId", "3", onlyModbusDevice},
				{"devices[0].timeout", `"1s"`, onlyModbusDevice},
			}},
		{"an empty address is still written", doc(`{"name": "sim", "driver": "simulated", "address": "", "tags": []}`),
			p("devices[0].address", `""`, onlyModbusDevice)},
	})
}

func TestModbusTagRules(t *testing.T) {
	const tp = "devices[0].tags[0]"
	tag := func(fields string) string { return doc(mb(`{"name": "a", ` + fields + `}`)) }
	numeric := "int16, uint16, int32, uint32, float32, float64"
	runRuleCases(t, []ruleCase{
		{"tag name missing", doc(mb(`{"table": "holding", "address": 0, "type": "int16"}`)), p(tp+".name", "", acceptName)},
		{"tag name with a space", doc(mb(`{"name": "Set point", "table": "holding", "address": 0, "type": "int16"}`)),
			p(tp+".name", `"Set point"`, acceptName)},
		{"tag names unique in a device", doc(mb(holding("a", 0), holding("b", 1), holding("a", 2))),
			p("devices[0].tags[2].name", `"a"`, "accepted values are tag names used once in a device; devices[0].tags[0] already has this name")},
		{"one tag name in two devices", doc(mb(holding("a", 0)), `{"name": "press2", "driver": "modbus-tcp", "address": "h:502", "tags": [`+holding("a", 0)+`]}`), nil},

		{"table missing", tag(`"address": 0, "type": "int16"`), p(tp+".table", "", "accepted values are holding, input, coil, discrete")},
		{"table misspelt", tag(`"table": "holdings", "address": 0, "type": "int16"`),
			p(tp+".table", `"holdings"`, "accepted values are holding, input, coil, discrete (did you mean holding?)")},

		{"address missing", tag(`"table": "holding", "type": "int16"`), p(tp+".address", "", acceptRegister)},
		{"address negative", tag(`"table": "holding", "address": -1, "type": "int16"`),
			p(tp+".address", "-1", "accepted values are whole numbers 0..65535 (0-based addresses)")},
		{"address 65536", tag(`"table": "coil", "address": 65536, "type": "bool"`), p(tp+".address", "65536", acceptRegister)},
		{"address 65535 for a one-register tag", tag(`"table": "input", "address": 65535, "type": "uint16"`), nil},
		{"address 65535 for a coil", tag(`"table": "coil", "address": 65535, "type": "bool"`), nil},
		{"the last register of an int32 past 65535", tag(`"table": "holding", "address": 65535, "type": "int32"`),
			p(tp+".address", "65535", "accepted values are whole numbers 0..65534 for an int32 tag: its 2 registers must end at 65535 or below")},
		{"the last register of a float64 past 65535", tag(`"table": "input", "address": 65533, "type": "float64"`),
			p(tp+".address", "65533", "accepted values are whole numbers 0..65532 for a float64 tag: its 4 registers must end at 65535 or below")},
		{"a float64 ending at 65535", tag(`"table": "input", "address": 65532, "type": "float64"`), nil},

		{"overlap: the same register", doc(mb(holding("a", 5), holding("b", 5))),
			p("devices[0].tags[1].address", "5", `accepted values are addresses not overlapping devices[0].tags[0] "a" (holding register 5)`)},
		{"overlap: inside a float32", doc(mb(`{"name": "Speed", "table": "holding", "address": 10, "type": "float32"}`, holding("b", 11))),
			p("devices[0].tags[1].address", "11", `accepted values are addresses not overlapping devices[0].tags[0] "Speed" (holding registers 10..11)`)},
		{"overlap: a float64 over an earlier int16", doc(mb(holding("a", 12), `{"name": "b", "table": "holding", "address": 10, "type": "float64"}`)),
			p("devices[0].tags[1].address", "10", `accepted values are addresses not overlapping devices[0].tags[0] "a" (holding register 12)`)},
		{"overlap: coils", doc(mb(`{"name": "a", "table": "coil", "address": 1, "type": "bool"}`, `{"name": "b", "table": "coil", "address": 1, "type": "bool"}`)),
			p("devices[0].tags[1].address", "1", `accepted values are addresses not overlapping devices[0].tags[0] "a" (coil 1)`)},
		{"overlap: discrete inputs", doc(mb(`{"name": "a", "table": "discrete", "address": 0, "type": "bool"}`, `{"name": "b", "table": "discrete", "address": 0, "type": "bool"}`)),
			p("devices[0].tags[1].address", "0", `accepted values are addresses not overlapping devices[0].tags[0] "a" (discrete 0)`)},
		{"overlap: input registers of an int32", doc(mb(`{"name": "a", "table": "input", "address": 0, "type": "int32"}`, `{"name": "b", "table": "input", "address": 1, "type": "int32"}`)),
			p("devices[0].tags[1].address", "1", `accepted values are addresses not overlapping devices[0].tags[0] "a" (input registers 0..1)`)},
		{"adjacent tags and one address in four tables", doc(mb(
			`{"name": "a", "table": "holding", "address": 10, "type": "float32"}`, holding("b", 12), holding("c", 9),
			`{"name": "d", "table": "input", "address": 10, "type": "int16"}`,
			`{"name": "e", "table": "coil", "address": 10, "type": "bool"}`,
			`{"name": "f", "table": "discrete", "address": 10, "type": "bool"}`)), nil},
		{"one register in two devices", doc(mb(holding("a", 0)), `{"name": "press2", "driver": "modbus-tcp", "address": "h:502", "tags": [`+holding("b", 0)+`]}`), nil},

		{"type missing", tag(`"table": "holding", "address": 0`), p(tp+".type", "", "accepted values are bool, int16, uint16, int32, uint32, float32, float64")},
		{"type unknown", tag(`"table": "holding", "address": 0, "type": "float"`),
			p(tp+".type", `"float"`, "accepted values are bool, int16, uint16, int32, uint32, float32, float64 (did you mean float32?)")},
		{"coil int16", tag(`"table": "coil", "address": 0, "type": "int16"`), p(tp+".type", `"int16"`, "accepted values for a coil tag are bool")},
		{"discrete float32", tag(`"table": "discrete", "address": 0, "type": "float32"`), p(tp+".type", `"float32"`, "accepted values for a discrete tag are bool")},
		{"holding bool", tag(`"table": "holding", "address": 0, "type": "bool"`), p(tp+".type", `"bool"`, "accepted values for a holding tag are "+numeric)},
		{"input bool", tag(`"table": "input", "address": 0, "type": "bool"`), p(tp+".type", `"bool"`, "accepted values for an input tag are "+numeric)},
		{"every numeric type on holding", doc(mb(
			`{"name": "a", "table": "holding", "address": 0, "type": "int16"}`,
			`{"name": "b", "table": "holding", "address": 1, "type": "uint16"}`,
			`{"name": "c", "table": "holding", "address": 2, "type": "int32"}`,
			`{"name": "d", "table": "holding", "address": 4, "type": "uint32"}`,
			`{"name": "e", "table": "holding", "address": 6, "type": "float32"}`,
			`{"name": "f", "table": "holding", "address": 8, "type": "float64"}`)), nil},

		{"wordOrder unknown", tag(`"table": "holding", "address": 0, "type": "int32", "wordOrder": "middle"`),
			p(tp+".wordOrder", `"middle"`, "accepted values are big, little")},
		{"wordOrder on int16", tag(`"table": "holding", "address": 0, "type": "int16", "wordOrder": "little"`),
			p(tp+".wordOrder", `"little"`, "accepted only for the 32- and 64-bit types int32, uint32, float32, float64; remove it for an int16 tag")},
		{"wordOrder on a coil", tag(`"table": "coil", "address": 0, "type": "bool", "wordOrder": "big"`),
			p(tp+".wordOrder", `"big"`, "accepted only for the 32- and 64-bit types int32, uint32, float32, float64; remove it for a bool tag")},
		{"wordOrder little on float64, big on uint32", doc(mb(
			`{"name": "a", "table": "input", "address": 0, "type": "float64", "wordOrder": "little"}`,
			`{"name": "b", "table": "input", "address": 4, "type": "uint32", "wordOrder": "big"}`)), nil},

		{"scale on a bool", tag(`"table": "coil", "address": 0, "type": "bool", "scale": 2`),
			p(tp+".scale", "2", "accepted only for numeric types; remove it for a bool tag")},
		{"scale 0", tag(`"table": "holding", "address": 0, "type": "int16", "scale": 0`), p(tp+".scale", "0", "accepted values are numbers other than 0")},
		{"offset on a bool", tag(`"table": "discrete", "address": 0, "type": "bool", "offset": 1`),
			p(tp+".offset", "1", "accepted only for numeric types; remove it for a bool tag")},
		{"scale and offset on numbers", tag(`"table": "holding", "address": 0, "type": "uint16", "scale": -0.5, "offset": -40`), nil},

		{"writable input", tag(`"table": "input", "address": 0, "type": "int16", "writable": true`),
			p(tp+".writable", "true", "accepted values are false: only holding and coil tags are writable")},
		{"writable discrete", tag(`"table": "discrete", "address": 0, "type": "bool", "writable": true`),
			p(tp+".writable", "true", acceptNotWritable)},
		{"writable holding and coil, not writable input", doc(mb(
			`{"name": "a", "table": "holding", "address": 0, "type": "int16", "writable": true}`,
			`{"name": "b", "table": "coil", "address": 0, "type": "bool", "writable": true}`,
			`{"name": "c", "table": "input", "address": 0, "type": "int16", "writable": false}`)), nil},

		{"simulation fields on a Modbus tag", tag(`"table": "holding", "address": 0, "type": "int16", "signal": "ramp", "period": "1s", "min": 0, "max": 1`),
			[]Problem{
				{tp + ".signal", `"ramp"`, "accepted only for tags of a simulated device; remove it for a modbus-tcp tag"},
				{tp + ".period", `"1s"`, onlySimulatedTag},
				{tp + ".min", "0", onlySimulatedTag},
				{tp + ".max", "1", onlySimulatedTag},
			}},
	})
}

func TestSimulatedTagRules(t *testing.T) {
	const tp = "devices[0].tags[0]"
	tag := func(fields string) string { return doc(sm(`{"name": "a", ` + fields + `}`)) }
	signals := "accepted values are ramp, sine, square, random-walk, constant"
	runRuleCases(t, []ruleCase{
		{"every signal", doc(sm(ramp("a"),
			`{"name": "b", "type": "float32", "signal": "sine", "period": "00:00:05", "min": -1, "max": 1}`,
			`{"name": "c", "type": "bool", "signal": "square", "period": "2s", "min": 0, "max": 1}`,
			`{"name": "d", "type": "int32", "signal": "random-walk", "period": "1s", "min": -10, "max": 10}`,
			`{"name": "e", "type": "uint16", "signal": "constant", "min": 42}`,
			`{"name": "f", "type": "bool", "signal": "constant", "min": 1}`)), nil},
		{"Modbus fields on a simulated tag", tag(`"table": "holding", "address": 0, "type": "int32", "wordOrder": "big", "scale": 2, "offset": 1, "writable": true, "signal": "constant", "min": 1`),
			[]Problem{
				{tp + ".table", `"holding"`, "accepted only for tags of a modbus-tcp device; remove it for a simulated tag"},
				{tp + ".address", "0", onlyModbusTag},
				{tp + ".wordOrder", `"big"`, onlyModbusTag},
				{tp + ".scale", "2", onlyModbusTag},
				{tp + ".offset", "1", onlyModbusTag},
				{tp + ".writable", "true", "accepted values are false: only holding and coil tags of a modbus-tcp device are writable"},
			}},
		{"type missing", tag(`"signal": "constant", "min": 1`), p(tp+".type", "", oneOf(Types))},
		{"signal missing", tag(`"type": "float64"`), p(tp+".signal", "", signals)},
		{"signal unknown", tag(`"type": "float64", "signal": "sawtooth", "period": "1s", "min": 0, "max": 1`),
			p(tp+".signal", `"sawtooth"`, signals)},
		{"signal misspelt", tag(`"type": "float64", "signal": "randomwalk", "period": "1s", "min": 0, "max": 1`),
			p(tp+".signal", `"randomwalk"`, signals+" (did you mean random-walk?)")},
		{"a bool ramp", tag(`"type": "bool", "signal": "ramp", "period": "1s", "min": 0, "max": 1`),
			p(tp+".signal", `"ramp"`, "accepted values for a bool tag are square, constant")},
		{"period missing", tag(`"type": "float64", "signal": "ramp", "min": 0, "max": 1`),
			p(tp+".period", "", "accepted values are durations greater than 0, as a TimeSpan such as 00:00:10, 1.02:03:04 or 00:00:00.250, or a Go duration such as 10s or 250ms")},
		{"period zero", tag(`"type": "float64", "signal": "sine", "period": "0s", "min": 0, "max": 1`), p(tp+".period", `"0s"`, acceptPeriod)},
		{"period negative", tag(`"type": "float64", "signal": "square", "period": "-5s", "min": 0, "max": 1`), p(tp+".period", `"-5s"`, acceptPeriod)},
		{"period of a constant", tag(`"type": "float64", "signal": "constant", "period": "1s", "min": 3`),
			p(tp+".period", `"1s"`, "accepted only for the signals ramp, sine, square, random-walk; remove it for constant (its value is min)")},
		{"min and max missing", tag(`"type": "float64", "signal": "ramp", "period": "1s"`),
			[]Problem{
				{tp + ".min", "", "accepted values are numbers (the lower bound)"},
				{tp + ".max", "", "accepted values are numbers greater than min"},
			}},
		{"max equal to min", tag(`"type": "float64", "signal": "ramp", "period": "1s", "min": 5, "max": 5`),
			p(tp+".max", "5", "accepted values are numbers greater than min (5)")},
		{"max below min", tag(`"type": "float64", "signal": "sine", "period": "1s", "min": 0.5, "max": -0.25`),
			p(tp+".max", "-0.25", "accepted values are numbers greater than min (0.5)")},
		{"constant without min", tag(`"type": "float64", "signal": "constant"`), p(tp+".min", "", "accepted values are numbers (the constant's value)")},
		{"constant with max", tag(`"type": "float64", "signal": "constant", "min": 1, "max": 2`), p(tp+".max", "2", onlyMovingSignal)},
		{"int16 min out of range", tag(`"type": "int16", "signal": "ramp", "period": "1s", "min": -40000, "max": 0`),
			p(tp+".min", "-40000", "accepted values are whole numbers -32768..32767 for an int16 tag")},
		{"uint16 max out of range", tag(`"type": "uint16", "signal": "ramp", "period": "1s", "min": 0, "max": 65536`),
			p(tp+".max", "65536", "accepted values are whole numbers 0..65535 for a uint16 tag")},
		{"int32 min not whole", tag(`"type": "int32", "signal": "ramp", "period": "1s", "min": 0.5, "max": 10`),
			p(tp+".min", "0.5", "accepted values are whole numbers -2147483648..2147483647 for an int32 tag")},
		{"uint32 min negative", tag(`"type": "uint32", "signal": "constant", "min": -1`),
			p(tp+".min", "-1", "accepted values are whole numbers 0..4294967295 for a uint32 tag")},
		{"float32 max out of range", tag(`"type": "float32", "signal": "ramp", "period": "1s", "min": 0, "max": 1e39`),
			p(tp+".max", "1e39", "accepted values are numbers within ±3.4028235e+38 for a float32 tag")},
		{"bool min 2", tag(`"type": "bool", "signal": "constant", "min": 2`),
			p(tp+".min", "2", "accepted values are 0 (false) or 1 (true) for a bool tag")},
		{"integer bounds at the ends of their ranges", doc(sm(
			`{"name": "a", "type": "int16", "signal": "ramp", "period": "1s", "min": -32768, "max": 32767}`,
			`{"name": "b", "type": "uint32", "signal": "ramp", "period": "1s", "min": 0, "max": 4294967295}`)), nil},
	})
}

func TestAlarmRules(t *testing.T) {
	alarm := func(fields string) string { return docAlarms(`{"name": "High", ` + fields + `}`) }
	ok := `"source": "press1/Temperature", "condition": "press1.Temperature > 80", "severity": 700`
	runRuleCases(t, []ruleCase{
		{"valid", alarm(ok + `, "message": "hot"`), nil},
		{"message optional", alarm(ok), nil},
		{"name invalid", docAlarms(`{"name": "High Temp", ` + ok + `}`), p("alarms[0].name", `"High Temp"`, acceptName)},
		{"names unique", docAlarms(`{"name": "A", `+ok+`}`, `{"name": "B", `+ok+`}`, `{"name": "A", `+ok+`}`),
			p("alarms[2].name", `"A"`, "accepted values are alarm names used once in the document; alarms[0] already has this name")},
		{"source missing", alarm(`"condition": "press1.Temperature > 1", "severity": 1`), p("alarms[0].source", "", acceptSource)},
		{"source without a tag", alarm(`"source": "press1", "condition": "press1.Temperature > 1", "severity": 1`),
			p("alarms[0].source", `"press1"`, "accepted values are device/tag naming a tag of this document, such as press1/Temperature")},
		{"source with an empty device", alarm(`"source": "/Temperature", "condition": "press1.Temperature > 1", "severity": 1`),
			p("alarms[0].source", `"/Temperature"`, acceptSource)},
		{"source naming no device", alarm(`"source": "press9/Temperature", "condition": "press1.Temperature > 1", "severity": 1`),
			p("alarms[0].source", `"press9/Temperature"`, acceptSource+`; there is no device "press9"`)},
		{"source naming no tag", alarm(`"source": "press1/Pressure", "condition": "press1.Temperature > 1", "severity": 1`),
			p("alarms[0].source", `"press1/Pressure"`, acceptSource+`; device "press1" has no tag "Pressure"`)},
		{"severity missing", alarm(`"source": "press1/Temperature", "condition": "press1.Temperature > 1"`),
			p("alarms[0].severity", "", "accepted values are whole numbers 1..1000")},
		{"severity 0", alarm(`"source": "press1/Temperature", "condition": "press1.Temperature > 1", "severity": 0`), p("alarms[0].severity", "0", acceptSeverity)},
		{"severity 1001", alarm(`"source": "press1/Temperature", "condition": "press1.Temperature > 1", "severity": 1001`), p("alarms[0].severity", "1001", acceptSeverity)},
		{"severity 1 and 1000", docAlarms(
			`{"name": "A", "source": "press1/Temperature", "condition": "press1.Temperature > 0", "severity": 1}`,
			`{"name": "B", "source": "press1/Temperature", "condition": "press1.Temperature > 0", "severity": 1000}`), nil},
		{"condition missing", alarm(`"source": "press1/Temperature", "severity": 5`),
			p("alarms[0].condition", "", "accepted values are true-or-false expressions over the tags, written device.tag, such as press1.Temperature > 80")},
		{"condition blank", alarm(`"source": "press1/Temperature", "condition": " \t", "severity": 5`),
			p("alarms[0].condition", `" \t"`, acceptCondition)},
	})
}

// TestDecodeReportsEveryProblemInOrder: one document with a problem of
// nearly every kind gives all of them, in document order, and the error
// text is one line per problem.
func TestDecodeReportsEveryProblemInOrder(t *testing.T) {
	src := `{
  "clusterId": "site a",
  "version": 3,
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": "10.20.0.5", "unitId": 300,
     "pollInterval": "5ms", "timeout": "0s", "tags": [
      {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true},
      {"name": "Setpoint", "table": "holdings", "address": 1, "type": "int16"},
      {"name": "Speed", "table": "holding", "address": 65535, "type": "float32", "wordOrder": "big"},
      {"name": "Temp", "table": "input", "address": 0, "type": "bool", "scale": 0, "writable": true},
      {"name": "Run", "table": "coil", "address": 0, "type": "int16", "wordOrder": "little"},
      {"name": "Over", "table": "holding", "address": 0, "type": "uint16", "signal": "ramp", "colour": "red"}
    ]},
    {"name": "press1", "driver": "simulated", "timeout": "1s", "tags": [
      {"name": "Ramp", "type": "float64", "signal": "ramp", "min": 10, "max": 1},
      {"name": "Flag", "type": "bool", "signal": "sine", "period": "1s", "min": 0, "max": 2}
    ]},
    {"name": "x", "driver": "opc-ua", "tags": []},
    7
  ],
  "alarms": [
    {"name": "High", "source": "press1/Nope", "condition": "", "severity": 0},
    {"name": "High", "source": "press1/Setpoint", "condition": "press1.Setpoint > 1", "severity": 10, "priority": 1}
  ]
}`
	const d0, d1 = "devices[0]", "devices[1]"
	want := []Problem{
		{"version", "3", "unknown field; accepted fields are clusterId, devices, alarms"},
		{"clusterId", `"site a"`, acceptClusterID},
		{d0 + ".address", `"10.20.0.5"`, acceptHostPort},
		{d0 + ".unitId", "300", acceptUnitID},
		{d0 + ".pollInterval", `"5ms"`, acceptPollInterval},
		{d0 + ".timeout", `"0s"`, acceptTimeout},
		{d0 + ".tags[1].name", `"Setpoint"`, "accepted values are tag names used once in a device; devices[0].tags[0] already has this name"},
		{d0 + ".tags[1].table", `"holdings"`, "accepted values are holding, input, coil, discrete (did you mean holding?)"},
		{d0 + ".tags[2].address", "65535", "accepted values are whole numbers 0..65534 for a float32 tag: its 2 registers must end at 65535 or below"},
		{d0 + ".tags[3].type", `"bool"`, "accepted values for an input tag are int16, uint16, int32, uint32, float32, float64"},
		{d0 + ".tags[3].scale", "0", "accepted only for numeric types; remove it for a bool tag"},
		{d0 + ".tags[3].writable", "true", acceptNotWritable},
		{d0 + ".tags[4].type", `"int16"`, "accepted values for a coil tag are bool"},
		{d0 + ".tags[4].wordOrder", `"little"`, "accepted only for the 32- and 64-bit types int32, uint32, float32, float64; remove it for an int16 tag"},
		{d0 + ".tags[5].colour", `"red"`, "unknown field; accepted fields are name, table, address, type, wordOrder, scale, offset, writable, signal, period, min, max, nodeId, browsePath, samplingInterval, deadband, historize, historyDeadband, historyMaxInterval, historyRetention"},
		{d0 + ".tags[5].address", "0", `accepted values are addresses not overlapping devices[0].tags[0] "Setpoint" (holding register 0)`},
		{d0 + ".tags[5].signal", `"ramp"`, onlySimulatedTag},
		{d1 + ".name", `"press1"`, "accepted values are device names used once in the document; devices[0] already has this name"},
		{d1 + ".timeout", `"1s"`, onlyModbusDevice},
		{d1 + ".tags[0].period", "", acceptPeriod},
		{d1 + ".tags[0].max", "1", "accepted values are numbers greater than min (10)"},
		{d1 + ".tags[1].signal", `"sine"`, "accepted values for a bool tag are square, constant"},
		{d1 + ".tags[1].max", "2", "accepted values are 0 (false) or 1 (true) for a bool tag"},
		{"devices[2].driver", `"opc-ua"`, "accepted values are modbus-tcp, simulated, opcua (did you mean opcua?)"},
		{"devices[3]", "7", "accepted values are objects with the fields name, driver, address, unitId, pollInterval, timeout, endpoint, endpoints, securityPolicy, securityMode, username, passwordEnv, publishingInterval, alarms, mirror, historize, historyDeadband, historyMaxInterval, historyRetention, tags"},
		{"alarms[0].source", `"press1/Nope"`, acceptSource + `; device "press1" has no tag "Nope"`},
		{"alarms[0].condition", `""`, acceptCondition},
		{"alarms[0].severity", "0", acceptSeverity},
		{"alarms[1].priority", "1", "unknown field; accepted fields are name, source, condition, severity, message"},
		{"alarms[1].name", `"High"`, "accepted values are alarm names used once in the document; alarms[0] already has this name"},
	}
	checkProblems(t, src, want)

	_, err := Decode([]byte(src))
	lines := strings.Split(err.Error(), "\n")
	if lines[0] != fmt.Sprintf("invalid deployment document: %d problems", len(want)) || len(lines) != len(want)+1 {
		t.Fatalf("error text:\n%s", err)
	}
	for i, w := range want {
		if lines[i+1] != "  "+w.String() {
			t.Errorf("line %d = %q, want %q", i+1, lines[i+1], "  "+w.String())
		}
	}
	if lines[1] != `  version = 3: unknown field; accepted fields are clusterId, devices, alarms` {
		t.Errorf("first problem line = %q", lines[1])
	}
}

func TestProblemString(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{"devices[0].address", "", "x"}, "devices[0].address = (missing): x"},
		{Problem{"clusterId", `""`, "x"}, `clusterId = "": x`},
		{Problem{"a", `"` + strings.Repeat("é", 50) + `"`, "x"}, `a = "` + strings.Repeat("é", 39) + `…: x`},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	one := (&ValidationError{Problems: []Problem{{"clusterId", "", "y"}}}).Error()
	if one != "invalid deployment document: 1 problem\n  clusterId = (missing): y" {
		t.Errorf("one problem: %q", one)
	}
}

func TestHistoryRules(t *testing.T) {
	const tp = "devices[0].tags[0]"
	hold := func(fields string) string {
		return doc(mb(`{"name": "a", "table": "holding", "address": 0, "type": "int16", ` + fields + `}`))
	}
	coil := func(fields string) string {
		return doc(mb(`{"name": "a", "table": "coil", "address": 0, "type": "bool", ` + fields + `}`))
	}
	dev := func(fields string, tags ...string) string {
		return doc(`{"name": "press1", "driver": "modbus-tcp", "address": "10.0.0.1:502", ` + fields + `, "tags": [` + strings.Join(tags, ", ") + `]}`)
	}
	simTag := func(fields string) string {
		return doc(sm(`{"name": "a", "type": "float64", "signal": "sine", "period": "10s", "min": 0, "max": 200, ` + fields + `}`))
	}
	runRuleCases(t, []ruleCase{
		{"every field on a tag", hold(`"historize": true, "historyDeadband": 0.5, "historyMaxInterval": "10m", "historyRetention": "2160h"`), nil},
		{"a percent deadband on a simulated tag", simTag(`"historize": true, "historyDeadband": "2.5%"`), nil},
		{"device defaults", dev(`"historize": true, "historyDeadband": 1, "historyRetention": "01:30:00"`, holding("a", 0), `{"name": "b", "table": "holding", "address": 1, "type": "int16", "historize": false}`), nil},
		{"a bool tag without deadband", coil(`"historize": true, "historyMaxInterval": "1h"`), nil},
		{"deadband negative", hold(`"historize": true, "historyDeadband": -1`), p(tp+".historyDeadband", "-1", acceptDeadband)},
		{"deadband above 100 %", simTag(`"historize": true, "historyDeadband": "101%"`), p(tp+".historyDeadband", `"101%"`, acceptDeadband)},
		{"deadband not a number", hold(`"historize": true, "historyDeadband": "much"`), p(tp+".historyDeadband", `"much"`, acceptDeadband)},
		{"deadband a list", hold(`"historize": true, "historyDeadband": [1]`), p(tp+".historyDeadband", `[1]`, acceptDeadband)},
		{"percent deadband on a Modbus tag", hold(`"historize": true, "historyDeadband": "1%"`), p(tp+".historyDeadband", `"1%"`, acceptPercentDeadband)},
		{"deadband on a bool tag", coil(`"historize": true, "historyDeadband": 1`), p(tp+".historyDeadband", "1", acceptBoolDeadband)},
		{"deadband on a tag not recorded", hold(`"historyDeadband": 1`), p(tp+".historyDeadband", "1", acceptHistoryOff)},
		{"retention on a tag the device turns off", dev(`"historize": false`, `{"name": "a", "table": "holding", "address": 0, "type": "int16", "historyRetention": "24h"}`),
			p(tp+".historyRetention", `"24h"`, acceptHistoryOff)},
		{"max interval too short", hold(`"historize": true, "historyMaxInterval": "500ms"`), p(tp+".historyMaxInterval", `"500ms"`, acceptHistoryMaxInterval)},
		{"retention too short", hold(`"historize": true, "historyRetention": "30m"`), p(tp+".historyRetention", `"30m"`, acceptHistoryRetention)},
		{"retention too long", dev(`"historyRetention": "200000h"`, holding("a", 0)), p("devices[0].historyRetention", `"200000h"`, acceptHistoryRetention)},
		{"historize not a bool", hold(`"historize": "yes"`), p(tp+".historize", `"yes"`, acceptHistorize)},
		{"a device's percent deadband reaches a Modbus tag", dev(`"historize": true, "historyDeadband": "5%"`, holding("a", 0)),
			p(tp+".type", `"int16"`, "a tag of a device whose historyDeadband is a percentage needs a range, which only simulated tags have; give this tag an absolute historyDeadband")},
	})
}

func TestHistoryEffective(t *testing.T) {
	yes, no := true, false
	dev := History{Historize: &yes, Deadband: &Deadband{Value: 2}, Retention: Duration(48 * time.Hour)}
	got := History{Historize: &no, MaxInterval: Duration(time.Minute)}.Effective(dev)
	if got.On() || got.Deadband.Value != 2 || got.MaxInterval.Std() != time.Minute || got.Retention.Std() != 48*time.Hour {
		t.Fatalf("tag over device: %+v", got)
	}
	if got := (History{}).Effective(History{}); got.On() || got.Deadband != nil || got.Retention.Std() != DefaultHistoryRetention {
		t.Fatalf("defaults: %+v", got)
	}
	for _, c := range []struct {
		in   string
		want Deadband
	}{{`0.25`, Deadband{Value: 0.25}}, {`"2%"`, Deadband{Value: 2, Percent: true}}, {`" 1.5 %"`, Deadband{Value: 1.5, Percent: true}}} {
		var d Deadband
		if err := d.UnmarshalJSON([]byte(c.in)); err != nil || d != c.want {
			t.Errorf("%s: %+v, %v", c.in, d, err)
		}
		b, _ := d.MarshalJSON()
		var back Deadband
		if err := back.UnmarshalJSON(b); err != nil || back != d {
			t.Errorf("%s: round trip %s → %+v, %v", c.in, b, back, err)
		}
	}
}
