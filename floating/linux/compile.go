package linux

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/otopcua/otopcua/floating"
)

// The announce kinds (Params "kind" of floating.OpAnnounce).
const (
	// KindGARP: gratuitous ARP for an IPv4 address.
	KindGARP = "garp"
	// KindUnsolicitedNA: unsolicited neighbour advertisement (override
	// flag, to all-nodes) for an IPv6 address.
	KindUnsolicitedNA = "unsolicited-na"
)

// Bounds of an announce: enough rounds for a lossy segment, never a flood,
// never a plan that blocks the loop for long.
const (
	MaxAnnounceCount    = 20
	MaxAnnounceInterval = 10 * time.Second
)

// step is one checked action.
type step struct {
	op       string
	count    int
	interval time.Duration
}

// compile checks every action of p against the executor's interface and
// address and returns the steps to run; any error refuses the whole plan
// before anything is done.
func compile(p floating.Plan, iface string, addr netip.Prefix) ([]step, error) {
	if p.Provider != "" && p.Provider != floating.ProviderLinux {
		return nil, fmt.Errorf("floating/linux: plan for provider %q refused: this executor is %q", p.Provider, floating.ProviderLinux)
	}
	if p.Intent.Address.IsValid() && p.Intent.Address.Addr() != addr.Addr() {
		return nil, fmt.Errorf("floating/linux: plan for address %s refused: this executor moves %s", p.Intent.Address, addr)
	}
	steps := make([]step, 0, len(p.Actions))
	for i, a := range p.Actions {
		s, err := compileAction(a, p.Intent.Epoch, iface, addr)
		if err != nil {
			return nil, fmt.Errorf("floating/linux: action %d (%s) refused, nothing done: %w", i+1, a.Op, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func compileAction(a floating.Action, epoch uint64, iface string, addr netip.Prefix) (step, error) {
	if a.Epoch != epoch {
		return step{}, fmt.Errorf("it carries epoch %d, its plan %d", a.Epoch, epoch)
	}
	if a.Target != "" && a.Target != iface {
		return step{}, fmt.Errorf("target %q is not this executor's interface %q", a.Target, iface)
	}
	switch a.Op {
	case floating.OpAddrAdd, floating.OpAddrDel:
		if err := sameAddress(a.Params["address"], addr); err != nil {
			return step{}, err
		}
		return step{op: a.Op}, nil
	case floating.OpAnnounce:
		return compileAnnounce(a.Params, addr)
	}
	return step{}, fmt.Errorf("unknown op %q (this executor knows %s, %s and %s)", a.Op, floating.OpAddrAdd, floating.OpAnnounce, floating.OpAddrDel)
}

// sameAddress accepts the executor's own address, with or without its
// prefix length.
func sameAddress(s string, addr netip.Prefix) error {
	if s == "" {
		return fmt.Errorf("no address")
	}
	a, err := netip.ParsePrefix(s)
	if err != nil {
		ip, err2 := netip.ParseAddr(s)
		if err2 != nil {
			return fmt.Errorf("address %q: %w", s, err)
		}
		a = netip.PrefixFrom(ip, ip.BitLen())
	}
	if a.Addr() != addr.Addr() {
		return fmt.Errorf("address %s is not this executor's %s", a, addr)
	}
	return nil
}

func compileAnnounce(p map[string]string, addr netip.Prefix) (step, error) {
	if err := sameAddress(p["address"], addr); err != nil {
		return step{}, err
	}
	want := KindGARP
	if addr.Addr().Is6() {
		want = KindUnsolicitedNA
	}
	if k := p["kind"]; k != want {
		return step{}, fmt.Errorf("kind %q: an %s address is announced with %q", k, family(addr.Addr()), want)
	}
	count, err := strconv.Atoi(p["count"])
	if err != nil || count < 1 || count > MaxAnnounceCount {
		return step{}, fmt.Errorf("count %q: want 1 to %d", p["count"], MaxAnnounceCount)
	}
	interval, err := time.ParseDuration(p["interval"])
	if err != nil || interval < 0 || interval > MaxAnnounceInterval {
		return step{}, fmt.Errorf("interval %q: want a duration from 0 to %s", p["interval"], MaxAnnounceInterval)
	}
	return step{op: floating.OpAnnounce, count: count, interval: interval}, nil
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
