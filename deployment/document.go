package deployment

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
	// DriverOPCUA mirrors the variables of an upstream OPC UA server
	// (drivers/opcua) by subscription.
	DriverOPCUA = "opcua"
)

// Security policies and modes accepted by an opcua device's
// securityPolicy and securityMode (OPC UA Part 7 names).
const (
	PolicyNone                = "None"
	PolicyBasic256Sha256      = "Basic256Sha256"
	PolicyAes128Sha256RsaOaep = "Aes128_Sha256_RsaOaep"
	PolicyAes256Sha256RsaPss  = "Aes256_Sha256_RsaPss"

	ModeNone           = "None"
	ModeSign           = "Sign"
	ModeSignAndEncrypt = "SignAndEncrypt"
)

// Defaults and bounds of the opcua driver's fields (docs/deployments.md).
const (
	// DefaultPublishingInterval is an opcua device's upstream publishing
	// interval when publishingInterval is absent.
	DefaultPublishingInterval = 250 * time.Millisecond
	// MinPublishingInterval is the shortest accepted publishingInterval
	// and the shortest samplingInterval other than 0.
	MinPublishingInterval = 10 * time.Millisecond
	// MaxEndpoints is the most URLs of an opcua device's endpoints.
	MaxEndpoints = 8
)

// Device is one field device and the tags read from it.
type Device struct {
	// Name is the device's folder under Objects and the first part of its
	// tags' NodeIds: 1–64 of A-Z a-z 0-9 _ - .
	Name string `json:"name"`
	// Driver is DriverModbusTCP, DriverSimulated or DriverOPCUA.
	Driver string `json:"driver"`
	// Address is host:port of a Modbus TCP device.
	Address string `json:"address,omitempty"`
	// Endpoint is the opc.tcp:// URL of an opcua device's upstream
	// server; Endpoints, instead, the URLs of an upstream redundant set,
	// followed by ServiceLevel (exactly one of the two).
	Endpoint  string   `json:"endpoint,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
	// SecurityPolicy and SecurityMode secure an opcua device's channel:
	// PolicyNone/ModeNone (default) or a signing policy with Sign or
	// SignAndEncrypt. The upstream's certificate must be trusted by the
	// node's PKI (OpcUa:Security).
	SecurityPolicy string `json:"securityPolicy,omitempty"`
	SecurityMode   string `json:"securityMode,omitempty"`
	// Username activates the upstream session with a UserName token
	// whose password is read, on each node, from the environment
	// variable PasswordEnv (never stored in the document). Default:
	// anonymous.
	Username    string `json:"username,omitempty"`
	PasswordEnv string `json:"passwordEnv,omitempty"`
	// PublishingInterval is an opcua device's upstream subscription
	// publishing interval. Default DefaultPublishingInterval.
	PublishingInterval Duration `json:"publishingInterval,omitempty"`
	// Alarms, on an opcua device, mirrors the upstream's alarms and
	// conditions (Part 9 condition events) as conditions of the pair:
	// written true or as an object. Default nil: not mirrored.
	Alarms *UpstreamAlarms `json:"alarms,omitempty"`
	// Mirror, on an opcua device, mirrors a whole upstream subtree under
	// the device's folder (docs/deployments.md). Default: none.
	Mirror *Mirror `json:"mirror,omitempty"`
	// UnitId is the Modbus unit (slave) id, 0–255. Default 1.
	UnitId *int `json:"unitId,omitempty"`
	// PollInterval is how often the tags are read. Default 1 s.
	PollInterval Duration `json:"pollInterval,omitempty"`
	// Timeout bounds one request to the device. Default 1 s.
	Timeout Duration `json:"timeout,omitempty"`
	// History is the default of the device's tags (each field its own
	// default: a tag's own value wins).
	History
	// Tags are the device's values.
	Tags []Tag `json:"tags"`
}

// UpstreamAlarms is an opcua device's opt-in to the upstream's conditions
// ("alarms": true is the zero value).
type UpstreamAlarms struct {
	// Source is the upstream notifier whose events are monitored: a NodeId
	// as a tag's nodeId. Default "" = the Server object (ns=0;i=2253),
	// which reports every condition of the upstream.
	Source string `json:"source,omitempty"`
	// Max bounds the upstream conditions mirrored (1..MaxUpstreamAlarms);
	// beyond it a new condition is left out and logged. Default 0 =
	// DefaultUpstreamAlarms.
	Max int `json:"max,omitempty"`
}

// Bounds of UpstreamAlarms.Max.
const (
	DefaultUpstreamAlarms = 1000
	MaxUpstreamAlarms     = 10000
)

// EffectiveMax is Max or its default.
func (a *UpstreamAlarms) EffectiveMax() int {
	if a == nil || a.Max <= 0 {
		return DefaultUpstreamAlarms
	}
	return a.Max
}

// EffectiveSource is Source or the Server object's NodeId.
func (a *UpstreamAlarms) EffectiveSource() string {
	if a == nil || a.Source == "" {
		return "i=2253"
	}
	return a.Source
}

// Mirror is an upstream subtree an opcua device mirrors: its folders
// (Objects and Folders) and Variables, with their DataType, ValueRank,
// writability, DisplayName, Description, EURange and EngineeringUnits.
type Mirror struct {
	// BrowsePath (ParseBrowsePath's form) or NodeId (ParseNodeRef's)
	// locates the subtree's root upstream; exactly one of the two.
	BrowsePath string `json:"browsePath,omitempty"`
	NodeId     string `json:"nodeId,omitempty"`
	// MaxNodes bounds the nodes mirrored (folders and variables, the
	// root included): 1..MaxMirrorNodes, default MaxMirrorNodes. A
	// larger subtree is mirrored in part, breadth first.
	MaxNodes int `json:"maxNodes,omitempty"`
	// MaxDepth bounds how many folder levels below the root are
	// browsed: 0..MaxMirrorDepth, default DefaultMirrorDepth.
	MaxDepth *int `json:"maxDepth,omitempty"`
	// Refresh is how often the subtree is browsed again to follow the
	// upstream's namespace changes: at least 1s, default
	// DefaultMirrorRefresh.
	Refresh Duration `json:"refresh,omitempty"`
}

// Bounds and defaults of a Mirror.
const (
	MaxMirrorNodes       = 10000
	MaxMirrorDepth       = 32
	DefaultMirrorDepth   = 8
	DefaultMirrorRefresh = time.Minute
	MinMirrorRefresh     = time.Second
)

// EffectiveMaxNodes is MaxNodes, or MaxMirrorNodes when absent.
func (m *Mirror) EffectiveMaxNodes() int {
	if m.MaxNodes <= 0 {
		return MaxMirrorNodes
	}
	return min(m.MaxNodes, MaxMirrorNodes)
}

// EffectiveMaxDepth is MaxDepth, or DefaultMirrorDepth when absent.
func (m *Mirror) EffectiveMaxDepth() int {
	if m.MaxDepth == nil {
		return DefaultMirrorDepth
	}
	return min(max(*m.MaxDepth, 0), MaxMirrorDepth)
}

// EffectiveRefresh is Refresh, or DefaultMirrorRefresh when absent.
func (m *Mirror) EffectiveRefresh() time.Duration {
	if m.Refresh == 0 {
		return DefaultMirrorRefresh
	}
	return m.Refresh.Std()
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

// EffectivePublishingInterval is PublishingInterval, or
// DefaultPublishingInterval when zero.
func (d *Device) EffectivePublishingInterval() time.Duration {
	if d.PublishingInterval == 0 {
		return DefaultPublishingInterval
	}
	return d.PublishingInterval.Std()
}

// EndpointURLs are an opcua device's upstream URLs: Endpoint, or
// Endpoints.
func (d *Device) EndpointURLs() []string {
	if d.Endpoint != "" {
		return []string{d.Endpoint}
	}
	return d.Endpoints
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
	// Writable tags (holding registers and coils, opcua tags) accept OPC
	// UA writes on the Primary.
	Writable bool `json:"writable,omitempty"`
	// NodeId is an opcua tag's upstream Variable: "ns=<index>;<id>" or
	// "nsu=<namespace URI>;<id>" with id i=, s=, g= or b=.
	NodeId string `json:"nodeId,omitempty"`
	// BrowsePath, instead of NodeId, locates an opcua tag's upstream
	// Variable by browse names from the Objects folder, in the text form
	// of ParseBrowsePath ("/2:Line1/2:Speed"); resolved at each connect.
	BrowsePath string `json:"browsePath,omitempty"`
	// SamplingInterval of an opcua tag's upstream monitored item: 0 asks
	// for every change. Default: the device's publishingInterval.
	SamplingInterval *Duration `json:"samplingInterval,omitempty"`
	// Deadband of an opcua tag's upstream monitored item (absolute, a
	// number ≥ 0; numeric tags only). Default: every change.
	Deadband *float64 `json:"deadband,omitempty"`
	// Signal, Period, Min, Max shape a simulated tag.
	Signal string   `json:"signal,omitempty"`
	Period Duration `json:"period,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	// History: whether and how the tag's values are recorded for
	// HistoryRead; an absent field takes the device's.
	History
}

// History says whether and how a tag's values are recorded for HistoryRead
// (docs/history.md). On a device it is the default of the device's tags.
type History struct {
	// Historize records the tag's values. Default false.
	Historize *bool `json:"historize,omitempty"`
	// Deadband: a value is recorded when it differs from the last one
	// recorded by more than this (a change of status is always recorded).
	// Default: every change.
	Deadband *Deadband `json:"historyDeadband,omitempty"`
	// MaxInterval: an unchanged value is recorded again once this long
	// has passed, so that a reader sees the tag alive. Default: never.
	MaxInterval Duration `json:"historyMaxInterval,omitempty"`
	// Retention: recorded values older than this are removed. Default
	// DefaultHistoryRetention.
	Retention Duration `json:"historyRetention,omitempty"`
}

// Deadband is an absolute amount, or with Percent a percentage of the
// tag's range (max − min), as Part 8's data-change filters define them.
// In the document: a number (absolute) or a string "N%".
type Deadband struct {
	Value   float64
	Percent bool
}

// Limits of the history fields (docs/deployments.md).
const (
	// DefaultHistoryRetention is how long recorded values are kept when
	// historyRetention is absent.
	DefaultHistoryRetention = 30 * 24 * time.Hour
	// MinHistoryRetention and MaxHistoryRetention bound historyRetention.
	MinHistoryRetention = time.Hour
	MaxHistoryRetention = 20 * 366 * 24 * time.Hour
	// MinHistoryMaxInterval is the shortest historyMaxInterval.
	MinHistoryMaxInterval = time.Second
)

// String is the deadband as the document writes it: "0.5" or "2%".
func (d Deadband) String() string {
	s := strconv.FormatFloat(d.Value, 'g', -1, 64)
	if d.Percent {
		return s + "%"
	}
	return s
}

// MarshalJSON writes a number, or a string "N%".
func (d Deadband) MarshalJSON() ([]byte, error) {
	if d.Percent {
		return json.Marshal(d.String())
	}
	return json.Marshal(d.Value)
}

// UnmarshalJSON reads a number or a string "N%". Decode does not use it
// (it reports a bad deadband with its path).
func (d *Deadband) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	v, ok := parseDeadband(x)
	if !ok {
		return fmt.Errorf("deployment: deadband %s: %s", b, acceptDeadband)
	}
	*d = v
	return nil
}

// parseDeadband reads a decoded JSON number or "N%" string.
func parseDeadband(x any) (Deadband, bool) {
	switch v := x.(type) {
	case float64:
		return Deadband{Value: v}, true
	case string:
		n, ok := strings.CutSuffix(strings.TrimSpace(v), "%")
		if !ok {
			return Deadband{}, false
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil {
			return Deadband{}, false
		}
		return Deadband{Value: f, Percent: true}, true
	}
	return Deadband{}, false
}

// Effective is h with every absent field taken from def (the device's),
// and the defaults for what both leave absent.
func (h History) Effective(def History) History {
	if h.Historize == nil {
		h.Historize = def.Historize
	}
	if h.Deadband == nil {
		h.Deadband = def.Deadband
	}
	if h.MaxInterval == 0 {
		h.MaxInterval = def.MaxInterval
	}
	if h.Retention == 0 {
		h.Retention = def.Retention
	}
	if h.Retention == 0 {
		h.Retention = Duration(DefaultHistoryRetention)
	}
	return h
}

// On reports whether the values are recorded.
func (h History) On() bool { return h.Historize != nil && *h.Historize }

// set reports whether any history field is present.
func (h History) set() bool {
	return h.Historize != nil || h.Deadband != nil || h.MaxInterval != 0 || h.Retention != 0
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
