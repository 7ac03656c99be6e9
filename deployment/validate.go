package deployment

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/otopcua/otopcua/config"
)

// Accepted-values texts shared by decoding (a value of the wrong JSON type)
// and the rules.
const (
	acceptClusterID    = "accepted values are non-empty names of letters, digits, '.', '_' and '-' (the nodes' Node:ClusterId)"
	acceptName         = "accepted values are names of 1 to 64 characters A-Z a-z 0-9 _ - ."
	acceptHostPort     = "accepted values are host:port of the Modbus TCP device, such as 10.20.0.5:502 (port 1..65535)"
	acceptUnitID       = "accepted values are whole numbers 0..255 (default 1)"
	acceptRegister     = "accepted values are whole numbers 0..65535 (0-based addresses)"
	acceptScale        = "accepted values are numbers other than 0"
	acceptNumber       = "accepted values are numbers"
	acceptSource       = "accepted values are device/tag naming a tag of this document, such as press1/Temperature"
	acceptCondition    = "accepted values are true-or-false expressions over the tags, written device.tag, such as press1.Temperature > 80"
	acceptAlarmList    = "accepted values are lists of at most 1000 alarms"
	acceptTagList      = "accepted values are lists of at most 10000 tags per device"
	acceptDeviceList   = "accepted values are lists of devices with at most 100000 tags in all"
	acceptSeverity     = "accepted values are whole numbers 1..1000"
	acceptPollInterval = "accepted values are durations of at least 10ms, as " + config.DurationFormat + " (default 1s)"
	acceptTimeout      = "accepted values are durations greater than 0, as " + config.DurationFormat + " (default 1s)"
	acceptPeriod       = "accepted values are durations greater than 0, as " + config.DurationFormat

	acceptDeadband           = "accepted values are a number ≥ 0 (an absolute deadband) or a string \"N%\" with N from 0 to 100 (a percentage of the tag's range, max − min)"
	acceptHistoryMaxInterval = "accepted values are durations of at least 1s, as " + config.DurationFormat + " (default: an unchanged value is not recorded again)"
	acceptHistoryRetention   = "accepted values are durations from 1h to 20 years (175680h), as " + config.DurationFormat + " (default 720h, 30 days)"
	acceptHistorize          = "accepted values are true, false"
	acceptPercentDeadband    = "accepted only for simulated tags, which have a range (min and max); use an absolute deadband, a number"
	acceptBoolDeadband       = "accepted only for numeric tags: every change of a bool tag is recorded; remove it"
	acceptHistoryOff         = "accepted only when the tag's values are recorded (historize true on the tag or its device); remove it or set historize"

	onlyModbusDevice    = "accepted only with driver modbus-tcp; remove it for driver simulated"
	onlyModbusTag       = "accepted only for tags of a modbus-tcp device; remove it for a simulated tag"
	onlySimulatedTag    = "accepted only for tags of a simulated device; remove it for a modbus-tcp tag"
	onlyMovingSignal    = "accepted only for the signals ramp, sine, square, random-walk; remove it for constant (its value is min)"
	acceptNotWritable   = "accepted values are false: only holding and coil tags are writable"
	acceptSimNoWritable = "accepted values are false: only holding and coil tags of a modbus-tcp device are writable"
)

// Validate checks a Document built in Go against every rule Decode applies
// and returns the problems in the order ValidationError describes, or nil.
// Values are rendered from the Document: a zero Duration, a nil pointer and
// an empty string count as absent (a zero Duration takes its default).
//
// The rules (docs/deployments.md):
//
//   - clusterId: letters, digits, '.', '_', '-' (as Node:ClusterId).
//   - Names of devices, tags and alarms: 1–64 of A-Z a-z 0-9 _ - . ;
//     devices unique in the document, tags in their device, alarms in the
//     document.
//   - driver: modbus-tcp or simulated. pollInterval ≥ 10 ms.
//   - modbus-tcp: address host:port (port 1..65535), unitId 0..255,
//     timeout > 0. Each tag has a table and an address; coil and discrete
//     tags are bool, holding and input tags numeric; address 0..65535 and
//     the tag's last register (Span) at most 65535; two tags of a device
//     never share a register or bit of one table; wordOrder (big, little)
//     only on 32- and 64-bit types; scale (≠ 0) and offset only on numeric
//     types; writable only on holding and coil; no signal, period, min, max.
//   - simulated: no address, unitId or timeout; tags have a signal (ramp,
//     sine, square, random-walk, constant; a bool tag square or constant),
//     period > 0 except for constant (which has none), min and max with
//     min < max (constant: min is its value, no max), both within the
//     tag's type (bool 0 or 1, integers whole and in range); no table,
//     address, wordOrder, scale, offset or writable.
//   - Size: at most MaxTagsPerDevice tags per device and MaxTags in the
//     document (reported at devices[i].tags and devices, with the count).
//   - Alarms: at most MaxAlarms; source device/tag names a tag of this
//     document, severity 1..1000; the condition is at most
//     MaxConditionLen bytes and compiles (CompileAlarm): it names only
//     tags of the document, calls only ConditionFunctions, has no range
//     operator, and is true or false.
func (doc *Document) Validate() []Problem { return validate(doc, nil, false) }

// validate checks doc; typeless accepts opcua tags without a type
// (DecodeTypeless).
func validate(doc *Document, o *origin, typeless bool) []Problem {
	v := &validator{o: o, typeless: typeless}
	v.document(doc)
	if o != nil {
		v.unvisited()
	}
	return v.out
}

// unvisited reports the decoding problems of paths the walk did not enter.
func (v *validator) unvisited() {
	for _, p := range v.o.noteOrder {
		if !v.noted[p] {
			v.out = append(v.out, v.o.notes[p]...)
		}
	}
	for _, p := range v.o.badOrder {
		if !v.entered[p] {
			v.out = append(v.out, v.o.bad[p])
		}
	}
}

// validator walks a Document in declaration order and collects problems.
// With an origin (Decode) it reports values as written, reports a value
// that could not be decoded instead of checking it, and reports each
// object's unknown fields when it enters the object.
type validator struct {
	o   *origin // nil for a Document built in Go
	out []Problem

	typeless bool // an opcua tag may leave out its type (DecodeTypeless)

	entered, noted map[string]bool // the bad paths and noted objects reported
}

// enter reports whether the value at p was decoded; when it was not, it
// reports why instead.
func (v *validator) enter(p string) bool {
	if v.o == nil {
		return true
	}
	if pr, ok := v.o.bad[p]; ok {
		if v.entered == nil {
			v.entered = map[string]bool{}
		}
		if !v.entered[p] {
			v.entered[p] = true
			v.out = append(v.out, pr)
		}
		return false
	}
	return true
}

// object enters the object at p and reports its unknown fields.
func (v *validator) object(p string) bool {
	if !v.enter(p) {
		return false
	}
	if v.o != nil && v.o.notes[p] != nil && !v.noted[p] {
		if v.noted == nil {
			v.noted = map[string]bool{}
		}
		v.noted[p] = true
		v.out = append(v.out, v.o.notes[p]...)
	}
	return true
}

// set reports whether the field at p is present: nonZero (built in Go) or
// written with a non-null value (decoded).
func (v *validator) set(p string, nonZero bool) bool {
	if nonZero || v.o == nil {
		return nonZero
	}
	w, ok := v.o.written[p]
	return ok && w != "null"
}

func (v *validator) add(p string, value any, accepted string) {
	var s string
	if v.o != nil {
		s = v.o.written[p]
	} else {
		s = render(value)
	}
	v.out = append(v.out, Problem{Path: p, Value: s, Accepted: accepted})
}

func (v *validator) document(doc *Document) {
	if !v.enter(RootPath) {
		return
	}
	v.object("")
	if v.enter("clusterId") && !validClusterID(doc.ClusterId) {
		v.add("clusterId", doc.ClusterId, acceptClusterID)
	}
	if v.enter("devices") {
		if n := countTags(doc); n > MaxTags {
			v.add("devices", doc.Devices, acceptDeviceList+fmt.Sprintf("; the document has %d", n))
		}
		names := map[string]string{}
		for i := range doc.Devices {
			if p := fmt.Sprintf("devices[%d]", i); v.object(p) {
				v.device(&doc.Devices[i], p, names)
			}
		}
	}
	if v.enter("alarms") {
		v.alarms(doc)
	}
}

// countTags is the number of tags of doc's devices.
func countTags(doc *Document) int {
	n := 0
	for i := range doc.Devices {
		n += len(doc.Devices[i].Tags)
	}
	return n
}

// name checks a name and that it is the first of its scope; seen maps each
// name to the path of the object that has it first.
func (v *validator) name(p, name string, seen map[string]string, owner, what string) {
	if !v.enter(p) {
		return
	}
	if !validName(name) {
		v.add(p, name, acceptName)
		return
	}
	if first, dup := seen[name]; dup {
		v.add(p, name, fmt.Sprintf("accepted values are %s; %s already has this name", what, first))
		return
	}
	seen[name] = owner
}

func (v *validator) device(d *Device, p string, names map[string]string) {
	v.name(p+".name", d.Name, names, p, "device names used once in the document")
	modbus, sim, upstream := d.Driver == DriverModbusTCP, d.Driver == DriverSimulated, d.Driver == DriverOPCUA
	if fp := p + ".driver"; v.enter(fp) && !modbus && !sim && !upstream {
		v.add(fp, d.Driver, oneOf(Drivers)+suggest(Drivers, d.Driver))
	}
	notModbus := "accepted only with driver modbus-tcp; remove it for driver " + d.Driver
	if sim {
		notModbus = onlyModbusDevice
	}
	if fp := p + ".address"; v.enter(fp) {
		switch {
		case modbus && !validHostPort(d.Address):
			v.add(fp, d.Address, acceptHostPort)
		case (sim || upstream) && v.set(fp, d.Address != ""):
			v.add(fp, d.Address, notModbus)
		}
	}
	if fp := p + ".unitId"; v.enter(fp) && d.UnitId != nil {
		switch {
		case sim || upstream:
			v.add(fp, d.UnitId, notModbus)
		case modbus && (*d.UnitId < 0 || *d.UnitId > 255):
			v.add(fp, d.UnitId, acceptUnitID)
		}
	}
	if fp := p + ".pollInterval"; v.enter(fp) && v.set(fp, d.PollInterval != 0) {
		switch {
		case upstream:
			v.add(fp, d.PollInterval, acceptNoPollOPCUA)
		case d.PollInterval.Std() < MinPollInterval:
			v.add(fp, d.PollInterval, acceptPollInterval)
		}
	}
	if fp := p + ".timeout"; v.enter(fp) && v.set(fp, d.Timeout != 0) {
		switch {
		case sim:
			v.add(fp, d.Timeout, onlyModbusDevice)
		case (modbus || upstream) && d.Timeout <= 0:
			v.add(fp, d.Timeout, acceptTimeout)
		}
	}
	if upstream {
		v.opcuaDevice(d, p)
	} else {
		v.notOPCUADevice(d, p)
	}
	v.historyFields(&d.History, p, nil)
	if !v.enter(p + ".tags") {
		return
	}
	if len(d.Tags) > MaxTagsPerDevice {
		v.add(p+".tags", d.Tags, acceptTagList+fmt.Sprintf("; the device has %d", len(d.Tags)))
	}
	sc := &tagScope{dev: d, devPath: p, names: map[string]string{}, used: map[string]map[int]int{}}
	for j := range d.Tags {
		tp := fmt.Sprintf("%s.tags[%d]", p, j)
		if !v.object(tp) {
			continue
		}
		t := &d.Tags[j]
		v.name(tp+".name", t.Name, sc.names, tp, "tag names used once in a device")
		switch {
		case modbus:
			v.modbusTag(t, j, tp, sc)
		case sim:
			v.simulatedTag(t, tp)
		case upstream:
			v.opcuaTag(t, tp)
		default: // the driver is reported; only the type can be judged
			v.unknownDriverTag(t, tp)
		}
		v.historyFields(&t.History, tp, &tagHistory{tag: t, dev: d, sim: sim})
	}
}

// tagHistory is what the history rules of a tag look at beside its own
// history fields.
type tagHistory struct {
	tag *Tag
	dev *Device
	sim bool
}

// historyFields checks the history fields of a device (th nil) or a tag.
func (v *validator) historyFields(h *History, p string, th *tagHistory) {
	v.enter(p + ".historize")
	on := true
	if th != nil {
		on = h.Effective(th.dev.History).On()
	}
	if fp := p + ".historyDeadband"; v.enter(fp) && h.Deadband != nil {
		db := *h.Deadband
		switch {
		case math.IsNaN(db.Value) || math.IsInf(db.Value, 0) || db.Value < 0 || (db.Percent && db.Value > 100):
			v.add(fp, db, acceptDeadband)
		case th != nil && !on:
			v.add(fp, db, acceptHistoryOff)
		case th != nil && th.tag.Type == TypeBool:
			v.add(fp, db, acceptBoolDeadband)
		case th != nil && db.Percent && !th.sim:
			v.add(fp, db, acceptPercentDeadband)
		}
	}
	if fp := p + ".historyMaxInterval"; v.enter(fp) && v.set(fp, h.MaxInterval != 0) {
		switch {
		case h.MaxInterval.Std() < MinHistoryMaxInterval:
			v.add(fp, h.MaxInterval, acceptHistoryMaxInterval)
		case th != nil && !on:
			v.add(fp, h.MaxInterval, acceptHistoryOff)
		}
	}
	if fp := p + ".historyRetention"; v.enter(fp) && v.set(fp, h.Retention != 0) {
		switch {
		case h.Retention.Std() < MinHistoryRetention || h.Retention.Std() > MaxHistoryRetention:
			v.add(fp, h.Retention, acceptHistoryRetention)
		case th != nil && !on:
			v.add(fp, h.Retention, acceptHistoryOff)
		}
	}
	// A device's percent deadband is checked on each tag that takes it.
	if th != nil && h.Deadband == nil && on {
		if db := th.dev.History.Deadband; db != nil && db.Percent && !th.sim && th.tag.Type != TypeBool {
			v.add(p+".type", th.tag.Type, "a tag of a device whose historyDeadband is a percentage needs a range, which only simulated tags have; give this tag an absolute historyDeadband")
		}
	}
}

// tagScope is what the tags of one device share.
type tagScope struct {
	dev     *Device
	devPath string
	names   map[string]string      // tag name → path of its first tag
	used    map[string]map[int]int // table → register or bit → index of the tag holding it
}

// unknownDriverTag checks what does not depend on the driver: the type.
// The other fields are entered so that their decoding problems are
// reported in order.
func (v *validator) unknownDriverTag(t *Tag, p string) {
	for _, f := range tagDataFields[1:] {
		if f == "type" {
			v.tagType(t, p)
		} else {
			v.enter(p + "." + f)
		}
	}
}

// tagType checks that the type is known and reports whether it is.
func (v *validator) tagType(t *Tag, p string) bool {
	fp := p + ".type"
	if !v.enter(fp) {
		return false
	}
	if !contains(Types, t.Type) {
		v.add(fp, t.Type, oneOf(Types)+suggest(Types, t.Type))
		return false
	}
	return true
}

func (v *validator) modbusTag(t *Tag, j int, p string, sc *tagScope) {
	tableOK := contains(Tables, t.Table)
	if fp := p + ".table"; v.enter(fp) && !tableOK {
		v.add(fp, t.Table, oneOf(Tables)+suggest(Tables, t.Table))
	}
	typeKnown := contains(Types, t.Type)
	fits := tableOK && typeKnown && typeFitsTable(t.Table, t.Type)
	if fp := p + ".address"; v.enter(fp) {
		v.modbusAddress(t, j, fp, sc, tableOK && (fits || !typeKnown))
	}
	if v.tagType(t, p) && tableOK && !fits {
		if t.Table == TableCoil || t.Table == TableDiscrete {
			v.add(p+".type", t.Type, "accepted values for "+aTag(t.Table)+" are bool")
		} else {
			v.add(p+".type", t.Type, "accepted values for "+aTag(t.Table)+" are "+strings.Join(numericTypes, ", "))
		}
	}
	if fp := p + ".wordOrder"; v.enter(fp) && v.set(fp, t.WordOrder != "") {
		switch {
		case !contains(WordOrders, t.WordOrder):
			v.add(fp, t.WordOrder, oneOf(WordOrders)+suggest(WordOrders, t.WordOrder))
		case typeKnown && !isWide(t.Type):
			v.add(fp, t.WordOrder, "accepted only for the 32- and 64-bit types int32, uint32, float32, float64; remove it for "+aTag(t.Type))
		}
	}
	if fp := p + ".scale"; v.enter(fp) && t.Scale != nil {
		switch {
		case t.Type == TypeBool:
			v.add(fp, t.Scale, "accepted only for numeric types; remove it for a bool tag")
		case *t.Scale == 0:
			v.add(fp, t.Scale, acceptScale)
		}
	}
	if fp := p + ".offset"; v.enter(fp) && t.Offset != nil && t.Type == TypeBool {
		v.add(fp, t.Offset, "accepted only for numeric types; remove it for a bool tag")
	}
	if fp := p + ".writable"; v.enter(fp) && t.Writable && (t.Table == TableInput || t.Table == TableDiscrete) {
		v.add(fp, t.Writable, acceptNotWritable)
	}
	v.refuse(p+".signal", t.Signal, t.Signal != "", onlySimulatedTag)
	v.refuse(p+".period", t.Period, t.Period != 0, onlySimulatedTag)
	v.refuse(p+".min", t.Min, t.Min != nil, onlySimulatedTag)
	v.refuse(p+".max", t.Max, t.Max != nil, onlySimulatedTag)
	v.notOPCUATag(t, p)
}

// refuse reports a field that must be absent.
func (v *validator) refuse(p string, value any, nonZero bool, accepted string) {
	if v.enter(p) && v.set(p, nonZero) {
		v.add(p, value, accepted)
	}
}

// modbusAddress checks a tag's address: present, its whole span within
// 0..65535 and, when occupy, not overlapping an earlier tag of its table
// (whose registers it then takes).
func (v *validator) modbusAddress(t *Tag, j int, p string, sc *tagScope, occupy bool) {
	if t.Address == nil {
		v.add(p, t.Address, acceptRegister)
		return
	}
	a, span := *t.Address, t.Span()
	if a < 0 || a > 65536-span {
		if span == 1 {
			v.add(p, t.Address, acceptRegister)
		} else {
			v.add(p, t.Address, fmt.Sprintf("accepted values are whole numbers 0..%d for %s: its %d registers must end at 65535 or below",
				65536-span, aTag(t.Type), span))
		}
		return
	}
	if !occupy {
		return
	}
	used := sc.used[t.Table]
	if used == nil {
		used = map[int]int{}
		sc.used[t.Table] = used
	}
	for r := a; r < a+span; r++ {
		if k, taken := used[r]; taken {
			other := &sc.dev.Tags[k]
			v.add(p, t.Address, fmt.Sprintf("accepted values are addresses not overlapping %s.tags[%d] %q (%s)",
				sc.devPath, k, other.Name, describeSpan(other)))
			return
		}
	}
	for r := a; r < a+span; r++ {
		used[r] = j
	}
}

// describeSpan names what a placed tag occupies, e.g. "holding registers
// 10..11" or "coil 3".
func describeSpan(t *Tag) string {
	a, span := *t.Address, t.Span()
	what := t.Table
	if t.Table == TableHolding || t.Table == TableInput {
		what += " register"
	}
	if span == 1 {
		return fmt.Sprintf("%s %d", what, a)
	}
	return fmt.Sprintf("%ss %d..%d", what, a, a+span-1)
}

// aTag is "a bool tag", "an int16 tag", "an input tag".
func aTag(kind string) string {
	if strings.HasPrefix(kind, "i") {
		return "an " + kind + " tag"
	}
	return "a " + kind + " tag"
}

func typeFitsTable(table, typ string) bool {
	if table == TableCoil || table == TableDiscrete {
		return typ == TypeBool
	}
	return isNumeric(typ)
}

func (v *validator) simulatedTag(t *Tag, p string) {
	v.refuse(p+".table", t.Table, t.Table != "", onlyModbusTag)
	v.refuse(p+".address", t.Address, t.Address != nil, onlyModbusTag)
	typeKnown := v.tagType(t, p)
	v.refuse(p+".wordOrder", t.WordOrder, t.WordOrder != "", onlyModbusTag)
	v.refuse(p+".scale", t.Scale, t.Scale != nil, onlyModbusTag)
	v.refuse(p+".offset", t.Offset, t.Offset != nil, onlyModbusTag)
	if fp := p + ".writable"; v.enter(fp) && t.Writable {
		v.add(fp, t.Writable, acceptSimNoWritable)
	}
	v.notOPCUATag(t, p)
	signalKnown := contains(Signals, t.Signal)
	if fp := p + ".signal"; v.enter(fp) {
		switch {
		case !signalKnown:
			v.add(fp, t.Signal, oneOf(Signals)+suggest(Signals, t.Signal))
		case t.Type == TypeBool && t.Signal != SignalSquare && t.Signal != SignalConstant:
			v.add(fp, t.Signal, "accepted values for a bool tag are square, constant")
		}
	}
	constant := t.Signal == SignalConstant
	moving := signalKnown && !constant
	if fp := p + ".period"; v.enter(fp) {
		switch {
		case constant && v.set(fp, t.Period != 0):
			v.add(fp, t.Period, onlyMovingSignal)
		case moving && t.Period <= 0:
			v.add(fp, t.Period, acceptPeriod)
		}
	}
	if fp := p + ".min"; v.enter(fp) {
		what := "(the lower bound)"
		if constant {
			what = "(the constant's value)"
		}
		v.bound(fp, t.Min, t.Type, typeKnown, signalKnown, what)
	}
	if fp := p + ".max"; v.enter(fp) {
		switch {
		case constant && t.Max != nil:
			v.add(fp, t.Max, onlyMovingSignal)
		case moving:
			v.bound(fp, t.Max, t.Type, typeKnown, true, "greater than min")
			if t.Min != nil && t.Max != nil && *t.Max <= *t.Min && fitsType(t.Type, *t.Max) {
				v.add(fp, t.Max, "accepted values are numbers greater than min ("+formatFloat(*t.Min)+")")
			}
		}
	}
}

// bound checks min or max: required when required, within the type's
// range when the type is known.
func (v *validator) bound(p string, x *float64, typ string, typeKnown, required bool, more string) {
	switch {
	case x == nil && required:
		accepted := acceptNumber
		if more != "" {
			accepted += " " + more
		}
		v.add(p, x, accepted)
	case x != nil && typeKnown && !fitsType(typ, *x):
		v.add(p, x, typeRange(typ))
	}
}

// fitsType reports whether a simulated value x can be a typ.
func fitsType(typ string, x float64) bool {
	switch typ {
	case TypeBool:
		return x == 0 || x == 1
	case TypeInt16:
		return x == math.Trunc(x) && x >= math.MinInt16 && x <= math.MaxInt16
	case TypeUint16:
		return x == math.Trunc(x) && x >= 0 && x <= math.MaxUint16
	case TypeInt32:
		return x == math.Trunc(x) && x >= math.MinInt32 && x <= math.MaxInt32
	case TypeUint32:
		return x == math.Trunc(x) && x >= 0 && x <= math.MaxUint32
	case TypeFloat32:
		return math.Abs(x) <= math.MaxFloat32
	}
	return true
}

func typeRange(typ string) string {
	switch typ {
	case TypeBool:
		return "accepted values are 0 (false) or 1 (true) for a bool tag"
	case TypeInt16:
		return "accepted values are whole numbers -32768..32767 for an int16 tag"
	case TypeUint16:
		return "accepted values are whole numbers 0..65535 for a uint16 tag"
	case TypeInt32:
		return "accepted values are whole numbers -2147483648..2147483647 for an int32 tag"
	case TypeUint32:
		return "accepted values are whole numbers 0..4294967295 for a uint32 tag"
	}
	return "accepted values are numbers within ±3.4028235e+38 for a float32 tag"
}

func (v *validator) alarms(doc *Document) {
	if len(doc.Alarms) > MaxAlarms {
		v.add("alarms", doc.Alarms, acceptAlarmList+fmt.Sprintf("; the document has %d", len(doc.Alarms)))
	}
	tags := make(map[string]map[string]bool, len(doc.Devices))
	for _, d := range doc.Devices {
		if tags[d.Name] == nil {
			tags[d.Name] = make(map[string]bool, len(d.Tags))
		}
		for _, t := range d.Tags {
			tags[d.Name][t.Name] = true
		}
	}
	tt := newTagTable(doc)
	names := map[string]string{}
	for i := range doc.Alarms {
		a, p := &doc.Alarms[i], fmt.Sprintf("alarms[%d]", i)
		if !v.object(p) {
			continue
		}
		v.name(p+".name", a.Name, names, p, "alarm names used once in the document")
		if fp := p + ".source"; v.enter(fp) {
			dev, tag, ok := strings.Cut(a.Source, "/")
			switch {
			case !ok || dev == "" || tag == "":
				v.add(fp, a.Source, acceptSource)
			case tags[dev] == nil:
				v.add(fp, a.Source, fmt.Sprintf("%s; there is no device %q", acceptSource, dev))
			case !tags[dev][tag]:
				v.add(fp, a.Source, fmt.Sprintf("%s; device %q has no tag %q", acceptSource, dev, tag))
			}
		}
		if fp := p + ".condition"; v.enter(fp) {
			v.condition(fp, a.Condition, tt, i < MaxAlarms)
		}
		if fp := p + ".severity"; v.enter(fp) && (a.Severity < 1 || a.Severity > 1000) {
			v.add(fp, a.Severity, acceptSeverity)
		}
	}
}

// condition checks that a condition is not blank and, when compile (the
// first MaxAlarms alarms: a hostile document cannot make validation
// compile more), that it compiles.
func (v *validator) condition(p, cond string, tt *tagTable, compile bool) {
	if strings.TrimSpace(cond) == "" {
		v.add(p, cond, acceptCondition)
		return
	}
	if !compile {
		return
	}
	if _, _, err := tt.compileCondition(cond); err != nil && !errors.Is(err, errUndecidable) {
		v.add(p, cond, acceptCondition+"; "+err.Error())
	}
}
