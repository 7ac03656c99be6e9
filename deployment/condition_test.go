package deployment

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
)

// condDoc is a document with two devices whose tags cover every kind, and
// one alarm per condition.
func condDoc(conds ...string) *Document {
	d := &Document{ClusterId: "site-a", Devices: []Device{
		{Name: "press1", Driver: DriverModbusTCP, Address: "10.0.0.1:502", Tags: []Tag{
			{Name: "Setpoint", Table: TableHolding, Address: intp(0), Type: TypeInt16},
			{Name: "Speed", Table: TableHolding, Address: intp(10), Type: TypeFloat32},
			{Name: "Temperature", Table: TableInput, Address: intp(0), Type: TypeInt16, Scale: floatp(0.1)},
			{Name: "Run", Table: TableCoil, Address: intp(1), Type: TypeBool},
			{Name: "Count-1", Table: TableInput, Address: intp(4), Type: TypeUint32},
		}},
		{Name: "line-2", Driver: DriverSimulated, Tags: []Tag{
			{Name: "Level", Type: TypeInt32, Signal: SignalConstant, Min: floatp(3)},
		}},
	}}
	for i, c := range conds {
		d.Alarms = append(d.Alarms, Alarm{Name: fmt.Sprintf("A%d", i), Source: "press1/Run", Condition: c, Severity: 100})
	}
	return d
}

func TestCompileConditions(t *testing.T) {
	const tags = "the tags are press1.Setpoint, press1.Speed, press1.Temperature, press1.Run, press1.Count-1"
	for _, tc := range []struct {
		cond string
		refs []string // keys in first-use order; nil with err
		err  string   // the reason, "" when it compiles
	}{
		{"press1.Temperature > 80", []string{"press1.Temperature"}, ""},
		{"press1.Run && press1.Setpoint > press1.Speed", []string{"press1.Run", "press1.Setpoint", "press1.Speed"}, ""},
		{"press1.Setpoint > 1 || press1.Setpoint < -1", []string{"press1.Setpoint"}, ""},
		{`press1["Count-1"] >= 10`, []string{"press1.Count-1"}, ""},
		{`$env["line-2"].Level == 3`, []string{"line-2.Level"}, ""},
		{`$env["line-2"]["Level"] == 3 and not press1.Run`, []string{"line-2.Level", "press1.Run"}, ""},
		{"press1?.Run", []string{"press1.Run"}, ""},
		{"abs(press1.Speed - press1.Setpoint) > max(1, press1.Temperature / 10)", []string{"press1.Speed", "press1.Setpoint", "press1.Temperature"}, ""},
		{"let d = press1.Speed - 3; d > 1 && d < 9", []string{"press1.Speed"}, ""},
		{"press1.Run ? press1.Speed > 1 : false", []string{"press1.Run", "press1.Speed"}, ""},
		{"press1.Setpoint in [1, 2, 3]", []string{"press1.Setpoint"}, ""},
		{`press1.Run and "a-b" contains "-" and "ab" matches "^a" and "ab" startsWith "a"`, []string{"press1.Run"}, ""},
		{"press1.Speed ** 2 > 7 / 2 ?? false", []string{"press1.Speed"}, ""},
		{"true", nil, ""},

		{"press1.Temprature > 80", nil, "unknown tag press1.Temprature; " + tags + " (did you mean press1.Temperature?)"},
		{"press1.Count-1 > 4", nil, "unknown tag press1.Count; " + tags + " (did you mean press1.Count-1?)"},
		{"press2.Temperature > 80", nil, "unknown device press2; the devices are press1, line-2 (did you mean press1?)"},
		{"press1 > 1", nil, "press1 is a device; name one of its tags, such as press1.Setpoint"},
		{"x > 1", nil, "unknown device x; the devices are press1, line-2"},
		{`$env["nope"].X`, nil, "unknown device nope; the devices are press1, line-2"},
		{`$env["line-2"] != nil`, nil, `$env is not a value; name a tag, such as $env["press-1"]["Temperature"]`},
		{`$env == nil`, nil, `$env is not a value; name a tag, such as $env["press-1"]["Temperature"]`},
		{`press1[press1.Run ? "Speed" : "Setpoint"] > 1`, nil, `tags are named as press1.Tag or press1["Tag"], not computed`},
		{"press1.Temperature + 1", nil, "the condition is a number, not true or false: compare it, such as press1.Temperature > 80"},
		{"press1.Run > 1", nil, "invalid operation: > (mismatched types bool and int) (1:12)"},
		{"press1.Temperature >", nil, "unexpected token EOF (1:20)"},
		{"len([1]) > 0", nil, "function len is not accepted; the functions are abs, ceil, floor, round, min, max, int, float"},
		{"now() != nil", nil, "function now is not accepted; the functions are abs, ceil, floor, round, min, max, int, float"},
		{"all([1, 2], # > 0)", nil, "list functions (all, any, filter, map, …) are not accepted"},
		{"1..3 == [1, 2, 3]", nil, "the range operator .. is not accepted"},
		{"let press1 = 3; press1 > 1", nil, "let press1: press1 is a device; give the variable another name"},
		{`let a = "xxxxxxxxxx"; let b = a + a; let c = b + b; c != ""`, nil, "joining texts with + is not accepted"},
		{`"a" + "b" == "ab"`, nil, ""},
		{"   ", nil, "the condition is empty"},
		{strings.Repeat("press1.Run || ", 300) + "true", nil, "the condition is 4204 bytes long, the longest accepted is 4096"},
	} {
		t.Run(tc.cond[:min(len(tc.cond), 40)], func(t *testing.T) {
			ca, err := CompileAlarm(condDoc(tc.cond), 0)
			if tc.err != "" {
				ce, ok := err.(*ConditionError)
				if !ok || ce.Reason != tc.err || ce.Alarm != 0 {
					t.Fatalf("err = %v, want reason %q", err, tc.err)
				}
				if want := "alarms[0].condition: " + tc.err; err.Error() != want {
					t.Fatalf("Error() = %q", err.Error())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range ca.Refs {
				keys = append(keys, r.Key())
			}
			if !reflect.DeepEqual(keys, tc.refs) {
				t.Fatalf("refs %v, want %v", keys, tc.refs)
			}
		})
	}
}

// The problems of Decode carry the reason after the accepted values.
func TestConditionProblems(t *testing.T) {
	d := condDoc("press1.Temperature > 80", "press1.Temprature > 80", "press1.Setpoint")
	got := d.Validate()
	want := []Problem{
		{"alarms[1].condition", `"press1.Temprature > 80"`, acceptCondition + "; unknown tag press1.Temprature; " +
			"the tags are press1.Setpoint, press1.Speed, press1.Temperature, press1.Run, press1.Count-1 (did you mean press1.Temperature?)"},
		{"alarms[2].condition", `"press1.Setpoint"`, acceptCondition + "; the condition is a number, not true or false: compare it, such as press1.Temperature > 80"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if _, err := CompileAlarms(d); err == nil || !strings.HasPrefix(err.Error(), "alarms[1].condition: unknown tag") {
		t.Fatalf("CompileAlarms: %v", err)
	}
	// A tag of unknown type is its own problem, not the condition's.
	d = condDoc("press1.Odd > 1")
	d.Devices[0].Tags = append(d.Devices[0].Tags, Tag{Name: "Odd", Table: TableHolding, Address: intp(20), Type: "word"})
	for _, p := range d.Validate() {
		if strings.HasSuffix(p.Path, "condition") {
			t.Fatalf("a condition over a tag of unknown type is reported: %v", p)
		}
	}
}

func TestTooManyAlarms(t *testing.T) {
	conds := make([]string, MaxAlarms+1)
	for i := range conds {
		conds[i] = "press1.Run"
	}
	d := condDoc(conds...)
	got := d.Validate()
	if len(got) != 1 || got[0].Path != "alarms" || got[0].Accepted != acceptAlarmList+"; the document has 1001" {
		t.Fatalf("problems %v", got)
	}
	if _, err := CompileAlarms(d); err == nil {
		t.Fatal("CompileAlarms accepted 1001 alarms")
	}
}

// Evaluations see bool, int and float64 and never run away: a runtime
// error is an error, not a panic or a loop.
func TestEvaluate(t *testing.T) {
	cas, err := CompileAlarms(condDoc(
		"press1.Temperature > 80",
		"press1.Setpoint % $env[\"line-2\"].Level == 1",
		"press1.Setpoint % press1.Setpoint == 0",
		`press1.Run && press1["Count-1"] > 4`,
	))
	if err != nil {
		t.Fatal(err)
	}
	env := Env{"press1.Temperature": 81.5, "press1.Setpoint": 4, "line-2.Level": 3, "press1.Run": true, "press1.Count-1": 5}
	for i, want := range []bool{true, true, true, true} {
		out, err := expr.Run(cas[i].Program, env)
		if err != nil || out != want {
			t.Errorf("alarm %d: %v, %v", i, out, err)
		}
	}
	env["press1.Setpoint"] = 0
	if _, err := expr.Run(cas[2].Program, env); err == nil || !strings.Contains(err.Error(), "divide by zero") {
		t.Errorf("modulo by zero: %v", err)
	}
}

func TestConditionKind(t *testing.T) {
	for _, tc := range []struct {
		tag  Tag
		kind ValueKind
		in   any
		want any
	}{
		{Tag{Type: TypeBool}, KindBool, true, true},
		{Tag{Type: TypeInt16}, KindInt, int16(-3), -3},
		{Tag{Type: TypeUint16}, KindInt, uint16(65535), 65535},
		{Tag{Type: TypeInt32}, KindInt, int32(-70000), -70000},
		{Tag{Type: TypeUint32}, KindInt, uint32(4294967295), 4294967295},
		{Tag{Type: TypeFloat32}, KindFloat, float32(1.5), 1.5},
		{Tag{Type: TypeFloat64}, KindFloat, 2.25, 2.25},
		{Tag{Type: TypeInt16, Scale: floatp(0.1)}, KindFloat, 81.5, 81.5},
		{Tag{Type: TypeUint16, Offset: floatp(1)}, KindFloat, 2.0, 2.0},
		{Tag{Type: "word"}, 0, nil, nil},
	} {
		if k := ConditionKind(&tc.tag); k != tc.kind {
			t.Errorf("%+v: kind %v, want %v", tc.tag, k, tc.kind)
			continue
		}
		if tc.kind == 0 {
			continue
		}
		got, ok := tc.kind.Convert(tc.in)
		if !ok || got != tc.want {
			t.Errorf("%v.Convert(%T %v) = %T %v, %v", tc.kind, tc.in, tc.in, got, got, ok)
		}
	}
	for _, bad := range []struct {
		k ValueKind
		v any
	}{{KindBool, 1}, {KindInt, true}, {KindInt, 1.5}, {KindFloat, "1"}, {KindFloat, nil}, {KindInt, nil}} {
		if v, ok := bad.k.Convert(bad.v); ok {
			t.Errorf("%v.Convert(%#v) = %v, accepted", bad.k, bad.v, v)
		}
	}
}

// The largest accepted alarm list compiles in well under a second per
// hundred alarms: validation cost is bounded by MaxAlarms ×
// MaxConditionLen.
func TestCompileLargestDocument(t *testing.T) {
	long := strings.Repeat("press1.Setpoint > 1 && ", 4096/23-1) + "press1.Run"
	if len(long) > MaxConditionLen {
		t.Fatalf("condition %d bytes", len(long))
	}
	conds := make([]string, MaxAlarms)
	for i := range conds {
		conds[i] = long
	}
	d := condDoc(conds...)
	start := time.Now()
	if p := d.Validate(); p != nil {
		t.Fatal(p[0])
	}
	elapsed := time.Since(start)
	t.Logf("%d alarms of %d bytes validated in %v", MaxAlarms, len(long), elapsed)
	if elapsed > 60*time.Second {
		t.Fatalf("validation took %v", elapsed)
	}
}

// The conditions and refusals shown in docs/deployments.md are what the
// code does: every example compiles, and each refusal line is the problem
// Validate reports (lines after the first abbreviate the accepted values
// with "…").
func TestConditionDocumentation(t *testing.T) {
	text, err := os.ReadFile("../docs/deployments.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(after string) []string {
		_, rest, ok := strings.Cut(string(text), after)
		if !ok {
			t.Fatalf("docs/deployments.md has no %q", after)
		}
		_, rest, _ = strings.Cut(rest, "```\n")
		body, _, _ := strings.Cut(rest, "```")
		return strings.Split(strings.TrimSpace(body), "\n")
	}
	for _, c := range block("Examples (each a condition):") {
		if _, err := CompileAlarm(condDoc(c), 0); err != nil {
			t.Errorf("documented condition %q: %v", c, err)
		}
	}
	// The refusals are against the first example document.
	src, _, _ := strings.Cut(strings.Split(string(text), "```json\n")[1], "```")
	ex, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	lines := block("What is refused, and the message")
	ex.Alarms = nil
	for i, l := range lines {
		_, v, _ := strings.Cut(l, " = ")
		v, _, _ = strings.Cut(v, ": accepted values are")
		cond, err := strconv.Unquote(v)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		ex.Alarms = append(ex.Alarms, Alarm{Name: fmt.Sprintf("A%d", i), Source: "press1/Run", Condition: cond, Severity: 1})
	}
	problems := ex.Validate()
	if len(problems) != len(lines) {
		t.Fatalf("problems %v", problems)
	}
	for i, p := range problems {
		got := p.String()
		want := lines[i]
		if head, tail, short := strings.Cut(want, "accepted values are …; "); short {
			_, gotTail, _ := strings.Cut(got, acceptCondition+"; ")
			if !strings.HasPrefix(got, head) || gotTail != tail {
				t.Errorf("refusal %d:\n got %s\nwant %s", i, got, want)
			}
		} else if len(p.Value) <= maxShown && got != want {
			t.Errorf("refusal %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
