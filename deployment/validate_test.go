package deployment

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestValidateGoDocument: Validate judges a Document built in Go by the
// same rules, rendering the values from Go (durations in Go form) and
// reading zero durations as their defaults.
func TestValidateGoDocument(t *testing.T) {
	good := &Document{ClusterId: "site-a", Devices: []Device{
		{Name: "press1", Driver: DriverModbusTCP, Address: "10.0.0.1:502",
			Tags: []Tag{{Name: "a", Table: TableHolding, Address: intp(0), Type: TypeInt16}}},
		{Name: "sim", Driver: DriverSimulated,
			Tags: []Tag{{Name: "c", Type: TypeUint16, Signal: SignalConstant, Min: floatp(1)}}},
	}}
	if p := good.Validate(); p != nil {
		t.Fatalf("a valid document: %v", p)
	}
	bad := &Document{ClusterId: "site a", Devices: []Device{
		{Name: "press1", Driver: DriverModbusTCP, Address: "10.0.0.1:502", UnitId: intp(999),
			PollInterval: Duration(-time.Second), Timeout: Duration(-1),
			Tags: []Tag{
				{Name: "a", Table: TableHolding, Address: intp(70000), Type: TypeInt16, Scale: floatp(0)},
				{Name: "", Table: "bits", Type: "word"},
			}},
	}, Alarms: []Alarm{{Name: "x", Source: "press1/b", Condition: "1"}}}
	want := []Problem{
		{"clusterId", `"site a"`, acceptClusterID},
		{"devices[0].unitId", "999", acceptUnitID},
		{"devices[0].pollInterval", `"-1s"`, acceptPollInterval},
		{"devices[0].timeout", `"-1ns"`, acceptTimeout},
		{"devices[0].tags[0].address", "70000", acceptRegister},
		{"devices[0].tags[0].scale", "0", acceptScale},
		{"devices[0].tags[1].name", "", acceptName},
		{"devices[0].tags[1].table", `"bits"`, oneOf(Tables)},
		{"devices[0].tags[1].address", "", acceptRegister},
		{"devices[0].tags[1].type", `"word"`, oneOf(Types)},
		{"alarms[0].source", `"press1/b"`, acceptSource + `; device "press1" has no tag "b"`},
		{"alarms[0].condition", `"1"`, acceptCondition + "; the condition is a number, not true or false: compare it, such as press1.Temperature > 80"},
		{"alarms[0].severity", "0", acceptSeverity},
	}
	if got := bad.Validate(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Validate:\n got %#v\nwant %#v", got, want)
	}
	if got := (&Document{ClusterId: "a<b"}).Validate(); len(got) != 1 || got[0].Value != `"a<b"` {
		t.Fatalf("a rendered string escapes HTML: %#v", got)
	}
}

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{{`"00:00:00.100"`, 100 * time.Millisecond}, {`"100ms"`, 100 * time.Millisecond}, {`"1.02:03:04"`, 26*time.Hour + 3*time.Minute + 4*time.Second}} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || d.Std() != tc.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", tc.in, d, err, tc.want)
		}
	}
	for _, bad := range []string{`100`, `"100"`, `"fast"`, `null`} {
		d := Duration(7)
		if err := json.Unmarshal([]byte(bad), &d); bad != "null" && err == nil {
			t.Errorf("Unmarshal(%s) accepted: %v", bad, d)
		}
	}
	b, err := json.Marshal(struct{ D Duration }{Duration(1500 * time.Millisecond)})
	if err != nil || string(b) != `{"D":"1.5s"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

// TestOverlapAgainstBruteForce checks the overlap rule (an occupancy map
// per table) against pairwise interval intersection: a tag is refused
// exactly when its registers meet those of an earlier tag of its table that
// was itself accepted, and the problem names the first such tag in address
// order of the tag's registers.
func TestOverlapAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		type placed struct {
			table, typ string
			addr       int
		}
		n := rapid.IntRange(1, 12).Draw(rt, "tags")
		tags := make([]placed, n)
		var parts []string
		for i := range tags {
			table := rapid.SampledFrom(Tables).Draw(rt, "table")
			typ := TypeBool
			if table == TableHolding || table == TableInput {
				typ = rapid.SampledFrom(numericTypes).Draw(rt, "type")
			}
			tags[i] = placed{table, typ, rapid.IntRange(0, 12).Draw(rt, "address")}
			parts = append(parts, fmt.Sprintf(`{"name": "t%d", "table": %q, "address": %d, "type": %q}`, i, table, tags[i].addr, typ))
		}
		var want []Problem
		var accepted []int
		for j, tj := range tags {
			first := -1
			for r := tj.addr; r < tj.addr+typeSpan(tj.typ) && first < 0; r++ {
				for _, k := range accepted {
					tk := tags[k]
					if tk.table == tj.table && r >= tk.addr && r < tk.addr+typeSpan(tk.typ) {
						first = k
						break
					}
				}
			}
			if first < 0 {
				accepted = append(accepted, j)
				continue
			}
			other := &Tag{Table: tags[first].table, Type: tags[first].typ, Address: intp(tags[first].addr)}
			want = append(want, Problem{fmt.Sprintf("devices[0].tags[%d].address", j), fmt.Sprint(tj.addr),
				fmt.Sprintf("accepted values are addresses not overlapping devices[0].tags[%d] \"t%d\" (%s)", first, first, describeSpan(other))})
		}
		src := doc(mb(parts...))
		var got []Problem
		if _, err := Decode([]byte(src)); err != nil {
			got = err.(*ValidationError).Problems
		}
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("document %s\n got %v\nwant %v", src, got, want)
		}
	})
}

// A device with MaxTagsPerDevice tags validates in well under a second
// (the overlap check is linear in registers); one tag more is refused at
// the device's tags with the count. Before the cap (issue #23) this test
// decoded the 32,768 float32 tags a holding table can hold.
func TestValidateLargeDevice(t *testing.T) {
	var parts []string
	for a := 0; a < 2*MaxTagsPerDevice; a += 2 {
		parts = append(parts, fmt.Sprintf(`{"name": "t%d", "table": "holding", "address": %d, "type": "float32"}`, a, a))
	}
	src := doc(mb(parts...))
	start := time.Now()
	if _, err := Decode([]byte(src)); err != nil {
		t.Fatalf("%.200s", err)
	}
	t.Logf("%d tags, %d bytes, decoded and validated in %v", len(parts), len(src), time.Since(start))
	if strings.Count(src, "float32") != MaxTagsPerDevice {
		t.Fatal("test document is wrong")
	}

	parts = append(parts, `{"name": "one-more", "table": "coil", "address": 0, "type": "bool"}`)
	_, err := Decode([]byte(doc(mb(parts...))))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 {
		t.Fatalf("%d tags: %.300v", len(parts), err)
	}
	got := ve.Problems[0]
	if got.Path != "devices[0].tags" || !strings.HasPrefix(got.Value, `[{"name":"t0"`) ||
		got.Accepted != "accepted values are lists of at most 10000 tags per device; the device has 10001" {
		t.Fatalf("problem %.300s", got)
	}
	if s := got.String(); !strings.HasPrefix(s, `devices[0].tags = [{"name":"t0"`) || !strings.HasSuffix(s, "…: "+got.Accepted) {
		t.Fatalf("String() = %q", s)
	}
}

// TestTagCaps: the caps' edges in a Document built in Go. MaxTags over
// ten devices at MaxTagsPerDevice each is valid; one tag more on an
// eleventh device is refused at devices, and a device over its own cap is
// refused at its tags whatever the document's total.
func TestTagCaps(t *testing.T) {
	device := func(name string, n int) Device {
		d := Device{Name: name, Driver: DriverModbusTCP, Address: "10.0.0.1:502", Tags: make([]Tag, n)}
		for i := range d.Tags {
			d.Tags[i] = Tag{Name: fmt.Sprintf("c%d", i), Table: TableCoil, Address: intp(i), Type: TypeBool}
		}
		return d
	}
	full := &Document{ClusterId: "site-a"}
	for i := range MaxTags / MaxTagsPerDevice {
		full.Devices = append(full.Devices, device(fmt.Sprintf("d%d", i), MaxTagsPerDevice))
	}
	for _, tc := range []struct {
		name string
		doc  *Document
		want []Problem
	}{
		{"at both caps", full, nil},
		{"one tag over the document's cap",
			&Document{ClusterId: "site-a", Devices: append(append([]Device(nil), full.Devices...), device("extra", 1))},
			[]Problem{{"devices", "[… 11 devices]", acceptDeviceList + "; the document has 100001"}}},
		{"one tag over a device's cap",
			&Document{ClusterId: "site-a", Devices: []Device{device("a", 5), device("big", MaxTagsPerDevice+1)}},
			[]Problem{{"devices[1].tags", "[… 10001 tags]", acceptTagList + "; the device has 10001"}}},
		{"both",
			&Document{ClusterId: "site-a", Devices: append(append([]Device(nil), full.Devices[1:]...), device("big", MaxTagsPerDevice+2))},
			[]Problem{
				{"devices", "[… 10 devices]", acceptDeviceList + "; the document has 100002"},
				{"devices[9].tags", "[… 10002 tags]", acceptTagList + "; the device has 10002"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.doc.Validate(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}
