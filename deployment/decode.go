package deployment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/otopcua/otopcua/config"
)

// MaxSize is the largest document Decode reads, in bytes. A deployment of
// 10,000 tags is about 1 MB.
const MaxSize = 16 << 20

// ErrTooLarge is returned by Decode for a document above MaxSize.
var ErrTooLarge = errors.New("deployment: document larger than 16 MiB")

var bom = []byte("\xef\xbb\xbf")

// Decode reads a deployment document and checks every rule (see Validate).
// It returns the document, or:
//
//   - *SyntaxError when data is not one JSON value in UTF-8 (a leading
//     UTF-8 byte order mark is skipped);
//   - *ValidationError listing every problem: an unknown or repeated
//     field, a value of the wrong JSON type, a duration neither form reads,
//     and every broken rule, each with its path, the value as written and
//     what is accepted;
//   - an error wrapping ErrTooLarge.
//
// Field names are case-sensitive. null is the same as an absent field; an
// empty list the same as an absent one (the Document holds nil).
func Decode(data []byte) (*Document, error) { return decode(data, false) }

func decode(data []byte, typeless bool) (*Document, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
	}
	var offset int64
	if bytes.HasPrefix(data, bom) {
		data, offset = data[len(bom):], int64(len(bom))
	}
	root, err := parseTree(data, offset)
	if err != nil {
		return nil, err
	}
	d := &decoder{data: data, o: &origin{
		written: map[string]string{},
		bad:     map[string]Problem{},
		notes:   map[string][]Problem{},
	}}
	doc := d.document(root)
	if problems := validate(doc, d.o, typeless); len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	return doc, nil
}

// origin is what Decode saw of each path, for the validator: the value as
// written, the paths whose value could not be decoded (reported instead of
// any rule at or below them), and each object's unknown fields.
type origin struct {
	written map[string]string    // path → JSON text of a present value (null included)
	bad     map[string]Problem   // path → why its value was not decoded
	notes   map[string][]Problem // object path ("" = the document) → its unknown fields

	// badOrder and noteOrder are the keys of bad and notes in document
	// order, so that the validator can report, at the end, any it did not
	// visit (none today; it guards against a rule that skips a path).
	badOrder, noteOrder []string
}

// decoder turns the tree into a Document, filling origin.
type decoder struct {
	data []byte
	o    *origin
}

// Field names of each object, in declaration order.
var (
	documentFields = []string{"clusterId", "devices", "alarms"}
	historyFields  = []string{"historize", "historyDeadband", "historyMaxInterval", "historyRetention"}
	deviceFields   = slices.Concat([]string{"name", "driver", "address", "unitId", "pollInterval", "timeout"}, opcuaDeviceFields, historyFields, []string{"tags"})
	tagDataFields  = []string{"name", "table", "address", "type", "wordOrder", "scale", "offset", "writable", "signal", "period", "min", "max", "nodeId", "browsePath", "samplingInterval", "deadband"}

	opcuaDeviceFields = []string{"endpoint", "endpoints", "securityPolicy", "securityMode", "username", "passwordEnv", "publishingInterval", "alarms", "mirror"}
	mirrorFields      = []string{"browsePath", "nodeId", "maxNodes", "maxDepth", "refresh"}
	tagFields         = slices.Concat(tagDataFields, historyFields)
	alarmFields       = []string{"name", "source", "condition", "severity", "message"}
	upAlarmFields     = []string{"source", "max"}
)

func (d *decoder) document(n *node) *Document {
	doc := &Document{}
	if n.kind != kindObject {
		d.fail(RootPath, n, "accepted values are a JSON object with the fields "+strings.Join(documentFields, ", "))
		return doc
	}
	d.members(n, "", documentFields, func(key string, v *node, p string) {
		switch key {
		case "clusterId":
			d.str(v, p, &doc.ClusterId, acceptClusterID)
		case "devices":
			for i, e := range d.list(v, p, "accepted values are lists of devices: [{\"name\": …, \"driver\": …, \"tags\": […]}]") {
				doc.Devices = append(doc.Devices, Device{})
				d.device(e, fmt.Sprintf("%s[%d]", p, i), &doc.Devices[i])
			}
		case "alarms":
			for i, e := range d.list(v, p, "accepted values are lists of alarms: [{\"name\": …, \"source\": …, \"condition\": …}]") {
				doc.Alarms = append(doc.Alarms, Alarm{})
				d.alarm(e, fmt.Sprintf("%s[%d]", p, i), &doc.Alarms[i])
			}
		}
	})
	return doc
}

func (d *decoder) device(n *node, p string, dev *Device) {
	if !d.isObject(n, p, deviceFields) {
		return
	}
	d.members(n, p, deviceFields, func(key string, v *node, fp string) {
		switch key {
		case "name":
			d.str(v, fp, &dev.Name, acceptName)
		case "driver":
			d.str(v, fp, &dev.Driver, oneOf(Drivers))
		case "address":
			d.str(v, fp, &dev.Address, acceptHostPort)
		case "unitId":
			d.intPtr(v, fp, &dev.UnitId, acceptUnitID)
		case "pollInterval":
			d.duration(v, fp, &dev.PollInterval, acceptPollInterval)
		case "timeout":
			d.duration(v, fp, &dev.Timeout, acceptTimeout)
		case "endpoint":
			d.str(v, fp, &dev.Endpoint, acceptEndpoint)
		case "endpoints":
			for i, e := range d.list(v, fp, acceptEndpoints) {
				dev.Endpoints = append(dev.Endpoints, "")
				d.str(e, fmt.Sprintf("%s[%d]", fp, i), &dev.Endpoints[i], acceptEndpoint)
			}
		case "securityPolicy":
			d.str(v, fp, &dev.SecurityPolicy, oneOf(Policies))
		case "securityMode":
			d.str(v, fp, &dev.SecurityMode, oneOf(Modes))
		case "username":
			d.str(v, fp, &dev.Username, acceptUsername)
		case "passwordEnv":
			d.str(v, fp, &dev.PasswordEnv, acceptPasswordEnv)
		case "publishingInterval":
			d.duration(v, fp, &dev.PublishingInterval, acceptPublishingInterval)
		case "alarms":
			d.upstreamAlarms(v, fp, &dev.Alarms)
		case "mirror":
			dev.Mirror = &Mirror{}
			d.mirror(v, fp, dev.Mirror)
		case "historize", "historyDeadband", "historyMaxInterval", "historyRetention":
			d.history(key, v, fp, &dev.History)
		case "tags":
			for i, e := range d.list(v, fp, "accepted values are lists of tags: [{\"name\": …, \"type\": …}]") {
				dev.Tags = append(dev.Tags, Tag{})
				d.tag(e, fmt.Sprintf("%s[%d]", fp, i), &dev.Tags[i])
			}
		}
	})
}

func (d *decoder) mirror(n *node, p string, m *Mirror) {
	if !d.isObject(n, p, mirrorFields) {
		return
	}
	d.o.written[p] = d.raw(n)
	d.members(n, p, mirrorFields, func(key string, v *node, fp string) {
		switch key {
		case "browsePath":
			d.str(v, fp, &m.BrowsePath, acceptBrowsePath)
		case "nodeId":
			d.str(v, fp, &m.NodeId, acceptNodeID)
		case "maxNodes":
			var x *int
			if d.intPtr(v, fp, &x, acceptMirrorNodes); x != nil {
				m.MaxNodes = *x
			}
		case "maxDepth":
			d.intPtr(v, fp, &m.MaxDepth, acceptMirrorDepth)
		case "refresh":
			d.duration(v, fp, &m.Refresh, acceptMirrorRefresh)
		}
	})
}

func (d *decoder) tag(n *node, p string, t *Tag) {
	if !d.isObject(n, p, tagFields) {
		return
	}
	d.members(n, p, tagFields, func(key string, v *node, fp string) {
		switch key {
		case "name":
			d.str(v, fp, &t.Name, acceptName)
		case "table":
			d.str(v, fp, &t.Table, oneOf(Tables))
		case "address":
			d.intPtr(v, fp, &t.Address, acceptRegister)
		case "type":
			d.str(v, fp, &t.Type, oneOf(Types))
		case "wordOrder":
			d.str(v, fp, &t.WordOrder, oneOf(WordOrders))
		case "scale":
			d.floatPtr(v, fp, &t.Scale, acceptScale)
		case "offset":
			d.floatPtr(v, fp, &t.Offset, acceptNumber)
		case "writable":
			d.boolean(v, fp, &t.Writable)
		case "signal":
			d.str(v, fp, &t.Signal, oneOf(Signals))
		case "period":
			d.duration(v, fp, &t.Period, acceptPeriod)
		case "min":
			d.floatPtr(v, fp, &t.Min, acceptNumber)
		case "max":
			d.floatPtr(v, fp, &t.Max, acceptNumber)
		case "nodeId":
			d.str(v, fp, &t.NodeId, acceptNodeID)
		case "browsePath":
			d.str(v, fp, &t.BrowsePath, acceptBrowsePath)
		case "samplingInterval":
			var x Duration
			if d.duration(v, fp, &x, acceptSamplingInterval); d.o.written[fp] != "" {
				t.SamplingInterval = &x
			}
		case "deadband":
			d.floatPtr(v, fp, &t.Deadband, acceptUADeadband)
		case "historize", "historyDeadband", "historyMaxInterval", "historyRetention":
			d.history(key, v, fp, &t.History)
		}
	})
}

// history decodes one of the history fields of a device or a tag.
func (d *decoder) history(key string, v *node, p string, h *History) {
	switch key {
	case "historize":
		var b bool
		if d.boolean(v, p, &b); d.o.written[p] != "" {
			h.Historize = &b
		}
	case "historyDeadband":
		var x any
		switch v.kind {
		case kindNumber:
			f, err := strconv.ParseFloat(v.text, 64)
			if err != nil {
				d.fail(p, v, acceptDeadband)
				return
			}
			x = f
		case kindString:
			x = v.text
		}
		db, ok := parseDeadband(x)
		if !ok {
			d.fail(p, v, acceptDeadband)
			return
		}
		h.Deadband = &db
		d.o.written[p] = d.raw(v)
	case "historyMaxInterval":
		d.duration(v, p, &h.MaxInterval, acceptHistoryMaxInterval)
	case "historyRetention":
		d.duration(v, p, &h.Retention, acceptHistoryRetention)
	}
}

func (d *decoder) alarm(n *node, p string, a *Alarm) {
	if !d.isObject(n, p, alarmFields) {
		return
	}
	d.members(n, p, alarmFields, func(key string, v *node, fp string) {
		switch key {
		case "name":
			d.str(v, fp, &a.Name, acceptName)
		case "source":
			d.str(v, fp, &a.Source, acceptSource)
		case "condition":
			d.str(v, fp, &a.Condition, acceptCondition)
		case "severity":
			var s *int
			d.intPtr(v, fp, &s, acceptSeverity)
			if s != nil {
				a.Severity = *s
			}
		case "message":
			d.str(v, fp, &a.Message, "accepted values are text")
		}
	})
}

// upstreamAlarms reads an opcua device's "alarms": true (the defaults),
// false (off) or an object {source, max}.
func (d *decoder) upstreamAlarms(n *node, p string, dst **UpstreamAlarms) {
	switch n.kind {
	case kindBool:
		if n.boolean {
			*dst = &UpstreamAlarms{}
		}
		d.o.written[p] = d.raw(n)
		return
	case kindObject:
	default:
		d.fail(p, n, acceptUpstreamAlarms)
		return
	}
	a := &UpstreamAlarms{}
	*dst = a
	d.o.written[p] = d.raw(n)
	d.members(n, p, upAlarmFields, func(key string, v *node, fp string) {
		switch key {
		case "source":
			d.str(v, fp, &a.Source, acceptNodeID)
		case "max":
			var m *int
			d.intPtr(v, fp, &m, acceptUpstreamAlarmsMax)
			if m != nil {
				a.Max = *m
			}
		}
	})
}

// members hands each known field of object n to set once. Unknown fields
// become notes of the object; a field written twice is a problem at its
// path (its first value is kept but not checked further). A null value is
// recorded as written and otherwise skipped: it means "absent".
func (d *decoder) members(n *node, path string, known []string, set func(key string, v *node, p string)) {
	seen := make(map[string]bool, len(n.members))
	for _, m := range n.members {
		p := joinPath(path, m.key)
		switch {
		case !contains(known, m.key):
			if d.o.notes[path] == nil {
				d.o.noteOrder = append(d.o.noteOrder, path)
			}
			d.o.notes[path] = append(d.o.notes[path], Problem{Path: p, Value: d.raw(m.val),
				Accepted: "unknown field" + suggest(known, m.key) + "; accepted fields are " + strings.Join(known, ", ")})
		case seen[m.key]:
			d.fail(p, m.val, "accepted: each field once per object; "+m.key+" is written twice")
		default:
			seen[m.key] = true
			if m.val.kind == kindNull {
				d.o.written[p] = "null"
				continue
			}
			set(m.key, m.val, p)
		}
	}
}

// joinPath appends a field to a path: ".key", or ["key"] (JSON-quoted)
// for a key that is not a plain identifier, such as "" or "a b".
func joinPath(prefix, key string) string {
	if !isIdentifier(key) {
		q, _ := json.Marshal(key) // a string always encodes
		return prefix + "[" + string(q) + "]"
	}
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func isIdentifier(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// fail records that the value at p was not decoded.
func (d *decoder) fail(p string, n *node, accepted string) {
	if _, dup := d.o.bad[p]; !dup {
		d.o.bad[p] = Problem{Path: p, Value: d.raw(n), Accepted: accepted}
		d.o.badOrder = append(d.o.badOrder, p)
	}
}

// raw is the value's JSON text as written (objects and lists compacted).
func (d *decoder) raw(n *node) string {
	b := d.data[n.start:n.end]
	if n.kind == kindObject || n.kind == kindArray {
		var c bytes.Buffer
		if json.Compact(&c, b) == nil {
			return c.String()
		}
	}
	return string(b)
}

func (d *decoder) isObject(n *node, p string, fields []string) bool {
	if n.kind != kindObject {
		d.fail(p, n, "accepted values are objects with the fields "+strings.Join(fields, ", "))
		return false
	}
	return true
}

// list returns the elements of a list (nil for an empty one).
func (d *decoder) list(n *node, p, accepted string) []*node {
	if n.kind != kindArray {
		d.fail(p, n, accepted)
		return nil
	}
	d.o.written[p] = d.raw(n)
	return n.elems
}

func (d *decoder) str(n *node, p string, dst *string, accepted string) {
	if n.kind != kindString {
		d.fail(p, n, accepted)
		return
	}
	*dst = n.text
	d.o.written[p] = d.raw(n)
}

func (d *decoder) boolean(n *node, p string, dst *bool) {
	if n.kind != kindBool {
		d.fail(p, n, "accepted values are true, false")
		return
	}
	*dst = n.boolean
	d.o.written[p] = d.raw(n)
}

// maxExactInt is the largest integer every float64 holds exactly.
const maxExactInt = 1 << 53

// intPtr reads a whole number ("1", "1.0", "1e2"); beyond ±2^53 it is
// refused with accepted.
func (d *decoder) intPtr(n *node, p string, dst **int, accepted string) {
	if n.kind != kindNumber {
		d.fail(p, n, accepted)
		return
	}
	x, err := strconv.ParseInt(n.text, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(n.text, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
			d.fail(p, n, accepted)
			return
		}
		x = int64(f)
	}
	if x > maxExactInt || x < -maxExactInt {
		d.fail(p, n, accepted)
		return
	}
	v := int(x)
	*dst = &v
	d.o.written[p] = d.raw(n)
}

func (d *decoder) floatPtr(n *node, p string, dst **float64, accepted string) {
	if n.kind != kindNumber {
		d.fail(p, n, accepted)
		return
	}
	f, err := strconv.ParseFloat(n.text, 64)
	if err != nil { // out of float64's range
		d.fail(p, n, accepted)
		return
	}
	*dst = &f
	d.o.written[p] = d.raw(n)
}

func (d *decoder) duration(n *node, p string, dst *Duration, accepted string) {
	if n.kind != kindString {
		d.fail(p, n, accepted)
		return
	}
	v, err := config.ParseDuration(n.text)
	if err != nil {
		d.fail(p, n, accepted)
		return
	}
	*dst = Duration(v)
	d.o.written[p] = d.raw(n)
}
