package azure

import (
	"strconv"
)

// EpochTag is the NIC tag that records the ownership epoch of the last
// plan that changed the NIC's hold on the address.
const EpochTag = "otopcua-floating-epoch"

// nic is a network interface as ARM returned it, kept whole: a PUT
// replaces the resource, so every field the executor does not know must go
// back as it came.
type nic map[string]any

func (n nic) name() string { s, _ := n["name"].(string); return s }

func (n nic) etag() string { s, _ := n["etag"].(string); return s }

func (n nic) props() map[string]any {
	p, _ := n["properties"].(map[string]any)
	if p == nil {
		p = map[string]any{}
		n["properties"] = p
	}
	return p
}

func (n nic) state() string { s, _ := n.props()["provisioningState"].(string); return s }

func (n nic) ipConfigs() []any {
	c, _ := n.props()["ipConfigurations"].([]any)
	return c
}

// configIP is an ipConfiguration's private address and whether it is the
// NIC's primary one.
func configIP(c any) (ip string, primary bool) {
	m, _ := c.(map[string]any)
	p, _ := m["properties"].(map[string]any)
	ip, _ = p["privateIPAddress"].(string)
	primary, _ = p["primary"].(bool)
	return ip, primary
}

// holds reports whether an ipConfiguration carries ip.
func (n nic) holds(ip string) bool {
	for _, c := range n.ipConfigs() {
		if a, _ := configIP(c); a == ip {
			return true
		}
	}
	return false
}

// epoch is the NIC's EpochTag (0: none).
func (n nic) epoch() uint64 {
	t, _ := n["tags"].(map[string]any)
	s, _ := t[EpochTag].(string)
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

func (n nic) setEpoch(epoch uint64) {
	t, _ := n["tags"].(map[string]any)
	if t == nil {
		t = map[string]any{}
		n["tags"] = t
	}
	t[EpochTag] = strconv.FormatUint(epoch, 10)
}

// primarySubnet is the subnet id of the primary ipConfiguration.
func (n nic) primarySubnet() string {
	for _, c := range n.ipConfigs() {
		if _, primary := configIP(c); primary {
			m := c.(map[string]any)
			p, _ := m["properties"].(map[string]any)
			s, _ := p["subnet"].(map[string]any)
			id, _ := s["id"].(string)
			return id
		}
	}
	return ""
}
