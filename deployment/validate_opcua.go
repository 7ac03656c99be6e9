package deployment

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/otopcua/otopcua/config"
)

// Accepted-values texts of the opcua driver's fields.
const (
	acceptEndpoint           = "accepted values are opc.tcp://host:port[/path] URLs of the upstream OPC UA server (port 1..65535)"
	acceptEndpoints          = "accepted values are lists of 1 to 8 opc.tcp:// URLs: the servers of one upstream redundant set"
	acceptEndpointOne        = "accepted: exactly one of endpoint (one upstream server) and endpoints (an upstream redundant set)"
	acceptUsername           = "accepted values are user names of 1 to 256 characters (default: anonymous)"
	acceptPasswordEnv        = "accepted values are environment variable names of A-Z a-z 0-9 _ (not starting with a digit), read on each node for the upstream password"
	acceptPublishingInterval = "accepted values are durations of at least 10ms, as " + config.DurationFormat + " (default 250ms)"
	acceptSamplingInterval   = "accepted values are 0 (every change) or durations of at least 10ms, as " + config.DurationFormat + " (default: the device's publishingInterval)"
	acceptUADeadband         = "accepted values are numbers ≥ 0: an absolute deadband on the upstream monitored item (default: every change)"
	acceptNodeID             = "accepted values are upstream NodeIds ns=<index>;<id> or nsu=<namespace URI>;<id>, with id i=<number>, s=<text>, g=<GUID> or b=<base64>, such as ns=2;s=Line1.Speed"
	acceptBrowsePath         = "accepted values are upstream paths from the Objects folder: /<ns>:<BrowseName> elements (. for a property or component), the namespace as an index (2:) or a URI (nsu=<URI>;), reserved characters /.<>:#!& escaped with &, such as /2:Line1/2:Speed"
	acceptNodeIDOrPath       = "accepted: exactly one of nodeId (the upstream NodeId) and browsePath (the upstream path from Objects)"
	acceptMirrorNodes        = "accepted values are whole numbers 1..10000: the most upstream nodes mirrored (default 10000)"
	acceptMirrorDepth        = "accepted values are whole numbers 0..32: the folder levels browsed below the root (default 8)"
	acceptMirrorRefresh      = "accepted values are durations of at least 1s, as " + config.DurationFormat + " (default 1m): how often the subtree is browsed again"
	acceptMirrorRoot         = "accepted: exactly one of nodeId and browsePath, the root of the upstream subtree"
	acceptNoPollOPCUA        = "accepted only with drivers modbus-tcp and simulated: an opcua device is not polled; use publishingInterval (and samplingInterval on a tag)"
	onlyOPCUADevice          = "accepted only with driver opcua; remove it"
	onlyOPCUATag             = "accepted only for tags of an opcua device; remove it"
	notForOPCUATag           = "accepted only for tags of a modbus-tcp or simulated device; remove it for an opcua tag (its upstream nodeId locates it)"
	acceptPolicyMode         = "accepted: securityPolicy None with securityMode None (or absent), and a signing policy with Sign or SignAndEncrypt"
	acceptPasswordWithUser   = "accepted only with username (the password of that user); remove it, or add username"
	acceptUserNeedsPassword  = "accepted with passwordEnv naming the environment variable that holds the password on each node"
	acceptBoolDeadbandUA     = "accepted only for numeric tags; remove it for a bool tag"
	acceptUpstreamAlarms     = "accepted values are true (the upstream's conditions, reported by its Server object), false, or {\"source\": <upstream NodeId of the notifier>, \"max\": <1..10000, default 1000>}"
	acceptUpstreamAlarmsMax  = "accepted values are whole numbers 1..10000: the most upstream conditions mirrored (default 1000)"
)

// maxUsernameLen is the longest upstream user name.
const maxUsernameLen = 256

// opcuaDevice checks the fields of an opcua device.
func (v *validator) opcuaDevice(d *Device, p string) {
	hasOne, hasMany := v.set(p+".endpoint", d.Endpoint != ""), v.set(p+".endpoints", len(d.Endpoints) > 0)
	if fp := p + ".endpoint"; v.enter(fp) {
		switch {
		case hasOne && hasMany:
			v.add(fp, d.Endpoint, acceptEndpointOne)
		case hasOne && !validEndpoint(d.Endpoint):
			v.add(fp, d.Endpoint, acceptEndpoint)
		case !hasOne && !hasMany:
			v.add(fp, d.Endpoint, acceptEndpointOne)
		}
	}
	if fp := p + ".endpoints"; v.enter(fp) && hasMany {
		if len(d.Endpoints) > MaxEndpoints {
			v.add(fp, fmt.Sprintf("[… %d URLs]", len(d.Endpoints)), acceptEndpoints)
		}
		seen := map[string]int{}
		for i, u := range d.Endpoints {
			ep := fmt.Sprintf("%s[%d]", fp, i)
			if !v.enter(ep) {
				continue
			}
			if !validEndpoint(u) {
				v.add(ep, u, acceptEndpoint)
				continue
			}
			if j, dup := seen[u]; dup {
				v.add(ep, u, fmt.Sprintf("accepted values are URLs listed once; %s[%d] has it", fp, j))
				continue
			}
			seen[u] = i
		}
	}
	policyOK, modeOK := d.SecurityPolicy == "" || contains(Policies, d.SecurityPolicy), d.SecurityMode == "" || contains(Modes, d.SecurityMode)
	if fp := p + ".securityPolicy"; v.enter(fp) && !policyOK {
		v.add(fp, d.SecurityPolicy, oneOf(Policies)+suggest(Policies, d.SecurityPolicy))
	}
	if fp := p + ".securityMode"; v.enter(fp) {
		switch {
		case !modeOK:
			v.add(fp, d.SecurityMode, oneOf(Modes)+suggest(Modes, d.SecurityMode))
		case policyOK && (d.EffectiveSecurityPolicy() == PolicyNone) != (d.EffectiveSecurityMode() == ModeNone):
			v.add(fp, d.SecurityMode, acceptPolicyMode)
		}
	}
	if fp := p + ".username"; v.enter(fp) && v.set(fp, d.Username != "") {
		switch {
		case d.Username == "" || len(d.Username) > maxUsernameLen:
			v.add(fp, d.Username, acceptUsername)
		case d.PasswordEnv == "":
			v.add(fp, d.Username, acceptUserNeedsPassword)
		}
	}
	if fp := p + ".passwordEnv"; v.enter(fp) && v.set(fp, d.PasswordEnv != "") {
		switch {
		case !validEnvName(d.PasswordEnv):
			v.add(fp, d.PasswordEnv, acceptPasswordEnv)
		case d.Username == "":
			v.add(fp, d.PasswordEnv, acceptPasswordWithUser)
		}
	}
	if fp := p + ".publishingInterval"; v.enter(fp) && v.set(fp, d.PublishingInterval != 0) && d.PublishingInterval.Std() < MinPublishingInterval {
		v.add(fp, d.PublishingInterval, acceptPublishingInterval)
	}
	v.upstreamAlarms(d.Alarms, p+".alarms")
	if fp := p + ".mirror"; v.enter(fp) && d.Mirror != nil {
		v.mirror(d, fp)
	}
}

// upstreamAlarms checks an opcua device's "alarms": the notifier's NodeId
// and the bound.
func (v *validator) upstreamAlarms(a *UpstreamAlarms, p string) {
	if !v.object(p) || a == nil {
		return
	}
	if fp := p + ".source"; v.enter(fp) && v.set(fp, a.Source != "") {
		if _, err := ParseNodeRef(a.Source); err != nil {
			v.add(fp, a.Source, acceptNodeID+"; "+err.Error())
		}
	}
	if fp := p + ".max"; v.enter(fp) && v.set(fp, a.Max != 0) && (a.Max < 1 || a.Max > MaxUpstreamAlarms) {
		v.add(fp, a.Max, acceptUpstreamAlarmsMax)
	}
}

// mirror checks an opcua device's mirror: one root, the bounds, and a
// root whose browse name no tag of the device has (their NodeIds would
// be the same).
func (v *validator) mirror(d *Device, p string) {
	m := d.Mirror
	hasID, hasPath := v.set(p+".nodeId", m.NodeId != ""), v.set(p+".browsePath", m.BrowsePath != "")
	if fp := p + ".browsePath"; v.enter(fp) && hasPath {
		bp, err := ParseBrowsePath(m.BrowsePath)
		switch {
		case hasID:
			v.add(fp, m.BrowsePath, acceptMirrorRoot)
		case err != nil:
			v.add(fp, m.BrowsePath, acceptBrowsePath+"; "+err.Error())
		default:
			for _, t := range d.Tags {
				if t.Name == bp[len(bp)-1].Name {
					v.add(fp, m.BrowsePath, "accepted values are paths whose last browse name is not the name of a tag of the device: the mirrored root "+t.Name+" would take the tag's NodeId")
					break
				}
			}
		}
	}
	if fp := p + ".nodeId"; v.enter(fp) && !hasPath {
		if _, err := ParseNodeRef(m.NodeId); err != nil {
			v.add(fp, m.NodeId, acceptMirrorRoot+"; "+acceptNodeID+"; "+err.Error())
		}
	}
	if fp := p + ".maxNodes"; v.enter(fp) && v.set(fp, m.MaxNodes != 0) && (m.MaxNodes < 1 || m.MaxNodes > MaxMirrorNodes) {
		v.add(fp, m.MaxNodes, acceptMirrorNodes)
	}
	if fp := p + ".maxDepth"; v.enter(fp) && m.MaxDepth != nil && (*m.MaxDepth < 0 || *m.MaxDepth > MaxMirrorDepth) {
		v.add(fp, *m.MaxDepth, acceptMirrorDepth)
	}
	if fp := p + ".refresh"; v.enter(fp) && v.set(fp, m.Refresh != 0) && m.Refresh.Std() < MinMirrorRefresh {
		v.add(fp, m.Refresh, acceptMirrorRefresh)
	}
}

// notOPCUADevice refuses the opcua fields on another driver's device.
func (v *validator) notOPCUADevice(d *Device, p string) {
	v.refuse(p+".endpoint", d.Endpoint, d.Endpoint != "", onlyOPCUADevice)
	if fp := p + ".endpoints"; v.enter(fp) && v.set(fp, len(d.Endpoints) > 0) {
		v.add(fp, fmt.Sprintf("[… %d URLs]", len(d.Endpoints)), onlyOPCUADevice)
	}
	v.refuse(p+".securityPolicy", d.SecurityPolicy, d.SecurityPolicy != "", onlyOPCUADevice)
	v.refuse(p+".securityMode", d.SecurityMode, d.SecurityMode != "", onlyOPCUADevice)
	v.refuse(p+".username", d.Username, d.Username != "", onlyOPCUADevice)
	v.refuse(p+".passwordEnv", d.PasswordEnv, d.PasswordEnv != "", onlyOPCUADevice)
	v.refuse(p+".publishingInterval", d.PublishingInterval, d.PublishingInterval != 0, onlyOPCUADevice)
	if fp := p + ".alarms"; v.enter(fp) && v.set(fp, d.Alarms != nil) && d.Alarms != nil {
		v.add(fp, "", onlyOPCUADevice)
	}
	if fp := p + ".mirror"; v.enter(fp) && d.Mirror != nil {
		v.add(fp, "{…}", onlyOPCUADevice)
	}
}

// opcuaTag checks a tag of an opcua device: an upstream nodeId and a
// known type (compared with the upstream's DataType by otopcua deploy and
// when the driver connects; absent only in DecodeTypeless), optional samplingInterval and deadband; none of the Modbus
// or simulated fields.
func (v *validator) opcuaTag(t *Tag, p string) {
	v.refuse(p+".table", t.Table, t.Table != "", notForOPCUATag)
	v.refuse(p+".address", t.Address, t.Address != nil, notForOPCUATag)
	if !v.typeless || v.set(p+".type", t.Type != "") {
		v.tagType(t, p)
	}
	v.refuse(p+".wordOrder", t.WordOrder, t.WordOrder != "", notForOPCUATag)
	v.refuse(p+".scale", t.Scale, t.Scale != nil, notForOPCUATag)
	v.refuse(p+".offset", t.Offset, t.Offset != nil, notForOPCUATag)
	v.enter(p + ".writable")
	v.refuse(p+".signal", t.Signal, t.Signal != "", notForOPCUATag)
	v.refuse(p+".period", t.Period, t.Period != 0, notForOPCUATag)
	v.refuse(p+".min", t.Min, t.Min != nil, notForOPCUATag)
	v.refuse(p+".max", t.Max, t.Max != nil, notForOPCUATag)
	v.tagLocation(t, p)
	if fp := p + ".samplingInterval"; v.enter(fp) && t.SamplingInterval != nil {
		if si := t.SamplingInterval.Std(); si != 0 && si < MinPublishingInterval {
			v.add(fp, *t.SamplingInterval, acceptSamplingInterval)
		}
	}
	if fp := p + ".deadband"; v.enter(fp) && t.Deadband != nil {
		switch db := *t.Deadband; {
		case math.IsNaN(db) || math.IsInf(db, 0) || db < 0:
			v.add(fp, t.Deadband, acceptUADeadband)
		case t.Type == TypeBool:
			v.add(fp, t.Deadband, acceptBoolDeadbandUA)
		}
	}
}

// tagLocation checks an opcua tag's nodeId or browsePath (exactly one).
func (v *validator) tagLocation(t *Tag, p string) {
	hasID, hasPath := v.set(p+".nodeId", t.NodeId != ""), v.set(p+".browsePath", t.BrowsePath != "")
	if fp := p + ".nodeId"; v.enter(fp) && !hasPath {
		if _, err := ParseNodeRef(t.NodeId); err != nil {
			v.add(fp, t.NodeId, acceptNodeID+"; "+err.Error())
		}
	}
	if fp := p + ".browsePath"; v.enter(fp) && hasPath {
		if hasID {
			v.add(fp, t.BrowsePath, acceptNodeIDOrPath)
		} else if _, err := ParseBrowsePath(t.BrowsePath); err != nil {
			v.add(fp, t.BrowsePath, acceptBrowsePath+"; "+err.Error())
		}
	}
}

// notOPCUATag refuses the opcua fields on another driver's tag.
func (v *validator) notOPCUATag(t *Tag, p string) {
	v.refuse(p+".nodeId", t.NodeId, t.NodeId != "", onlyOPCUATag)
	v.refuse(p+".browsePath", t.BrowsePath, t.BrowsePath != "", onlyOPCUATag)
	if fp := p + ".samplingInterval"; v.enter(fp) && t.SamplingInterval != nil {
		v.add(fp, *t.SamplingInterval, onlyOPCUATag)
	}
	v.refuse(p+".deadband", t.Deadband, t.Deadband != nil, onlyOPCUATag)
}

// EffectiveSecurityPolicy is SecurityPolicy, or PolicyNone when absent.
func (d *Device) EffectiveSecurityPolicy() string {
	if d.SecurityPolicy == "" {
		return PolicyNone
	}
	return d.SecurityPolicy
}

// EffectiveSecurityMode is SecurityMode, or ModeNone when absent.
func (d *Device) EffectiveSecurityMode() string {
	if d.SecurityMode == "" {
		return ModeNone
	}
	return d.SecurityMode
}

// EffectiveSamplingInterval is an opcua tag's sampling interval: its
// own, or the device's publishing interval.
func (t *Tag) EffectiveSamplingInterval(d *Device) Duration {
	if t.SamplingInterval != nil {
		return *t.SamplingInterval
	}
	return Duration(d.EffectivePublishingInterval())
}

// validEndpoint: opc.tcp://host:port with an optional path.
func validEndpoint(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "opc.tcp" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return validHostPort(u.Host)
}

// validEnvName: A-Z a-z 0-9 _, not starting with a digit, at most 128.
func validEnvName(s string) bool {
	if s == "" || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// NodeRef is an upstream NodeId as a deployment writes it: a namespace
// index (Namespace) or URI (NamespaceURI, for nsu=), and the identifier
// part ID ("i=5", "s=Line1.Speed", "g=…", "b=…").
type NodeRef struct {
	Namespace    uint16
	NamespaceURI string
	ID           string
}

// String is the reference as written: "ns=2;s=X" or "nsu=urn:x;s=X".
func (r NodeRef) String() string {
	if r.NamespaceURI != "" {
		return "nsu=" + r.NamespaceURI + ";" + r.ID
	}
	return "ns=" + strconv.Itoa(int(r.Namespace)) + ";" + r.ID
}

// ParseNodeRef reads "ns=<index>;<id>", "nsu=<URI>;<id>" or "<id>"
// (namespace 0). The URI ends at the first ";i=", ";s=", ";g=" or ";b=".
// It checks the identifier's form (a number for i=, text for s=), not
// that the node exists.
func ParseNodeRef(s string) (NodeRef, error) {
	var r NodeRef
	rest := s
	switch {
	case strings.HasPrefix(s, "nsu="):
		cut := -1
		for _, k := range []string{";i=", ";s=", ";g=", ";b="} {
			if i := strings.Index(s, k); i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut < 0 {
			return r, fmt.Errorf("no identifier after the namespace URI")
		}
		r.NamespaceURI, rest = s[len("nsu="):cut], s[cut+1:]
		if r.NamespaceURI == "" {
			return r, fmt.Errorf("empty namespace URI")
		}
	case strings.HasPrefix(s, "ns="):
		idx, id, ok := strings.Cut(s[len("ns="):], ";")
		if !ok {
			return r, fmt.Errorf("no identifier after the namespace index")
		}
		n, err := strconv.ParseUint(idx, 10, 16)
		if err != nil {
			return r, fmt.Errorf("namespace index %q is not a number 0..65535", idx)
		}
		r.Namespace, rest = uint16(n), id
	}
	kind, val, ok := strings.Cut(rest, "=")
	if !ok || val == "" {
		return r, fmt.Errorf("identifier %q is not i=, s=, g= or b= with a value", rest)
	}
	switch kind {
	case "i":
		if _, err := strconv.ParseUint(val, 10, 32); err != nil {
			return r, fmt.Errorf("numeric identifier %q is not a number 0..4294967295", val)
		}
	case "s":
		if len(val) > 4096 {
			return r, fmt.Errorf("string identifier longer than 4096 bytes")
		}
	case "g", "b":
	default:
		return r, fmt.Errorf("identifier type %q is not i, s, g or b", kind)
	}
	r.ID = rest
	return r, nil
}
