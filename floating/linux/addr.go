package linux

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// loopback is the interface that carries the floating address while this
// process holds it.
const loopback = "lo"

// link looks the interface up (every operation does: its index or MAC may
// change under a running node).
func (e *Executor) link() (netlink.Link, error) { return e.linkNamed(e.cfg.Interface) }

func (e *Executor) linkNamed(name string) (netlink.Link, error) {
	l, err := e.nl.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("floating/linux: interface %q: %w", name, err)
	}
	return l, nil
}

// ifaceOf is the net.Interface the packet libraries take.
func ifaceOf(l netlink.Link) *net.Interface {
	a := l.Attrs()
	return &net.Interface{Index: a.Index, MTU: a.MTU, Name: a.Name, HardwareAddr: a.HardwareAddr, Flags: a.Flags}
}

// held lists l's entries of the floating address (any prefix length: one
// added by hand with another counts).
func (e *Executor) held(l netlink.Link) ([]netlink.Addr, error) {
	fam := netlink.FAMILY_V4
	if e.cfg.Address.Addr().Is6() {
		fam = netlink.FAMILY_V6
	}
	all, err := e.nl.AddrList(l, fam)
	if err != nil {
		return nil, fmt.Errorf("floating/linux: list addresses of %q: %w", l.Attrs().Name, err)
	}
	want := net.IP(e.cfg.Address.Addr().AsSlice())
	var out []netlink.Addr
	for _, a := range all {
		if a.IPNet != nil && a.IP.Equal(want) {
			out = append(out, a)
		}
	}
	return out, nil
}

// where says whether the address is on lo and on the interface (the
// latter only as a leftover of an older version, or added by hand: the
// kernel answers ARP/ND for it there).
type where struct{ lo, iface bool }

func (e *Executor) locate(l netlink.Link) (where, error) {
	lo, err := e.linkNamed(loopback)
	if err != nil {
		return where{}, err
	}
	onLo, err := e.held(lo)
	if err != nil {
		return where{}, err
	}
	onIf, err := e.held(l)
	if err != nil {
		return where{}, err
	}
	return where{lo: len(onLo) > 0, iface: len(onIf) > 0}, nil
}

// addrFlags: no prefix route; for IPv6 no duplicate address detection
// either (the address is on lo, where DAD means nothing, and its tentative
// second would delay every seize).
func (e *Executor) addrFlags() int {
	f := unix.IFA_F_NOPREFIXROUTE
	if e.cfg.Address.Addr().Is6() {
		f |= unix.IFA_F_NODAD
	}
	return f
}

// addToLoopback adds the address to lo as a host address (/32, /128):
// the kernel accepts connections to it on every interface but answers ARP
// or ND for it on none. Already present (with any prefix length) is
// success.
func (e *Executor) addToLoopback() error {
	lo, err := e.linkNamed(loopback)
	if err != nil {
		return err
	}
	if h, err := e.held(lo); err != nil || len(h) > 0 {
		return err
	}
	ip := e.cfg.Address.Addr()
	a := &netlink.Addr{
		IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(ip.BitLen(), ip.BitLen())},
		Flags: e.addrFlags(),
	}
	if err := e.nl.AddrAdd(lo, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add %s to %q: %w", a.IPNet, loopback, err)
	}
	return nil
}

// removeEverywhere removes every entry of the address from lo and from the
// interface; absent is success.
func (e *Executor) removeEverywhere() (removed bool, err error) {
	for _, name := range []string{loopback, e.cfg.Interface} {
		l, err := e.linkNamed(name)
		if err != nil {
			return removed, err
		}
		h, err := e.held(l)
		if err != nil {
			return removed, err
		}
		for _, a := range h {
			if err := e.nl.AddrDel(l, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				return removed, fmt.Errorf("remove %s from %q: %w", a.IPNet, name, err)
			}
			removed = true
		}
	}
	return removed, nil
}
