package deployment

import "time"

// Defaults of the optional fields (docs/deployments.md lists them).
const (
	// DefaultUnitId is a Modbus device's unit id when unitId is absent.
	DefaultUnitId = 1
	// DefaultPollInterval is a device's poll interval when pollInterval is
	// absent.
	DefaultPollInterval = time.Second
	// MinPollInterval is the shortest accepted pollInterval.
	MinPollInterval = 10 * time.Millisecond
	// DefaultTimeout bounds one Modbus request when timeout is absent.
	DefaultTimeout = time.Second
)

// Caps on the size of a deployment (docs/deployments.md, "Limits"). They
// follow from what one node serves: MaxTagsPerDevice is the OPC UA
// per-call limits' default (OpcUa:Limits MaxNodesPerRead, MaxNodesPerWrite,
// MaxMonitoredItemsPerCall: 10,000), so a client reads or subscribes to a
// whole device in one request; MaxTags is the default
// MaxMonitoredItemsPerSubscription (100,000), so one subscription can watch
// every tag, and about ten times the 10,000 tags measured in
// docs/benchmarks.md ("Data plane": 61 MiB of RSS and 13 % of a core per
// 10,000 tags polled every 100 ms), which is what a 2-core node carries.
const (
	// MaxTagsPerDevice is the most tags one device may have.
	MaxTagsPerDevice = 10000
	// MaxTags is the most tags a document may have over all its devices.
	MaxTags = 100000
)

// Document is one deployment of one ClusterId (DESIGN.md "Deployment
// document").
type Document struct {
	// ClusterId is the application cluster whose nodes apply it.
	ClusterId string `json:"clusterId"`
	// Devices are the field devices, each with its tags.
	Devices []Device `json:"devices"`
	// Alarms are scripted alarms over the tags, at most MaxAlarms; their
	// conditions compile (CompileAlarms) in every valid document. Package
	// alarms evaluates them.
	Alarms []Alarm `json:"alarms,omitempty"`
}

// Drivers accepted by Device.Driver.
const (
	DriverModbusTCP = "modbus-tcp"
	DriverSimulated = "simulated"
)

// Device is one field device and the tags read from it.
type Device struct {
	// Name is the device's folder under Objects and the first part of its
	// tags' NodeIds: 1–64 of A-Z a-z 0-9 _ - .
	Name string `json:"name"`
	// Driver is DriverModbusTCP or DriverSimulated.
	Driver string `json:"driver"`
	// Address is host:port of a Modbus TCP device.
	Address string `json:"address,omitempty"`
	// UnitId is the Modbus unit (slave) id, 0–255. Default 1.
	UnitId *int `json:"unitId,omitempty"`
	// PollInterval is how often the tags are read. Default 1 s.
	PollInterval Duration `json:"pollInterval,omitempty"`
	// Timeout bounds one request to the device. Default 1 s.
	Timeout Duration `json:"timeout,omitempty"`
	// Tags are the device's values.
	Tags []Tag `json:"tags"`
}

// Register tables accepted by Tag.Table (Modbus).
const (
	TableHolding  = "holding"
	TableInput    = "input"
	TableCoil     = "coil"
	TableDiscrete = "discrete"
)

// Tag types accepted by Tag.Type.
const (
	TypeBool    = "bool"
	TypeInt16   = "int16"
	TypeUint16  = "uint16"
	TypeInt32   = "int32"
	TypeUint32  = "uint32"
	TypeFloat32 = "float32"
	TypeFloat64 = "float64"
)

// Word orders accepted by Tag.WordOrder.
const (
	WordOrderBig    = "big"    // high word first (default)
	WordOrderLittle = "little" // low word first
)

// Simulated signals accepted by Tag.Signal.
const (
	SignalRamp       = "ramp"
	SignalSine       = "sine"
	SignalSquare     = "square"
	SignalRandomWalk = "random-walk"
	SignalConstant   = "constant"
)

// EffectiveUnitId is UnitId, or DefaultUnitId when absent.
func (d *Device) EffectiveUnitId() int {
	if d.UnitId == nil {
		return DefaultUnitId
	}
	return *d.UnitId
}

// EffectivePollInterval is PollInterval, or DefaultPollInterval when zero.
func (d *Device) EffectivePollInterval() time.Duration {
	if d.PollInterval == 0 {
		return DefaultPollInterval
	}
	return d.PollInterval.Std()
}

// EffectiveTimeout is Timeout, or DefaultTimeout when zero.
func (d *Device) EffectiveTimeout() time.Duration {
	if d.Timeout == 0 {
		return DefaultTimeout
	}
	return d.Timeout.Std()
}

// Tag is one value of a device: the Variable ns=<N>;s=<device>/<tag>.
type Tag struct {
	// Name: 1–64 of A-Z a-z 0-9 _ - . , unique within the device.
	Name string `json:"name"`
	// Table, Address (0-based) locate a Modbus tag.
	Table   string `json:"table,omitempty"`
	Address *int   `json:"address,omitempty"`
	// Type is the value's type on the device.
	Type string `json:"type"`
	// WordOrder of 32- and 64-bit values. Default big.
	WordOrder string `json:"wordOrder,omitempty"`
	// Scale and Offset give value = raw × Scale + Offset; when either is
	// set the OPC UA DataType is Double.
	Scale  *float64 `json:"scale,omitempty"`
	Offset *float64 `json:"offset,omitempty"`
	// Writable tags (holding registers and coils only) accept OPC UA
	// writes on the Primary.
	Writable bool `json:"writable,omitempty"`
	// Signal, Period, Min, Max shape a simulated tag.
	Signal string   `json:"signal,omitempty"`
	Period Duration `json:"period,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
}

// Alarm is a scripted alarm over tags.
type Alarm struct {
	// Name: 1–64 of A-Z a-z 0-9 _ - . , unique among the alarms.
	Name string `json:"name"`
	// Source is "device/tag", the tag whose Variable is the condition's
	// SourceNode.
	Source string `json:"source"`
	// Condition is an expr-lang expression over the tags (device.tag) that
	// is true while the alarm is active; at most MaxConditionLen bytes.
	Condition string `json:"condition"`
	// Severity is the OPC UA severity, 1..1000.
	Severity int `json:"severity"`
	// Message is shown with the alarm. Default: none.
	Message string `json:"message"`
}
