package linux

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
)

func TestCompile(t *testing.T) {
	v4, v6 := netip.MustParsePrefix("10.0.0.100/24"), netip.MustParsePrefix("fd00::100/64")
	add := func(addr string) floating.Action {
		return floating.Action{Op: floating.OpAddrAdd, Target: "eth0", Epoch: 7, Params: map[string]string{"address": addr}}
	}
	ann := func(kind, count, interval string) floating.Action {
		return floating.Action{Op: floating.OpAnnounce, Epoch: 7, Params: map[string]string{"address": "10.0.0.100/24", "kind": kind, "count": count, "interval": interval}}
	}
	plan := func(as ...floating.Action) floating.Plan {
		return floating.Plan{Provider: floating.ProviderLinux, Intent: floating.Intent{Address: v4, Epoch: 7}, Actions: as}
	}
	for _, c := range []struct {
		name  string
		addr  netip.Prefix
		plan  floating.Plan
		steps []step
		err   string // a fragment of the refusal; "" = accepted
	}{
		{"seize", v4, plan(add("10.0.0.100/24"), ann("garp", "3", "50ms")),
			[]step{{op: floating.OpAddrAdd}, {op: floating.OpAnnounce, count: 3, interval: 50 * time.Millisecond}}, ""},
		{"address without prefix", v4, plan(add("10.0.0.100")), []step{{op: floating.OpAddrAdd}}, ""},
		{"release", v4, plan(floating.Action{Op: floating.OpAddrDel, Epoch: 7, Params: map[string]string{"address": "10.0.0.100/24"}}),
			[]step{{op: floating.OpAddrDel}}, ""},
		{"empty plan", v4, plan(), []step{}, ""},
		{"unknown op", v4, plan(add("10.0.0.100/24"), floating.Action{Op: "route-add", Epoch: 7}), nil, `unknown op "route-add"`},
		{"another address", v4, plan(add("10.0.0.101/24")), nil, "not this executor's"},
		{"no address", v4, plan(add("")), nil, "no address"},
		{"another interface", v4, plan(floating.Action{Op: floating.OpAddrAdd, Target: "eth1", Epoch: 7, Params: map[string]string{"address": "10.0.0.100/24"}}), nil, `"eth1"`},
		{"action of another epoch", v4, plan(floating.Action{Op: floating.OpAddrAdd, Epoch: 6, Params: map[string]string{"address": "10.0.0.100/24"}}), nil, "epoch 6, its plan 7"},
		{"NA for IPv4", v4, plan(ann("unsolicited-na", "3", "50ms")), nil, `announced with "garp"`},
		{"count 0", v4, plan(ann("garp", "0", "50ms")), nil, "count"},
		{"count too high", v4, plan(ann("garp", "21", "50ms")), nil, "count"},
		{"bad interval", v4, plan(ann("garp", "3", "soon")), nil, "interval"},
		{"interval too long", v4, plan(ann("garp", "3", "11s")), nil, "interval"},
		{"another provider", v4, floating.Plan{Provider: floating.ProviderAWS}, nil, `provider "aws"`},
		{"intent for another address", v6, plan(), nil, "this executor moves fd00::100/64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := compile(c.plan, "eth0", c.addr)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error = %v, want one that says %q", err, c.err)
			}
			if c.err == "" && !equalSteps(got, c.steps) {
				t.Fatalf("steps = %+v, want %+v", got, c.steps)
			}
		})
	}
	p := floating.Plan{Provider: floating.ProviderLinux, Intent: floating.Intent{Address: v6, Epoch: 7}, Actions: []floating.Action{
		{Op: floating.OpAnnounce, Epoch: 7, Params: map[string]string{"address": "fd00::100/64", "kind": "unsolicited-na", "count": "2", "interval": "0s"}}}}
	if _, err := compile(p, "eth0", v6); err != nil {
		t.Fatalf("IPv6 announce refused: %v", err)
	}
	p.Actions[0].Params["kind"] = "garp"
	if _, err := compile(p, "eth0", v6); err == nil || !strings.Contains(err.Error(), `"unsolicited-na"`) {
		t.Fatalf("gratuitous ARP for IPv6: %v", err)
	}
}

func equalSteps(a, b []step) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestClassify(t *testing.T) {
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	own, a, b, x := mac("02:00:00:00:00:01"), mac("02:00:00:00:00:0a"), mac("02:00:00:00:00:0b"), mac("02:00:00:00:00:ff")
	known := func(m net.HardwareAddr) (string, bool) {
		switch m.String() {
		case a.String():
			return "a:4053", true
		case b.String():
			return "b:4053", true
		}
		return "", false
	}
	for _, c := range []struct {
		name    string
		present bool
		macs    []net.HardwareAddr
		known   func(net.HardwareAddr) (string, bool)
		want    floating.Observation
	}{
		{"on the interface", true, nil, known, floating.Observation{Kind: floating.HolderSelf, ID: own.String(), Member: "self:4053"}},
		{"nobody answers", false, nil, known, floating.Observation{Kind: floating.HolderNone}},
		{"a member", false, []net.HardwareAddr{a}, known, floating.Observation{Kind: floating.HolderMember, ID: a.String(), Member: "a:4053"}},
		{"two members", false, []net.HardwareAddr{b, a}, known, floating.Observation{Kind: floating.HolderMember, ID: b.String() + "," + a.String(), Member: "b:4053"}},
		{"a stranger", false, []net.HardwareAddr{x}, known, floating.Observation{Kind: floating.HolderForeign, ID: x.String()}},
		{"a member and a stranger", false, []net.HardwareAddr{a, x}, known, floating.Observation{Kind: floating.HolderForeign, ID: a.String() + "," + x.String()}},
		{"no members known", false, []net.HardwareAddr{a}, nil, floating.Observation{Kind: floating.HolderForeign, ID: a.String()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := classify(c.present, own, "self:4053", c.macs, c.known); got != c.want {
				t.Fatalf("classify = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Address: netip.MustParsePrefix("10.0.0.1/24"), Fence: &floating.FileFence{}}, "no interface"},
		{Config{Interface: "eth0", Fence: &floating.FileFence{}}, "no address"},
		{Config{Interface: "eth0", Address: netip.MustParsePrefix("10.0.0.1/24")}, "no epoch fence"},
		{Config{Interface: "eth0", Address: netip.MustParsePrefix("10.0.0.1/24"), Fence: &floating.FileFence{}, ProbeTimeout: -1}, "negative"},
		{Config{Interface: "no-such-if0", Address: netip.MustParsePrefix("10.0.0.1/24"), Fence: &floating.FileFence{}}, `interface "no-such-if0"`},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error that says %q", c.cfg, err, c.want)
		}
	}
}
